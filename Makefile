# DynamICCL build. `make` builds the plugin, the CLI and the tests; `make test` runs every test,
# then the same tests under AddressSanitizer and UndefinedBehaviorSanitizer, and the threaded ones
# under ThreadSanitizer (`make test-tsan` alone), as many binaries at a time as the machine has
# processors (tests/run_all.sh, DYNAMICCL_TEST_JOBS); `make demo` runs the
# simulated-cluster demo; `make bench` runs the hot-path, simulator, trigger and DQN benchmarks;
# `make bench-agents` evaluates the learning agents; `make bench-replay` them on the GPU replay;
# `make bench-mixed` the learner's cost under compute gaps between calls; `make bench-warm-start` a warm
# start from the replay's policy; `make bench-graphs` learning beside a CUDA graph;
# `make bench-learner` whether the background learner keeps up with back-to-back collectives;
# `make fuzz` the fuzz targets with libFuzzer (needs clang).

CC ?= cc
BUILD ?= build
SANITIZE ?= 0

CFLAGS_COMMON = -std=c11 -D_GNU_SOURCE -g -fPIC -fvisibility=hidden -pthread \
                -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror
ifeq ($(SANITIZE),1)
  OPT = -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
  SAN_LDFLAGS = -fsanitize=address,undefined
else ifeq ($(SANITIZE),thread)
  OPT = -O1 -fno-omit-frame-pointer -fsanitize=thread
  SAN_LDFLAGS = -fsanitize=thread
else
  OPT = -O2
  SAN_LDFLAGS =
endif
CFLAGS ?=
CFLAGS += $(CFLAGS_COMMON) $(OPT)
LDFLAGS += -pthread $(SAN_LDFLAGS)
# The plugin may leave no symbol undefined, except a clang sanitizer build's: clang links the sanitizer
# runtime into executables only, where the library finds it when loaded.
SO_NO_UNDEFINED = -Wl,-z,defs
ifneq ($(SANITIZE),0)
ifneq ($(findstring clang,$(shell $(CC) --version 2>/dev/null | head -n 1)),)
  SO_NO_UNDEFINED =
endif
endif
LDLIBS = -lm -ldl

