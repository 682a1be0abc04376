/* tests/test_learner.c: the learner's join of measurements with the calls that produced them, when
 * measurements are lost, when calls are lost (a lagging learner, a full call log) and when NCCL
 * aggregates grouped calls: every joined measurement must reach the arm of the action that ran; and
 * the cost it reaches it with: the stream time where the next call was waiting. */
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
  dccl_action expected_previous; /* expect(): the action of the last joined call (0: none) */
} fixture;

static void fixture_init_costing(fixture* f, int cost) {
  memset(&call_log, 0, sizeof(call_log));
  memset(&costs, 0, sizeof(costs));
  memset(f, 0, sizeof(*f));
  f->learner = malloc(sizeof(dccl_learner));
  dccl_learner_options o;
  memset(&o, 0, sizeof(o));
  o.cost = cost;
  o.learn_first_calls = 1; /* the tests count samples exactly; first calls have their own test */
  dccl_agent_default_options(&o.agent);
  CHECK(dccl_learner_init(f->learner, &o) == 0);
  f->inputs.calls = &call_log;
  f->inputs.costs = &costs;
  f->fast = dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_SIMPLE, 2, 0);
  f->slow = dccl_action_make(DCCL_ALGO_RING, DCCL_PROTO_LL, 2, 0);
  CHECK(dccl_agent_action_index(&f->learner->agent, COLL, f->fast) >= 0);
  CHECK(dccl_agent_action_index(&f->learner->agent, COLL, f->slow) >= 0);
}

static void fixture_init(fixture* f) { fixture_init_costing(f, DCCL_COST_SPAN); }

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
static dccl_measurement measurement_of(const fixture* f, uint64_t position, uint64_t bytes, dccl_action ran) {
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
  return m;
}

static void take(fixture* f, const dccl_measurement* m) {
  dccl_learner_begin(f->learner, &f->inputs);
  dccl_learner_take(f->learner, &f->inputs, m);
}

static void measure(fixture* f, uint64_t position, uint64_t bytes, dccl_action ran) {
  dccl_measurement m = measurement_of(f, position, bytes, ran);
  take(f, &m);
}

/* Measures calls [first, first + n) of size BYTES, except those `lost` says. */
static void measure_range(fixture* f, uint64_t first, int n, int (*lost)(uint64_t)) {
  for (uint64_t c = first; c < first + (uint64_t)n; c++)
    if (lost == NULL || !lost(c)) measure(f, c, BYTES, decided_for(f, c));
}

/* Counts the calls [first, first + n) that should be joined and learned, per action: joined, and not
 * right after a joined call of the other action (the learner skips those: work the other action left
 * behind its kernel is in their spans). Ranges are counted in order; expect_gap() between two when
 * measurements that joined no call came between them. */
static void expect(fixture* f, uint64_t first, int n, int (*lost)(uint64_t), int* fast, int* slow) {
  for (uint64_t c = first; c < first + (uint64_t)n; c++)
    if (lost == NULL || !lost(c)) {
      dccl_action ran = decided_for(f, c);
      if (f->expected_previous == 0 || f->expected_previous == ran) {
        if (ran == f->fast) (*fast)++;
        else (*slow)++;
      }
      f->expected_previous = ran;
    }
}
static void expect_gap(fixture* f) { f->expected_previous = 0; }

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
  expect_gap(&f);
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
  expect_gap(&f);
  expect(&f, 40 + DCCL_CALL_LOG_CAPACITY - DCCL_JOIN_DEPTH, DCCL_JOIN_DEPTH, NULL, &fast, &slow);
  expect_gap(&f);
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
  expect_gap(&f); /* the group's calls: another cell */
  expect(&f, first, 13, NULL, &fast, &slow);
  expect(&f, first + 14, 18, NULL, &fast, &slow);
  check_arms(&f, fast, slow);
  fixture_free(&f);
}

