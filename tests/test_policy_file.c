/* tests/test_policy_file.c: the binary policy file (persist/policy_file.h): a save/load round trip
 * restores the metadata, the DQN and LSTM weights and every cell's arms and exploited action; damaged,
 * foreign or mismatched files are rejected with a reason and leave the agent untouched, the header
 * included (covered by the checksum, its fields checked against each other); saving replaces
 * the file atomically (no temporary left behind) and a failed save keeps the previous file. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../agents/config_agent.h"
#include "../agents/trigger.h"
#include "../persist/policy_file.h"
#include "fuzz/policy_target.h"
#include "test.h"
#include "test_files.h"

#define N_CELLS 3
#define LEFTOVER_RING dccl_leftover_key(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 4)
#define LEFTOVER_TREE dccl_leftover_key(DCCL_ALGO_TREE, DCCL_PROTO_LL, 2)
/* A leftover record of those two actions: cell, samples, entries, 2 x (action, count, last used, 3 doubles);
 * trained_a's section holds one per cell. */
#define LEFTOVER_RECORD_BYTES (2 + 4 + 1 + 2 * 36)
#define LEFTOVER_SECTION_BYTES (8 + N_CELLS * LEFTOVER_RECORD_BYTES)
#define HEADER_BYTES 64
#define NCCL_CHANNELS 4 /* the channels NCCL runs in train(): its own choice's, and its cap on requests */

/* Not powers of two: a cell's log2_bytes (its first call's size) then differs from its size bin. */
static const size_t cell_bytes[N_CELLS] = {6000, 1500000, 80000000};

/* Agents and triggers are large: static. trained_a / trained_b learn, restored / target start fresh,
 * wide is of another shape (16 ranks). */
static dccl_config_agent trained_a, trained_b, restored, target, wide;
static dccl_trigger trigger_a, trigger_b, trigger_restored, trigger_target;
static dccl_table table_a, table_r;
/* trained_a's leftover estimates (filled in test_training_setup), saved with it; and what loads take. */
static dccl_leftover_cell leftovers_a[DCCL_AGENT_MAX_CELLS], leftovers_loaded[DCCL_AGENT_MAX_CELLS];
static char directory[64];
static char error[512];

static void agent_options(dccl_agent_options* o, int n_ranks, uint64_t seed) {
  dccl_agent_default_options(o);
  o->n_ranks = n_ranks;
  o->n_nodes = 1;
  o->space.max_channels = 32;
  o->space.tune_chunk = 1;
  o->seed = seed;
}

static int make_agent(dccl_config_agent* agent, int n_ranks, uint64_t seed) {
  dccl_agent_options o;
  agent_options(&o, n_ranks, seed);
  return dccl_agent_init(agent, &o);
}

static int make_trigger(dccl_trigger* trigger, uint64_t seed) {
  dccl_trigger_options o;
  dccl_trigger_default_options(&o);
  o.use_lstm = 1;
  o.train_every = 16; /* three streams only: train often enough to move the weights */
  o.seed = seed;
  return dccl_trigger_init(trigger, &o);
}

static void path_in(char* out, size_t size, const char* name) { snprintf(out, size, "%s/%s", directory, name); }

static int cell_of(int i) { return dccl_cell_for_call(DCCL_COLL_ALLREDUCE, cell_bytes[i], 1, 0); }

/* Feeds `rounds` observations to each of the three AllReduce cells: NCCL's choice (ring/simple) every
 * third call, else one of six tree/ring candidates; candidate `fast` runs at `speedup` x NCCL's
 * latency, the others at 0.9 .. 1.4 x. Tree and ring are valid in the cost table, everything else -1.
 * A third of the way, the middle cell's stream becomes congested: it continues in context 1 (restarted
 * statistics, epsilon raised again), so both contexts hold arms, the congested one more samples. */
static void train(dccl_config_agent* agent, dccl_trigger* trigger, uint64_t seed, int rounds, int fast,
                  double speedup) {
  const int coll = DCCL_COLL_ALLREDUCE;
  float cost[DCCL_COST_ENTRIES];
  for (int i = 0; i < DCCL_COST_ENTRIES; i++) cost[i] = -1.0f;
  for (int proto = 0; proto < DCCL_NUM_PROTOS; proto++) {
    cost[DCCL_ALGO_TREE * DCCL_NUM_PROTOS + proto] = 10.0f + (float)proto;
    cost[DCCL_ALGO_RING * DCCL_NUM_PROTOS + proto] = 8.0f + (float)proto;
  }
  for (int i = 0; i < N_CELLS; i++) dccl_agent_set_cost(agent, cell_of(i), cost);

  /* Six candidates spread over the valid (tree or ring) actions of the agent's list. */
  dccl_action valid[4096];
  int n_valid = 0;
  for (int i = 0; i < agent->n_actions[coll] && n_valid < 4096; i++) {
    int algo = dccl_action_algo(agent->actions[coll][i]);
    if (algo == DCCL_ALGO_TREE || algo == DCCL_ALGO_RING) valid[n_valid++] = agent->actions[coll][i];
  }
  CHECK(n_valid >= 6);
  if (n_valid < 6) return;
  dccl_action candidates[6];
  for (int j = 0; j < 6; j++) candidates[j] = valid[(j * n_valid) / 6];

  dccl_rng rng;
  dccl_rng_seed(&rng, seed);
  for (int r = 0; r < rounds; r++) {
    if (r == rounds / 3)
      dccl_agent_on_event(agent, coll, dccl_size_bin(cell_bytes[1]), DCCL_TRIGGER_EVENT_ONSET, 0);
    for (int i = 0; i < N_CELLS; i++) {
      dccl_agent_observation o;
      memset(&o, 0, sizeof(o));
      o.cell = cell_of(i);
      o.bytes = cell_bytes[i];
      double factor = 1.0;
      /* NCCL runs its own choice on 4 channels, and requests for more on those 4. */
      if (r % 3 == 0) {
        o.decided = DCCL_ACTION_NCCL;
        o.executed_algo = DCCL_ALGO_RING;
        o.executed_proto = DCCL_PROTO_SIMPLE;
        o.executed_channels = NCCL_CHANNELS;
      } else {
        int j = (r / 3) % 6;
        o.decided = candidates[j];
        o.executed_algo = dccl_action_algo(o.decided);
        o.executed_proto = dccl_action_proto(o.decided);
        int asked = dccl_action_channels(o.decided);
        o.executed_channels = asked == 0 || asked > NCCL_CHANNELS ? NCCL_CHANNELS : asked;
        factor = j == fast ? speedup : 0.9 + 0.1 * j;
      }
      double base = 20.0 + (double)cell_bytes[i] / 1e4;
      o.latency_us = base * factor * exp(0.02 * dccl_rng_normal(&rng));
      dccl_agent_observe(agent, &o);
      if (trigger != NULL) {
        dccl_trigger_result result;
        dccl_trigger_observe(trigger, coll, dccl_size_bin(cell_bytes[i]), o.decided, o.latency_us, 10.0, &result);
      }
    }
  }
}

static dccl_policy_meta meta_of(const dccl_config_agent* agent) {
  dccl_policy_meta m;
  memset(&m, 0, sizeof(m));
  m.version = DCCL_POLICY_VERSION;
  m.fingerprint = dccl_policy_fingerprint(agent->options.n_ranks, agent->options.n_nodes,
                                          agent->options.space.max_channels, agent->options.space.tune_chunk);
  m.observations = agent->stats.observations;
  m.n_ranks = (uint32_t)agent->options.n_ranks;
  m.n_nodes = (uint32_t)agent->options.n_nodes;
  m.max_channels = (uint32_t)agent->options.space.max_channels;
  m.tune_chunk = (uint32_t)agent->options.space.tune_chunk;
  return m;
}

static int save(const char* path, const dccl_config_agent* agent, const dccl_trigger* trigger) {
  dccl_policy_meta m = meta_of(agent);
  memset(error, 0, sizeof(error));
  int rc = dccl_policy_save(path, &m, agent, trigger, agent == &trained_a ? leftovers_a : NULL, error, sizeof(error));
  CHECK_MSG(rc == 0 || error[0] != '\0', "a failed save gives no reason");
  return rc;
}

/* ---- files ---- */


static void put_u32_at(uint8_t* data, size_t offset, uint32_t v) { memcpy(data + offset, &v, 4); }
static void put_u64_at(uint8_t* data, size_t offset, uint64_t v) { memcpy(data + offset, &v, 8); }


/* Names in the test directory other than those listed (NULL-terminated). */
static int unexpected_entries(const char* const* allowed) {
  DIR* d = opendir(directory);
  CHECK(d != NULL);
  if (d == NULL) return -1;
  int unexpected = 0;
  struct dirent* e;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    int ok = 0;
    for (int i = 0; allowed[i] != NULL; i++) ok |= strcmp(e->d_name, allowed[i]) == 0;
    if (!ok) {
      fprintf(stderr, "  unexpected file %s/%s\n", directory, e->d_name);
      unexpected++;
    }
  }
  closedir(d);
  return unexpected;
}

/* ---- comparisons ---- */
static int used_cells(const dccl_config_agent* agent) {
  int n = 0;
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) n += agent->cells[s].cell >= 0;
  return n;
}

