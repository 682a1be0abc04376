/* tests/test_learner.c: the learner's join of measurements with the calls that produced them, when
 * measurements are lost, when calls are lost (a lagging learner, a full call log) and when NCCL
 * aggregates grouped calls: every joined measurement must reach the arm of the action that ran. */
#include <math.h>
#include <stdlib.h>

#include "../core/decision_table.h"
#include "../plugin/learner.h"
#include "test.h"

#define COLL DCCL_COLL_ALLREDUCE
#define BYTES ((uint64_t)1 << 20)
#define SEQ_OFFSET 7 /* NCCL's seqNumber need not start where our call numbers do */

static dccl_call_log call_log;
static dccl_cost_snapshots costs;

typedef struct fixture {
  dccl_learner* learner;
  dccl_learner_inputs inputs;
  dccl_action fast, slow; /* two actions of different protocols, 100 and 300 us */
  uint64_t next_call;
} fixture;

static void fixture_init(fixture* f) {
  memset(&call_log, 0, sizeof(call_log));
  memset(&costs, 0, sizeof(costs));
  memset(f, 0, sizeof(*f));
  f->learner = malloc(sizeof(dccl_learner));
  dccl_learner_options o;
  memset(&o, 0, sizeof(o));
  dccl_agent_default_options(&o.agent);
  CHECK(dccl_learner_init(f->learner, &o) == 0);
  f->inputs.calls = &call_log;
  f->inputs.costs = &costs;
  f->fast = dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 2, 0);
  f->slow = dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_LL, 2, 0);
  CHECK(dccl_agent_action_index(&f->learner->agent, COLL, f->fast) >= 0);
  CHECK(dccl_agent_action_index(&f->learner->agent, COLL, f->slow) >= 0);
}

static void fixture_free(fixture* f) {
  dccl_learner_free(f->learner);
  free(f->learner);
}

/* Calls alternate between the two actions in blocks of 3, so that a measurement joined with another
 * call (off by a number that is not a multiple of 6) reaches the other action at some block edge
 * (which the agent takes as an action NCCL ignored). */
static dccl_action decided_for(const fixture* f, uint64_t coll_call) { return (coll_call / 3) % 2 ? f->slow : f->fast; }

static void log_calls(fixture* f, int n, uint64_t bytes) {
  for (int i = 0; i < n; i++, f->next_call++) {
    dccl_call_record r = {bytes, f->next_call, f->next_call, decided_for(f, f->next_call),
                          (uint16_t)dccl_cell_for_call(COLL, bytes, 1, 0), COLL, 0};
    dccl_call_log_push(&call_log, &r);
  }
}

/* A measurement of `ran` whose seqNumber is `position` (NCCL's count of this collective's operations,
 * equal to our call number until NCCL aggregates grouped calls) plus SEQ_OFFSET. */
static void measure(fixture* f, uint64_t position, uint64_t bytes, dccl_action ran) {
  dccl_measurement m = {0};
  m.seq = position + SEQ_OFFSET;
  m.bytes = bytes;
  m.duration_ns = ran == f->fast ? 100000 : 300000;
  m.gpu_start_ns = 1000000 * (position + 1);
  m.coll = COLL;
  m.algo = (uint8_t)dccl_action_algo(ran);
  m.proto = (uint8_t)dccl_action_proto(ran);
  m.channels = (uint8_t)dccl_action_channels(ran);
  m.channels_measured = m.channels;
  dccl_learner_begin(f->learner, &f->inputs);
  dccl_learner_take(f->learner, &f->inputs, &m);
}

/* Measures calls [first, first + n) of size BYTES, except those `lost` says. */
static void measure_range(fixture* f, uint64_t first, int n, int (*lost)(uint64_t)) {
  for (uint64_t c = first; c < first + (uint64_t)n; c++)
    if (lost == NULL || !lost(c)) measure(f, c, BYTES, decided_for(f, c));
}

/* Counts the calls [first, first + n) that should be joined, per action. */
static void expect(const fixture* f, uint64_t first, int n, int (*lost)(uint64_t), int* fast, int* slow) {
  for (uint64_t c = first; c < first + (uint64_t)n; c++)
    if (lost == NULL || !lost(c)) {
      if (decided_for(f, c) == f->fast) (*fast)++;
      else (*slow)++;
    }
}

/* Both arms valid, with exactly the expected samples, each at its own latency. */
static void check_arms(fixture* f, int fast_samples, int slow_samples) {
  dccl_config_agent* agent = &f->learner->agent;
  dccl_agent_cell* c = dccl_agent_cell_slot(agent, dccl_cell_for_call(COLL, BYTES, 1, 0), 0);
  CHECK(c != NULL);
  if (c == NULL) return;
  dccl_arm* fast = dccl_agent_arm(agent, c, 0, dccl_agent_action_index(agent, COLL, f->fast));
  dccl_arm* slow = dccl_agent_arm(agent, c, 0, dccl_agent_action_index(agent, COLL, f->slow));
  CHECK_EQ_INT(fast->invalid, 0);
  CHECK_EQ_INT(slow->invalid, 0);
  CHECK_NEAR(fast->count, fast_samples, 1e-3);
  CHECK_NEAR(slow->count, slow_samples, 1e-3);
  if (fast->count > 0) CHECK_NEAR(fast->mean, log(100.0), 1e-4);
  if (slow->count > 0) CHECK_NEAR(slow->mean, log(300.0), 1e-4);
}

