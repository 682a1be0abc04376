/* plugin/learner.c: joins measurements with calls, runs both agents, publishes decision tables. */
#include "learner.h"

#include <math.h>
#include <string.h>

#include "../core/clock.h"
#include "../core/decision_table.h"
#include "../core/measurement_queue.h"

int dccl_learner_init(dccl_learner* l, const dccl_learner_options* options) {
  memset(l, 0, sizeof(*l));
  l->options = *options;
  dccl_call_skips_init(&l->skips);
  if (dccl_agent_init(&l->agent, &l->options.agent) != 0) return -1;
  if (options->trigger > 0) {
    dccl_trigger_options t = options->trigger_options;
    t.use_lstm = options->trigger == 2;
    if (dccl_trigger_init(&l->trigger, &t) != 0) {
      dccl_agent_free(&l->agent);
      return -1;
    }
    l->trigger_ready = 1;
  }
  return 0;
}

void dccl_learner_free(dccl_learner* l) {
  if (l->trigger_ready) dccl_trigger_free(&l->trigger);
  dccl_agent_free(&l->agent);
}

size_t dccl_learning_memory_bytes(const dccl_learner* l) {
  size_t bytes = sizeof(dccl_learner) + dccl_agent_memory_bytes(&l->agent) + sizeof(dccl_call_log) +
                 sizeof(dccl_cost_snapshots);
  return l->trigger_ready ? bytes + dccl_trigger_memory_bytes(&l->trigger) : bytes;
}

/* Moves new call records into the per-collective join queues; takes cost snapshots to the agent. */
static void read_calls(dccl_learner* l, const dccl_learner_inputs* in) {
  dccl_call_log* log = in->calls;
  uint64_t tail = atomic_load_explicit(&log->tail, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&log->head, memory_order_acquire);
  for (; tail < head; tail++) {
    const dccl_call_record* r = &log->records[tail % DCCL_CALL_LOG_CAPACITY];
    if (r->cost_snapshot && atomic_load_explicit(&in->costs->ready[r->cell], memory_order_acquire))
      dccl_agent_set_cost(&l->agent, r->cell, in->costs->cost[r->cell]);
    dccl_join_stream* s = &l->streams[r->coll];
    if (s->count == DCCL_JOIN_DEPTH) {
      /* Oldest call not yet measured: drop it (its measurement, when it comes, finds it lost). */
      s->head = (s->head + 1) % DCCL_JOIN_DEPTH;
      s->count--;
      l->counters.skipped_calls++;
    }
    s->pending[(s->head + s->count) % DCCL_JOIN_DEPTH] = *r;
    s->count++;
    s->read_end = r->coll_call + 1;
  }
  atomic_store_explicit(&log->tail, tail, memory_order_release);
}

static inline const dccl_call_record* pending_at(const dccl_join_stream* s, uint32_t k) {
  return &s->pending[(s->head + k) % DCCL_JOIN_DEPTH];
}

/* Index of the first pending call numbered `coll_call` or later (count when none). */
static uint32_t pending_find(const dccl_join_stream* s, uint64_t coll_call) {
  uint32_t low = 0, high = s->count;
  while (low < high) {
    uint32_t middle = low + (high - low) / 2;
    if (pending_at(s, middle)->coll_call < coll_call) low = middle + 1;
    else high = middle;
  }
  return low;
}

/* Takes pending call k as the measurement's; the calls before it were never measured. */
static void take_pending(dccl_learner* l, dccl_join_stream* s, uint32_t k, uint64_t seq, dccl_call_record* out) {
  *out = *pending_at(s, k);
  l->counters.skipped_calls += k;
  s->head = (s->head + k + 1) % DCCL_JOIN_DEPTH;
  s->count -= k + 1;
  s->joined_end = out->coll_call + 1;
  s->seq_offset = (int64_t)(seq - out->coll_call);
  s->seqs_missed = 0;
}

/* The call a measurement belongs to. Returns 1 (joined), 0 (no call found) or -1 (its call was
 * lost). By seqNumber: the call it points at, when that call was lost, or when measurements were lost
 * since the last join (the oldest pending call of the same size would then be one whose measurement
 * was lost); otherwise the oldest pending call of the same size, as NCCL's aggregation of grouped
 * calls moves the seqNumbers ahead of the calls. */