/* Measures calls [first, first + n) of size BYTES back to back on the GPU, with host stamps: a fast
 * call's kernel spans 100 us but leaves `fast_tail_us` of work behind that holds the next kernel back
 * (tree's last sends over sockets); a slow one spans 300 us and leaves none. `waiting`: NCCL launched
 * every call before the previous kernel ended; else each when the previous one had been seen ending.
 * Calls are numbered `order_step` apart in the communicator's call count (2: a point-to-point call
 * between each two). */
static dccl_measurement stamped(const fixture* f, uint64_t c, uint64_t gpu_start_ns, int waiting, uint64_t order_step) {
  dccl_measurement m = measurement_of(f, c, BYTES, decided_for(f, c));
  m.gpu_start_ns = gpu_start_ns;
  m.call_order = c * order_step;
  m.host_launch_ns = waiting ? 1000 + c : 2000 * c + 1;
  m.host_done_ns = waiting ? 1000000 + 1000 * c : 2000 * c + 1000;
  return m;
}

/* The same, with the application's `wait_us` (compute on the stream, or a wait on another) before
 * every next kernel, after whatever the last one left behind. */
static void measure_stream_waits(fixture* f, uint64_t first, int n, uint64_t fast_tail_us, int waiting,
                                 uint64_t order_step, uint64_t wait_us) {
  uint64_t gpu = 1000000000ULL;
  for (uint64_t c = first; c < first + (uint64_t)n; c++) {
    dccl_measurement m = stamped(f, c, gpu, waiting, order_step);
    take(f, &m);
    gpu += m.duration_ns + (decided_for(f, c) == f->fast ? fast_tail_us * 1000 : 0) + wait_us * 1000;
  }
}

static void measure_stream(fixture* f, uint64_t first, int n, uint64_t fast_tail_us, int waiting, uint64_t order_step) {
  measure_stream_waits(f, first, n, fast_tail_us, waiting, order_step, 0);
}

/* The calm arm of `action` in the cell of `bytes` (NULL: no such cell yet). */
static dccl_arm* arm_at(fixture* f, uint64_t bytes, dccl_action action) {
  dccl_config_agent* agent = &f->learner->agent;
  dccl_agent_cell* c = dccl_agent_cell_slot(agent, dccl_cell_for_call(COLL, bytes, 1, 0), 0);
  return c != NULL ? dccl_agent_arm(agent, c, 0, dccl_agent_action_index(agent, COLL, action)) : NULL;
}
static dccl_arm* arm_of(fixture* f, dccl_action action) { return arm_at(f, BYTES, action); }

static void test_stream_time_charges_work_left_behind_the_kernel(void) {
  /* The fast action's kernel spans 100 us but holds the next kernel back 200 us more. While NCCL had
   * launched each next call already, the learner must charge it 300 us, like the slow action, not
   * its span; the last call is learned once the profiler says no call started after it. */
  fixture f;
  fixture_init_costing(&f, DCCL_COST_STREAM);
  _Atomic uint64_t calls_started = 0;
  f.inputs.calls_started = &calls_started;
  log_calls(&f, 60, BYTES);
  measure_stream(&f, 0, 60, 200, 1, 1);
  /* The actions alternate in blocks of 3: the first call of every block but the first comes right
   * after a call of the other action and is not learned (19 of 60). Each learned call is held until
   * the next measurement, which tells its stream time. */
  CHECK_EQ_INT(f.learner->counters.joined, 60);
  CHECK_EQ_INT(f.learner->counters.after_switch, 19);
  CHECK_EQ_INT(f.learner->counters.stream_timed, 40); /* the last has no next call yet */
  f.learner->options.agent.learning = 0;            /* no tables to publish in this fixture */
  atomic_store(&calls_started, 61);                 /* a call started after the last: it may still come */
  dccl_learner_end(f.learner, &f.inputs);
  dccl_arm* fast = arm_of(&f, f.fast);
  dccl_arm* slow = arm_of(&f, f.slow);
  CHECK(fast != NULL && slow != NULL);
  if (fast == NULL || slow == NULL) return;
  CHECK_NEAR(fast->count + slow->count, 40, 1e-3);
  atomic_store(&calls_started, 60); /* none did: the last call is learned, by its span */
  dccl_learner_end(f.learner, &f.inputs);
  CHECK_NEAR(fast->count + slow->count, 41, 1e-3);
  CHECK_NEAR(fast->mean, log(300.0), 1e-4);
  CHECK_NEAR(slow->mean, log(300.0), 1e-4);
  /* A held measurement whose next call gave no measurement is learned, by its span, when the
   * communicator ends. */
  log_calls(&f, 2, BYTES);
  measure_stream(&f, 60, 2, 200, 1, 1); /* call 60 starts a block (not learned), 61 is held */
  CHECK_NEAR(fast->count + slow->count, 41, 1e-3);
  dccl_learner_flush(f.learner, &f.inputs);
  CHECK_NEAR(fast->count + slow->count, 42, 1e-3);
  fixture_free(&f);
}

