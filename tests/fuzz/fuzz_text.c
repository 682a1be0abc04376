/* tests/fuzz/fuzz_text.c: fuzz target for the text parsers: rule pins (core/rules.c), decision-table text
 * (persist/table_text.c), the DYNAMICCL_* settings (core/settings.c) and the simulator's profiles,
 * workloads and conditions (sim/profile.c, sim/workload.c, sim/schedule.c).
 *
 * The first input byte picks the parser (byte % TARGETS; byte / TARGETS picks a variant, e.g. the
 * communicator shape a table is read for), the rest is the text. What a parser accepts is then used a
 * little and checked: every invariant the parser promises (finite numbers, ranges, a table that
 * survives format and parse unchanged, a schedule whose segments are ordered) aborts when broken.
 *
 * With libFuzzer (-DDCCL_LIBFUZZER, clang -fsanitize=fuzzer,address,undefined) it is a fuzzer; without,
 * the same file builds a driver that runs the target on each file named on the command line (to replay
 * a crash). Seeds: one file per example, its first byte the selector. FUZZ_TEXT_TARGET=N in the environment
 * restricts a run to parser N (0 rules, 1 table, 2 settings, 3 host:port, 4 profile, 5 workload, 6 schedule). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/action.h"
#include "../../core/decision_table.h"
#include "../../core/log.h"
#include "../../core/rules.h"
#include "../../core/settings.h"
#include "../../persist/table_text.h"
#include "../../sim/keyvalue.h"
#include "../../sim/nccl_model.h"
#include "../../sim/profile.h"
#include "../../sim/schedule.h"
#include "../../sim/truth.h"
#include "../../sim/workload.h"

enum { TARGET_RULES, TARGET_TABLE, TARGET_SETTINGS, TARGET_HOST_PORT, TARGET_PROFILE, TARGET_WORKLOAD, TARGET_SCHEDULE, TARGETS };

/* A broken invariant: says which, then aborts (libFuzzer saves the input). */
#define REQUIRE(cond)                                                                   \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      fprintf(stderr, "fuzz_text: invariant broken at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                                          \
    }                                                                                   \
  } while (0)

static void discard_log_line(int level, const char* line) {
  (void)level;
  (void)line;
}

static int in_range(double value, double low, double high) { return isfinite(value) && value >= low && value <= high; }

/* Communicator shapes (ranks, nodes) the rules and tables are read for; the selector byte picks one. */
static const int shapes[][2] = {{8, 1}, {16, 2}, {4, 4}, {2, 1}, {64, 8}, {1, 1}};
#define SHAPES ((int)(sizeof(shapes) / sizeof(shapes[0])))

/* ---- rule pins ---- */

/* The first rule matching a call, by a plain scan and through the per-cell index: they must agree. */
static void check_pins(const dccl_pin_set* pins) {
  REQUIRE(pins->cell_start[0] == 0);
  for (int cell = 0; cell < DCCL_TABLE_CELLS; cell++) {
    uint32_t begin, end;
    dccl_pins_candidates(pins, cell, &begin, &end);
    REQUIRE(begin <= end);
    for (uint32_t i = begin; i < end; i++) {
      REQUIRE(pins->cell_rules[i] < pins->count);
      if (i > begin) REQUIRE(pins->cell_rules[i] > pins->cell_rules[i - 1]); /* file order */
    }
  }
  static const uint64_t sizes[] = {0, 1, 2, 1000, 4096, 65535, 65536, 1 << 20, (1ULL << 47) - 1, 1ULL << 47, UINT64_MAX};
  static const int pipes[] = {1, 2, 3, 4, 5, 100};
  for (int coll = 0; coll < DCCL_NUM_COLLS; coll++)
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
      for (size_t p = 0; p < sizeof(pipes) / sizeof(pipes[0]); p++)
        for (int reg = 0; reg < 2; reg++) {
          int scan = -1;
          for (int i = 0; i < pins->count && scan < 0; i++)
            if (dccl_rule_matches(&pins->rules[i], coll, sizes[s], pipes[p], reg)) scan = i;
          uint32_t begin, end;
          dccl_pins_candidates(pins, dccl_cell_for_call(coll, (size_t)sizes[s], pipes[p], reg), &begin, &end);
          int indexed = -1;
          for (uint32_t i = begin; i < end && indexed < 0; i++)
            if (dccl_rule_matches(&pins->rules[pins->cell_rules[i]], coll, sizes[s], pipes[p], reg))
              indexed = pins->cell_rules[i];
          REQUIRE(scan == indexed);
        }
}

