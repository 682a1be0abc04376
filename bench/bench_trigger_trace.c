/* bench/bench_trigger_trace.c: measures Agent-1, the congestion trigger, on a real GPU learning trace: the false
 * onsets it raises on the testbed's own calm noise, and how fast it catches slowdowns laid over that noise.
 *
 * Input: a trace the plugin wrote (DYNAMICCL_TRACE_FILE; bench/gpu/run.sh --learn-trace keeps rank 0's, gzipped,
 * under docs/results/gpu/<run>/learn-trace/): one line per measured collective, in the order the profiler
 * delivered them. Its calls are fed to a fresh trigger as plugin/learner.c feeds its own: the same calls left
 * out, by the learner's own rules (plugin/call_skips.h: a communicator's first call of a collective, datatype,
 * algorithm and protocol; a call right after its cell's call of another action; a run's first call right
 * after a larger call of another cell, in a cell whose calls come in runs), the same running gap average, the
 * span as the latency. Two things differ: a call is
 * keyed by what ran (algorithm, protocol, channels), where the learner keys NCCL's own choice apart from the
 * same action decided, and the leftover charge the learner adds to some spans is left out.
 *
 * (a) Calm: the trace as it ran. On a learning run without load every onset is a false alarm; the plugin's
 *     own count on the GPU is in the run's summary (its "learning done" line), for comparison.
 * (b) Slowdowns (--trials T): each trial replays the trace from the start and, from a call drawn uniformly in
 *     the middle 40-80% of it, multiplies every later call's span by the factor (x1.2, x1.5: every stream
 *     at once, as congestion of the network would). A stream's delay is its fed calls from the first slowed
 *     one to its onset, inclusive; a stream that reaches the end of the trace without one is a miss, and a
 *     stream already congested or recovering when the slowdown starts (a false alarm before it) is counted
 *     apart ("busy"), since it cannot raise a new onset.
 * Both detectors (LSTM+CUSUM, plain CUSUM) see the same calls.
 *
 * Usage: bench_trigger_trace [--rank R] [--seeds N] [--trials T] [--k K] [--h H] [--clip C] [--run-starts learn|within]
 *                            [--events] TRACE.csv ("-": standard input; a gzipped trace through zcat)
 * --run-starts within: the rule before issue 5's 42nd stop, which left out a run's first call only where it was
 * launched before the larger call's kernel end reached the profiler (the rule the GPU runs up to 17 ran). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../agents/trigger.h"
#include "../core/action.h"
#include "../core/decision_table.h"
#include "../core/rng.h"
#include "../core/types.h"
#include "../plugin/call_skips.h"
#include "../plugin/gpu_timing.h"

#define MAX_LINE 1024
#define N_FACTORS 2

static const double slowdown_factors[N_FACTORS] = {1.2, 1.5};

typedef struct trace {
  dccl_measurement* calls; /* as the profiler delivered them to the learner */
  size_t n, capacity;
} trace;

typedef struct feed_options {
  int use_lstm;
  double k, h, clip;
  uint64_t seed;
  int run_starts_within; /* the older run-start rule */
  size_t slow_from;      /* first slowed call (n: none) */
  double factor;
  int print_events;      /* list every onset and recovery */
} feed_options;

/* What one replay did. */
typedef struct replay_result {
  size_t fed, first_calls, after_switch, run_starts, after_pause;
  int onsets, recoveries, congested_at_end, streams;
  /* per stream, for slowdowns: state at the first slowed call, fed calls since it, delay (0: none yet) */
  int busy[DCCL_TRIGGER_STREAMS];
  int slowed_calls[DCCL_TRIGGER_STREAMS];
  int delay[DCCL_TRIGGER_STREAMS];
  int seen[DCCL_TRIGGER_STREAMS];
} replay_result;

static int column_index(char** names, int n, const char* name) {
  for (int i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0) return i;
  return -1;
}