static void test_overlapping_calls_cost_their_spans(void) {
  /* NCCL ran the next call's kernel before this one's ended (calls of one group, in one kernel): the
   * time between their starts is not this call's, and must not wrap below its span. */
  fixture f;
  fixture_init_costing(&f, DCCL_COST_STREAM);
  log_calls(&f, 60, BYTES);
  for (uint64_t c = 0; c < 60; c++) { /* each kernel starts 50 us after the last: before either action's end */
    dccl_measurement m = stamped(&f, c, 1000000000ULL + 50000 * c, 1, 1);
    take(&f, &m);
  }
  f.learner->options.agent.learning = 0;
  dccl_learner_end(f.learner, &f.inputs);
  CHECK_EQ_INT(f.learner->counters.stream_timed, 0);
  check_arms(&f, 21, 20); /* blocks of 3: a block's first call is not learned, but the very first */
  fixture_free(&f);
}

static void test_a_gap_the_application_made_is_not_charged(void) {
  /* The same timeline, but each call was launched only after the previous kernel was seen ending
   * (the application computed in between), or a point-to-point call sat between each two, or the
   * learner charges spans (DYNAMICCL_COST=span, the default): every call costs its span. */
  for (int variant = 0; variant < 3; variant++) {
    fixture f;
    fixture_init_costing(&f, variant < 2 ? DCCL_COST_STREAM : DCCL_COST_SPAN);
    log_calls(&f, 60, BYTES);
    measure_stream(&f, 0, 60, 200, variant >= 1, variant == 1 ? 2 : 1);
    f.learner->options.agent.learning = 0;
    dccl_learner_end(f.learner, &f.inputs); /* no profiler count given: the last one is learned now */
    CHECK_EQ_INT(f.learner->counters.stream_timed, 0);
    /* A block's first call is right after a call of the other action and not learned, except where a
     * point-to-point call sits between each two (the call orders say so). */
    if (variant == 1) check_arms(&f, 30, 30);
    else check_arms(&f, 21, 20);
    fixture_free(&f);
  }
}