/* Logs the next n calls of size BYTES and measures every one of them but those `lost` says. */
static void run_calls(fixture* f, int n, int (*lost)(uint64_t)) {
  uint64_t first = f->next_call;
  log_calls(f, n, BYTES);
  measure_range(f, first, n, lost);
}

static int every_fifth(uint64_t c) { return c % 5 == 3; }

static void test_lost_measurements_skip_their_calls(void) {
  /* The profiler drops 1 measurement in 5: the next one must not take the call of the lost one. */
  fixture f;
  fixture_init(&f);
  for (int round = 0; round < 10; round++) run_calls(&f, 40, every_fifth);
  int fast = 0, slow = 0;
  expect(&f, 0, 400, every_fifth, &fast, &slow);
  check_arms(&f, fast, slow);
  CHECK_EQ_INT(f.learner->counters.joined, 320);
  CHECK_EQ_INT(f.learner->counters.unjoined, 0);
  fixture_free(&f);
}

static void test_lagging_learner_drops_what_it_lost(void) {
  /* After 40 calls joined, 3,000 calls are logged before the next measurement is read: the 1,976
   * oldest overflow the join queue. Their measurements are counted lost; the rest join their own
   * calls, and so does everything after. */
  fixture f;
  fixture_init(&f);
  run_calls(&f, 40, NULL);
  log_calls(&f, 3000, BYTES);
  measure_range(&f, 40, 3000, NULL);
  CHECK_EQ_INT(f.learner->counters.lost_calls, 3000 - DCCL_JOIN_DEPTH);
  CHECK_EQ_INT(f.learner->counters.joined, 40 + DCCL_JOIN_DEPTH);
  int fast = 0, slow = 0;
  expect(&f, 0, 40, NULL, &fast, &slow);
  expect(&f, 3040 - DCCL_JOIN_DEPTH, DCCL_JOIN_DEPTH, NULL, &fast, &slow);
  check_arms(&f, fast, slow);
  run_calls(&f, 40, NULL); /* calls 3040 .. 3079 */
  CHECK_EQ_INT(f.learner->counters.joined, 80 + DCCL_JOIN_DEPTH);
  expect(&f, 3040, 40, NULL, &fast, &slow);
  check_arms(&f, fast, slow);
  fixture_free(&f);
}

static void test_full_call_log_loses_calls_not_joins(void) {
  /* The hot path finds the call log full for 808 calls; their measurements arrive before any later
   * call is logged (so the learner cannot yet know those calls were lost), then the job goes on. */
  fixture f;
  fixture_init(&f);
  run_calls(&f, 40, NULL);
  log_calls(&f, DCCL_CALL_LOG_CAPACITY + 808, BYTES); /* calls 40 .. 9039; the last 808 dropped */
  CHECK_EQ_INT((int)atomic_load(&call_log.dropped), 808);
  measure_range(&f, 40, DCCL_CALL_LOG_CAPACITY + 808, NULL);
  uint64_t joined = f.learner->counters.joined;
  CHECK_EQ_INT(joined, 40 + DCCL_JOIN_DEPTH);
  run_calls(&f, 40, NULL);
  CHECK_EQ_INT(f.learner->counters.joined, joined + 40);
  int fast = 0, slow = 0;
  expect(&f, 0, 40, NULL, &fast, &slow);
  expect(&f, 40 + DCCL_CALL_LOG_CAPACITY - DCCL_JOIN_DEPTH, DCCL_JOIN_DEPTH, NULL, &fast, &slow);
  expect(&f, 40 + DCCL_CALL_LOG_CAPACITY + 808, 40, NULL, &fast, &slow);
  check_arms(&f, fast, slow);
  fixture_free(&f);
}

static void test_aggregated_calls_leave_the_join_in_step(void) {
  /* NCCL aggregates a group of 3 calls into one getCollInfo of their total size, then measures each
   * (3 seqNumbers for 1 call). The calls after it must still join their own measurements, also when
   * a measurement is lost later. */
  fixture f;
  fixture_init(&f);
  log_calls(&f, 8, BYTES);
  measure_range(&f, 0, 8, NULL);
  uint64_t group = f.next_call;
  dccl_call_record r = {3 * (BYTES / 4), group, group, f.fast, (uint16_t)dccl_cell_for_call(COLL, 3 * (BYTES / 4), 1, 0),
                        COLL, 0};
  dccl_call_log_push(&call_log, &r);
  f.next_call++;
  uint64_t first = f.next_call;
  log_calls(&f, 32, BYTES);
  /* The group's three measurements carry seqNumbers group .. group + 2 (+ SEQ_OFFSET). */
  for (int k = 0; k < 3; k++) measure(&f, group + (uint64_t)k, BYTES / 4, f.fast);
  /* The later calls' seqNumbers are now 2 ahead of their call numbers. */
  for (uint64_t c = first; c < first + 32; c++)
    if (c != first + 13) measure(&f, c + 2, BYTES, decided_for(&f, c)); /* call first + 13: lost */
  CHECK_EQ_INT(f.learner->counters.joined, 8 + 31);
  int fast = 0, slow = 0;
  expect(&f, 0, 8, NULL, &fast, &slow);
  expect(&f, first, 13, NULL, &fast, &slow);
  expect(&f, first + 14, 18, NULL, &fast, &slow);
  check_arms(&f, fast, slow);
  fixture_free(&f);
}

int main(void) {
  RUN(test_lost_measurements_skip_their_calls);
  RUN(test_lagging_learner_drops_what_it_lost);
  RUN(test_full_call_log_loses_calls_not_joins);
  RUN(test_aggregated_calls_leave_the_join_in_step);
  TEST_SUMMARY();
}