static int same_floats(const float* a, const float* b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

/* A loaded arm `a` is the saved `b`; a learning agent takes no recent readings from the file (its
 * guard compares what runs now: dccl_agent_cell_loaded). */
static int same_arm(const dccl_arm* a, const dccl_arm* b, int learning) {
  return a->count == b->count && a->mean == b->mean && a->m2 == b->m2 && a->recent == b->recent &&
         a->recent_count == (learning ? 0 : b->recent_count) && a->invalid == b->invalid;
}

/* Everything the file carries is equal in `to` and `from` (the agent saved), but a learning agent's
 * recent reading counts; its cells are marked loaded, to be checked against the new job. */
/* Fills the stack the next calls will use with 0xA5 (the loader once left an arm's channels_ran as it
 * found it there: a shift by 164 bits when the agent next decides, UB, found by fuzz_policy). */
__attribute__((noinline)) static void fill_stack_below(void) {
  volatile unsigned char filler[1 << 16];
  for (size_t i = 0; i < sizeof(filler); i++) filler[i] = 0xA5;
}

static void check_agent_restored(const dccl_config_agent* from, dccl_config_agent* to) {
  int learning = to->options.learning != 0, recent_readings = 0;
  CHECK_EQ_INT(to->q.online.count, from->q.online.count);
  CHECK_MSG(same_floats(to->q.online.values, from->q.online.values, from->q.online.count), "DQN weights differ");
  CHECK_EQ_INT(used_cells(to), used_cells(from));
  int compared_arms = 0, invalid_arms = 0, ran_on_channels = 0, capped_cells = 0;
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) {
    const dccl_agent_cell* a = &from->cells[s];
    if (a->cell < 0) continue;
    const dccl_agent_cell* b = dccl_agent_cell_slot(to, a->cell, 0);
    CHECK_MSG(b != NULL, "cell %d missing after load", a->cell);
    if (b == NULL) continue;
    /* Every cell starts calm; one saved congested, from the context it measured more in. */
    int calm_from = a->context == 1 && a->samples[1] > a->samples[0] ? 1 : 0;
    CHECK_EQ_INT(b->context, 0);
    CHECK_EQ_INT(b->info.cost_known, a->info.cost_known);
    CHECK(b->info.log2_bytes == a->info.log2_bytes);
    CHECK_MSG(same_floats(b->info.cost, a->info.cost, DCCL_COST_ENTRIES), "cell %d: cost table differs", a->cell);
    for (int k = 0; k < DCCL_AGENT_CONTEXTS; k++) {
      int from_k = k == 0 ? calm_from : k;
      CHECK_MSG(same_arm(&b->nccl[k], &a->nccl[from_k], learning), "cell %d: NCCL arm of context %d differs", a->cell, k);
      recent_readings += a->nccl[k].recent_count > 0;
      CHECK_EQ_INT(b->samples[k], a->samples[from_k]);
    }
    CHECK(b->epsilon_peak == a->epsilon_peak);
    CHECK_EQ_INT(b->loaded, learning);
    if (a->context == 0) CHECK_EQ_INT(b->exploit, a->exploit);
    int coll = a->info.coll;
    for (int k = 0; k < DCCL_AGENT_CONTEXTS; k++)
      for (int i = 0; i < from->n_actions[coll]; i++) {
        const dccl_arm* x = &a->arms[(size_t)(k == 0 ? calm_from : k) * from->max_actions + i];
        const dccl_arm* y = &b->arms[(size_t)k * to->max_actions + i];
        CHECK_MSG(same_arm(y, x, learning), "cell %d context %d action %d: arm differs (count %g/%g, mean %g/%g)", a->cell,
                  k, i, (double)y->count, (double)x->count, (double)y->mean, (double)x->mean);
        compared_arms += x->count > 0;
        invalid_arms += x->invalid;
        /* Saved from format 4: the channels NCCL last ran the arm on, the same in every context. */
        CHECK_MSG(y->channels_ran == x->channels_ran, "cell %d context %d action %d: channels_ran %d, saved %d", a->cell,
                  k, i, y->channels_ran, x->channels_ran);
        ran_on_channels += x->channels_ran > 0;
      }
    for (int k = 0; k < DCCL_AGENT_CONTEXTS; k++) CHECK_EQ_INT(b->nccl[k].channels_ran, 0);
    CHECK_EQ_INT(b->channel_cap, a->channel_cap);
    CHECK_EQ_INT(b->tail_as_it_came, a->tail_as_it_came);
    capped_cells += a->channel_cap > 0;
  }
  CHECK_MSG(compared_arms >= N_CELLS * 6, "only %d measured arms: the agent did not learn", compared_arms);
  CHECK_MSG(recent_readings > 0, "no recent readings saved: the recent counts were not compared");
  CHECK(invalid_arms > 0);
  CHECK_MSG(ran_on_channels >= N_CELLS * 6 && capped_cells == N_CELLS,
            "%d arms with the channels they ran on, %d cells with a cap: the channels were not compared", ran_on_channels,
            capped_cells);
  /* The list of measured arms the DQN samples from is rebuilt. */
  CHECK_EQ_INT(to->measured_count, (long long)compared_arms);
}

/* What a failed load must leave alone. */
typedef struct snapshot {
  float* q;
  float* lstm;
  int cells;
  size_t measured;
} snapshot;

static snapshot take_snapshot(const dccl_config_agent* agent, const dccl_trigger* trigger) {
  snapshot s = {NULL, NULL, 0, 0};
  if (agent != NULL) {
    s.q = malloc(agent->q.online.count * sizeof(float));
    if (s.q != NULL) memcpy(s.q, agent->q.online.values, agent->q.online.count * sizeof(float));
    s.cells = used_cells(agent);
    s.measured = agent->measured_count;
  }
  if (trigger != NULL) {
    s.lstm = malloc(trigger->params.count * sizeof(float));
    if (s.lstm != NULL) memcpy(s.lstm, trigger->params.values, trigger->params.count * sizeof(float));
  }
  return s;
}

static void check_untouched(const char* what, snapshot* s, const dccl_config_agent* agent, dccl_trigger* trigger) {
  if (agent != NULL) {
    CHECK_MSG(s->q != NULL && same_floats(s->q, agent->q.online.values, agent->q.online.count),
              "%s: DQN weights changed", what);
    CHECK_MSG(used_cells(agent) == s->cells, "%s: %d cells, %d before", what, used_cells(agent), s->cells);
    for (int i = 0; i < N_CELLS; i++)
      CHECK_MSG(s->cells > 0 || dccl_agent_cell_slot((dccl_config_agent*)agent, cell_of(i), 0) == NULL,
                "%s: cell %d created", what, cell_of(i));
    CHECK_MSG(agent->measured_count == s->measured, "%s: measured arms changed", what);
  }
  if (trigger != NULL)
    CHECK_MSG(s->lstm != NULL && same_floats(s->lstm, trigger->params.values, trigger->params.count),
              "%s: LSTM weights changed", what);
  free(s->q);
  free(s->lstm);
}

/* Loading `path` fails as `status` with a reason (containing `keyword` when not NULL); nothing is applied. */
static void expect_refused(const char* what, const char* path, uint64_t fingerprint, dccl_config_agent* agent,
                           dccl_trigger* trigger, const char* keyword, dccl_policy_status status) {
  snapshot s = take_snapshot(agent, trigger);
  dccl_policy_meta m;
  memset(error, 0, sizeof(error));
  int rc = dccl_policy_load(path, fingerprint, &m, agent, trigger, NULL, error, sizeof(error));
  CHECK_MSG(rc == (int)status, "%s: not refused as %d (rc %d)", what, (int)status, rc);
  CHECK_MSG(error[0] != '\0', "%s: no reason given", what);
  if (keyword != NULL)
    CHECK_MSG(strstr(error, keyword) != NULL, "%s: reason \"%s\" does not mention \"%s\"", what, error, keyword);
  check_untouched(what, &s, agent, trigger);
}

/* Loading `path` is REJECTED: no policy, damaged or obsolete. */
static void expect_rejected(const char* what, const char* path, uint64_t fingerprint, dccl_config_agent* agent,
                            dccl_trigger* trigger, const char* keyword) {
  expect_refused(what, path, fingerprint, agent, trigger, keyword, DCCL_POLICY_REJECTED);
}

/* The same as expect_refused, and also when only checking (no agent, so no expected network sizes). Each
 * load costs a 64 MiB allocation, slow under AddressSanitizer: done for a representative subset only. */
static void expect_refused_also_checking(const char* what, const char* path, uint64_t fingerprint,
                                         dccl_config_agent* agent, dccl_trigger* trigger, const char* keyword,
                                         dccl_policy_status status) {
  expect_refused(what, path, fingerprint, agent, trigger, keyword, status);
  dccl_policy_meta m;
  memset(error, 0, sizeof(error));
  CHECK_MSG(dccl_policy_load(path, fingerprint, &m, NULL, NULL, NULL, error, sizeof(error)) == status && error[0] != '\0',
            "%s: not refused when only checking", what);
}

static void expect_rejected_also_checking(const char* what, const char* path, uint64_t fingerprint,
                                          dccl_config_agent* agent, dccl_trigger* trigger, const char* keyword) {
  expect_refused_also_checking(what, path, fingerprint, agent, trigger, keyword, DCCL_POLICY_REJECTED);
}

/* ---- tests ---- */
/* Two agents (and triggers) learn from different latencies; B sees fewer observations than A. */
static void test_training_setup(void) {
  train(&trained_a, &trigger_a, 101, 300, 0, 0.6);
  train(&trained_b, &trigger_b, 202, 240, 3, 0.7);
  CHECK(trained_a.q.training_steps > 0);
  CHECK(trained_b.q.training_steps > 0);
  CHECK(trigger_a.training_steps > 0);
  dccl_agent_cell* congested = dccl_agent_cell_slot(&trained_a, cell_of(1), 0);
  CHECK(congested != NULL && congested->context == 1 && congested->samples[0] > 0 &&
        congested->samples[1] > congested->samples[0]);
  CHECK(congested != NULL && congested->epsilon_peak != (float)trained_a.options.epsilon_start);
  dccl_agent_cell* calm = dccl_agent_cell_slot(&trained_a, cell_of(0), 0);
  CHECK(calm != NULL && calm->context == 0 && calm->info.log2_bytes != (double)dccl_size_bin(cell_bytes[0]));
  /* Back to back calls: ring/simple leaves 2-4 us behind a 100 us span, tree/LL 40-44 us behind 60 us. */
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) {
    if (trained_a.cells[s].cell < 0) continue;
    for (int k = 0; k < 20; k++) {
      dccl_leftover_add(&leftovers_a[s], LEFTOVER_RING, 100, 2 + k % 3);
      dccl_leftover_add(&leftovers_a[s], LEFTOVER_TREE, 60, 40 + k % 5);
    }
  }
}