static void test_leftover_charges_work_left_behind_not_the_applications_waits(void) {
  /* DYNAMICCL_COST=leftover. The fast action (100 us) leaves 40 us behind its kernel; the slow one
   * (300 us) none. Back to back, the slow action sets the level (no excess) once it has 4 samples
   * (calls 3, 4, 5 and 9, told at call 10), and from then on every learned fast call is charged its
   * 40 us: the fast arm holds 5 calls at 100 us and 16 at 140. The slow one costs its span. (The
   * agent takes the fast action's rise for a drift of the machine in part: means within 2%.) */
  fixture f;
  fixture_init_costing(&f, DCCL_COST_LEFTOVER);
  log_calls(&f, 60, BYTES);
  measure_stream(&f, 0, 60, 40, 1, 1);
  dccl_learner_flush(f.learner, &f.inputs);
  CHECK_EQ_INT(f.learner->counters.after_switch, 19);
  CHECK_EQ_INT(f.learner->counters.stream_timed, 59); /* every call but the last, skipped or not */
  CHECK_EQ_INT(f.learner->counters.leftover_charged, 16);
  dccl_arm* fast = arm_of(&f, f.fast);
  dccl_arm* slow = arm_of(&f, f.slow);
  CHECK(fast != NULL && slow != NULL);
  if (fast != NULL && slow != NULL) {
    CHECK_NEAR(fast->count, 21, 1e-3);
    CHECK_NEAR(fast->mean, (5 * log(100.0) + 16 * log(140.0)) / 21, 0.02);
    CHECK_NEAR(slow->count, 20, 1e-3);
    CHECK_NEAR(slow->mean, log(300.0), 0.02);
  }
  fixture_free(&f);
  /* The application waits 400 us before every kernel (NCCL launched each call ahead): every action's
   * excess is the wait (the fast one's 440 counted as 4 spans, 400), and the level action waits more
   * than a span. The calls wait on the application: nothing is charged, although the fast action
   * leaves its 40 us behind too. NCCL not launching ahead: no excess at all. */
  for (int waiting = 1; waiting >= 0; waiting--) {
    fixture_init_costing(&f, DCCL_COST_LEFTOVER);
    log_calls(&f, 60, BYTES);
    measure_stream_waits(&f, 0, 60, 40, waiting, 1, 400);
    dccl_learner_flush(f.learner, &f.inputs);
    CHECK_EQ_INT(f.learner->counters.stream_timed, waiting ? 59 : 0);
    CHECK_EQ_INT(f.learner->counters.leftover_charged, 0);
    check_arms(&f, 21, 20);
    fixture_free(&f);
  }
}

/* Runs the explored cell of the test below; returns the learner's fast and slow arms' means (us). */
static void explore_in_runs(fixture* f, double* fast_us, double* slow_us) {
  uint16_t cell = (uint16_t)dccl_cell_for_call(COLL, BYTES, 1, 0);
  dccl_action previous = 0;
  uint64_t gpu = 1000000000ULL;
  for (uint64_t c = 0; c < 400; c++) {
    dccl_action ran = c % 8 >= 6 ? f->slow : f->fast;
    dccl_call_record r = {BYTES, c, c, ran, cell, COLL, 0};
    dccl_call_log_push(&call_log, &r);
    dccl_measurement m = measurement_of(f, c, BYTES, ran);
    uint64_t own_us = ran == f->fast ? 100 : 80, inherited_us = previous == f->slow ? 40 : 0;
    m.duration_ns = 1000 * (own_us + inherited_us);
    m.gpu_start_ns = gpu;
    gpu += m.duration_ns;
    take(f, &m);
    previous = ran;
  }
  dccl_arm* fast = arm_of(f, f->fast);
  dccl_arm* slow = arm_of(f, f->slow);
  *fast_us = fast != NULL ? exp(fast->mean) : 0;
  *slow_us = slow != NULL ? exp(slow->mean) : 0;
}