# Layers, one folder each.
PLUGIN_SRCS := $(wildcard abi/*.c) $(wildcard core/*.c) $(wildcard coord/*.c) $(wildcard nn/*.c) $(wildcard agents/*.c) $(wildcard persist/*.c) \
               $(wildcard plugin/*.c)
SIM_SRCS    := $(wildcard sim/*.c)
EMU_SRCS    := $(wildcard emu/*.c)
TEST_SRCS   := $(wildcard tests/test_*.c)
BENCH_SRCS  := $(wildcard bench/*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

PLUGIN_LIB  := $(BUILD)/libdynamiccl.a
SIM_LIB     := $(BUILD)/libdccl_sim.a
EMU_LIB     := $(BUILD)/libdccl_emu.a
TUNER_SO    := $(BUILD)/libnccl-tuner-dynamiccl.so
PROFILER_SO := $(BUILD)/libnccl-profiler-dynamiccl.so
CLI         := $(BUILD)/dccl
TESTS       := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRCS)) $(BUILD)/tests/test_leftover_shrunk
BENCHES     := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))
FUZZ_TARGETS := fuzz_wire fuzz_policy fuzz_text

# GPU tools (bench/gpu/): compiled wherever the CUDA toolkit and NCCL's header are (CI included), run
# on the GPU machine by bench/gpu/run.sh. No nvcc needed: plain C against the CUDA runtime and NCCL.
CUDA_HOME ?= /usr/local/cuda
NCCL_HOME ?= $(CUDA_HOME)
HAVE_CUDA := $(shell test -f $(CUDA_HOME)/include/cuda_runtime_api.h -a -f $(NCCL_HOME)/include/nccl.h && echo 1)
GPU_TOOLS := $(BUILD)/gpu/loopback_load
# The mock CUDA runtime and NCCL (bench/gpu/mock/): collbench and run.sh run on them where there is no GPU
# (tests/test_gpu_scripts.sh). MOCK_HOME is laid out as an NCCL home (lib/, include/nccl.h) for run.sh's
# NCCL_HOME; the runtime has the soname of the toolkit's, which collbench needs.
MOCK_HOME := $(BUILD)/gpu/mock
ifeq ($(HAVE_CUDA),1)
  CUDART_SONAME := $(shell objdump -p $(CUDA_HOME)/lib64/libcudart.so 2>/dev/null | awk '$$1 == "SONAME" { print $$2 }')
  CUDART_SONAME := $(or $(CUDART_SONAME),libcudart.so)
  GPU_TOOLS += $(BUILD)/gpu/collbench \
               $(MOCK_HOME)/lib/libnccl.so.2 $(MOCK_HOME)/lib/$(CUDART_SONAME) $(MOCK_HOME)/include/nccl.h
endif
GPU_CFLAGS = -std=c11 -D_GNU_SOURCE -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2 -O2 -Wall -Wextra -Wshadow -Werror

# Quiet by default; `make V=1` shows the commands.
ifeq ($(V),1)
  Q =
else
  Q = @
endif

.PHONY: all plugin test test-fast test-asan test-tsan test-coordination-long fuzz report demo bench bench-agents bench-replay bench-mixed bench-warm-start bench-graphs bench-learner clean
.SECONDARY:
all: plugin $(CLI) $(TESTS) $(BUILD)/tests/test_gpu_scripts $(BUILD)/tests/test_cli $(BUILD)/tests/test_run_all $(BENCHES) $(addprefix $(BUILD)/,$(FUZZ_TARGETS)) $(GPU_TOOLS)
plugin: $(TUNER_SO) $(PROFILER_SO)

# The neural nets' elementwise loops (backward passes, Adam, ReLU, the LSTM's cell updates) vectorized: without
# -ffast-math no compiler reorders floating-point arithmetic, so the results are bit for bit those of
# -O2; -fno-math-errno lets sqrtf (Adam) vectorize. nn/affine.c, the forward kernel, stays at -O2: its
# blocks are vectorized as written, and -O3's loop vectorizer would reshuffle them (2-3x slower).
NUMERIC_OBJS := $(call obj,nn/dense.c nn/params.c nn/lstm.c nn/loss.c agents/q_network.c)
ifneq ($(SANITIZE),1)
$(NUMERIC_OBJS): CFLAGS += -O3 -fno-math-errno
endif

# Tests find the repository's files (README, scenarios) from here.
$(BUILD)/obj/tests/%.o: CFLAGS += -DDYNAMICCL_SOURCE_DIR='"$(CURDIR)"'

# Compiles $< into $@ with its dependency file; $(1): a note for the quiet line.
define compile_c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<$(1)",true)
	$(Q)$(CC) $(CFLAGS) -MMD -MP -c $< -o $@
endef

$(BUILD)/obj/%.o: %.c
	$(call compile_c)

$(PLUGIN_LIB): $(call obj,$(PLUGIN_SRCS))
	@rm -f $@
	$(Q)ar rcs $@ $^
$(SIM_LIB): $(call obj,$(SIM_SRCS))
	@rm -f $@
	$(Q)ar rcs $@ $^
$(EMU_LIB): $(call obj,$(EMU_SRCS))
	@rm -f $@
	$(Q)ar rcs $@ $^

# The plugin exports only the ABI structs (abi/*.c): everything else is hidden or local. The same
# archive, ABI structs included, is linked statically into the tools and tests ("builtin" plugin).
$(TUNER_SO): $(PLUGIN_LIB)
	@$(if $(Q),echo "  LINK    $@",true)
	$(Q)$(CC) -shared -o $@ -Wl,--whole-archive $(PLUGIN_LIB) -Wl,--no-whole-archive \
	  $(SO_NO_UNDEFINED) $(LDFLAGS) $(LDLIBS)
$(PROFILER_SO): $(TUNER_SO)
	$(Q)ln -sf $(notdir $(TUNER_SO)) $@

TOOL_SRCS := $(wildcard tools/*.c)
$(CLI): $(call obj,$(TOOL_SRCS)) $(EMU_LIB) $(SIM_LIB) $(PLUGIN_LIB) | plugin
	@$(if $(Q),echo "  LINK    $@",true)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(LDLIBS)

$(BUILD)/tests/%: $(call obj,tests/%.c) $(EMU_LIB) $(SIM_LIB) $(PLUGIN_LIB) | plugin
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@",true)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(LDLIBS)

# test_policy_file drives the policy loader's fuzz target (tests/fuzz/policy_target.c) on mutated files.
$(BUILD)/tests/test_policy_file: $(call obj,tests/fuzz/policy_target.c)

# The leftover charge as to commit b64522d (DCCL_LEFTOVER_SHRINK, which side-by-side benchmarks build):
# tests/leftover_sequence.txt replayed by test_leftover and agents/leftover.c, both compiled with it.
SHRUNK_OBJS := $(BUILD)/obj/shrunk/tests/test_leftover.o $(BUILD)/obj/shrunk/agents/leftover.o
$(SHRUNK_OBJS): CFLAGS += -DDCCL_LEFTOVER_SHRINK -DDYNAMICCL_SOURCE_DIR='"$(CURDIR)"'
$(SHRUNK_OBJS): $(BUILD)/obj/shrunk/%.o: %.c
	$(call compile_c, (DCCL_LEFTOVER_SHRINK))
$(BUILD)/tests/test_leftover_shrunk: $(SHRUNK_OBJS) $(call obj,core/text_file.c)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@",true)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(LDLIBS)

$(BUILD)/bench/%: $(call obj,bench/%.c) $(EMU_LIB) $(SIM_LIB) $(PLUGIN_LIB) | plugin
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@",true)
	$(Q)$(CC) -o $@ $^ $(LDFLAGS) $(LDLIBS)

# Runs every test binary of one build and prints one closing "N passed, N failed" line.
test-fast: all
	@tests/run_all.sh $(BUILD)

test-asan:
	@$(MAKE) --no-print-directory BUILD=build-asan SANITIZE=1 all
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 tests/run_all.sh build-asan

# ThreadSanitizer runs the tests whose threads share state: the registry and its drain thread, the
# coordination service, the learner beside the hot path, ranks as threads and processes, the decision
# table's publisher and bell racing the hot path, the profiler's event records between NCCL's host and
# proxy threads, and the measurement queue's producers.
TSAN_TESTS := test_plugin test_coord test_coordination test_emulator test_decision_table test_event_pool test_queue
TSAN_ENV := TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

TSAN_BUILD := $(MAKE) --no-print-directory BUILD=build-tsan SANITIZE=thread plugin $(addprefix build-tsan/tests/,$(TSAN_TESTS))

test-tsan:
	@tests/tsan_available.sh "$(CC)"
	+@$(TSAN_BUILD)
	@$(TSAN_ENV) tests/run_all.sh build-tsan

# The TSan part is skipped, with a line saying why, where ThreadSanitizer cannot run (tests/tsan_available.sh).
# Its builds use every processor unless make was given -j itself.
TEST_BUILD_JOBS = $(if $(findstring -j,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 1))
test:
	@$(MAKE) --no-print-directory $(TEST_BUILD_JOBS) all
	@$(MAKE) --no-print-directory $(TEST_BUILD_JOBS) BUILD=build-asan SANITIZE=1 all
	+@builds="build build-asan"; \
	if tests/tsan_available.sh "$(CC)"; then $(TSAN_BUILD) $(TEST_BUILD_JOBS) && builds="$$builds build-tsan" || exit 1; fi; \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 $(TSAN_ENV) tests/run_all.sh $$builds

demo: all
	@tools/demo.sh $(BUILD)

bench: all
	@$(BUILD)/bench/bench_hotpath
	@$(BUILD)/bench/bench_sim
	@$(BUILD)/bench/bench_trigger
	@zcat docs/results/gpu/15-cold-learn-trace-pairs-r6/learn-trace/trace-0.csv.gz | $(BUILD)/bench/bench_trigger_trace -
	@$(BUILD)/bench/bench_nn

# The agents' evaluation on the simulator (static and dynamic scenarios, warm start; ~4 minutes).
$(BUILD)/gpu/collbench: bench/gpu/collbench.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $@ (CUDA runtime + NCCL)",true)
	$(Q)$(CC) $(GPU_CFLAGS) -I$(NCCL_HOME)/include -I$(CUDA_HOME)/include $< -o $@ -L$(NCCL_HOME)/lib64 -L$(NCCL_HOME)/lib \
	  -L$(CUDA_HOME)/lib64 -l:libnccl.so.2 -lcudart -lm
$(BUILD)/gpu/loopback_load: bench/gpu/loopback_load.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(GPU_CFLAGS) $< -o $@

# The mocks are built without sanitizers in every build, as collbench is: they are loaded into it. Mock
# NCCL hosts the plugins with the emulator's loader and ABI calls (emu/plugin_loader.c, emu/nccl_calls.c).
MOCK_CFLAGS = $(GPU_CFLAGS) -fPIC -pthread -Wstrict-prototypes -Wmissing-prototypes
MOCK_NCCL_SRCS := $(filter-out %/mock_cudart.c,$(wildcard bench/gpu/mock/*.c)) emu/plugin_loader.c emu/nccl_calls.c
MOCK_HEADERS := $(wildcard bench/gpu/mock/*.h) $(wildcard emu/*.h) $(wildcard abi/*.h) core/types.h
ifeq ($(HAVE_CUDA),1)
$(MOCK_HOME)/lib/libnccl.so.2: $(MOCK_NCCL_SRCS) $(MOCK_HEADERS)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@ (mock NCCL)",true)
	$(Q)printf '{ global: nccl*; local: *; };\n' > $(MOCK_HOME)/nccl.map
	$(Q)$(CC) $(MOCK_CFLAGS) -shared -Wl,-soname,libnccl.so.2 -Wl,--version-script,$(MOCK_HOME)/nccl.map -Wl,-z,defs \
	  $(MOCK_NCCL_SRCS) -o $@ -ldl -lrt -lm
$(MOCK_HOME)/lib/$(CUDART_SONAME): bench/gpu/mock/mock_cudart.c bench/gpu/mock/mock_cuda.h
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  LINK    $@ (mock CUDA runtime)",true)
	$(Q)printf '$(CUDART_SONAME) { global: cuda*; mockCuda*; local: *; };\n' > $(MOCK_HOME)/cudart.map
	$(Q)$(CC) $(MOCK_CFLAGS) -shared -Wl,-soname,$(CUDART_SONAME) -Wl,--version-script,$(MOCK_HOME)/cudart.map \
	  -Wl,-z,defs $< -o $@
$(MOCK_HOME)/include/nccl.h:
	@mkdir -p $(dir $@)
	$(Q)ln -sf $(abspath $(NCCL_HOME)/include/nccl.h) $@
endif

# The GPU scripts on the mocks, run like the tests: collbench's modes and run.sh (it skips where
# HAVE_CUDA is empty).
$(BUILD)/tests/test_gpu_scripts: tests/test_gpu_scripts.sh Makefile
	@mkdir -p $(dir $@)
	$(Q)printf '#!/bin/sh\n# Made by the Makefile: tests/test_gpu_scripts.sh on this build.\nexec "%s" "%s" "%s"\n' \
	  '$(CURDIR)/tests/test_gpu_scripts.sh' '$(abspath $(BUILD))' '$(HAVE_CUDA)' > $@
	$(Q)chmod +x $@

# The dccl command's readable outputs and bench_replay.sh (tests/test_cli.sh), on this build's dccl.
$(BUILD)/tests/test_cli: tests/test_cli.sh Makefile
	@mkdir -p $(dir $@)
	$(Q)printf '#!/bin/sh\n# Made by the Makefile: tests/test_cli.sh on this build.\nexec "%s" "%s"\n' \
	  '$(CURDIR)/tests/test_cli.sh' '$(abspath $(BUILD))' > $@
	$(Q)chmod +x $@

# make test's runner, tests/run_all.sh, on stand-in test binaries (tests/test_run_all.sh).
$(BUILD)/tests/test_run_all: tests/test_run_all.sh Makefile
	@mkdir -p $(dir $@)
	$(Q)printf '#!/bin/sh\n# Made by the Makefile: tests/test_run_all.sh.\nexec "%s"\n' '$(CURDIR)/tests/test_run_all.sh' > $@
	$(Q)chmod +x $@

# Fuzz targets (tests/fuzz/): the coordination message parser (fuzz_wire), the policy file loader with
# the agent a loaded policy drives (fuzz_policy), and the text parsers (fuzz_text: rules, decision
# tables, settings, addresses, the simulator's profiles, workloads and conditions). `make fuzz` runs
# each for FUZZ_SECONDS with libFuzzer (needs clang; corpora in $(BUILD)/fuzz-corpus/NAME, fuzz_policy's
# seeded with policies `dccl train` saves, fuzz_text's with scenarios/); without clang, or in `all`,
# each builds as a replay driver (build/fuzz_NAME FILE...).
FUZZ_SECONDS ?= 60
$(BUILD)/fuzz_wire: tests/fuzz/fuzz_wire.c tests/fuzz/replay_driver.h $(PLUGIN_LIB)
	$(Q)$(CC) $(CFLAGS) $< -o $@ $(PLUGIN_LIB) $(LDFLAGS) $(LDLIBS)
$(BUILD)/fuzz_policy: tests/fuzz/fuzz_policy.c tests/fuzz/policy_target.c tests/fuzz/replay_driver.h $(PLUGIN_LIB)
	$(Q)$(CC) $(CFLAGS) tests/fuzz/fuzz_policy.c tests/fuzz/policy_target.c -o $@ $(PLUGIN_LIB) $(LDFLAGS) $(LDLIBS)
$(BUILD)/fuzz_text: tests/fuzz/fuzz_text.c tests/fuzz/replay_driver.h $(SIM_LIB) $(PLUGIN_LIB)
	$(Q)$(CC) $(CFLAGS) $< -o $@ $(SIM_LIB) $(PLUGIN_LIB) $(LDFLAGS) $(LDLIBS)
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -g -O1 -DDCCL_LIBFUZZER -fsanitize=fuzzer,address,undefined \
              -fno-sanitize-recover=undefined
fuzz: $(CLI)
	@if command -v clang >/dev/null 2>&1; then \
	  mkdir -p $(BUILD)/fuzz-corpus/fuzz_wire $(BUILD)/fuzz-corpus/fuzz_policy && \
	  clang $(FUZZ_CFLAGS) tests/fuzz/fuzz_wire.c $(PLUGIN_SRCS) -o $(BUILD)/fuzz_wire -lm -ldl -pthread && \
	  clang $(FUZZ_CFLAGS) tests/fuzz/fuzz_policy.c tests/fuzz/policy_target.c $(PLUGIN_SRCS) \
	    -o $(BUILD)/fuzz_policy -lm -ldl -pthread && \
	  { [ -n "$$(ls $(BUILD)/fuzz-corpus/fuzz_policy)" ] || \
	    { $(CLI) train --scenario roce-16x1,mixed-long,congestion-episodes --calls 30000 --quiet \
	        --out $(BUILD)/fuzz-corpus/fuzz_policy/roce.bin && \
	      $(CLI) train --scenario h100-2x8-ib,sweep --calls 10000 --nccl 2.27 --quiet \
	        --out $(BUILD)/fuzz-corpus/fuzz_policy/ib.bin; }; } && \
	  clang $(FUZZ_CFLAGS) tests/fuzz/fuzz_text.c $(PLUGIN_SRCS) $(SIM_SRCS) -o $(BUILD)/fuzz_text -lm -ldl -pthread && \
	  mkdir -p $(BUILD)/fuzz-corpus/fuzz_text && \
	  for kind in 4:profiles 5:workloads 6:conditions; do \
	    for file in scenarios/$${kind#*:}/*; do \
	      { printf "\\$${kind%%:*}"; cat "$$file"; } > $(BUILD)/fuzz-corpus/fuzz_text/$$(basename "$$file"); \
	    done; \
	  done && \
	  for target in $(FUZZ_TARGETS); do \
	    echo "== $$target, $(FUZZ_SECONDS) s"; \
	    $(BUILD)/$$target -max_total_time=$(FUZZ_SECONDS) -max_len=60000 -timeout=20 \
	      -artifact_prefix=$(BUILD)/$$target- $(BUILD)/fuzz-corpus/$$target || exit 1; \
	  done; \
	else echo "clang not found: building the replay drivers only"; \
	  $(MAKE) --no-print-directory $(addprefix $(BUILD)/,$(FUZZ_TARGETS)); fi

# The coordination test at the issue's full length: 8 processes x 10^6 calls with faults.
test-coordination-long: all
	@DYNAMICCL_TEST_CALLS=1000000 $(BUILD)/tests/test_coordination 2>/dev/null

# docs/results.md and its plots: every policy over the scenario suite (dccl eval), then gnuplot
# (installed from Debian by tools/install_deps.sh when missing).
report: all
	@tools/report.sh $(BUILD)

bench-agents: all
	@bench/bench_agents.sh $(BUILD)

# Issue 5's per-size targets on the replayed GPU measurements: learn, then the saved policy frozen.
bench-replay: all
	@bench/bench_replay.sh $(BUILD)

# The learner's cost (DYNAMICCL_COST=leftover) under the mixed workload's compute gaps, over seeds.
bench-mixed: all
	@bench/bench_mixed.sh $(BUILD)

# A warm start from the replay's policy (bench/gpu/run.sh --warm-from-replay), where the truth agrees and
# where it does not, against cold learning.
bench-warm-start: all
	@bench/bench_warm_start.sh $(BUILD)

# Learning beside a CUDA graph, with (NCCL 2.28's ABIs) and without (2.27's) the CollApi events.
bench-graphs: all
	@bench/bench_graphs.sh $(BUILD)

# Whether the plugin's background learner keeps up with back-to-back collectives (library, paced).
bench-learner: all
	@bench/bench_learner_pace.sh $(BUILD)

clean:
	rm -rf build build-asan build-tsan build-shrink

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