static void test_round_trip(void) {
  char path[128];
  path_in(path, sizeof(path), "round_trip.bin");
  CHECK(save(path, &trained_a, &trigger_a) == 0);
  /* Fix the exploited actions first, so the saved `exploit` fields are not all NCCL's choice. */
  dccl_table_fill(&table_a, DCCL_ACTION_NCCL);
  dccl_agent_exploit_table(&trained_a, &table_a);
  int tuned = 0;
  for (int i = 0; i < N_CELLS; i++) tuned += !dccl_action_is_nccl(dccl_table_get(&table_a, cell_of(i)));
  CHECK_MSG(tuned == N_CELLS, "only %d of %d cells beat NCCL: the agent did not learn", tuned, N_CELLS);
  CHECK(save(path, &trained_a, &trigger_a) == 0);

  /* The fresh agent really differs before the load (else the comparisons prove nothing). */
  CHECK(!same_floats(restored.q.online.values, trained_a.q.online.values, trained_a.q.online.count));
  CHECK(!same_floats(trigger_restored.params.values, trigger_a.params.values, trigger_a.params.count));
  CHECK_EQ_INT(used_cells(&restored), 0);

  /* Checking only: the metadata comes back, nothing else is touched. */
  dccl_policy_meta expected = meta_of(&trained_a), m;
  memset(&m, 0, sizeof(m));
  snapshot s = take_snapshot(NULL, &trigger_restored);
  CHECK_EQ_INT(dccl_policy_load(path, expected.fingerprint, &m, NULL, &trigger_restored, NULL, error, sizeof(error)), 0);
  check_untouched("load without an agent", &s, NULL, &trigger_restored);
  CHECK_EQ_INT(m.observations, expected.observations);
  CHECK_EQ_INT(m.fingerprint, expected.fingerprint);
  memset(&m, 0, sizeof(m));
  CHECK_EQ_INT(dccl_policy_load(path, 0, &m, NULL, NULL, NULL, error, sizeof(error)), 0);
  CHECK_EQ_INT(m.fingerprint, expected.fingerprint);

  memset(&m, 0, sizeof(m));
  memset(error, 0, sizeof(error));
  fill_stack_below(); /* what the loader leaves unset would read as these bytes, not as zeros */
  int rc = dccl_policy_load(path, expected.fingerprint, &m, &restored, &trigger_restored, NULL, error, sizeof(error));
  CHECK_MSG(rc == 0, "load failed: %s", error);
  CHECK_EQ_INT(m.version, DCCL_POLICY_VERSION);
  CHECK_EQ_INT(m.fingerprint, dccl_policy_fingerprint(8, 1, 32, 1));
  CHECK(m.fingerprint != 0);
  CHECK_EQ_INT(m.observations, trained_a.stats.observations);
  CHECK(m.observations > 0);
  CHECK_EQ_INT(m.n_ranks, 8);
  CHECK_EQ_INT(m.n_nodes, 1);
  CHECK_EQ_INT(m.max_channels, 32);
  CHECK_EQ_INT(m.tune_chunk, 1);

  check_agent_restored(&trained_a, &restored);
  CHECK_EQ_INT(trigger_restored.params.count, trigger_a.params.count);
  CHECK_MSG(same_floats(trigger_restored.params.values, trigger_a.params.values, trigger_a.params.count),
            "LSTM weights differ");

  /* Arm means per cell (the congested cell's, loaded as calm: it measured more congested), and the
   * frozen policy both agents derive from their statistics. */
  for (int i = 0; i < N_CELLS; i++) {
    dccl_agent_cell* a = dccl_agent_cell_slot(&trained_a, cell_of(i), 0);
    dccl_agent_cell* b = dccl_agent_cell_slot(&restored, cell_of(i), 0);
    CHECK(a != NULL && b != NULL);
    if (a == NULL || b == NULL) continue;
    int index = dccl_agent_action_index(&trained_a, DCCL_COLL_ALLREDUCE, a->exploit);
    CHECK(index >= 0);
    if (index >= 0) {
      CHECK(a->arms[(size_t)a->context * trained_a.max_actions + index].mean ==
            b->arms[(size_t)b->context * restored.max_actions + index].mean);
      CHECK(a->arms[(size_t)a->context * trained_a.max_actions + index].count >= 3);
    }
    CHECK(a->nccl[a->context].mean == b->nccl[b->context].mean);
  }
  dccl_table_fill(&table_a, DCCL_ACTION_NCCL);
  dccl_table_fill(&table_r, DCCL_ACTION_NCCL);
  dccl_agent_exploit_table(&trained_a, &table_a);
  dccl_agent_exploit_table(&restored, &table_r);
  int differing = 0;
  for (int cell = 0; cell < DCCL_TABLE_CELLS; cell++) differing += dccl_table_get(&table_a, cell) != dccl_table_get(&table_r, cell);
  CHECK_EQ_INT(differing, 0);
  for (int i = 0; i < N_CELLS; i++) CHECK(!dccl_action_is_nccl(dccl_table_get(&table_r, cell_of(i))));

  /* Loaded into a frozen agent (which keeps the recent readings), every arm is as saved, and saving it
   * gives the same bytes but for the congested cell, now calm: loaded and saved again, the same bytes
   * again, nothing lost or invented. */
  static dccl_config_agent frozen;
  dccl_agent_options o;
  agent_options(&o, 8, 11);
  o.learning = 0;
  CHECK(dccl_agent_init(&frozen, &o) == 0);
  CHECK_EQ_INT(dccl_policy_load(path, expected.fingerprint, &m, &frozen, NULL, NULL, error, sizeof(error)), 0);
  check_agent_restored(&trained_a, &frozen);
  char again[128];
  path_in(again, sizeof(again), "round_trip_again.bin");
  CHECK(save(again, &frozen, &trigger_restored) == 0);
  dccl_agent_free(&frozen);
  char third[128];
  path_in(third, sizeof(third), "round_trip_third.bin");
  CHECK(dccl_agent_init(&frozen, &o) == 0);
  CHECK_EQ_INT(dccl_policy_load(again, expected.fingerprint, &m, &frozen, NULL, NULL, error, sizeof(error)), 0);
  CHECK(save(third, &frozen, &trigger_restored) == 0);
  dccl_agent_free(&frozen);
  size_t n1, n2, n3;
  uint8_t* d1 = test_read_file(path, &n1);
  uint8_t* d2 = test_read_file(again, &n2);
  uint8_t* d3 = test_read_file(third, &n3);
  /* The first was saved with trained_a's leftover estimates, the last section (test_leftover_estimates_saved). */
  CHECK(d1 != NULL && d2 != NULL && d3 != NULL && n1 == n2 + LEFTOVER_SECTION_BYTES && n2 > HEADER_BYTES && n3 == n2);
  /* Bytes 24..31 are the payload's size; 40..47 the observation count, which comes from the saving
   * agent's own statistics; bytes 32..39 the checksum, which covers both. */
  if (d1 != NULL && d2 != NULL && n1 == n2 + LEFTOVER_SECTION_BYTES)
    CHECK_MSG(memcmp(d1 + 48, d2 + 48, n2 - 48) != 0, "the congested cell was saved again as it was");
  if (d2 != NULL && d3 != NULL && n3 == n2)
    CHECK_MSG(memcmp(d2, d3, 24) == 0 && memcmp(d2 + 48, d3 + 48, n2 - 48) == 0, "re-saved file differs");
  free(d1);
  free(d2);
  free(d3);
  unlink(again);
  unlink(third);
  unlink(path);
}

static void test_rejections(void) {
  char good[128], bad[128];
  path_in(good, sizeof(good), "good.bin");
  path_in(bad, sizeof(bad), "bad.bin");
  CHECK(save(good, &trained_a, &trigger_a) == 0);
  size_t size;
  uint8_t* data = test_read_file(good, &size);
  CHECK(data != NULL && size > HEADER_BYTES + 1000);
  if (data == NULL || size <= HEADER_BYTES + 1000) {
    free(data);
    return;
  }
  uint64_t fp = dccl_policy_fingerprint(8, 1, 32, 1);
  uint8_t* copy = malloc(size + 64);
  CHECK(copy != NULL);
  if (copy == NULL) {
    free(data);
    return;
  }
  char what[96];

  /* Sanity: the good file loads into nothing but passes the checks. */
  CHECK_EQ_INT(dccl_policy_load(good, fp, NULL, NULL, NULL, NULL, error, sizeof(error)), 0);

  /* Truncated: inside the magic, inside the header, header only, inside a section tag, inside the
   * weights, half way, one byte short. */
  const size_t cuts[] = {1, 7, 40, HEADER_BYTES - 1, HEADER_BYTES, HEADER_BYTES + 3, HEADER_BYTES + 8 + 401,
                         size / 2, size - 1};
  for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
    CHECK(test_write_file(bad, data, cuts[i]) == 0);
    snprintf(what, sizeof(what), "truncated to %zu of %zu bytes", cuts[i], size);
    const char* keyword = cuts[i] < HEADER_BYTES ? "not a DynamICCL" : "truncated";
    if (cuts[i] == size / 2) expect_rejected_also_checking(what, bad, fp, &target, &trigger_target, keyword);
    else expect_rejected(what, bad, fp, &target, &trigger_target, keyword);
  }

  /* One byte flipped in the payload: among the DQN weights, and in the last cell record. */
  const size_t flips[] = {HEADER_BYTES + 8 + 4 * 17 + 1, size - 3};
  for (size_t i = 0; i < sizeof(flips) / sizeof(flips[0]); i++) {
    memcpy(copy, data, size);
    copy[flips[i]] ^= 0x10;
    CHECK(test_write_file(bad, copy, size) == 0);
    snprintf(what, sizeof(what), "byte %zu flipped", flips[i]);
    expect_rejected_also_checking(what, bad, fp, &target, &trigger_target, "checksum");
  }

  memcpy(copy, data, size);
  copy[0] = 'X';
  CHECK(test_write_file(bad, copy, size) == 0);
  expect_rejected_also_checking("wrong magic", bad, fp, &target, &trigger_target, "not a DynamICCL");

  memcpy(copy, data, size);
  put_u32_at(copy, 8, DCCL_POLICY_VERSION + 1);
  CHECK(test_write_file(bad, copy, size) == 0);
  expect_rejected("newer version, not sealed as such (a flipped bit)", bad, fp, &target, &trigger_target, "damaged");
  dccl_policy_seal(copy, size);
  CHECK(test_write_file(bad, copy, size) == 0);
  expect_refused_also_checking("newer version", bad, fp, &target, &trigger_target, "newer DynamICCL",
                               DCCL_POLICY_FOREIGN);

  memcpy(copy, data, size);
  put_u32_at(copy, 12, HEADER_BYTES + 8);
  CHECK(test_write_file(bad, copy, size) == 0);
  expect_rejected("wrong header size", bad, fp, &target, &trigger_target, NULL);

  /* The right file, but another communicator's expectations: a sound policy of another's (FOREIGN). */
  expect_refused("wrong fingerprint", good, dccl_policy_fingerprint(8, 1, 16, 1), &target, &trigger_target,
                 "fingerprint", DCCL_POLICY_FOREIGN);
  expect_refused("wrong fingerprint (no chunk tuning)", good, dccl_policy_fingerprint(8, 1, 32, 0), &target, NULL,
                 "fingerprint", DCCL_POLICY_FOREIGN);
  snapshot s = take_snapshot(&wide, NULL);
  memset(error, 0, sizeof(error));
  CHECK_EQ_INT(dccl_policy_load(good, 0, NULL, &wide, NULL, NULL, error, sizeof(error)), DCCL_POLICY_FOREIGN);
  CHECK(error[0] != '\0');
  CHECK_MSG(strstr(error, "ranks") != NULL, "reason: %s", error);
  check_untouched("agent of 16 ranks", &s, &wide, NULL);
  s = take_snapshot(&wide, NULL);
  memset(error, 0, sizeof(error));
  CHECK_EQ_INT(dccl_policy_load(good, dccl_policy_fingerprint(16, 1, 32, 1), NULL, &wide, NULL, NULL, error, sizeof(error)),
               DCCL_POLICY_FOREIGN);
  CHECK(error[0] != '\0');
  check_untouched("agent of 16 ranks, its own fingerprint", &s, &wide, NULL);

  CHECK(test_write_file(bad, data, 0) == 0);
  expect_rejected("empty file", bad, fp, &target, &trigger_target, NULL);

  memcpy(copy, data, size);
  memset(copy + size, 0, 64);
  CHECK(test_write_file(bad, copy, size + 1) == 0);
  expect_rejected_also_checking("padded by 1 byte", bad, fp, &target, &trigger_target, "padded");
  CHECK(test_write_file(bad, copy, size + 64) == 0);
  expect_rejected("padded by 64 bytes", bad, fp, &target, &trigger_target, "padded");

  /* Damage behind a valid header and checksum: the payload's own bounds and consistency checks must
   * reject it before anything is applied (all or nothing). Payload layout: QNET tag, count, weights,
   * LSTM tag, count, weights, CELLS tag, count, cells. */
  uint32_t q_count, lstm_count;
  memcpy(&q_count, data + HEADER_BYTES + 4, 4);
  CHECK_EQ_INT(q_count, trained_a.q.online.count);
  size_t lstm_at = HEADER_BYTES + 8 + (size_t)q_count * 4;
  memcpy(&lstm_count, data + lstm_at + 4, 4);
  CHECK_EQ_INT(lstm_count, trigger_a.params.count);
  size_t cells_at = lstm_at + 8 + (size_t)lstm_count * 4;
  CHECK(cells_at + 8 < size);
  const size_t sealed_cuts[] = {HEADER_BYTES + 8 + 100, lstm_at + 20, cells_at + 8 + 5, size - 1};
  for (size_t i = 0; i < sizeof(sealed_cuts) / sizeof(sealed_cuts[0]); i++) {
    memcpy(copy, data, size);
    dccl_policy_seal(copy, sealed_cuts[i]);
    CHECK(test_write_file(bad, copy, sealed_cuts[i]) == 0);
    snprintf(what, sizeof(what), "payload cut at %zu, header resealed", sealed_cuts[i]);
    /* the last cut falls inside the last arm record, reported as inconsistent */
    expect_rejected_also_checking(what, bad, fp, &target, &trigger_target,
                                  sealed_cuts[i] == size - 1 ? NULL : "truncated");
  }
  memcpy(copy, data, size);
  put_u32_at(copy, HEADER_BYTES, 0x58585858u);
  dccl_policy_seal(copy, size);
  CHECK(test_write_file(bad, copy, size) == 0);
  expect_rejected("unknown section, resealed", bad, fp, &target, &trigger_target, "section");
  memcpy(copy, data, size);
  float nan_weight = NAN;
  memcpy(copy + HEADER_BYTES + 8 + 4 * 5, &nan_weight, 4);
  dccl_policy_seal(copy, size);
  CHECK(test_write_file(bad, copy, size) == 0);
  expect_rejected_also_checking("NaN weight, resealed", bad, fp, &target, &trigger_target, "finite");
  /* Finite but absurd weights (fuzz_policy found 7.6e37 among the DQN's): the first forward pass
   * overflows and training turns the whole network into NaN. In either network. */
  const size_t huge_at[] = {HEADER_BYTES + 8 + 4 * 5, lstm_at + 8 + 4 * 3};
  for (size_t i = 0; i < sizeof(huge_at) / sizeof(huge_at[0]); i++) {
    memcpy(copy, data, size);
    float huge_weight = i == 0 ? 7.6e37f : -2e4f;
    memcpy(copy + huge_at[i], &huge_weight, 4);
    dccl_policy_seal(copy, size);
    CHECK(test_write_file(bad, copy, size) == 0);
    snprintf(what, sizeof(what), "weight %g in the %s, resealed", (double)huge_weight, i == 0 ? "DQN" : "LSTM");
    expect_rejected_also_checking(what, bad, fp, &target, &trigger_target, "not a trained network");
  }
  /* A first cell record's finite but absurd numbers: its exploration rate (1e30 made the decision's
   * count of exploring calls overflow an int: undefined behaviour, found by fuzz_policy), and its NCCL
   * arm's mean log latency. Record: cell u16, context u8, cost_known u8, log2_bytes f64, 21 costs, then
   * per context an arm (count, mean, m2, recent f32, recent_count u16, invalid u8) and samples u32,
   * then epsilon f32. */
  const size_t record_at = cells_at + 8, nccl_mean_at = record_at + 4 + 8 + 4 * 21 + 4,
               epsilon_at = record_at + 4 + 8 + 4 * 21 + 2 * 23;
  float saved_epsilon;
  memcpy(&saved_epsilon, data + epsilon_at, 4);
  CHECK(saved_epsilon > 0 && saved_epsilon <= 1); /* the layout above is the file's */
  const struct {
    size_t at;
    float value;
    const char* what;
  } absurd[] = {{epsilon_at, 1e30f, "epsilon 1e30"}, {epsilon_at, -0.5f, "epsilon -0.5"},
                {nccl_mean_at, 1e30f, "NCCL arm's mean log latency 1e30"}};
  for (size_t i = 0; i < sizeof(absurd) / sizeof(absurd[0]); i++) {
    memcpy(copy, data, size);
    memcpy(copy + absurd[i].at, &absurd[i].value, 4);
    dccl_policy_seal(copy, size);
    CHECK(test_write_file(bad, copy, size) == 0);
    snprintf(what, sizeof(what), "%s, resealed", absurd[i].what);
    expect_rejected_also_checking(what, bad, fp, &target, &trigger_target, "inconsistent");
  }
  memcpy(copy, data, size);
  put_u32_at(copy, cells_at + 4, DCCL_AGENT_MAX_CELLS + 1);
  dccl_policy_seal(copy, size);
  CHECK(test_write_file(bad, copy, size) == 0);
  expect_rejected("too many cells, resealed", bad, fp, &target, &trigger_target, "cells");
  /* The second cell record names the first's cell: a record given twice (it would load the cell again, and
   * undo what later sections said of it). After epsilon: exploit u32, arm count u32, then per arm an action
   * u32, a context u8 and the arm (19 bytes). */
  uint32_t arms;
  memcpy(&arms, data + epsilon_at + 8, 4);
  const size_t second_at = epsilon_at + 12 + (size_t)arms * 24;
  memcpy(copy, data, size);
  memcpy(copy + second_at, data + record_at, 2);
  dccl_policy_seal(copy, size);
  CHECK(test_write_file(bad, copy, size) == 0);
  expect_rejected("a cell record given twice, resealed", bad, fp, &target, &trigger_target, "cell record 1 is inconsistent");

  /* And after all that, the good file still loads into the untouched agent. */
  memset(error, 0, sizeof(error));
  CHECK_MSG(dccl_policy_load(good, fp, NULL, NULL, NULL, NULL, error, sizeof(error)) == 0, "%s", error);
  free(copy);
  free(data);
  unlink(bad);
  unlink(good);
}