static void fuzz_rules(const char* text, int variant) {
  static dccl_rule_list rules;
  int rejected = dccl_rules_parse(text, "fuzz.csv", &rules, NULL);
  REQUIRE(rejected >= 0 && rules.count >= 0 && rules.count <= DCCL_MAX_RULES);
  for (int i = 0; i < rules.count; i++) {
    char why[256];
    REQUIRE(dccl_rule_check(&rules.rules[i], why, sizeof(why)) == 0);
    REQUIRE(rules.rules[i].line >= 1);
  }
  dccl_pin_set pins;
  REQUIRE(dccl_pins_compile(&pins, &rules, shapes[variant % SHAPES][1], shapes[variant % SHAPES][0]) == 0);
  check_pins(&pins);
  dccl_pins_free(&pins);
  if (rules.count > 0) { /* the communicator the first rule names */
    const dccl_rule* first = &rules.rules[0];
    REQUIRE(dccl_pins_compile(&pins, &rules, first->n_nodes, first->n_ranks) == 0);
    check_pins(&pins);
    dccl_pins_free(&pins);
  }
}

/* ---- decision-table text ---- */

static void check_table(const dccl_table* table, int n_ranks, int n_nodes) {
  for (int cell = 0; cell < DCCL_TABLE_CELLS; cell++) {
    int coll, bin, pipe, reg;
    dccl_cell_decode(cell, &coll, &bin, &pipe, &reg);
    dccl_action a = dccl_table_get(table, cell), b = atomic_load(&table->explore[cell]);
    uint8_t mask = atomic_load(&table->explore_mask[cell]);
    REQUIRE(mask == 0 || mask == DCCL_TABLE_ALTERNATE_MASK || mask == DCCL_TABLE_BLOCKS_MASK);
    REQUIRE(mask != 0 || b == DCCL_ACTION_NCCL);
    for (int k = 0; k < 2; k++) {
      dccl_action x = k == 0 ? a : b;
      REQUIRE(dccl_action_well_formed(x));
      REQUIRE(dccl_action_is_nccl(x) ||
              dccl_algo_proto_allowed(coll, dccl_action_algo(x), dccl_action_proto(x), n_ranks, n_nodes));
    }
  }
}

static void fuzz_table(const char* text, int variant) {
  int n_ranks = shapes[variant % SHAPES][0], n_nodes = shapes[variant % SHAPES][1];
  dccl_table* table = calloc(1, sizeof(dccl_table));
  dccl_table* again = calloc(1, sizeof(dccl_table));
  REQUIRE(table != NULL && again != NULL);
  REQUIRE(dccl_table_text_parse(text, "fuzz.table", n_ranks, n_nodes, table, NULL) >= 0);
  check_table(table, n_ranks, n_nodes);
  /* What the parser accepted, written and read back, is the same table, and is written the same way. */
  char* written = dccl_table_text_format(table);
  REQUIRE(written != NULL);
  REQUIRE(dccl_table_text_parse(written, "fuzz.formatted", n_ranks, n_nodes, again, NULL) == 0);
  REQUIRE(dccl_table_same_decisions(table, again));
  char* rewritten = dccl_table_text_format(again);
  REQUIRE(rewritten != NULL && strcmp(written, rewritten) == 0);
  free(rewritten);
  free(written);
  free(again);
  free(table);
}

/* ---- settings ---- */

/* The variables a settings input may set: the documented ones, NCCL's buffer sizes and torchrun's
 * address (never anything else of the process's environment). */
static const char* const extra_variables[] = {"NCCL_LL_BUFFSIZE", "NCCL_LL128_BUFFSIZE", "NCCL_BUFFSIZE", "MASTER_ADDR",
                                              "MASTER_PORT", NULL};