static void test_work_left_to_the_next_call_is_not_learned_as_its_own(void) {
  /* A cell explores the slow-protocol action in runs of 2 calls among 6 of the fast one. The explored
   * action's kernel spans 80 us and leaves 40 us of work that the next kernel does, whatever it runs
   * (tree on 1 channel over sockets): back to back it costs 120 us a call, 20% more than the fast
   * action's 100. The call right after a switch carries the other action's leftover (the fast one
   * 140 us, the explored one 80) and is not learned. */
  fixture f;
  fixture_init(&f);
  double fast_us, slow_us;
  explore_in_runs(&f, &fast_us, &slow_us);
  CHECK_EQ_INT(f.learner->counters.after_switch, 99); /* the first of each run but the very first */
  dccl_arm* fast = arm_of(&f, f.fast);
  dccl_arm* slow = arm_of(&f, f.slow);
  CHECK(fast != NULL && slow != NULL);
  if (fast != NULL && slow != NULL) {
    CHECK_NEAR(fast->count, 251, 1e-3); /* 6 in the first eight calls, 5 in each later eight */
    CHECK_NEAR(slow->count, 50, 1e-3);
  }
  CHECK_NEAR(fast_us, 100, 1e-2);
  CHECK_NEAR(slow_us, 120, 1e-2);
  fixture_free(&f);
  /* DYNAMICCL_AFTER_SWITCH=learn learns every call: the explored action looks the cheaper one (100 us
   * against the fast one's 107), which is why it is not the default. */
  fixture_init(&f);
  f.learner->options.learn_after_switch = 1;
  explore_in_runs(&f, &fast_us, &slow_us);
  CHECK_EQ_INT(f.learner->counters.after_switch, 0);
  CHECK_MSG(slow_us < fast_us, "learning every call: slow %.1f us, fast %.1f us", slow_us, fast_us);
  fixture_free(&f);
}

static void test_first_call_of_a_kernel_is_not_learned(void) {
  /* The communicator's first call of each (collective, algorithm, protocol) holds NCCL's one-time work
   * (loading the kernel, connecting the algorithm's channels): here the first fast call takes 5 ms, 50x
   * its 100 us. Left in, that one reading puts the fast action's mean of 21 readings 1.2x above its
   * truth (the slow one's stays within 0.5%: the common drift, which weighs a reading by its arm's
   * precision, follows little an arm that one reading spreads so; 2% off when it weighed all alike);
   * skipped, both are exact. The slow action's first call is right after a switch, so
   * skipped either way and counted there. Another collective's first call is its own first, and so is
   * the first call on another datatype. */
  for (int learn_first = 1; learn_first >= 0; learn_first--) {
    fixture f;
    fixture_init(&f);
    f.learner->options.learn_first_calls = learn_first;
    log_calls(&f, 60, BYTES);
    for (uint64_t c = 0; c < 60; c++) {
      dccl_measurement m = measurement_of(&f, c, BYTES, decided_for(&f, c));
      if (c == 0) m.duration_ns = 5000000;
      take(&f, &m);
    }
    CHECK_EQ_INT(f.learner->counters.after_switch, 19);
    CHECK_EQ_INT(f.learner->counters.first_calls, learn_first ? 0 : 1);
    dccl_arm* fast = arm_of(&f, f.fast);
    dccl_arm* slow = arm_of(&f, f.slow);
    CHECK(fast != NULL && slow != NULL);
    if (fast != NULL && slow != NULL) {
      CHECK_NEAR(fast->count, learn_first ? 21 : 20, 1e-3);
      CHECK_NEAR(slow->count, 20, 1e-3);
      if (learn_first) {
        CHECK(exp(fast->mean) > 1.15 * 100);
        CHECK(fabs(slow->mean - log(300.0)) < 0.005);
      } else {
        CHECK_NEAR(fast->mean, log(100.0), 1e-4);
        CHECK_NEAR(slow->mean, log(300.0), 1e-4);
      }
    }
    /* AllGather's first call on the same algorithm and protocol: a first of its own. */
    dccl_call_record r = {BYTES, 0, 0, f.fast, (uint16_t)dccl_cell_for_call(DCCL_COLL_ALLGATHER, BYTES, 1, 0),
                          DCCL_COLL_ALLGATHER, 0};
    dccl_call_log_push(&call_log, &r);
    dccl_measurement m = measurement_of(&f, 0, BYTES, f.fast);
    m.coll = DCCL_COLL_ALLGATHER;
    take(&f, &m);
    CHECK_EQ_INT(f.learner->counters.joined, 61);
    CHECK_EQ_INT(f.learner->counters.first_calls, learn_first ? 0 : 2);
    /* AllReduce on bfloat16 after 60 calls on int8: another kernel, whose first call is a first too;
     * its second is not. */
    log_calls(&f, 2, BYTES);
    for (uint64_t c = 60; c < 62; c++) {
      m = measurement_of(&f, c, BYTES, decided_for(&f, c));
      m.datatype = (uint8_t)dccl_datatype_index("ncclBfloat16");
      take(&f, &m);
    }
    CHECK_EQ_INT(f.learner->counters.joined, 63);
    CHECK_EQ_INT(f.learner->counters.first_calls, learn_first ? 0 : 3);
    fixture_free(&f);
  }
}