/* The header is covered by the checksum and checked against itself: every bit flipped in it is
 * rejected, also when only checking with no expected fingerprint (`dccl inspect`); a forged header
 * with a recomputed checksum is still rejected when its fields disagree (unknown flags, a fingerprint
 * not that of its shape, implausible ranks, nodes or channels); a file of the previous format is
 * reported as such; and an inconsistent header is never written. */
static void test_header_is_covered_and_consistent(void) {
  char good[128], bad[128];
  path_in(good, sizeof(good), "header-good.bin");
  path_in(bad, sizeof(bad), "header-bad.bin");
  CHECK(save(good, &trained_a, &trigger_a) == 0);
  size_t size;
  uint8_t* data = test_read_file(good, &size);
  uint8_t* copy = data != NULL ? malloc(size) : NULL;
  CHECK(data != NULL && copy != NULL && size > HEADER_BYTES);
  if (data == NULL || copy == NULL || size <= HEADER_BYTES) {
    free(data);
    free(copy);
    return;
  }
  uint64_t fp = dccl_policy_fingerprint(8, 1, 32, 1);
  char what[96];
  int accepted = 0;
  for (size_t bit = 0; bit < HEADER_BYTES * 8; bit++) {
    memcpy(copy, data, size);
    copy[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    CHECK(test_write_file(bad, copy, size) == 0);
    memset(error, 0, sizeof(error));
    if (dccl_policy_load(bad, 0, NULL, NULL, NULL, NULL, error, sizeof(error)) != DCCL_POLICY_REJECTED || error[0] == '\0') {
      fprintf(stderr, "  header bit %zu (byte %zu) flipped: accepted\n", bit % 8, bit / 8);
      accepted++;
    }
  }
  CHECK_EQ_INT(accepted, 0);
  memcpy(copy, data, size);
  copy[40] ^= 1; /* the observation count */
  CHECK(test_write_file(bad, copy, size) == 0);
  expect_rejected("observation count flipped", bad, fp, &target, &trigger_target, "checksum");

  /* Forged: each field changed and the checksum recomputed. */
  struct {
    const char* what;
    size_t offset, width;
    uint64_t value;
    const char* keyword;
  } forged[] = {
    {"flag bit 1", 60, 4, 1u | 2u, "flags"},
    {"flag bit 31", 60, 4, 1u | 0x80000000u, "flags"},
    {"fingerprint", 16, 8, fp ^ 1, "fingerprint"},
    {"2147483656 ranks", 48, 4, 0x80000008u, "ranks"},
    {"0 ranks", 48, 4, 0, "ranks"},
    {"16 ranks, fingerprint of 8", 48, 4, 16, "fingerprint"},
    {"0 nodes", 52, 4, 0, "nodes"},
    {"9 nodes for 8 ranks", 52, 4, 9, "nodes"},
    {"65 channels", 56, 4, 65, "channels"},
    {"0 channels", 56, 4, 0, "channels"},
    {"chunk flag cleared", 60, 4, 0, "fingerprint"},
  };
  for (size_t i = 0; i < sizeof(forged) / sizeof(forged[0]); i++) {
    memcpy(copy, data, size);
    if (forged[i].width == 4) put_u32_at(copy, forged[i].offset, (uint32_t)forged[i].value);
    else put_u64_at(copy, forged[i].offset, forged[i].value);
    dccl_policy_seal(copy, size);
    CHECK(test_write_file(bad, copy, size) == 0);
    snprintf(what, sizeof(what), "forged header: %s", forged[i].what);
    expect_rejected_also_checking(what, bad, 0, &target, &trigger_target, forged[i].keyword);
    CHECK_MSG(strstr(error, "inconsistent header") != NULL, "%s: %s", what, error);
  }

  /* A file of format 1 (the checksum over the payload only) is named as an older DynamICCL's. */
  memcpy(copy, data, size);
  put_u32_at(copy, 8, 1);
  put_u64_at(copy, 32, 0);
  uint64_t h = 0xCBF29CE484222325ULL;
  for (size_t i = HEADER_BYTES; i < size; i++) h = (h ^ copy[i]) * 0x100000001B3ULL;
  put_u64_at(copy, 32, h);
  CHECK(test_write_file(bad, copy, size) == 0);
  expect_rejected_also_checking("format 1", bad, fp, &target, &trigger_target, "older DynamICCL (policy format 1");

  /* An inconsistent header is not written. */
  dccl_policy_meta m = meta_of(&trained_a);
  m.fingerprint ^= 1;
  unlink(bad);
  memset(error, 0, sizeof(error));
  CHECK_EQ_INT(dccl_policy_save(bad, &m, &trained_a, &trigger_a, NULL, error, sizeof(error)), -1);
  CHECK_MSG(strstr(error, "fingerprint") != NULL, "reason: %s", error);
  CHECK(access(bad, F_OK) != 0);
  m = meta_of(&trained_a);
  m.tune_chunk = 2; /* any nonzero value means tuned: bit 0 only */
  CHECK(dccl_policy_save(bad, &m, &trained_a, &trigger_a, NULL, error, sizeof(error)) == 0);
  memset(error, 0, sizeof(error));
  CHECK_MSG(dccl_policy_load(bad, fp, NULL, NULL, NULL, NULL, error, sizeof(error)) == 0, "%s", error);

  free(copy);
  free(data);
  unlink(bad);
  unlink(good);
}

/* Loading tells what may be saved over the path: nothing there (MISSING), no usable policy (REJECTED:
 * damaged, too large to be one, an obsolete format), another topology's sound policy (FOREIGN), or a file
 * that could not be read and may be a good policy (UNREADABLE: here, out of file descriptors, a
 * directory, a FIFO, which is not waited on, or a device). */
static void test_load_tells_missing_rejected_unreadable(void) {
  char good[128], path[128];
  path_in(good, sizeof(good), "status-good.bin");
  CHECK(save(good, &trained_a, &trigger_a) == 0);
  uint64_t fp = dccl_policy_fingerprint(8, 1, 32, 1);
  snapshot s = take_snapshot(&target, &trigger_target);
  path_in(path, sizeof(path), "no-such-policy.bin");
  memset(error, 0, sizeof(error));
  CHECK_EQ_INT(dccl_policy_load(path, fp, NULL, &target, &trigger_target, NULL, error, sizeof(error)), DCCL_POLICY_MISSING);
  CHECK(error[0] != '\0');
  CHECK_EQ_INT(dccl_policy_load(good, dccl_policy_fingerprint(8, 1, 16, 1), NULL, &target, &trigger_target, NULL, error,
                                sizeof(error)),
               DCCL_POLICY_FOREIGN);
  path_in(path, sizeof(path), "too-large.bin");
  FILE* f = fopen(path, "wb");
  CHECK(f != NULL && ftruncate(fileno(f), (64 << 20) + 1) == 0);
  if (f != NULL) fclose(f);
  CHECK_EQ_INT(dccl_policy_load(path, fp, NULL, &target, &trigger_target, NULL, error, sizeof(error)), DCCL_POLICY_REJECTED);
  unlink(path);
  path_in(path, sizeof(path), "a-directory.bin");
  CHECK(mkdir(path, 0755) == 0);
  CHECK_EQ_INT(dccl_policy_load(path, fp, NULL, &target, &trigger_target, NULL, error, sizeof(error)), DCCL_POLICY_UNREADABLE);
  rmdir(path);
  path_in(path, sizeof(path), "a-fifo.bin"); /* no writer: a blocking open would wait for ever */
  CHECK(mkfifo(path, 0644) == 0);
  CHECK_EQ_INT(dccl_policy_load(path, fp, NULL, &target, &trigger_target, NULL, error, sizeof(error)), DCCL_POLICY_UNREADABLE);
  CHECK_MSG(strstr(error, "not a regular file") != NULL, "reason: %s", error);
  unlink(path);
  CHECK_EQ_INT(dccl_policy_load("/dev/zero", fp, NULL, &target, &trigger_target, NULL, error, sizeof(error)),
               DCCL_POLICY_UNREADABLE); /* not EFBIG, which would have it set aside */

  /* Every file descriptor taken: the good file cannot be opened. */
  int null_fd = open("/dev/null", O_RDONLY);
  CHECK(null_fd >= 0);
  struct rlimit limit;
  CHECK(getrlimit(RLIMIT_NOFILE, &limit) == 0);
  struct rlimit few = limit;
  few.rlim_cur = 64;
  CHECK(setrlimit(RLIMIT_NOFILE, &few) == 0);
  int taken[64], n_taken = 0;
  for (int fd; n_taken < 64 && (fd = dup(null_fd)) >= 0;) taken[n_taken++] = fd;
  CHECK(dup(null_fd) < 0 && errno == EMFILE);
  memset(error, 0, sizeof(error));
  dccl_policy_status status = dccl_policy_load(good, fp, NULL, &target, &trigger_target, NULL, error, sizeof(error));
  for (int i = 0; i < n_taken; i++) close(taken[i]);
  close(null_fd);
  CHECK(setrlimit(RLIMIT_NOFILE, &limit) == 0);
  CHECK_EQ_INT(status, DCCL_POLICY_UNREADABLE);
  CHECK_MSG(strstr(error, "cannot read") != NULL, "reason: %s", error);
  check_untouched("unreadable", &s, &target, &trigger_target);
  CHECK_EQ_INT(dccl_policy_load(good, fp, NULL, NULL, NULL, NULL, error, sizeof(error)), DCCL_POLICY_LOADED);
  unlink(good);
}

/* Setting a rejected file aside keeps its bytes at <path>.rejected, or at <path>.rejected.N beside
 * older ones, which are kept; a file already gone is no error; with every name taken the file stays. A
 * symbolic link's target is set aside, not the link. */
static void test_set_aside(void) {
  char path[128], older[160], aside[192], name[192];
  path_in(path, sizeof(path), "rejected-policy.bin");
  snprintf(older, sizeof(older), "%s.rejected", path);
  CHECK(test_write_file(path, "rejected bytes", 14) == 0);
  CHECK(test_write_file(older, "older rejected", 14) == 0);
  memset(error, 0, sizeof(error));
  CHECK_MSG(dccl_policy_set_aside(path, aside, sizeof(aside), error, sizeof(error)) == 0, "%s", error);
  snprintf(name, sizeof(name), "%s.1", older);
  CHECK_MSG(strcmp(aside, name) == 0, "set aside as %s", aside);
  CHECK(access(path, F_OK) != 0);
  size_t size;
  uint8_t* kept = test_read_file(name, &size);
  CHECK(kept != NULL && size == 14 && memcmp(kept, "rejected bytes", 14) == 0);
  free(kept);
  kept = test_read_file(older, &size);
  CHECK(kept != NULL && size == 14 && memcmp(kept, "older rejected", 14) == 0);
  free(kept);
  CHECK_EQ_INT(dccl_policy_set_aside(path, aside, sizeof(aside), error, sizeof(error)), 0); /* gone already */

  /* Every name taken (.rejected, .rejected.1 to .9): the file cannot be moved and stays. */
  for (int n = 2; n < DCCL_POLICY_ASIDE_NAMES; n++) {
    snprintf(name, sizeof(name), "%s.%d", older, n);
    CHECK(test_write_file(name, "x", 1) == 0);
  }
  CHECK(test_write_file(path, "rejected bytes", 14) == 0);
  memset(error, 0, sizeof(error));
  CHECK_EQ_INT(dccl_policy_set_aside(path, aside, sizeof(aside), error, sizeof(error)), -1);
  CHECK_MSG(strstr(error, "taken") != NULL, "reason: %s", error);
  kept = test_read_file(path, &size);
  CHECK(kept != NULL && size == 14 && memcmp(kept, "rejected bytes", 14) == 0);
  free(kept);
  unlink(older);
  for (int n = 1; n < DCCL_POLICY_ASIDE_NAMES; n++) {
    snprintf(name, sizeof(name), "%s.%d", older, n);
    unlink(name);
  }

  /* A link to the rejected file: its target goes aside, the link stays (dangling until the next save). */
  char link_path[160];
  path_in(link_path, sizeof(link_path), "rejected-link.bin");
  CHECK(symlink("rejected-policy.bin", link_path) == 0);
  CHECK_MSG(dccl_policy_set_aside(link_path, aside, sizeof(aside), error, sizeof(error)) == 0, "%s", error);
  CHECK_MSG(strcmp(aside, older) == 0, "set aside as %s", aside);
  struct stat st;
  CHECK(lstat(link_path, &st) == 0 && S_ISLNK(st.st_mode));
  CHECK(access(path, F_OK) != 0 && access(older, F_OK) == 0);
  unlink(link_path);
  unlink(older);
}

/* Before each save: over nothing or this topology's policy it saves; a file that is no sound policy
 * (damaged, appeared since the job started) is set aside first; another topology's sound policy, a
 * newer format's or a file that cannot be read is kept and nothing saved. */
static void test_save_plan(void) {
  char path[128];
  path_in(path, sizeof(path), "shared-by-two-shapes.bin");
  unlink(path);
  uint64_t mine = dccl_policy_fingerprint(8, 1, 32, 1), other = dccl_policy_fingerprint(8, 1, 16, 1);
  CHECK_EQ_INT(dccl_policy_plan_save(path, mine, error, sizeof(error)), DCCL_SAVE_OVER);
  CHECK(save(path, &trained_a, &trigger_a) == 0); /* fingerprint (8, 1, 32, 1) */
  CHECK_EQ_INT(dccl_policy_plan_save(path, mine, error, sizeof(error)), DCCL_SAVE_OVER);
  error[0] = '\0';
  CHECK_EQ_INT(dccl_policy_plan_save(path, other, error, sizeof(error)), DCCL_SAVE_NOT);
  CHECK_MSG(strstr(error, "another topology") != NULL, "reason: %s", error);
  size_t size;
  uint8_t* data = test_read_file(path, &size);
  CHECK(data != NULL && size > HEADER_BYTES);
  if (data != NULL && size > HEADER_BYTES) {
    put_u32_at(data, 8, DCCL_POLICY_VERSION + 1); /* a newer format, sound by this one's checksum: kept */
    dccl_policy_seal(data, size);
    CHECK(test_write_file(path, data, size) == 0);
    CHECK_EQ_INT(dccl_policy_plan_save(path, mine, error, sizeof(error)), DCCL_SAVE_NOT);
    data[HEADER_BYTES + 3] ^= 1; /* then damaged: no sound policy, set aside first */
    CHECK(test_write_file(path, data, size) == 0);
    CHECK_EQ_INT(dccl_policy_plan_save(path, other, error, sizeof(error)), DCCL_SAVE_AFTER_SET_ASIDE);
    CHECK(chmod(path, 0) == 0);
    if (access(path, R_OK) != 0) /* not root: unreadable, perhaps a good policy */
      CHECK_EQ_INT(dccl_policy_plan_save(path, mine, error, sizeof(error)), DCCL_SAVE_NOT);
  }
  free(data);
  unlink(path);
}

static void test_save_is_atomic(void) {
  char path[128], nowhere[160], adir[128];
  path_in(path, sizeof(path), "policy.bin");
  path_in(nowhere, sizeof(nowhere), "missing-dir/policy.bin");
  path_in(adir, sizeof(adir), "adir");
  CHECK(trained_a.stats.observations != trained_b.stats.observations);
  CHECK(!same_floats(trained_a.q.online.values, trained_b.q.online.values, trained_a.q.online.count));

  CHECK(save(path, &trained_a, &trigger_a) == 0);
  struct stat before, after;
  CHECK(stat(path, &before) == 0);

  /* A save that cannot be done fails with a reason and leaves the good file as it was. */
  CHECK(save(nowhere, &trained_b, &trigger_b) == -1);
  CHECK(error[0] != '\0');
  CHECK(mkdir(adir, 0755) == 0);
  CHECK(save(adir, &trained_b, &trigger_b) == -1); /* rename over a directory fails */
  CHECK(error[0] != '\0');
  struct stat st;
  CHECK(stat(adir, &st) == 0 && S_ISDIR(st.st_mode));
  dccl_policy_meta m;
  memset(&m, 0, sizeof(m));
  memset(error, 0, sizeof(error));
  CHECK_MSG(dccl_policy_load(path, 0, &m, NULL, NULL, NULL, error, sizeof(error)) == 0, "%s", error);
  CHECK_EQ_INT(m.observations, trained_a.stats.observations);
  const char* const after_failures[] = {"policy.bin", "adir", NULL};
  CHECK_EQ_INT(unexpected_entries(after_failures), 0);

  /* Saving B over A replaces the file (a new inode: written beside it and renamed over), leaving no
   * temporary file, and the file now holds B. */
  CHECK(save(path, &trained_b, &trigger_b) == 0);
  CHECK(stat(path, &after) == 0);
  CHECK(after.st_ino != before.st_ino);
  CHECK_EQ_INT(unexpected_entries(after_failures), 0);
  memset(&m, 0, sizeof(m));
  static dccl_config_agent check;
  static dccl_trigger check_trigger;
  CHECK(make_agent(&check, 8, 99) == 0);
  CHECK(make_trigger(&check_trigger, 99) == 0);
  memset(error, 0, sizeof(error));
  CHECK_MSG(dccl_policy_load(path, dccl_policy_fingerprint(8, 1, 32, 1), &m, &check, &check_trigger, NULL, error,
                             sizeof(error)) == 0,
            "%s", error);
  CHECK_EQ_INT(m.observations, trained_b.stats.observations);
  check_agent_restored(&trained_b, &check);
  CHECK(!same_floats(check.q.online.values, trained_a.q.online.values, trained_a.q.online.count));
  CHECK(same_floats(check_trigger.params.values, trigger_b.params.values, trigger_b.params.count));
  dccl_trigger_free(&check_trigger);
  dccl_agent_free(&check);
  rmdir(adir);
  unlink(path);
}

static void test_corrupt_file_not_trusted(void) {
  char path[128];
  path_in(path, sizeof(path), "corrupt.bin");
  uint64_t fp = dccl_policy_fingerprint(8, 1, 32, 1);
  uint8_t garbage[4096];
  dccl_rng rng;
  dccl_rng_seed(&rng, 4242);
  for (size_t i = 0; i < sizeof(garbage); i++) garbage[i] = (uint8_t)dccl_rng_next(&rng);
  CHECK(test_write_file(path, garbage, sizeof(garbage)) == 0);
  expect_rejected_also_checking("random bytes", path, fp, &target, &trigger_target, NULL);

  /* Garbage behind a plausible header: right magic, version, header size and payload size. */
  static const char magic[8] = {'D', 'C', 'C', 'L', 'P', 'O', 'L', 0};
  memcpy(garbage, magic, 8);
  put_u32_at(garbage, 8, DCCL_POLICY_VERSION);
  put_u32_at(garbage, 12, HEADER_BYTES);
  put_u64_at(garbage, 16, fp);
  put_u64_at(garbage, 24, sizeof(garbage) - HEADER_BYTES);
  put_u32_at(garbage, 48, 8);
  put_u32_at(garbage, 52, 1);
  CHECK(test_write_file(path, garbage, sizeof(garbage)) == 0);
  expect_rejected("garbage behind a plausible header", path, fp, &target, &trigger_target, NULL);
  dccl_policy_seal(garbage, sizeof(garbage));
  CHECK(test_write_file(path, garbage, sizeof(garbage)) == 0);
  expect_rejected_also_checking("garbage behind a plausible, resealed header", path, fp, &target, &trigger_target, NULL);

  /* A good save replaces the corrupt file, which then loads. */
  CHECK(save(path, &trained_a, &trigger_a) == 0);
  dccl_policy_meta m;
  memset(&m, 0, sizeof(m));
  memset(error, 0, sizeof(error));
  CHECK_MSG(dccl_policy_load(path, fp, &m, &target, &trigger_target, NULL, error, sizeof(error)) == 0, "%s", error);
  CHECK_EQ_INT(m.observations, trained_a.stats.observations);
  check_agent_restored(&trained_a, &target);
  CHECK(same_floats(trigger_target.params.values, trigger_a.params.values, trigger_a.params.count));
  const char* const only[] = {"corrupt.bin", NULL};
  CHECK_EQ_INT(unexpected_entries(only), 0);
  unlink(path);
}

/* One cell, AllReduce 6000 bytes: `rounds` calls where NCCL's choice runs every third call at 100 us
 * and `fast` and `slow` alternate on the others at 70 and 130 us (2% noise), the agent deciding every
 * 8 calls. */
static void feed_cell(dccl_config_agent* agent, dccl_table* table, dccl_rng* rng, int rounds, dccl_action fast,
                      dccl_action slow) {
  for (int r = 0; r < rounds; r++) {
    dccl_agent_observation o;
    memset(&o, 0, sizeof(o));
    o.cell = cell_of(0);
    o.bytes = cell_bytes[0];
    o.decided = r % 3 == 0 ? DCCL_ACTION_NCCL : r % 3 == 1 ? fast : slow;
    o.executed_algo = dccl_action_is_nccl(o.decided) ? DCCL_ALGO_RING : dccl_action_algo(o.decided);
    o.executed_proto = dccl_action_is_nccl(o.decided) ? DCCL_PROTO_SIMPLE : dccl_action_proto(o.decided);
    double factor = dccl_action_is_nccl(o.decided) ? 1.0 : o.decided == fast ? 0.7 : 1.3;
    o.latency_us = 100.0 * factor * exp(0.02 * dccl_rng_normal(rng));
    dccl_agent_observe(agent, &o);
    if (r % 8 == 7) dccl_agent_decide(agent, table);
  }
}

/* A policy saved while a cell was congested (Agent-1's alarm stood when the job ended) loads calm:
 * this job's Agent-1 starts calm and would never send it back. Its calm statistics are those of the
 * context it measured more in: the congested ones after a long alarm (most likely a false one that
 * never recovered, or a lasting congestion), the calm ones after a short one; the congested ones stay
 * for this job's onsets. Calm, action A is fast; congested, action B. */
static void test_policy_saved_congested_loads_calm(void) {
  const int coll = DCCL_COLL_ALLREDUCE;
  dccl_action a = DCCL_ACTION_NCCL, b = DCCL_ACTION_NCCL;
  for (int i = 0; i < trained_a.n_actions[coll]; i++) {
    dccl_action action = trained_a.actions[coll][i];
    if (dccl_action_algo(action) == DCCL_ALGO_TREE && dccl_action_is_nccl(a)) a = action;
    if (dccl_action_algo(action) == DCCL_ALGO_RING && dccl_action_channels(action) == 1 && dccl_action_is_nccl(b)) b = action;
  }
  CHECK(!dccl_action_is_nccl(a) && !dccl_action_is_nccl(b));
  float cost[DCCL_COST_ENTRIES];
  for (int i = 0; i < DCCL_COST_ENTRIES; i++) cost[i] = -1.0f;
  cost[DCCL_ALGO_TREE * DCCL_NUM_PROTOS + dccl_action_proto(a)] = 10.0f;
  cost[DCCL_ALGO_RING * DCCL_NUM_PROTOS + dccl_action_proto(b)] = 8.0f;
  cost[DCCL_ALGO_RING * DCCL_NUM_PROTOS + DCCL_PROTO_SIMPLE] = 8.0f;
  static const struct {
    int calm_rounds, congested_rounds;
    const char* name;
  } cases[] = {{300, 600, "long alarm"}, {600, 300, "short alarm"}};
  for (int k = 0; k < 2; k++) {
    static dccl_config_agent saver, loaded;
    dccl_rng rng;
    dccl_rng_seed(&rng, 40 + (uint64_t)k);
    CHECK(make_agent(&saver, 8, 31) == 0);
    dccl_agent_set_cost(&saver, cell_of(0), cost);
    dccl_table_fill(&table_a, DCCL_ACTION_NCCL);
    feed_cell(&saver, &table_a, &rng, cases[k].calm_rounds, a, b);
    dccl_agent_on_event(&saver, coll, dccl_size_bin(cell_bytes[0]), DCCL_TRIGGER_EVENT_ONSET, 0);
    feed_cell(&saver, &table_a, &rng, cases[k].congested_rounds, b, a);
    dccl_agent_cell* saved = dccl_agent_cell_slot(&saver, cell_of(0), 0);
    CHECK(saved != NULL && saved->context == 1 && saved->exploit == b);
    char path[128];
    path_in(path, sizeof(path), "congested.bin");
    CHECK(save(path, &saver, NULL) == 0);
    dccl_action calm = cases[k].congested_rounds > cases[k].calm_rounds ? b : a;
    for (int learning = 0; learning <= 1; learning++) {
      dccl_agent_options o;
      agent_options(&o, 8, 31);
      o.learning = learning;
      CHECK(dccl_agent_init(&loaded, &o) == 0);
      CHECK_MSG(dccl_policy_load(path, 0, NULL, &loaded, NULL, NULL, error, sizeof(error)) == DCCL_POLICY_LOADED, "%s", error);
      dccl_agent_cell* c = dccl_agent_cell_slot(&loaded, cell_of(0), 0);
      CHECK(c != NULL);
      if (c == NULL) continue;
      CHECK_MSG(c->context == 0, "%s, learning %d: loaded in context %d", cases[k].name, learning, c->context);
      CHECK_MSG(c->exploit == calm, "%s, learning %d: loaded exploiting %08x, not %08x", cases[k].name, learning,
                (unsigned)c->exploit, (unsigned)calm);
      CHECK_EQ_INT(c->samples[1], saved->samples[1]);
      if (!learning) {
        dccl_table_fill(&table_r, DCCL_ACTION_NCCL);
        dccl_agent_exploit_table(&loaded, &table_r);
        CHECK_MSG(dccl_table_get(&table_r, cell_of(0)) == calm, "%s: frozen on %08x, not %08x", cases[k].name,
                  (unsigned)dccl_table_get(&table_r, cell_of(0)), (unsigned)calm);
      } else {
        /* An onset of this job: the congested context, its statistics as saved but for the restart. */
        dccl_agent_on_event(&loaded, coll, dccl_size_bin(cell_bytes[0]), DCCL_TRIGGER_EVENT_ONSET, 0);
        CHECK(c->context == 1 && c->calm_exploit == calm);
        int index = dccl_agent_action_index(&loaded, coll, b);
        CHECK(index >= 0 && dccl_agent_arm(&loaded, c, 1, index)->mean == dccl_agent_arm(&saver, saved, 1, index)->mean);
      }
      dccl_agent_free(&loaded);
    }
    dccl_agent_free(&saver);
    unlink(path);
  }
}

/* Writes `data` (`size` bytes) to `path` with `bytes` of `value` at `offset`, resealed, and checks that a
 * load (checking only) refuses it as `status`, its reason naming `reason`. */
static void expect_edit_refused(const char* path, const uint8_t* data, size_t size, size_t offset, const void* value,
                                size_t bytes, dccl_policy_status status, const char* reason) {
  uint8_t* copy = malloc(size);
  CHECK(copy != NULL);
  if (copy == NULL) return;
  memcpy(copy, data, size);
  memcpy(copy + offset, value, bytes);
  dccl_policy_seal(copy, size);
  CHECK(test_write_file(path, copy, size) == 0);
  error[0] = '\0';
  CHECK_MSG(dccl_policy_load(path, 0, NULL, NULL, NULL, NULL, error, sizeof(error)) == status && strstr(error, reason) != NULL,
            "%s, edited at byte %zu: %s", reason, offset, error);
  free(copy);
}

/* The size of the sections of formats 4 and 5 that dccl_policy_save writes for `agent` before the leftover
 * estimates: the channel section, per cell that knows a cap or what an arm ran on its index (2 bytes), cap
 * (1) and entry count (2), and 5 bytes an entry; then the tail section, 2 bytes a cell it lists. */
static size_t format4_sections_bytes(const dccl_config_agent* agent) {
  size_t bytes = 8 + 8;
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) {
    const dccl_agent_cell* c = &agent->cells[s];
    if (c->cell < 0) continue;
    bytes += 2 * (size_t)c->tail_as_it_came;
    size_t entries = 0;
    for (int i = 0; i < agent->n_actions[c->info.coll]; i++)
      entries += c->arms[i].channels_ran > 0 || c->arms[(size_t)agent->max_actions + i].channels_ran > 0;
    if (entries > 0 || c->channel_cap > 0) bytes += 5 + 5 * entries;
  }
  return bytes;
}