/* Splits a CSV line in place (no quoting in the plugin's traces). */
static int split(char* line, char** fields, int max_fields) {
  int n = 0;
  line[strcspn(line, "\r\n")] = 0;
  for (char* p = line; n < max_fields;) {
    fields[n++] = p;
    char* comma = strchr(p, ',');
    if (comma == NULL) break;
    *comma = 0;
    p = comma + 1;
  }
  return n;
}

enum { C_RANK, C_COLL, C_BYTES, C_ALGO, C_PROTO, C_CHANNELS, C_START, C_DURATION, C_ORDER, C_LAUNCH, C_DONE, N_COLUMNS };
static const char* const column_names[N_COLUMNS] = {"rank",         "collective",  "bytes",      "algorithm",
                                                    "protocol",     "channels",    "gpu_start_ns", "duration_ns",
                                                    "call_order",   "host_launch_ns", "host_done_ns"};

/* Reads rank `rank`'s calls. A last line cut short (a run stopped mid-write) is left out. */
static int read_trace(FILE* f, const char* path, int rank, trace* t) {
  char line[MAX_LINE];
  char* fields[32];
  int columns[N_COLUMNS];
  if (fgets(line, sizeof(line), f) == NULL) {
    fprintf(stderr, "%s: empty\n", path);
    return -1;
  }
  int n = split(line, fields, 32);
  for (int c = 0; c < N_COLUMNS; c++)
    if ((columns[c] = column_index(fields, n, column_names[c])) < 0) {
      fprintf(stderr, "%s: no column \"%s\" in the header: not a DynamICCL trace\n", path, column_names[c]);
      return -1;
    }
  int last_column = 0;
  for (int c = 0; c < N_COLUMNS; c++) last_column = columns[c] > last_column ? columns[c] : last_column;
  int float32 = dccl_datatype_index("ncclFloat32"); /* a trace names no datatype: collbench's */
  size_t line_number = 1, skipped = 0;
  while (fgets(line, sizeof(line), f) != NULL) {
    line_number++;
    int complete = strchr(line, '\n') != NULL;
    n = split(line, fields, 32);
    if (!complete || n <= last_column) {
      skipped++;
      continue;
    }
    if (atoi(fields[columns[C_RANK]]) != rank) continue;
    dccl_measurement call = {.datatype = (uint8_t)float32};
    int coll = dccl_coll_parse(fields[columns[C_COLL]]), algo = dccl_algo_parse(fields[columns[C_ALGO]]),
        proto = dccl_proto_parse(fields[columns[C_PROTO]]);
    long channels = atol(fields[columns[C_CHANNELS]]);
    if (coll < 0 || algo < 0 || proto < 0 || channels < 0 || channels > 255) {
      fprintf(stderr, "%s:%zu: unknown collective, algorithm or protocol, or bad channels: left out\n", path, line_number);
      skipped++;
      continue;
    }
    call.coll = (uint8_t)coll;
    call.algo = (uint8_t)algo;
    call.proto = (uint8_t)proto;
    call.channels = (uint8_t)channels;
    call.bytes = strtoull(fields[columns[C_BYTES]], NULL, 10);
    call.gpu_start_ns = strtoull(fields[columns[C_START]], NULL, 10);
    call.duration_ns = strtoull(fields[columns[C_DURATION]], NULL, 10);
    call.call_order = strtoull(fields[columns[C_ORDER]], NULL, 10);
    call.host_launch_ns = strtoull(fields[columns[C_LAUNCH]], NULL, 10);
    call.host_done_ns = strtoull(fields[columns[C_DONE]], NULL, 10);
    if (call.duration_ns == 0) {
      skipped++;
      continue;
    }
    if (t->n == t->capacity) {
      size_t capacity = t->capacity ? 2 * t->capacity : 4096;
      dccl_measurement* grown = realloc(t->calls, capacity * sizeof(*grown));
      if (grown == NULL) {
        fprintf(stderr, "out of memory\n");
        return -1;
      }
      t->calls = grown;
      t->capacity = capacity;
    }
    t->calls[t->n++] = call;
  }
  if (skipped > 0) fprintf(stderr, "%s: %zu lines left out (cut short or unreadable)\n", path, skipped);
  return 0;
}