static int join(dccl_learner* l, const dccl_measurement* m, dccl_call_record* out) {
  dccl_join_stream* s = &l->streams[m->coll];
  if (s->seq_end > 0 && m->seq > s->seq_end) s->seqs_missed += m->seq - s->seq_end;
  if (m->seq >= s->seq_end) s->seq_end = m->seq + 1;
  int64_t target = (int64_t)m->seq - s->seq_offset;
  if (target >= 0 && (uint64_t)target >= s->joined_end) {
    uint32_t k = pending_find(s, (uint64_t)target);
    int pending = k < s->count && pending_at(s, k)->coll_call == (uint64_t)target;
    if (!pending && (uint64_t)target < s->read_end) return -1;
    if (pending && s->seqs_missed > 0 && pending_at(s, k)->bytes == m->bytes) {
      take_pending(l, s, k, m->seq, out);
      return 1;
    }
  }
  uint32_t look = s->count < 16 ? s->count : 16;
  for (uint32_t k = 0; k < look; k++) {
    if (pending_at(s, k)->bytes != m->bytes) continue;
    take_pending(l, s, k, m->seq, out);
    return 1;
  }
  return 0;
}

static dccl_trigger_listener trigger_listener;
static void* trigger_listener_context;

void dccl_learner_set_trigger_listener(dccl_trigger_listener listener, void* context) {
  trigger_listener_context = context;
  trigger_listener = listener;
}

/* A measurement's kernel span, in us. */
static double span_us(const dccl_measurement* m) { return (double)m->duration_ns / 1000.0; }

/* Feeds both agents one measured call of `latency_us` (its span, or its stream time). */
static void learn_from(dccl_learner* l, const dccl_learner_inputs* in, const dccl_measurement* m,
                       const dccl_call_record* call, double latency_us, double charge_us) {
  dccl_action decided = call->decided;
  /* Agent-1 keys residuals by the action that ran: for NCCL's own choice, by what NCCL ran. */
  dccl_action key = dccl_action_is_nccl(decided) ? dccl_action_make(m->algo, m->proto, 0, 0) : decided;
  int size_bin = dccl_size_bin(m->bytes);
  dccl_dynamic_state dynamic = {0};
  if (l->trigger_ready) {
    dccl_trigger_result r;
    double gap_us = l->timing.gap_average_us;
    dccl_trigger_observe(&l->trigger, m->coll, size_bin, key, latency_us, gap_us, &r);
    dynamic.trigger_state = r.state;
    dynamic.cusum_up = (float)r.cusum_up;
    dynamic.cusum_down = (float)r.cusum_down;
    dynamic.congested_fraction = (float)dccl_trigger_congested_fraction(&l->trigger);
    if (r.event != DCCL_TRIGGER_EVENT_NONE) {
      if (r.event == DCCL_TRIGGER_EVENT_ONSET) l->counters.onsets++;
      else l->counters.recoveries++;
      if (trigger_listener != NULL) trigger_listener(call->call, m->coll, size_bin, r.event, trigger_listener_context);
      dccl_agent_on_event(&l->agent, m->coll, size_bin, r.event, r.change_calls);
    }
  }
  double intensity = l->options.agent.model_intensity >= 0
                       ? l->options.agent.model_intensity
                       : (l->timing.duration_average_us > 0 ? l->timing.gap_average_us / l->timing.duration_average_us : 0);
  dynamic.intensity = (float)log1p(intensity);
  uint64_t epoch = in->tables != NULL ? call->call >> in->tables->epoch_shift : 0;
  dccl_agent_observation o = {call->cell, decided,  m->algo,     m->proto, (size_t)m->bytes,
                              latency_us, dynamic, m->channels, epoch,    charge_us};
  dccl_agent_observe(&l->agent, &o);
}