/* A policy's leftover estimates come back as saved, each weighing at most DCCL_LEFTOVER_LOADED_SAMPLES,
 * into the slots of the loading agent's cells, every other slot cleared; format 2 (no estimates) still
 * loads; a record of a cell the file does not hold, or one dccl_leftover_add could not have built, is
 * refused with a reason. */
static void test_leftover_estimates_saved(void) {
  char path[128];
  path_in(path, sizeof(path), "leftovers.bin");
  CHECK(save(path, &trained_a, &trigger_a) == 0);
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) leftovers_loaded[s].samples = 99; /* stale: must be cleared */
  dccl_policy_meta m;
  CHECK_MSG(dccl_policy_load(path, 0, &m, &target, NULL, leftovers_loaded, error, sizeof(error)) == DCCL_POLICY_LOADED,
            "%s", error);
  CHECK_EQ_INT((int)m.version, DCCL_POLICY_VERSION);
  int compared = 0;
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) {
    const dccl_leftover_cell* loaded = &leftovers_loaded[s];
    const dccl_agent_cell* c = &target.cells[s];
    const dccl_agent_cell* saved_cell = c->cell >= 0 ? dccl_agent_cell_slot(&trained_a, c->cell, 0) : NULL;
    if (saved_cell == NULL) {
      CHECK_EQ_INT((int)loaded->samples, 0);
      continue;
    }
    const dccl_leftover_cell* saved = &leftovers_a[saved_cell - trained_a.cells];
    CHECK_EQ_INT((int)loaded->samples, (int)saved->samples);
    for (int i = 0; i < DCCL_LEFTOVER_ACTIONS; i++) {
      const dccl_leftover_estimate *a = &saved->actions[i], *b = &loaded->actions[i];
      CHECK(a->action == b->action && a->last_used == b->last_used && a->excess_us.mean == b->excess_us.mean &&
            a->excess_us.variance == b->excess_us.variance && a->span_mean_us == b->span_mean_us);
      CHECK_EQ_INT((int)b->count, a->count < DCCL_LEFTOVER_LOADED_SAMPLES ? (int)a->count : DCCL_LEFTOVER_LOADED_SAMPLES);
    }
    /* tree/LL is charged from the first call: its excess beyond ring's, less nothing (told from noise) */
    double charge = dccl_leftover_charge(loaded, LEFTOVER_TREE);
    CHECK_MSG(fabs(charge - (saved->actions[1].excess_us.mean - saved->actions[0].excess_us.mean)) < 1e-9, "%g", charge);
    CHECK(dccl_leftover_charge(loaded, LEFTOVER_RING) == 0);
    compared++;
  }
  CHECK_EQ_INT(compared, N_CELLS);

  size_t size;
  uint8_t* data = test_read_file(path, &size);
  enum { RECORD = LEFTOVER_RECORD_BYTES };
  size_t section = size - LEFTOVER_SECTION_BYTES, record = section + 8;
  CHECK(data != NULL && size > section && memcmp(data + section, "LEFT", 4) == 0);
  if (data == NULL || size <= section || memcmp(data + section, "LEFT", 4) != 0) {
    free(data);
    return;
  }
  uint8_t* copy = malloc(size);
  CHECK(copy != NULL);
  if (copy == NULL) {
    free(data);
    return;
  }
  uint16_t absent = (uint16_t)dccl_cell_for_call(DCCL_COLL_ALLGATHER, 4096, 1, 0);
  double nan_value = NAN, negative = -1;
  uint32_t zero = 0, window_plus_one = DCCL_LEFTOVER_WINDOW + 1, bad_algo = 99u << 16;
  struct {
    size_t offset;
    const void* value;
    size_t bytes;
  } damage[] = {
    {record, &absent, 2},                          /* a cell the file holds no record of */
    {record + 7 + 12, &nan_value, 8},              /* a mean that is not a number */
    {record + 7 + 12, &negative, 8},               /* excess is never negative */
    {record + 7 + 28, &negative, 8},               /* nor a span */
    {record + 7 + 4, &zero, 4},                    /* an entry of no samples */
    {record + 7 + 4, &window_plus_one, 4},         /* more than a window */
    {record + 7, &bad_algo, 4},                    /* no such algorithm */
    {record + 7 + 36, data + record + 7, 4},       /* the same action twice */
    {record + 7 + 8, &window_plus_one, 4},         /* used after the cell's last sample (20 x 2) */
    {record + 6, &zero, 1},                        /* no entries */
  };
  for (size_t k = 0; k < sizeof(damage) / sizeof(damage[0]); k++)
    expect_edit_refused(path, data, size, damage[k].offset, damage[k].value, damage[k].bytes, DCCL_POLICY_REJECTED,
                        "leftover record 0 is inconsistent");
  /* A record for a cell given twice. */
  expect_edit_refused(path, data, size, record + RECORD, data + record, 2, DCCL_POLICY_REJECTED,
                      "leftover record 1 is inconsistent");
  /* Format 2: the same policy without the leftover section, nor the channel section before it. */
  size_t channels_start = section - format4_sections_bytes(&trained_a);
  CHECK(memcmp(data + channels_start, "CHAN", 4) == 0);
  memcpy(copy, data, channels_start);
  put_u32_at(copy, 8, 2);
  dccl_policy_seal(copy, channels_start);
  CHECK(test_write_file(path, copy, channels_start) == 0);
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) leftovers_loaded[s].samples = 99;
  CHECK_MSG(dccl_policy_load(path, 0, &m, &target, NULL, leftovers_loaded, error, sizeof(error)) == DCCL_POLICY_LOADED,
            "%s", error);
  CHECK_EQ_INT((int)m.version, 2);
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) CHECK_EQ_INT((int)leftovers_loaded[s].samples, 0);
  /* Formats 1 and 5 are refused, each saying whose it is. */
  put_u32_at(copy, 8, 1);
  dccl_policy_seal(copy, channels_start);
  CHECK(test_write_file(path, copy, channels_start) == 0);
  CHECK(dccl_policy_load(path, 0, NULL, NULL, NULL, NULL, error, sizeof(error)) == DCCL_POLICY_REJECTED &&
        strstr(error, "older DynamICCL (policy format 1; this one reads formats 2 to 5)") != NULL);
  /* A section its format did not have is damage: the leftover estimates in a format 2 file. */
  memcpy(copy, data, channels_start);
  memcpy(copy + channels_start, data + section, LEFTOVER_SECTION_BYTES);
  put_u32_at(copy, 8, 2);
  dccl_policy_seal(copy, channels_start + LEFTOVER_SECTION_BYTES);
  CHECK(test_write_file(path, copy, channels_start + LEFTOVER_SECTION_BYTES) == 0);
  CHECK_MSG(dccl_policy_load(path, 0, NULL, NULL, NULL, NULL, error, sizeof(error)) == DCCL_POLICY_REJECTED &&
              strstr(error, "section LEFT in a policy of format 2") != NULL,
            "%s", error);
  uint32_t newer = DCCL_POLICY_VERSION + 1;
  expect_edit_refused(path, data, size, 8, &newer, 4, DCCL_POLICY_FOREIGN, "newer DynamICCL");
  /* Estimates the loader would refuse (an action on more channels than NCCL has) are left out of the save
   * rather than costing the whole policy. */
  int slot = (int)(dccl_agent_cell_slot(&trained_a, cell_of(0), 0) - trained_a.cells);
  dccl_leftover_cell kept = leftovers_a[slot];
  dccl_leftover_add(&leftovers_a[slot], dccl_leftover_key(DCCL_ALGO_RING, DCCL_PROTO_LL, 200), 50, 1);
  CHECK(save(path, &trained_a, &trigger_a) == 0);
  leftovers_a[slot] = kept;
  CHECK_MSG(dccl_policy_load(path, 0, &m, &target, NULL, leftovers_loaded, error, sizeof(error)) == DCCL_POLICY_LOADED,
            "%s", error);
  CHECK_EQ_INT((int)m.leftover_cells, N_CELLS - 1);
  const dccl_agent_cell* left_out = dccl_agent_cell_slot(&target, cell_of(0), 0);
  CHECK(left_out != NULL && leftovers_loaded[left_out - target.cells].samples == 0);
  unlink(path);
  free(copy);
  free(data);
}

