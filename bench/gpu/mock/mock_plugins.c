/* bench/gpu/mock/mock_plugins.c: NCCL's side of the tuner and profiler plugin ABIs, for the mock NCCL. */
#include "mock_plugins.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../abi/nccl_profiler_abi.h"
#include "../../../emu/nccl_calls.h"
#include "mock_log.h"
#include "mock_nccl.h"

/* Loads the plugin that `variable` names, looking for the ABI versions of `kind` the mock's release knows. */
static void load(const char* variable, const char* kind, const char* label, unsigned long log_flags,
                 dccl_loaded_plugin* out) {
  memset(out, 0, sizeof(*out));
  const char* value = getenv(variable);
  if (value == NULL || value[0] == '\0') return;
  int max_tuner = 0, max_profiler = 0;
  dccl_nccl_release_abis(mock_nccl_release(), &max_tuner, &max_profiler);
  if (strcmp(kind, "tuner") == 0) max_profiler = 0;
  else max_tuner = 0;
  char path[4096], error[512] = "";
  if (strchr(value, '/') == NULL) snprintf(path, sizeof(path), "libnccl-%s-%s.so", kind, value);
  else snprintf(path, sizeof(path), "%s", value);
  int loaded = dccl_plugin_load(path, max_tuner, max_profiler, out, error, sizeof(error)) == 0;
  if (!loaded && strcmp(path, value) != 0) /* NAME: libnccl-<kind>-NAME.so, else NAME itself */
    loaded = dccl_plugin_load(value, max_tuner, max_profiler, out, error, sizeof(error)) == 0;
  if (!loaded) {
    MOCK_INFO(log_flags, "%s/Plugin: could not load %s (%s): running without it", label, value, error);
    return;
  }
  int version = max_tuner > 0 ? out->tuner_version : out->profiler_version;
  if (version == 0) {
    MOCK_INFO(log_flags, "%s/Plugin: %s has no %s symbol NCCL %s knows: running without it", label, value, kind,
              mock_nccl_release());
    dccl_plugin_unload(out);
    return;
  }
  MOCK_INFO(log_flags, "%s/Plugin: Using %s (v%d)", label, value, version);
}

void mock_plugins_init(mock_plugins* p, uint64_t comm_id, int n_ranks, int n_nodes, int rank) {
  memset(p, 0, sizeof(*p));
  p->rank = rank;
  p->one_rank_per_node = n_ranks == n_nodes;
  load("NCCL_PROFILER_PLUGIN", "profiler", "PROFILER", NCCL_INIT | NCCL_PROFILE, &p->profiler);
  load("NCCL_TUNER_PLUGIN", "tuner", "TUNER", NCCL_INIT | NCCL_TUNING, &p->tuner);
  if (p->profiler.profiler_version != 0) {
    int mask = 0;
    if (dccl_emu_profiler_init(&p->profiler, &p->profiler_context, comm_id, &mask, n_nodes, n_ranks, rank, mock_log) !=
        ncclSuccess) {
      MOCK_INFO(NCCL_INIT | NCCL_PROFILE, "PROFILER/Plugin: init failed: running without it");
      dccl_plugin_unload(&p->profiler);
    } else {
      /* NCCL emits Coll events when any event under them is active, KernelCh events only when asked. */
      p->collective_events = (mask & (ncclProfileColl | ncclProfileKernelCh)) != 0;
      p->kernel_events = (mask & ncclProfileKernelCh) != 0;
    }
  }
  if (p->tuner.tuner_version != 0 &&
      dccl_emu_tuner_init(&p->tuner, &p->tuner_context, comm_id, n_ranks, n_nodes, mock_log) != ncclSuccess) {
    MOCK_INFO(NCCL_INIT | NCCL_TUNING, "TUNER/Plugin: init failed: running without it");
    dccl_plugin_unload(&p->tuner);
  }
}

int mock_plugins_choose(mock_plugins* p, ncclFunc_t func, size_t bytes, mock_execution* out) {
  float cost[NCCL_ABI_NUM_ALGORITHMS][NCCL_ABI_NUM_PROTOCOLS];
  mock_cost_table(func, bytes, p->one_rank_per_node, cost);
  int tuner_channels = 0;
  if (p->tuner.tuner_version != 0)
    dccl_emu_tuner_get_coll_info(&p->tuner, p->tuner_context, func, bytes, 1, 0, &cost[0][0], &tuner_channels);
  return mock_select(cost, bytes, tuner_channels, out);
}

void* mock_plugins_collective(mock_plugins* p, ncclFunc_t func, size_t count, const mock_execution* e) {
  if (!p->collective_events) return NULL;
  void* handle = dccl_emu_profiler_coll_start(&p->profiler, p->profiler_context, p->rank, NULL, p->seq[func]++, func,
                                              count, "ncclFloat32", e->channels, e->algo, e->proto);
  dccl_emu_profiler_stop(&p->profiler, handle); /* NCCL stops the Coll event right after enqueueing */
  return handle;
}

void mock_plugins_ran(mock_plugins* p, void* collective, const mock_execution* e, uint64_t gpu_start_ns,
                      uint64_t gpu_stop_ns) {
  if (collective == NULL || !p->kernel_events) return;
  for (int c = 0; c < e->channels; c++) {
    void* channel =
      dccl_emu_profiler_channel_start(&p->profiler, p->profiler_context, p->rank, collective, c, gpu_start_ns);
    dccl_emu_profiler_channel_stop(&p->profiler, channel, gpu_stop_ns);
  }
}

void mock_plugins_finalize(mock_plugins* p) {
  if (p->tuner.tuner_version != 0) {
    dccl_emu_tuner_finalize(&p->tuner, p->tuner_context);
    dccl_plugin_unload(&p->tuner);
  }
  if (p->profiler.profiler_version != 0) {
    dccl_emu_profiler_finalize(&p->profiler, p->profiler_context);
    dccl_plugin_unload(&p->profiler);
  }
}