/* What a call cost the communicator's stream, from its measurement and the next call's. Its kernel
 * span, unless the next call was already launched when this one's kernel ended (NCCL's launch of it
 * came before the proxy saw this kernel end: the stream was backlogged) and its kernel started only
 * after this one's ended: then the time from this kernel's start to the next one's. Over network
 * transports an algorithm can leave work behind its kernel that holds the next kernel back (tree's
 * last sends over sockets: 500-700 us at 4 MiB on the H100 testbed, docs/results/gpu); a learner given
 * spans alone takes such an action for cheaper than it is. A call that was not waiting started when
 * the application launched it, so a gap before it is not this call's. Both measurements need host
 * stamps and consecutive call orders (a point-to-point call or a call the profiler could not read
 * between them breaks the pair). It also charges a call for the next one's wait on another CUDA stream
 * (a data-parallel gradient bucket waiting for its backward pass, as the NCCL emulator's workloads
 * model): hence DYNAMICCL_COST=stream, for collectives that run back to back. bench/gpu/summarize.py's
 * stream_times applies the same rule to traces. */
static double stream_cost_us(const dccl_measurement* m, const dccl_measurement* next, int* stream_timed) {
  uint64_t end = m->gpu_start_ns + m->duration_ns;
  *stream_timed = next != NULL && dccl_launched_within(m, next) && next->gpu_start_ns >= end;
  return *stream_timed ? (double)(next->gpu_start_ns - m->gpu_start_ns) / 1000.0 : span_us(m);
}

/* The agent's slot of a cell, which indexes the learner's per-cell arrays (-1: the agent has no room). */
static int slot_of(dccl_learner* l, int cell) {
  const dccl_agent_cell* slot = dccl_agent_cell_slot(&l->agent, cell, 1);
  return slot != NULL ? (int)(slot - l->agent.cells) : -1;
}

/* The agent cell slot's leftover estimates of a call's cell (NULL when the agent has no room). */
static dccl_leftover_cell* leftovers_of(dccl_learner* l, const dccl_call_record* call) {
  int s = slot_of(l, call->cell);
  return s >= 0 ? &l->leftovers[s] : NULL;
}

/* DCCL_COST_LEFTOVER: what a call is charged beyond its span for what its action leaves to the next call,
 * by the estimates of the calls before it (leftover.h): a call is learned when it is measured, not held. */
static double leftover_charge_us(dccl_learner* l, const dccl_measurement* m, const dccl_call_record* call) {
  dccl_leftover_cell* cell = leftovers_of(l, call);
  double charge_us = cell != NULL ? dccl_leftover_charge(cell, dccl_leftover_key_ran(m)) : 0;
  l->counters.leftover_charged += charge_us > 0;
  return charge_us;
}

/* Done with the held measurement, given the next call's (NULL: no next call will tell). With
 * DCCL_COST_STREAM it is learned at its stream cost; with DCCL_COST_LEFTOVER (it was learned already)
 * its excess, the stream time beyond its span, goes into its action's estimate where the next call was
 * waiting (elsewhere the gap before the next kernel tells nothing about this call). */
static void release_held(dccl_learner* l, const dccl_learner_inputs* in, const dccl_measurement* next) {
  if (!l->held_valid) return;
  l->held_valid = 0;
  const dccl_measurement* m = &l->held;
  int timed;
  double cost_us = stream_cost_us(m, next, &timed);
  l->counters.stream_timed += (uint64_t)timed;
  if (l->options.cost == DCCL_COST_STREAM) {
    learn_from(l, in, m, &l->held_call, cost_us, 0);
    return;
  }
  dccl_leftover_cell* cell = leftovers_of(l, &l->held_call);
  if (cell != NULL && timed) dccl_leftover_add(cell, dccl_leftover_key_ran(m), span_us(m), cost_us - span_us(m));
}