/* What NCCL ran each cell's requests on comes back as saved (check_agent_restored compares it arm by arm);
 * a format 3 file, without it, loads with none of it known; a damaged channel record refuses the file. */
static void test_channels_saved(void) {
  char path[128];
  dccl_policy_meta m;
  path_in(path, sizeof(path), "channels.bin");
  CHECK(save(path, &trained_a, &trigger_a) == 0);
  size_t size;
  uint8_t* data = test_read_file(path, &size);
  uint8_t* copy = data != NULL ? malloc(size) : NULL;
  size_t channels_start = size - LEFTOVER_SECTION_BYTES - format4_sections_bytes(&trained_a);
  CHECK(copy != NULL && channels_start > HEADER_BYTES && memcmp(data + channels_start, "CHAN", 4) == 0);
  if (copy == NULL || channels_start <= HEADER_BYTES || memcmp(data + channels_start, "CHAN", 4) != 0) {
    free(copy);
    free(data);
    return;
  }
  size_t record = channels_start + 8, entry = record + 5;
  uint32_t records;
  memcpy(&records, data + channels_start + 4, 4);
  CHECK_EQ_INT(records, N_CELLS);
  CHECK_EQ_INT(data[record + 2], NCCL_CHANNELS); /* the first cell's cap */
  /* Format 3: the same policy without the channel section; NCCL's channels are found out again. */
  memcpy(copy, data, channels_start);
  memcpy(copy + channels_start, data + size - LEFTOVER_SECTION_BYTES, LEFTOVER_SECTION_BYTES);
  put_u32_at(copy, 8, 3);
  dccl_policy_seal(copy, channels_start + LEFTOVER_SECTION_BYTES);
  CHECK(test_write_file(path, copy, channels_start + LEFTOVER_SECTION_BYTES) == 0);
  static dccl_config_agent fresh; /* a job's agent, loaded once at its start */
  CHECK(make_agent(&fresh, 8, 5) == 0);
  CHECK_MSG(dccl_policy_load(path, 0, &m, &fresh, NULL, leftovers_loaded, error, sizeof(error)) == DCCL_POLICY_LOADED,
            "%s", error);
  CHECK_EQ_INT((int)m.version, 3);
  CHECK_EQ_INT((int)m.leftover_cells, N_CELLS);
  int cells = 0, known = 0;
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) {
    const dccl_agent_cell* c = &fresh.cells[s];
    if (c->cell < 0) continue;
    cells++;
    known += c->channel_cap > 0;
    for (int i = 0; i < DCCL_AGENT_CONTEXTS * fresh.max_actions; i++) known += c->arms[i].channels_ran > 0;
  }
  CHECK_EQ_INT(cells, N_CELLS);
  CHECK_EQ_INT(known, 0);
  /* Format 3's readings were booked with their slow tail: its cells book this job's so too, and a save
   * says so (the TAIL section), which the next load keeps; trained_a's own cells clip it (none listed). */
  int as_it_came = 0;
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) as_it_came += fresh.cells[s].cell >= 0 && fresh.cells[s].tail_as_it_came;
  CHECK_EQ_INT(as_it_came, N_CELLS);
  char again[128];
  path_in(again, sizeof(again), "channels_again.bin");
  CHECK(save(again, &fresh, NULL) == 0);
  static dccl_config_agent reloaded;
  CHECK(make_agent(&reloaded, 8, 6) == 0);
  CHECK_MSG(dccl_policy_load(again, 0, &m, &reloaded, NULL, NULL, error, sizeof(error)) == DCCL_POLICY_LOADED, "%s", error);
  CHECK_EQ_INT((int)m.version, DCCL_POLICY_VERSION);
  as_it_came = 0;
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++)
    as_it_came += reloaded.cells[s].cell >= 0 && reloaded.cells[s].tail_as_it_came;
  CHECK_EQ_INT(as_it_came, N_CELLS);
  dccl_agent_free(&reloaded);
  size_t again_size;
  uint8_t* again_data = test_read_file(again, &again_size);
  /* Its TAIL section's cells: a cell the file holds no record of, or one given twice, refuses the file. */
  size_t tail = again_data != NULL ? again_size - 8 - 2 * N_CELLS : 0;
  CHECK(again_data != NULL && memcmp(again_data + tail, "TAIL", 4) == 0);
  if (again_data != NULL && memcmp(again_data + tail, "TAIL", 4) == 0) {
    uint16_t nowhere = (uint16_t)dccl_cell_for_call(DCCL_COLL_ALLGATHER, 4096, 1, 0);
    expect_edit_refused(again, again_data, again_size, tail + 8, &nowhere, 2, DCCL_POLICY_REJECTED,
                        "tail record 0 is inconsistent");
    expect_edit_refused(again, again_data, again_size, tail + 8, again_data + tail + 10, 2, DCCL_POLICY_REJECTED,
                        "tail record 1 is inconsistent");
  }
  free(again_data);
  unlink(again);
  dccl_agent_free(&fresh);
  /* Format 4: without the tail section, whose readings were booked with their tail (the channels known). */
  size_t tail_start = size - LEFTOVER_SECTION_BYTES - 8;
  CHECK(memcmp(data + tail_start, "TAIL", 4) == 0);
  memcpy(copy, data, tail_start);
  memcpy(copy + tail_start, data + size - LEFTOVER_SECTION_BYTES, LEFTOVER_SECTION_BYTES);
  put_u32_at(copy, 8, 4);
  dccl_policy_seal(copy, tail_start + LEFTOVER_SECTION_BYTES);
  CHECK(test_write_file(path, copy, tail_start + LEFTOVER_SECTION_BYTES) == 0);
  CHECK(make_agent(&fresh, 8, 5) == 0);
  CHECK_MSG(dccl_policy_load(path, 0, &m, &fresh, NULL, NULL, error, sizeof(error)) == DCCL_POLICY_LOADED, "%s", error);
  CHECK_EQ_INT((int)m.version, 4);
  cells = known = as_it_came = 0;
  for (int s = 0; s < DCCL_AGENT_MAX_CELLS; s++) {
    const dccl_agent_cell* c = &fresh.cells[s];
    if (c->cell < 0) continue;
    cells++;
    known += c->channel_cap > 0;
    as_it_came += c->tail_as_it_came;
  }
  CHECK_EQ_INT(cells, N_CELLS);
  CHECK_EQ_INT(known, N_CELLS);
  CHECK_EQ_INT(as_it_came, N_CELLS);
  dccl_agent_free(&fresh);
  /* The tail section in a format 4 file, and the channel section (the first seen) in a format 3 one, are
   * damage. */
  const struct {
    uint32_t version;
    const char* reason;
  } older[] = {{4, "section TAIL in a policy of format 4"}, {3, "section CHAN in a policy of format 3"}};
  for (size_t k = 0; k < sizeof(older) / sizeof(older[0]); k++)
    expect_edit_refused(path, data, size, 8, &older[k].version, 4, DCCL_POLICY_REJECTED, older[k].reason);
  uint16_t absent = (uint16_t)dccl_cell_for_call(DCCL_COLL_ALLGATHER, 4096, 1, 0), seen_cell;
  memcpy(&seen_cell, data + record, 2);
  uint8_t zero = 0, too_many = DCCL_MAX_CHANNELS + 1;
  uint32_t bad_algo = 99u << 16;
  struct {
    size_t offset;
    const void* value;
    size_t bytes;
    const char* reason;
  } damage[] = {
    {record, &absent, 2, "channel record 0 is inconsistent"},               /* a cell the file holds no record of */
    {record + 2, &too_many, 1, "channel record 0 is inconsistent"},         /* a cap beyond NCCL's channels */
    {entry + 4, &zero, 1, "entry 0 of channel record 0 is inconsistent"},    /* run on no channel */
    {entry + 4, &too_many, 1, "entry 0 of channel record 0 is inconsistent"}, /* on more than NCCL has */
    {entry, &bad_algo, 4, "entry 0 of channel record 0 is inconsistent"},    /* no such algorithm */
  };
  for (size_t k = 0; k < sizeof(damage) / sizeof(damage[0]); k++)
    expect_edit_refused(path, data, size, damage[k].offset, damage[k].value, damage[k].bytes, DCCL_POLICY_REJECTED,
                        damage[k].reason);
  /* A cell given twice: the second record names the first's cell. */
  uint16_t entries;
  memcpy(&entries, data + record + 3, 2);
  expect_edit_refused(path, data, size, record + 5 + 5 * (size_t)entries, &seen_cell, 2, DCCL_POLICY_REJECTED,
                      "channel record 1 is inconsistent");
  /* Cut inside a record. */
  memcpy(copy, data, channels_start + 8 + 3);
  dccl_policy_seal(copy, channels_start + 8 + 3);
  CHECK(test_write_file(path, copy, channels_start + 8 + 3) == 0);
  CHECK_MSG(dccl_policy_load(path, 0, NULL, NULL, NULL, NULL, error, sizeof(error)) == DCCL_POLICY_REJECTED &&
              strstr(error, "truncated channel record") != NULL,
            "%s", error);
  unlink(path);
  free(copy);
  free(data);
}