/* A call's Agent-1 stream (collective, log2 size bin), as agents/trigger.c indexes it. */
static int stream_of(const dccl_measurement* m) { return m->coll * DCCL_SIZE_BINS + dccl_size_bin(m->bytes); }

/* Replays the trace into a fresh trigger, leaving out the calls the learner leaves out (plugin/call_skips.h). */
static int replay(const trace* t, const feed_options* o, replay_result* r) {
  memset(r, 0, sizeof(*r));
  dccl_trigger_options options;
  dccl_trigger_default_options(&options);
  options.use_lstm = o->use_lstm;
  options.k = o->k;
  options.h = o->h;
  options.clip = o->clip;
  options.seed = o->seed;
  static dccl_trigger trigger;
  if (dccl_trigger_init(&trigger, &options) != 0) return -1;
  static dccl_call_skips skips;
  dccl_call_skips_init(&skips);
  dccl_gpu_timing timing = {0};
  static float level[DCCL_TRIGGER_STREAMS]; /* each stream's recent standardised residual (weight 1/16) */
  memset(level, 0, sizeof(level));
  const dccl_measurement* previous = NULL;
  for (size_t i = 0; i < t->n; i++) {
    const dccl_measurement* m = &t->calls[i];
    dccl_gpu_timing_note(&timing, m); /* the gap average, from every kernel, as the learner's */
    /* The calls the learner leaves out (plugin/call_skips.h); run 15's rule asked for a launch within too. */
    dccl_skip_reasons why;
    dccl_call_skips_next(&skips, m, dccl_cell_for_call(m->coll, m->bytes, 1, 0), &why);
    int starts_run = why.run_start && (!o->run_starts_within || dccl_launched_within(previous, m));
    previous = m;
    int paused = why.after_pause && !o->run_starts_within; /* no pause rule then either */
    if (why.after_switch || starts_run || paused || why.first_call) {
      r->after_switch += (size_t)why.after_switch;
      r->run_starts += (size_t)starts_run;
      r->after_pause += (size_t)paused;
      r->first_calls += (size_t)(why.first_call && !why.after_switch && !starts_run && !paused);
      continue;
    }
    int slowed = i >= o->slow_from;
    double latency_us = (double)m->duration_ns / 1000.0 * (slowed ? o->factor : 1.0);
    int stream = stream_of(m);
    if (slowed && !r->seen[stream]) {
      r->seen[stream] = 1;
      r->busy[stream] = trigger.streams[stream].state >= DCCL_TRIGGER_CONGESTED;
    }
    dccl_trigger_result result;
    dccl_trigger_observe(&trigger, m->coll, dccl_size_bin(m->bytes), dccl_action_make(m->algo, m->proto, m->channels, 0),
                         latency_us, timing.gap_average_us, &result);
    r->fed++;
    if (slowed) {
      r->slowed_calls[stream]++;
      if (result.event == DCCL_TRIGGER_EVENT_ONSET && r->delay[stream] == 0) r->delay[stream] = r->slowed_calls[stream];
    }
    level[stream] += (float)((result.residual - level[stream]) / 16);
    if (o->print_events && result.event != DCCL_TRIGGER_EVENT_NONE) {
      int onset = result.event == DCCL_TRIGGER_EVENT_ONSET;
      char dated[16] = "  -";
      if (onset) snprintf(dated, sizeof(dated), "%3d", result.change_calls);
      printf("  %7.2f s  call %6zu  %-13s %9llu  %-5s %-6s ch %2d  %-9s  dated %s back  recent residual %+.2f sd (sd %.3f)\n",
             (double)(m->gpu_start_ns - t->calls[0].gpu_start_ns) / 1e9, i, dccl_coll_name(m->coll),
             (unsigned long long)m->bytes, dccl_algo_name(m->algo), dccl_proto_name(m->proto), m->channels,
             onset ? "onset" : "recovered", dated, level[stream], trigger.streams[stream].sigma);
    }
    r->onsets += result.event == DCCL_TRIGGER_EVENT_ONSET;
    r->recoveries += result.event == DCCL_TRIGGER_EVENT_RECOVERED;
  }
  for (int s = 0; s < DCCL_TRIGGER_STREAMS; s++) {
    r->streams += trigger.streams[s].active;
    r->congested_at_end += trigger.streams[s].active && trigger.streams[s].state >= DCCL_TRIGGER_CONGESTED;
  }
  dccl_trigger_free(&trigger);
  return 0;
}