static void observe(dccl_learner* l, const dccl_learner_inputs* in, const dccl_measurement* m) {
  l->counters.measurements++;
  dccl_gpu_timing_note(&l->timing, m);
  dccl_call_record call;
  int joined = join(l, m, &call);
  release_held(l, in, m);
  if (joined <= 0) {
    if (joined < 0) l->counters.lost_calls++;
    l->counters.unjoined++;
    dccl_call_skips_break(&l->skips);
    return;
  }
  l->counters.joined++;
  dccl_skip_reasons why;
  dccl_call_skips_next(&l->skips, m, call.cell, &why);
  if (l->options.learn_after_switch) why.after_switch = why.run_start = why.after_pause = 0; /* learned too */
  l->counters.after_switch += (uint64_t)why.after_switch;
  l->counters.run_starts += (uint64_t)why.run_start; /* never right after a switch: that is the same cell */
  l->counters.after_pause += (uint64_t)why.after_pause; /* set only where after_switch is not */
  int skipped = why.after_switch | why.run_start | why.after_pause;
  int first = why.first_call && !l->options.learn_first_calls;
  l->counters.first_calls += (uint64_t)(first && !skipped);
  skipped |= first;
  /* Held until the next call tells its stream time: to learn it by that (stream), or to learn from it
   * what its action leaves behind (leftover: even where the call itself is skipped; a first call's excess,
   * the gap before the next kernel, holds none of its one-time work). */
  int hold = m->host_done_ns != 0 &&
             (l->options.cost == DCCL_COST_LEFTOVER || (l->options.cost == DCCL_COST_STREAM && !skipped));
  if (hold) {
    l->held = *m;
    l->held_call = call;
    l->held_valid = 1;
  }
  if (skipped || (hold && l->options.cost == DCCL_COST_STREAM)) return;
  double charge_us = l->options.cost == DCCL_COST_LEFTOVER ? leftover_charge_us(l, m, &call) : 0;
  learn_from(l, in, m, &call, span_us(m) + charge_us, charge_us);
}

static int commit(const dccl_learner_inputs* in, dccl_table* table) {
  if (in->commit != NULL) return in->commit(in->commit_context, in->tables, table);
  return dccl_table_store_commit(in->tables, table, NULL);
}

/* Decides the next epoch: the cells the agent changed, kept in a filled slot until an epoch takes it
 * (more changes accumulate there meanwhile); when nothing changed, the same table again, so that
 * coordinated workers may run an epoch ahead. */
static void publish(dccl_learner* l, const dccl_learner_inputs* in) {
  dccl_table* next = l->unpublished;
  if (next == NULL) {
    next = dccl_table_store_begin(in->tables);
    if (next == NULL) return; /* the hot path has not entered the last decided epoch */
    dccl_table_copy(next, dccl_table_store_latest(in->tables));
  }
  if (dccl_agent_decide(&l->agent, next) > 0 || l->unpublished != NULL) {
    l->unpublished = next;
    if (commit(in, next) == 0) {
      l->unpublished = NULL;
      l->counters.publications++;
    }
  } else {
    commit(in, NULL);
  }
}

void dccl_learner_begin(dccl_learner* l, const dccl_learner_inputs* in) {
  l->step_started_ns = dccl_thread_cpu_ns();
  read_calls(l, in);
}

void dccl_learner_take(dccl_learner* l, const dccl_learner_inputs* in, const dccl_measurement* m) {
  read_calls(l, in); /* calls logged while we worked */
  if (m->coll < DCCL_NUM_COLLS) observe(l, in, m);
}

void dccl_learner_end(dccl_learner* l, const dccl_learner_inputs* in) {
  /* No call started after the held one: the next, when it comes, was not waiting for it. */
  if (l->held_valid &&
      (in->calls_started == NULL ||
       atomic_load_explicit(in->calls_started, memory_order_relaxed) <= l->held.call_order + 1))
    release_held(l, in, NULL);
  if (l->options.agent.learning) publish(l, in);
  l->counters.cpu_ns += dccl_thread_cpu_ns() - l->step_started_ns;
}

void dccl_learner_step(dccl_learner* l, const dccl_learner_inputs* in) {
  dccl_learner_begin(l, in);
  dccl_measurement m;
  while (in->measurements != NULL && dccl_queue_pop(in->measurements, &m)) dccl_learner_take(l, in, &m);
  dccl_learner_end(l, in);
}

void dccl_learner_flush(dccl_learner* l, const dccl_learner_inputs* in) { release_held(l, in, NULL); }

void dccl_learner_defer_training(dccl_learner* l, int defer) { l->agent.defer_training = defer; }

int dccl_learner_pay_training(dccl_learner* l, int max_steps) {
  if (l->agent.training_owed == 0) return 0;
  uint64_t started = dccl_thread_cpu_ns();
  int paid = dccl_agent_train_owed(&l->agent, max_steps);
  l->counters.cpu_ns += dccl_thread_cpu_ns() - started;
  return paid;
}

void dccl_learner_publish_initial(dccl_learner* l, dccl_table_store* tables) {
  dccl_agent_exploit_table(&l->agent, dccl_table_store_initial(tables));
}