/* Mutations of a saved policy, resealed, through the fuzz target (tests/fuzz/policy_target.h): each
 * is refused with a reason, or loads into an agent that decides well-formed actions, learns, trains and
 * saves a policy that loads again (the target aborts otherwise). Bytes are overwritten with random ones
 * or with special floats (NaN, infinities, huge, negative, zero) at 4-byte boundaries, where the file's
 * floats lie; some files are cut short. Both outcomes must occur, or the mutations test nothing. */
static void test_mutated_policies_load_or_refuse(void) {
  char path[128];
  path_in(path, sizeof(path), "mutated.bin");
  CHECK(save(path, &trained_a, &trigger_a) == 0);
  size_t size;
  uint8_t* data = test_read_file(path, &size);
  unlink(path);
  CHECK(data != NULL && size > HEADER_BYTES + 1000);
  if (data == NULL || size <= HEADER_BYTES + 1000) {
    free(data);
    return;
  }
  static const float special[] = {NAN, INFINITY, -INFINITY, 3e38f, 1e20f, -1.0f, 0.0f, 1e-40f, 65536.0f};
  dccl_rng rng;
  dccl_rng_seed(&rng, 99);
  int loaded = 0, refused = 0;
  for (int round = 0; round < 300; round++) {
    uint8_t* copy = malloc(size);
    CHECK(copy != NULL);
    if (copy == NULL) break;
    memcpy(copy, data, size);
    size_t n = size;
    int changes = 1 + (int)dccl_rng_below(&rng, 3);
    for (int k = 0; k < changes; k++) {
      size_t at = HEADER_BYTES + dccl_rng_below(&rng, size - HEADER_BYTES - 4);
      if (round % 2 == 0) {
        at &= ~(size_t)3;
        float value = special[dccl_rng_below(&rng, sizeof(special) / sizeof(special[0]))];
        memcpy(copy + at, &value, 4);
      } else {
        copy[at] = (uint8_t)dccl_rng_below(&rng, 256);
      }
    }
    if (round % 7 == 0) n = HEADER_BYTES + dccl_rng_below(&rng, size - HEADER_BYTES);
    if (dccl_fuzz_policy_one(copy, n)) loaded++;
    else refused++;
    free(copy);
  }
  fprintf(stderr, "  300 mutated policies: %d loaded and driven, %d refused\n", loaded, refused);
  CHECK(loaded > 0);
  CHECK(refused > 0);
  free(data);
}