static int settable(const char* name) {
  for (const dccl_setting_doc* d = dccl_setting_docs; d->name != NULL; d++)
    if (strcmp(name, d->name) == 0) return 1;
  for (int i = 0; extra_variables[i] != NULL; i++)
    if (strcmp(name, extra_variables[i]) == 0) return 1;
  return 0;
}

static void clear_settings_environment(void) {
  for (const dccl_setting_doc* d = dccl_setting_docs; d->name != NULL; d++) unsetenv(d->name);
  for (int i = 0; extra_variables[i] != NULL; i++) unsetenv(extra_variables[i]);
}

static int is_power_of_two(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

/* A host:port the settings keep is one the coordination service parses, into a host it can hold; when
 * DYNAMICCL_COORD gave one, the same host and port. */
static void check_registry(const char* registry, int given, const char* given_host, uint16_t given_port) {
  if (registry[0] == '\0') {
    REQUIRE(!given);
    return;
  }
  char host[DCCL_HOST_MAX + 1];
  uint16_t port;
  REQUIRE(dccl_parse_host_port(registry, host, sizeof(host), &port) == 0);
  REQUIRE(port >= 1);
  REQUIRE(!given || (strcmp(host, given_host) == 0 && port == given_port));
}

/* Input: lines NAME=VALUE (only the names `settable` allows are set; the value may be empty). */
static void fuzz_settings(char* text) {
  clear_settings_environment();
  for (char *line = text, *next; line != NULL; line = next) {
    next = strchr(line, '\n');
    if (next != NULL) *next++ = '\0';
    char* equals = strchr(line, '=');
    if (equals == NULL) continue;
    *equals = '\0';
    if (settable(line)) setenv(line, equals + 1, 1);
  }
  const char* coordination = getenv("DYNAMICCL_COORD");
  char given_host[DCCL_HOST_MAX + 1];
  uint16_t given_port = 0;
  int given = coordination != NULL && dccl_parse_host_port(coordination, given_host, sizeof(given_host), &given_port) == 0;
  dccl_settings s;
  dccl_settings_load(&s, NULL);
  clear_settings_environment();
  REQUIRE(s.mode >= DCCL_MODE_DEFAULT && s.mode <= DCCL_MODE_FROZEN);
  REQUIRE(s.profile >= DCCL_PROFILE_AUTO && s.profile <= DCCL_PROFILE_ON);
  REQUIRE(is_power_of_two(s.queue_capacity) && s.queue_capacity >= 64 && s.queue_capacity <= 1u << 20);
  REQUIRE(is_power_of_two(s.event_pool) && s.event_pool >= 64 && s.event_pool <= 1u << 16);
  REQUIRE(is_power_of_two(s.epoch_calls) && s.epoch_calls <= 1u << 20);
  REQUIRE(strlen(s.table_file) < DCCL_PATH_MAX && strlen(s.rules_file) < DCCL_PATH_MAX &&
          strlen(s.trace_file) < DCCL_PATH_MAX && strlen(s.policy_dir) < DCCL_PATH_MAX &&
          strlen(s.policy_file) < DCCL_PATH_MAX);
  REQUIRE(strcmp(s.coordination, "auto") == 0 || strcmp(s.coordination, "off") == 0 || strcmp(s.coordination, "solo") == 0);
  REQUIRE(strlen(s.coord_registry) < sizeof(s.coord_registry));
  check_registry(s.coord_registry, given, given_host, given_port);
  REQUIRE(in_range(s.coord_timeout_seconds, 0.1, 1e6));
  REQUIRE(in_range(s.coord_drop, 0, 0.5));
  REQUIRE(s.coord_present_ranks >= 0 && s.coord_present_ranks <= 1 << 20);
  REQUIRE(in_range(s.save_seconds, 0, 1e7));
  REQUIRE(in_range(s.guard_pct, 0, 100));
  REQUIRE(in_range(s.gamma, 0, 0.9));
  REQUIRE(in_range(s.epsilon, 0, 1) && in_range(s.epsilon_min, 0, s.epsilon));
  REQUIRE(in_range(s.explore_budget_pct, 0, 100));
  REQUIRE(in_range(s.cusum_k, 0, 10) && in_range(s.cusum_h, 0.5, 1000));
  REQUIRE(s.trigger >= DCCL_TRIGGER_OFF && s.trigger <= DCCL_TRIGGER_LSTM);
  REQUIRE(s.cost >= DCCL_COST_SPAN && s.cost <= DCCL_COST_LEFTOVER);
  REQUIRE(s.learn_after_switch == 0 || s.learn_after_switch == 1);
  REQUIRE(s.max_channels >= 1 && s.max_channels <= DCCL_MAX_CHANNELS);
  for (int p = 0; p < 3; p++)
    REQUIRE(s.nccl_buffer_bytes[p] == 0 || (s.nccl_buffer_bytes[p] >= 4096 && s.nccl_buffer_bytes[p] <= 1LL << 31));
  REQUIRE(s.model_intensity == -1 || in_range(s.model_intensity, 0, 1e6));
  REQUIRE(s.batch_size == 0 || in_range(s.batch_size, 1, 1e9));
  REQUIRE(s.learn_for <= 1ULL << 50);
  REQUIRE(s.seed_given || s.seed == 0);
  REQUIRE(s.seed <= (uint64_t)INT64_MAX);
  REQUIRE(s.agent >= 0 && s.agent <= 2);
}

/* An accepted address is written back the way the settings keep it and parses to the same host and port. */
static void fuzz_host_port(const char* text, int variant) {
  size_t host_size = variant % 2 == 0 ? DCCL_HOST_MAX + 1 : 8;
  char host[DCCL_HOST_MAX + 1], again[DCCL_HOST_MAX + 1];
  uint16_t port, port_again;
  if (dccl_parse_host_port(text, host, host_size, &port) != 0) return;
  REQUIRE(strlen(host) >= 1 && strlen(host) < host_size && port >= 1);
  char address[DCCL_HOST_MAX + 16];
  dccl_format_host_port(address, sizeof(address), host, port);
  REQUIRE(dccl_parse_host_port(address, again, sizeof(again), &port_again) == 0);
  REQUIRE(strcmp(host, again) == 0 && port == port_again);
}

/* ---- simulator scenarios ---- */

static void check_graph(const dccl_graph* g) {
  REQUIRE(g->channels >= 0 && g->channels <= DCCL_MAX_CHANNELS);
  REQUIRE(in_range(g->bw_intra, 0, 1e4) && in_range(g->bw_inter, 0, 1e4) && in_range(g->latency_inter, 0, 1e4));
  REQUIRE(g->type_intra >= DCCL_PATH_LOC && g->type_intra <= DCCL_PATH_NET);
  REQUIRE(g->type_inter >= DCCL_PATH_LOC && g->type_inter <= DCCL_PATH_NET);
}

static void fuzz_profile(const char* text) {
  static dccl_profile profile;
  char error[512];
  if (dccl_profile_parse(text, "fuzz.profile", &profile, error, sizeof(error)) != 0) {
    REQUIRE(memchr(error, '\0', sizeof(error)) != NULL && error[0] != '\0');
    return;
  }
  const dccl_profile* p = &profile;
  REQUIRE(memchr(p->name, '\0', sizeof(p->name)) != NULL && memchr(p->description, '\0', sizeof(p->description)) != NULL);
  REQUIRE(p->n_nodes >= 1 && p->ranks_per_node >= 1 && p->n_ranks == p->n_nodes * p->ranks_per_node);
  REQUIRE(p->channels >= 1 && p->channels <= DCCL_MAX_CHANNELS && p->graphs[DCCL_ALGO_RING].channels >= 1);
  for (int a = 0; a < DCCL_NUM_ALGOS; a++) check_graph(&p->graphs[a]);
  /* Every number of the truth is finite (the parser takes finite values only; the defaults are). */
  const double* truth = (const double*)&p->truth;
  for (size_t i = 0; i < sizeof(p->truth) / sizeof(double); i++) REQUIRE(isfinite(truth[i]));
  REQUIRE(p->n_measured >= 0 && p->n_measured <= DCCL_MEASURED_MAX);
  for (int i = 0; i < p->n_measured; i++) {
    const dccl_measured_point* m = &p->measured[i];
    REQUIRE(m->coll < DCCL_NUM_COLLS && m->algo < DCCL_NUM_ALGOS && m->proto < DCCL_NUM_PROTOS && m->channels >= 1);
    REQUIRE(in_range(m->bytes, 1, 1e13) && m->latency_us > 0 && m->latency_us < 1e9);
  }
  REQUIRE(p->n_leftovers >= 0 && p->n_leftovers <= DCCL_LEFTOVER_MAX);
  for (int i = 0; i < p->n_leftovers; i++) {
    const dccl_leftover* l = &p->leftovers[i];
    REQUIRE(in_range(l->fraction, 0, 0.9) && in_range(l->spread, 0, DCCL_LEFTOVER_SPREAD_MAX));
    REQUIRE(l->form == DCCL_LEFTOVER_LATER || l->form == DCCL_LEFTOVER_LONGER);
    double spread, fraction = dccl_profile_leftover(p, l->form, l->coll, l->algo, l->proto, l->channels, 3000.0, &spread);
    REQUIRE(in_range(fraction, 0, 0.9) && in_range(spread, 0, DCCL_LEFTOVER_SPREAD_MAX));
  }
  /* What NCCL's model and the truth make of it: NCCL's choice for a few calls, its latency finite. */
  static dccl_nccl_model model;
  dccl_nccl_model_init(&model, p);
  static const size_t sizes[] = {1, 4096, 1 << 20, (size_t)1 << 30};
  static const dccl_conditions conditions[] = {{0, 0}, {1, 1}};
  for (int coll = 0; coll < DCCL_NUM_COLLS; coll++)
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
      dccl_execution e;
      if (dccl_nccl_execute(&model, coll, sizes[s], 1, DCCL_ACTION_NCCL, &e) != 0) continue;
      REQUIRE(e.channels >= 1 && e.channels <= DCCL_MAX_CHANNELS);
      for (int c = 0; c < 2; c++) {
        double latency = dccl_truth_latency_us(p, coll, sizes[s], 1, &e, &conditions[c]);
        REQUIRE(isfinite(latency) && latency > 0);
      }
    }
}