/* Call `order` of `bytes` (AllReduce, the fast action) logged and measured with host stamps: its kernel spans
 * `duration_ns`; launched at `launch_ns`, its end seen by the profiler at `done_ns`. */
static void take_stamped(fixture* f, uint64_t order, uint64_t bytes, uint64_t duration_ns, uint64_t launch_ns,
                         uint64_t done_ns) {
  dccl_call_record r = {bytes, order, order, f->fast, (uint16_t)dccl_cell_for_call(COLL, bytes, 1, 0), COLL, 0};
  dccl_call_log_push(&call_log, &r);
  dccl_measurement m = measurement_of(f, order, bytes, f->fast);
  m.duration_ns = duration_ns;
  m.call_order = order;
  m.host_launch_ns = launch_ns;
  m.host_done_ns = done_ns;
  take(f, &m);
}

/* Plays `rounds` rounds of one 16 MiB call and then `small_calls` calls of BYTES (both AllReduce, the fast
 * action, with host stamps): a small call right after the large one waits for its work and spans 1,000
 * us, the others 100. Back to back, or `paused`: each call launched 50 ms after the previous one's end was
 * seen, as collbench waits for the stream and checks results between sizes (on the GPU the first call
 * after a larger one waits all the same, for the peer that left the check later). Returns the small
 * cell's arm. */
#define LARGE_BYTES ((uint64_t)16 << 20)
static dccl_arm* play_rounds(fixture* f, int rounds, int small_calls, int paused) {
  uint64_t order = 0;
  for (int round = 0; round < rounds; round++)
    for (int k = 0; k <= small_calls; k++, order++) {
      uint64_t bytes = k == 0 ? LARGE_BYTES : BYTES;
      take_stamped(f, order, bytes, k == 0 ? 2000000 : k == 1 ? 1000000 : 100000,
                   paused ? 100000000 * (order + 1) : 1000 + order,
                   paused ? 100000000 * (order + 1) + 50000000 : 1000000 + 1000 * order);
    }
  return arm_of(f, f->fast);
}