static int compare_ints(const void* a, const void* b) {
  int x = *(const int*)a, y = *(const int*)b;
  return x < y ? -1 : x > y;
}

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static void usage(void) {
  fprintf(stderr, "usage: bench_trigger_trace [--rank R] [--seeds N] [--trials T] [--k K] [--h H] "
                  "[--run-starts learn|within] TRACE.csv|-\n");
}

/* Prints (a) and, with trials, (b) for trace `t` read from `path`. Returns 0, or 1 when out of memory. */
static int measure(const trace* t, const char* path, int rank, int seeds, int trials, int print_events,
                   const feed_options* settings) {
  const feed_options base = *settings;
  double seconds = (double)(t->calls[t->n - 1].gpu_start_ns - t->calls[0].gpu_start_ns) / 1e9;

  static const char* const detector_names[2] = {"cusum", "lstm+cusum"};
  printf("Agent-1 on a real trace: %s, rank %d, %zu calls over %.1f s; k %.2f, h %.1f, clip %.1f; run starts left out %s\n",
         path, rank, t->n, seconds, base.k, base.h, base.clip,
         base.run_starts_within ? "only where launched within the larger call" : "as the learner does");
  static replay_result result;
  if (replay(t, &base, &result) != 0) return 1;
  if (print_events) {
    feed_options listed = base;
    listed.use_lstm = 1;
    listed.seed = 1;
    listed.print_events = 1;
    printf("events of LSTM+CUSUM, trigger seed 1 (dated back: an onset's stream calls before it since the change the "
           "CUSUM dates, which the config agent takes out of the calm context; recent residual: the stream's "
           "standardised residuals, weight 1/16):\n");
    if (replay(t, &listed, &result) != 0) return 1;
  }
  printf("fed %zu calls to %d streams; left out %zu first calls of a collective, algorithm and protocol, %zu right "
         "after a switch of action, %zu first of a run, %zu launched after a host pause\n\n",
         result.fed, result.streams, result.first_calls, result.after_switch, result.run_starts, result.after_pause);

  printf("(a) calm, the trace as it ran, trigger seeds 1-%d: onsets and recoveries (median [min-max]), streams "
         "still congested at the end, calls fed per onset\n", seeds);
  for (int d = 1; d >= 0; d--) {
    double onsets[1000], recoveries[1000], at_end[1000];
    for (int s = 0; s < seeds; s++) {
      feed_options o = base;
      o.use_lstm = d;
      o.seed = (uint64_t)(s + 1);
      if (replay(t, &o, &result) != 0) return 1;
      onsets[s] = result.onsets;
      recoveries[s] = result.recoveries;
      at_end[s] = result.congested_at_end;
    }
    qsort(onsets, (size_t)seeds, sizeof(double), compare_doubles);
    qsort(recoveries, (size_t)seeds, sizeof(double), compare_doubles);
    qsort(at_end, (size_t)seeds, sizeof(double), compare_doubles);
    double median = onsets[seeds / 2];
    printf("%-10s onsets %3.0f [%.0f-%.0f]  recoveries %3.0f [%.0f-%.0f]  congested at the end %2.0f [%.0f-%.0f]  "
           "calls per onset %s%.0f\n",
           detector_names[d], median, onsets[0], onsets[seeds - 1], recoveries[seeds / 2], recoveries[0],
           recoveries[seeds - 1], at_end[seeds / 2], at_end[0], at_end[seeds - 1], median > 0 ? "" : ">=",
           (double)result.fed / (median > 0 ? median : 1));
  }
  if (trials == 0) return 0;

  printf("\n(b) slowdowns from a call drawn in the trace's 40-80%%, %d trials (trigger seed = trial): a stream's delay "
         "in its fed calls, median p90, misses (no onset by the end), busy (congested at the start)\n", trials);
  int* delays = malloc((size_t)trials * DCCL_TRIGGER_STREAMS * sizeof(int));
  if (delays == NULL) return 1;
  int status = 0;
  for (int fi = 0; fi < N_FACTORS; fi++)
    for (int d = 1; d >= 0; d--) {
      int n = 0, misses = 0, busy = 0;
      dccl_rng rng;
      dccl_rng_seed(&rng, 0x51D0ULL + (uint64_t)fi);
      for (int trial = 0; trial < trials; trial++) {
        feed_options o = base;
        o.use_lstm = d;
        o.seed = (uint64_t)(trial + 1);
        o.factor = slowdown_factors[fi];
        o.slow_from = (size_t)(t->n * (0.4 + 0.4 * dccl_rng_uniform(&rng)));
        if (replay(t, &o, &result) != 0) {
          status = 1;
          goto done;
        }
        for (int s = 0; s < DCCL_TRIGGER_STREAMS; s++) {
          if (!result.seen[s]) continue;
          if (result.busy[s]) busy++;
          else if (result.delay[s] > 0) delays[n++] = result.delay[s];
          else misses++;
        }
      }
      qsort(delays, (size_t)n, sizeof(int), compare_ints);
      printf("x%.1f %-10s delay median %4d p90 %4d  misses %4d of %d  busy %d\n", slowdown_factors[fi],
             detector_names[d], n > 0 ? delays[n / 2] : -1, n > 0 ? delays[(int)(0.9 * (n - 1))] : -1, misses,
             n + misses, busy);
    }
done:
  free(delays);
  return status;
}