static void fuzz_workload(const char* text) {
  dccl_workload w;
  char error[512];
  if (dccl_workload_parse(text, "fuzz.workload", &w, error, sizeof(error)) != 0) {
    REQUIRE(w.ops == NULL && error[0] != '\0');
    return;
  }
  REQUIRE(w.n_ops >= 1 && w.n_ops <= DCCL_WORKLOAD_MAX_OPS && w.iterations >= 1);
  REQUIRE(memchr(w.name, '\0', sizeof(w.name)) != NULL);
  uint64_t per_iteration = 0, total;
  for (int i = 0; i < w.n_ops; i++) {
    const dccl_workload_op* op = &w.ops[i];
    REQUIRE(op->coll >= 0 && op->coll < DCCL_NUM_COLLS && op->bytes >= 1 && op->count >= 1);
    REQUIRE(in_range(op->gap_us, 0, DCCL_MAX_DURATION_US));
    REQUIRE(op->pipe_ops >= 1 && (op->reg_buff == 0 || op->reg_buff == 1));
    REQUIRE(!__builtin_add_overflow(per_iteration, op->count, &per_iteration));
  }
  REQUIRE(per_iteration == w.calls_per_iteration && !__builtin_mul_overflow(per_iteration, w.iterations, &total));
  REQUIRE(dccl_workload_total_calls(&w) == total);
  /* The first calls, in order. */
  dccl_workload_cursor cursor;
  dccl_workload_start(&cursor, &w, 2000);
  dccl_call call;
  uint64_t n = 0;
  while (dccl_workload_next(&cursor, &call)) {
    REQUIRE(call.index == n++ && call.coll >= 0 && call.coll < DCCL_NUM_COLLS && call.bytes >= 1);
  }
  REQUIRE(n == (total < 2000 ? total : 2000));
  dccl_workload_free(&w);
}