static void test_first_call_of_a_run_after_a_larger_call_is_not_learned(void) {
  /* Rounds of one large call and 11 small ones, as collbench's learning run plays sizes: the small cell's
   * calls come in runs (10 of 11 right after one of its own), so a run's first call, right after the
   * larger call, is not learned once the cell has had 16 calls: from the third round on (22 of 24), so
   * that 2 of its arm's readings are 1,000 us rather than 24; learning every call, the arm reads over 1.05x
   * more (1.08x: the agent's drift estimate, which a lone arm's readings move, takes part of either, and its
   * clip of a reading's slow tail most of the rest; 1.1x and more before the clip). The large
   * cell's calls all follow a smaller call of another cell: all kept. Interleaved (one large, one small),
   * no cell comes in runs: nothing is skipped. */
  fixture f;
  fixture_init(&f);
  dccl_arm* small = play_rounds(&f, 24, 11, 0);
  CHECK_EQ_INT(f.learner->counters.run_starts, 22);
  CHECK_EQ_INT(f.learner->counters.after_switch, 0);
  CHECK(small != NULL);
  double skipping_us = small != NULL ? exp(small->mean) : 0;
  if (small != NULL) CHECK_NEAR(small->count, 24 * 11 - 22, 1e-3);
  fixture_free(&f);
  /* The same rounds with the application's pause between sizes: the GPU's learning runs (run 15: none of
   * 347 such calls launched within the larger call, and this rule, which then asked for that, skipped
   * none). */
  fixture_init(&f);
  small = play_rounds(&f, 24, 11, 1);
  CHECK_EQ_INT(f.learner->counters.run_starts, 22);
  CHECK(small != NULL);
  if (small != NULL) CHECK_NEAR(small->count, 24 * 11 - 22, 1e-3);
  fixture_free(&f);
  fixture_init(&f);
  f.learner->options.learn_after_switch = 1; /* DYNAMICCL_AFTER_SWITCH=learn: every call learned */
  small = play_rounds(&f, 24, 11, 0);
  CHECK_EQ_INT(f.learner->counters.run_starts, 0);
  CHECK(small != NULL);
  if (small != NULL) {
    CHECK_NEAR(small->count, 24 * 11, 1e-3);
    CHECK_MSG(exp(small->mean) > 1.05 * skipping_us, "learning every call %.1f us, skipping %.1f", exp(small->mean),
              skipping_us);
  }
  fixture_free(&f);
  fixture_init(&f);
  small = play_rounds(&f, 100, 1, 0);
  CHECK_EQ_INT(f.learner->counters.run_starts, 0);
  CHECK(small != NULL && small->count > 99.5);
  fixture_free(&f);
  /* DYNAMICCL_COST=stream holds a call until the next one tells its stream time, and learns it then: a
   * skipped call must not be held, nor learned at its release. First calls skipped too: the large call's
   * first (call 0, the first of AllReduce ring/Simple). */
  fixture_init_costing(&f, DCCL_COST_STREAM);
  f.learner->options.learn_first_calls = 0;
  small = play_rounds(&f, 24, 11, 0);
  dccl_learner_flush(f.learner, &f.inputs);
  CHECK_EQ_INT(f.learner->counters.run_starts, 22);
  CHECK_EQ_INT(f.learner->counters.first_calls, 1);
  dccl_arm* large = arm_at(&f, LARGE_BYTES, f.fast);
  CHECK(small != NULL && large != NULL);
  if (small != NULL && large != NULL) {
    CHECK_NEAR(small->count, 24 * 11 - 22, 1e-3);
    CHECK_NEAR(large->count, 24 - 1, 1e-3);
  }
  fixture_free(&f);
}

static void test_skipped_calls_keep_their_place_in_the_gap_estimate(void) {
  /* Kernels start every 1,000 us and run 100 or 300 us (blocks of 3 of each action): the GPU idles 800
   * us between kernels on average, for 200 us of kernel, a compute intensity of 4. The first call of each
   * block, right after the other action, is not learned; its span must not count as idle time (the gap
   * average read 1,294 us when only learned calls moved it: an intensity of 6.5). */
  fixture f;
  fixture_init(&f);
  run_calls(&f, 600, NULL);
  CHECK(f.learner->counters.after_switch >= 190);
  CHECK_NEAR(f.learner->timing.gap_average_us, 800.0, 40.0);
  CHECK_NEAR(f.learner->timing.duration_average_us, 200.0, 40.0);
  fixture_free(&f);
}

/* Plays `rounds` rounds of `calls` AllReduce calls of BYTES, the fast action, with host stamps, as collbench
 * plays a size: back to back (each launched before the last one's end was seen) but for the call after its
 * 3 warm-up calls, launched 1 ms after the last one's end was seen, which spans 300 us against the others'
 * 100 (the ranks left apart by the check). `pause_every`: a pause before every call instead (a training
 * step's compute between collectives), each call 100 us. Returns the cell's arm. */