int main(int argc, char** argv) {
  int rank = 0, seeds = 8, trials = 20, run_starts_within = 0, print_events = 0;
  dccl_trigger_options defaults;
  dccl_trigger_default_options(&defaults);
  double k = defaults.k, h = defaults.h, clip = defaults.clip;
  const char* path = NULL;
  for (int i = 1; i < argc; i++) {
    if (i + 1 < argc && strcmp(argv[i], "--rank") == 0) rank = atoi(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--seeds") == 0) seeds = atoi(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--trials") == 0) trials = atoi(argv[++i]);
    else if (strcmp(argv[i], "--events") == 0) print_events = 1;
    else if (i + 1 < argc && strcmp(argv[i], "--k") == 0) k = atof(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--h") == 0) h = atof(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--clip") == 0) clip = atof(argv[++i]);
    else if (i + 1 < argc && strcmp(argv[i], "--run-starts") == 0) {
      const char* rule = argv[++i];
      if (strcmp(rule, "within") != 0 && strcmp(rule, "learn") != 0) {
        usage();
        return 2;
      }
      run_starts_within = strcmp(rule, "within") == 0;
    } else if (path == NULL && argv[i][0] != '-' ) path = argv[i];
    else if (path == NULL && strcmp(argv[i], "-") == 0) path = "-";
    else {
      usage();
      return 2;
    }
  }
  if (path == NULL || seeds < 1 || seeds > 1000 || trials < 0 || trials > 10000 || !(k >= 0) || !(h > 0) || !(clip > k)) {
    usage();
    return 2;
  }
  FILE* f = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
  if (f == NULL) {
    perror(path);
    return 1;
  }
  trace t = {0};
  int rc = read_trace(f, path, rank, &t);
  if (f != stdin) fclose(f);
  if (rc == 0 && t.n < 100) {
    fprintf(stderr, "%s: %zu calls of rank %d: too few to replay\n", path, t.n, rank);
    rc = -1;
  }
  if (rc != 0) {
    free(t.calls);
    return 1;
  }
  feed_options base = {.k = k, .h = h, .clip = clip, .run_starts_within = run_starts_within, .slow_from = t.n, .factor = 1};
  int status = measure(&t, path, rank, seeds, trials, print_events, &base);
  free(t.calls);
  return status;
}