static void check_segments(const dccl_schedule* s, uint64_t horizon) {
  REQUIRE(s->n_segments >= 1 && s->segments[0].start == 0);
  for (size_t i = 0; i < s->n_segments; i++) {
    const dccl_segment* g = &s->segments[i];
    REQUIRE(in_range(g->conditions.congestion, 0, 1) && in_range(g->conditions.interference, 0, 1));
    if (i > 0) {
      REQUIRE(g->start > s->segments[i - 1].start);
      REQUIRE(g->conditions.congestion != s->segments[i - 1].conditions.congestion ||
              g->conditions.interference != s->segments[i - 1].conditions.interference);
      REQUIRE(g->start <= horizon);
    }
  }
  /* Sequential lookups with a hint agree with lookups without one. */
  size_t hint = 0;
  for (uint64_t call = 0; call < 3000; call += 1 + call / 64) {
    dccl_conditions with_hint, without;
    size_t a = dccl_schedule_at(s, call, &hint, &with_hint), b = dccl_schedule_at(s, call, NULL, &without);
    REQUIRE(a == b && a < s->n_segments && s->segments[a].start <= call);
    REQUIRE(a + 1 == s->n_segments || s->segments[a + 1].start > call);
  }
}

static void fuzz_schedule(const char* text, int variant) {
  static dccl_schedule s;
  char error[512];
  if (dccl_schedule_parse(text, "fuzz.conditions", &s, error, sizeof(error)) != 0) {
    REQUIRE(error[0] != '\0');
    return;
  }
  REQUIRE(s.n_events >= 0 && s.n_events <= DCCL_SCHEDULE_MAX_EVENTS && memchr(s.name, '\0', sizeof(s.name)) != NULL);
  int bounded = 1; /* on/off episodes over an unbounded horizon would take forever to expand */
  for (int i = 0; i < s.n_events; i++) {
    const dccl_condition_event* e = &s.events[i];
    REQUIRE(e->kind == 0 || e->kind == 1);
    REQUIRE(e->shape == DCCL_EVENT_RAMP || in_range(e->level, 0, 1));
    REQUIRE(in_range(e->start_level, 0, 1) && in_range(e->end_level, 0, 1));
    REQUIRE(e->steps >= 1 && e->steps <= 1024 && e->from < e->until);
    if (e->shape == DCCL_EVENT_ONOFF) {
      REQUIRE(in_range(e->mean_on, 1, 1e15) && in_range(e->mean_off, 1, 1e15));
      bounded = 0;
    }
  }
  uint64_t horizon = 1 + (uint64_t)variant * 997;
  REQUIRE(dccl_schedule_build(&s, (uint64_t)variant, horizon) == 0);
  check_segments(&s, horizon);
  if (bounded) {
    REQUIRE(dccl_schedule_build(&s, 1, UINT64_MAX) == 0);
    check_segments(&s, UINT64_MAX);
  }
  dccl_schedule_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static int quiet;
  if (!quiet) {
    dccl_log_set_sink(discard_log_line); /* the parsers' reports are formatted, not printed */
    quiet = 1;
  }
  int target = data[0] % TARGETS, variant = data[0] / TARGETS;
  static int only = -2; /* FUZZ_TEXT_TARGET=N: fuzz parser N alone (inputs for the others are skipped) */
  if (only == -2) only = getenv("FUZZ_TEXT_TARGET") != NULL ? atoi(getenv("FUZZ_TEXT_TARGET")) : -1;
  if (only >= 0 && target != only) return 0;
  char* text = malloc(size); /* the rest, NUL-terminated, in a buffer of exactly that size */
  REQUIRE(text != NULL);
  memcpy(text, data + 1, size - 1);
  text[size - 1] = '\0';
  switch (target) {
  case TARGET_RULES: fuzz_rules(text, variant); break;
  case TARGET_TABLE: fuzz_table(text, variant); break;
  case TARGET_SETTINGS: fuzz_settings(text); break;
  case TARGET_HOST_PORT: fuzz_host_port(text, variant); break;
  case TARGET_PROFILE: fuzz_profile(text); break;
  case TARGET_WORKLOAD: fuzz_workload(text); break;
  case TARGET_SCHEDULE: fuzz_schedule(text, variant); break;
  }
  free(text);
  return 0;
}

#include "replay_driver.h"