static dccl_arm* play_paused_rounds(fixture* f, int rounds, int calls, int pause_every) {
  uint64_t order = 0, launch_ns = 1000, done_ns = 0;
  for (int round = 0; round < rounds; round++)
    for (int k = 0; k < calls; k++, order++) {
      int paused = pause_every || k == 3;
      launch_ns = paused && order > 0 ? done_ns + 1000000 : launch_ns + 10000;
      done_ns = launch_ns + 200000;
      take_stamped(f, order, BYTES, paused && !pause_every ? 300000 : 100000, launch_ns, done_ns);
    }
  return arm_of(f, f->fast);
}

static void test_call_after_a_host_pause_is_not_learned(void) {
  /* 20 rounds of 13 calls: the call after each round's pause follows 3 of the cell's calls and the 9 of the
   * round before, all back to back: left out once the cell has had 16 calls right after its own (from the
   * second round on: 19 of 20), so the arm reads its 100 us (100.8: the first round's is booked); learning it
   * too (DYNAMICCL_AFTER_SWITCH=learn), one reading in 13 is 3x, booked at most 1.3x or 2.5 standard deviations
   * above the arm's mean (the slow-tail clip): 102.3 us. */
  fixture f;
  fixture_init(&f);
  dccl_arm* arm = play_paused_rounds(&f, 20, 13, 0);
  CHECK_EQ_INT(f.learner->counters.after_pause, 19);
  CHECK_EQ_INT(f.learner->counters.after_switch, 0);
  CHECK_EQ_INT(f.learner->counters.run_starts, 0);
  CHECK(arm != NULL);
  double skipping_us = 0;
  if (arm != NULL) {
    CHECK_NEAR(arm->count, 20 * 13 - 19, 1e-3);
    skipping_us = exp(arm->mean);
    CHECK_MSG(skipping_us < 101.0, "left out, the arm reads %.2f us", skipping_us); /* the first round's, booked */
  }
  fixture_free(&f);
  fixture_init(&f);
  f.learner->options.learn_after_switch = 1;
  arm = play_paused_rounds(&f, 20, 13, 0);
  CHECK_EQ_INT(f.learner->counters.after_pause, 0);
  CHECK(arm != NULL);
  if (arm != NULL) {
    CHECK_NEAR(arm->count, 20 * 13, 1e-3);
    CHECK_MSG(exp(arm->mean) > 1.01 * skipping_us, "learning every call %.2f us, skipping %.2f", exp(arm->mean),
              skipping_us);
  }
  fixture_free(&f);
  /* Every call after a pause: the cell's calls do not come back to back, and all are learned. */
  fixture_init(&f);
  arm = play_paused_rounds(&f, 20, 13, 1);
  CHECK_EQ_INT(f.learner->counters.after_pause, 0);
  CHECK(arm != NULL && arm->count > 20 * 13 - 0.5);
  fixture_free(&f);
}

int main(void) {
  RUN(test_lost_measurements_skip_their_calls);
  RUN(test_lagging_learner_drops_what_it_lost);
  RUN(test_full_call_log_loses_calls_not_joins);
  RUN(test_aggregated_calls_leave_the_join_in_step);
  RUN(test_stream_time_charges_work_left_behind_the_kernel);
  RUN(test_first_call_of_a_kernel_is_not_learned);
  RUN(test_first_call_of_a_run_after_a_larger_call_is_not_learned);
  RUN(test_call_after_a_host_pause_is_not_learned);
  RUN(test_a_gap_the_application_made_is_not_charged);
  RUN(test_overlapping_calls_cost_their_spans);
  RUN(test_leftover_charges_work_left_behind_not_the_applications_waits);
  RUN(test_work_left_to_the_next_call_is_not_learned_as_its_own);
  RUN(test_skipped_calls_keep_their_place_in_the_gap_estimate);
  TEST_SUMMARY();
}