int main(void) {
  snprintf(directory, sizeof(directory), "/tmp/dccl_policy_test_XXXXXX");
  if (mkdtemp(directory) == NULL) {
    fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
    return 1;
  }
  int ready = make_agent(&trained_a, 8, 11) == 0 && make_agent(&trained_b, 8, 23) == 0 &&
              make_agent(&restored, 8, 11) == 0 && make_agent(&target, 8, 11) == 0 && make_agent(&wide, 16, 11) == 0 &&
              make_trigger(&trigger_a, 5) == 0 && make_trigger(&trigger_b, 6) == 0 &&
              make_trigger(&trigger_restored, 5) == 0 && make_trigger(&trigger_target, 5) == 0;
  if (!ready) {
    fprintf(stderr, "cannot initialise the agents\n");
    test_remove_tree(directory);
    return 1;
  }
  RUN(test_training_setup);
  RUN(test_round_trip);
  RUN(test_rejections);
  RUN(test_header_is_covered_and_consistent);
  RUN(test_load_tells_missing_rejected_unreadable);
  RUN(test_set_aside);
  RUN(test_save_plan);
  RUN(test_save_is_atomic);
  RUN(test_corrupt_file_not_trusted);
  RUN(test_leftover_estimates_saved);
  RUN(test_channels_saved);
  RUN(test_policy_saved_congested_loads_calm);
  RUN(test_mutated_policies_load_or_refuse);

  dccl_agent_free(&trained_a);
  dccl_agent_free(&trained_b);
  dccl_agent_free(&restored);
  dccl_agent_free(&target);
  dccl_agent_free(&wide);
  dccl_trigger_free(&trigger_a);
  dccl_trigger_free(&trigger_b);
  dccl_trigger_free(&trigger_restored);
  dccl_trigger_free(&trigger_target);
  test_remove_tree(directory);
  TEST_SUMMARY();
}
