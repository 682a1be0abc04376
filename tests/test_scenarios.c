/* tests/test_scenarios.c: the scenario file formats (profiles, workloads, conditions): every shipped
 * file parses; mistakes are rejected with file and line; schedules expand as documented. */
#include <dirent.h>

#include "../sim/sim.h"
#include "test.h"

static int ends_with(const char* s, const char* suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void test_every_shipped_scenario_parses(void) {
  const char* kinds[] = {"profiles", "workloads", "conditions"};
  int files = 0;
  for (int k = 0; k < 3; k++) {
    char dir_path[512];
    snprintf(dir_path, sizeof(dir_path), "%s/scenarios/%s", DYNAMICCL_SOURCE_DIR, kinds[k]);
    DIR* dir = opendir(dir_path);
    CHECK_MSG(dir != NULL, "%s", dir_path);
    if (dir == NULL) continue;
    struct dirent* entry;
    while ((entry = readdir(dir)) != NULL) {
      if (entry->d_name[0] == '.') continue;
      char path[1024], error[512];
      snprintf(path, sizeof(path), "%s/%s", dir_path, entry->d_name);
      int rc = -1;
      if (k == 0 && ends_with(entry->d_name, ".profile")) {
        dccl_profile p;
        rc = dccl_profile_load(path, &p, error, sizeof(error));
        if (rc == 0) {
          char expected[128];
          snprintf(expected, sizeof(expected), "%s.profile", p.name);
          CHECK_MSG(strcmp(expected, entry->d_name) == 0, "%s: name '%s' differs from the file name", path, p.name);
        }
      } else if (k == 1 && ends_with(entry->d_name, ".workload")) {
        dccl_workload w;
        rc = dccl_workload_find(path, &w, error, sizeof(error));
        if (rc == 0) dccl_workload_free(&w);
      } else if (k == 2 && ends_with(entry->d_name, ".conditions")) {
        dccl_schedule s;
        rc = dccl_schedule_find(path, &s, error, sizeof(error));
      } else {
        CHECK_MSG(0, "unexpected file %s", path);
        continue;
      }
      CHECK_MSG(rc == 0, "%s: %s", path, error);
      files++;
    }
    closedir(dir);
  }
  CHECK(files >= 12);
}

static void test_profile_errors(void) {
  char error[512];
  dccl_profile p;
  const char* base = "name = x\nnodes = 1\nranks_per_node = 2\ncompute_capability = 90\nchannels = 2\n"
                     "graph.ring.channels = 2\ntruth.intra.link_bw = 10\ntruth.intra.channel_bw.ll = 1\n"
                     "truth.intra.channel_bw.ll128 = 1\ntruth.intra.channel_bw.simple = 1\n";
  CHECK(dccl_profile_parse(base, "p", &p, error, sizeof(error)) == 0);
  CHECK_EQ_INT(p.n_ranks, 2);
  char text[2048];
  snprintf(text, sizeof(text), "%sgraph.ring.bandwidth = 4\n", base);
  CHECK(dccl_profile_parse(text, "p", &p, error, sizeof(error)) != 0);
  CHECK_MSG(strstr(error, "p:11: unknown key 'graph.ring.bandwidth'") != NULL, "%s", error);
  snprintf(text, sizeof(text), "%snodes = zero\n", base);
  CHECK(dccl_profile_parse(text, "p", &p, error, sizeof(error)) != 0 && strstr(error, "p:11: nodes") != NULL);
  snprintf(text, sizeof(text), "%sgraph.ring.type_intra = WIRE\n", base);
  CHECK(dccl_profile_parse(text, "p", &p, error, sizeof(error)) != 0 && strstr(error, "path type") != NULL);
  snprintf(text, sizeof(text), "%snoise.sigma = 7\n", base);
  CHECK(dccl_profile_parse(text, "p", &p, error, sizeof(error)) != 0);
  snprintf(text, sizeof(text), "%sjust some words\n", base);
  CHECK(dccl_profile_parse(text, "p", &p, error, sizeof(error)) != 0 && strstr(error, "key = value") != NULL);
  CHECK(dccl_profile_parse("name = y\nnodes = 2\n", "q", &p, error, sizeof(error)) != 0);
  CHECK(strstr(error, "required key") != NULL);
  /* Two nodes need network truth parameters. */
  snprintf(text, sizeof(text), "%snodes = 2\n", base);
  CHECK(dccl_profile_parse(text, "p", &p, error, sizeof(error)) != 0 && strstr(error, "truth.net.link_bw") != NULL);
}

static void test_workloads(void) {
  char error[512];
  dccl_workload w;
  const char* text = "name = w\nallreduce 1K x3 gap=10us pipeops=2\nsweep allgather 1K 8K x2 gap=1ms pause=2ms regbuff=1\n"
                     "repeat 4\n";
  CHECK(dccl_workload_parse(text, "w", &w, error, sizeof(error)) == 0);
  CHECK_EQ_INT(w.n_ops, 5);
  CHECK_EQ_INT((int)w.calls_per_iteration, 3 + 4 * 2);
  CHECK_EQ_INT((int)dccl_workload_total_calls(&w), 44);
  dccl_workload_cursor cursor;
  dccl_workload_start(&cursor, &w, 0);
  dccl_call call;
  int n = 0;
  while (dccl_workload_next(&cursor, &call)) {
    CHECK_EQ_INT((int)call.index, n);
    int in_iteration = n % 11;
    if (in_iteration < 3) {
      CHECK(call.coll == DCCL_COLL_ALLREDUCE && call.bytes == 1024 && call.pipe_ops == 2 && call.gap_us == 10);
      CHECK(call.pause_us == 0);
    } else { /* a sweep's pause comes before each size's first call */
      CHECK(call.coll == DCCL_COLL_ALLGATHER && call.reg_buff == 1 && call.gap_us == 1000);
      CHECK_EQ_INT((int)call.bytes, 1024 << ((in_iteration - 3) / 2));
      CHECK(call.pause_us == ((in_iteration - 3) % 2 == 0 ? 2000 : 0));
    }
    /* A run: the consecutive calls of one collective and size. */
    CHECK_EQ_INT((int)call.run_start, in_iteration < 3 ? n - in_iteration : n - (in_iteration - 3) % 2);
    n++;
  }
  CHECK_EQ_INT(n, 44);
  dccl_workload_start(&cursor, &w, 7);
  n = 0;
  while (dccl_workload_next(&cursor, &call)) n++;
  CHECK_EQ_INT(n, 7);
  dccl_workload_free(&w);

  /* A run goes on across lines of one cell (collbench's warm-up calls, its pause, its timed calls) and
   * across the repeat when the last line's cell is the first's; another cell ends it. */
  text = "name = rounds\nallreduce 1K x3 pause=1ms\nallreduce 1K x10 pause=50us\nallgather 1K x2\nallgather 1K x1\n"
         "allreduce 1K x1\nrepeat 2\n";
  CHECK(dccl_workload_parse(text, "rounds", &w, error, sizeof(error)) == 0);
  static const int starts[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 13, 13, 13, 16,
                               16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 30, 30, 30, 33};
  dccl_workload_start(&cursor, &w, 0);
  n = 0;
  while (dccl_workload_next(&cursor, &call) && n < 34) {
    CHECK_MSG((int)call.run_start == starts[n], "call %d: run from %d, not %d", n, (int)call.run_start, starts[n]);
    n++;
  }
  CHECK_EQ_INT(n, 34);
  dccl_workload_free(&w);

  const char* bad[] = {"allreduce\n", "allreduce 1K x0\n", "allreduce 1K gap=soon\n", "allreduce 1K pause=-1ms\n", "frobnicate 1K\n",
                       "sweep allgather 8K 1K\n", "repeat 0\n", "allreduce 1K colour=red\n", "# nothing\n"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    CHECK_MSG(dccl_workload_parse(bad[i], "bad", &w, error, sizeof(error)) != 0, "accepted: %s", bad[i]);
    CHECK(strstr(error, "bad") != NULL);
  }
}

static void test_schedules(void) {
  char error[512];
  dccl_schedule s;
  const char* text = "name = mix\ncongestion step at=100 level=0.5 until=200\ncongestion step at=150 level=0.8\n"
                     "interference ramp from=0 to=40 start=0 end=1 steps=4\n";
  CHECK(dccl_schedule_parse(text, "s", &s, error, sizeof(error)) == 0);
  CHECK(strcmp(s.name, "mix") == 0);
  CHECK(dccl_schedule_build(&s, 1, 1000) == 0);
  dccl_conditions c;
  size_t hint = 0;
  dccl_schedule_at(&s, 0, &hint, &c);
  CHECK(c.congestion == 0 && fabs(c.interference - 0.125) < 1e-12);
  dccl_schedule_at(&s, 35, &hint, &c);
  CHECK(fabs(c.interference - 0.875) < 1e-12);
  dccl_schedule_at(&s, 50, &hint, &c);
  CHECK(c.interference == 0 && c.congestion == 0);
  dccl_schedule_at(&s, 120, &hint, &c);
  CHECK(c.congestion == 0.5);
  dccl_schedule_at(&s, 160, &hint, &c);
  CHECK(c.congestion == 0.8); /* overlapping events combine by maximum */
  dccl_schedule_at(&s, 999, &hint, &c);
  CHECK(c.congestion == 0.8);
  dccl_schedule_at(&s, 120, NULL, &c); /* random access */
  CHECK(c.congestion == 0.5);
  dccl_schedule_free(&s);

  /* On/off episodes: duty cycle close to on / (on + off), reproducible per seed. */
  CHECK(dccl_schedule_parse("congestion onoff level=0.7 on=200 off=600\n", "o", &s, error, sizeof(error)) == 0);
  CHECK(dccl_schedule_build(&s, 42, 2000000) == 0);
  uint64_t on = 0;
  hint = 0;
  for (uint64_t call = 0; call < 2000000; call += 10) {
    dccl_schedule_at(&s, call, &hint, &c);
    on += c.congestion > 0;
  }
  double duty = on / 200000.0;
  CHECK_MSG(fabs(duty - 0.25) < 0.03, "duty cycle %.3f", duty);
  size_t segments = s.n_segments;
  CHECK(segments > 100);
  CHECK(dccl_schedule_build(&s, 42, 2000000) == 0 && s.n_segments == segments);
  CHECK(dccl_schedule_build(&s, 43, 2000000) == 0 && s.n_segments != segments);
  dccl_schedule_free(&s);

  const char* bad[] = {"congestion\n", "traffic step at=1 level=1\n", "congestion step level=0.5\n",
                       "congestion step at=5 level=1.5\n", "congestion ramp from=10 to=5 start=0 end=1\n",
                       "congestion onoff level=0.5 on=0 off=10\n", "congestion step at=5 level=0.5 colour=3\n",
                       "congestion wobble level=0.3\n"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    CHECK_MSG(dccl_schedule_parse(bad[i], "bad", &s, error, sizeof(error)) != 0, "accepted: %s", bad[i]);
    CHECK(strstr(error, "bad:1:") != NULL);
  }
}

/* The workload `text`, read from `source`, is refused with `expected` in the message. */
static void expect_workload_refused(const char* text, const char* source, const char* expected) {
  char error[512];
  dccl_workload w;
  CHECK_MSG(dccl_workload_parse(text, source, &w, error, sizeof(error)) != 0, "accepted: %s", text);
  CHECK_MSG(strstr(error, expected) != NULL, "%s", error);
}

/* The counts times repeat are counted without wrapping: 2^40 x 2^24 is 2^64, not 0 calls. */
static void test_workload_call_count_overflow(void) {
  char error[512];
  dccl_workload w;
  expect_workload_refused("allreduce 1M x1099511627776\nrepeat 16777216\n", "huge", "huge: too many calls");
  CHECK(dccl_workload_parse("allreduce 1M x1099511627776\nrepeat 16777215\n", "w", &w, error, sizeof(error)) == 0);
  CHECK(dccl_workload_total_calls(&w) == UINT64_MAX - ((uint64_t)1 << 40) + 1);
  dccl_workload_free(&w);
}

/* A line holds at most 16 words; more is an error naming the limit, not words silently dropped. */
static void test_words_beyond_the_limit(void) {
  char error[512], text[256] = "allreduce 1M";
  dccl_workload w;
  for (int i = 0; i < 13; i++) strcat(text, " gap=1us");
  char sixteen[512];
  snprintf(sixteen, sizeof(sixteen), "%s x7\n", text);
  CHECK(dccl_workload_parse(sixteen, "w", &w, error, sizeof(error)) == 0);
  CHECK(w.n_ops == 1 && w.ops[0].count == 7);
  dccl_workload_free(&w);
  const char* endings[] = {" gap=1us x7\n", " x7 bogus\n"};
  for (int i = 0; i < 2; i++) {
    char seventeen[512];
    snprintf(seventeen, sizeof(seventeen), "%s%s", text, endings[i]);
    expect_workload_refused(seventeen, "long", "long:1: more than 16 words");
  }
  char event[512] = "congestion step at=1 level=0.5";
  for (int i = 0; i < 15; i++) strcat(event, " level=0.5");
  dccl_schedule s;
  CHECK_MSG(dccl_schedule_parse(event, "long", &s, error, sizeof(error)) != 0, "accepted: %s", event);
  CHECK_MSG(strstr(error, "long:1: more than 16 words") != NULL, "%s", error);
}

/* A gap is bounded after its unit scales it: 1e308 seconds is not an infinite gap. */
static void test_gap_bounded_after_its_unit(void) {
  char error[512];
  dccl_workload w;
  const char* bad[] = {"allreduce 1K gap=1e308s\n", "allreduce 1K gap=1e303ms\n", "allreduce 1K gap=3601s\n"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) expect_workload_refused(bad[i], "gap", "gap:1: bad gap");
  CHECK(dccl_workload_parse("allreduce 1K gap=3600s\n", "w", &w, error, sizeof(error)) == 0);
  CHECK(w.ops[0].gap_us == 3.6e9);
  dccl_workload_free(&w);
}

/* On/off means beyond 1e15 calls are rejected. An episode longer than the rest of the span (a mean
 * the parser would refuse, set directly) lasts to its end: its length, infinite as a double, was
 * converted to an integer (undefined; 2^63 + 1 on x86), and the sum wrapped to calls before the event. */
static void test_onoff_huge_episodes(void) {
  char error[512];
  dccl_schedule s;
  CHECK(dccl_schedule_parse("congestion onoff level=0.5 on=1e20 off=1\n", "o", &s, error, sizeof(error)) != 0);
  CHECK_MSG(strstr(error, "o:1: bad value '1e20' for on") != NULL, "%s", error);
  CHECK(dccl_schedule_parse("congestion onoff level=0.5 on=1e15 off=1\n", "o", &s, error, sizeof(error)) == 0);
  uint64_t from = (uint64_t)1 << 63;
  s.events[0].mean_on = 1e20;
  s.events[0].from = from;
  CHECK(dccl_schedule_build(&s, 7, from + 1000) == 0);
  dccl_conditions c;
  dccl_schedule_at(&s, 500, NULL, &c);
  CHECK(c.congestion == 0);
  dccl_schedule_at(&s, from + 999, NULL, &c);
  CHECK(c.congestion == 0.5);
  /* Calm, off for a few calls from `from`, then on up to the horizon where expansion ends. */
  CHECK_EQ_INT((int)s.n_segments, 3);
  CHECK(s.n_segments == 3 && s.segments[1].start > from && s.segments[1].start < from + 100 &&
        s.segments[2].start == from + 1000);
  dccl_schedule_free(&s);
}

/* A ramp's steps split a span near 2^62 calls without overflowing: call 0 is in the first of 16. */
static void test_ramp_over_a_huge_span(void) {
  char error[512];
  dccl_schedule s;
  CHECK(dccl_schedule_parse("congestion ramp from=0 to=4611686018427387904 start=0 end=1 steps=16\n", "r", &s, error,
                            sizeof(error)) == 0);
  CHECK(dccl_schedule_build(&s, 1, UINT64_MAX) == 0);
  dccl_conditions c;
  dccl_schedule_at(&s, 0, NULL, &c);
  CHECK_NEAR(c.congestion, 1.0 / 32, 1e-12);
  dccl_schedule_at(&s, ((uint64_t)1 << 58) - 1, NULL, &c);
  CHECK_NEAR(c.congestion, 1.0 / 32, 1e-12);
  dccl_schedule_at(&s, (uint64_t)1 << 58, NULL, &c);
  CHECK_NEAR(c.congestion, 3.0 / 32, 1e-12);
  dccl_schedule_at(&s, ((uint64_t)1 << 62) - 1, NULL, &c);
  CHECK_NEAR(c.congestion, 31.0 / 32, 1e-12);
  dccl_schedule_free(&s);
}

/* A key that only looks like a known one is refused, not taken for it: a workload line "names = x" set
 * the name, and a profile key with an empty part ("graph..ring.bw_intra") set graph.ring.bw_intra. */
static void test_near_miss_keys_refused(void) {
  expect_workload_refused("names = oops\nallreduce 1K\n", "w", "w:1: unknown key 'names'");
  expect_workload_refused("allreduce 1K\nnamespace=x\n", "w", "w:2: unknown key 'namespace'");
  char error[512], text[1024];
  dccl_workload w;
  CHECK(dccl_workload_parse("name = kept\nallreduce 1K\n", "w", &w, error, sizeof(error)) == 0 &&
        strcmp(w.name, "kept") == 0);
  dccl_workload_free(&w);
  /* Conditions files read their name line through the same helper. */
  static dccl_schedule schedule;
  CHECK(dccl_schedule_parse("names = oops\n", "c", &schedule, error, sizeof(error)) != 0 &&
        strstr(error, "c:1: unknown key 'names'") != NULL);
  CHECK(dccl_schedule_parse("name =\n", "c", &schedule, error, sizeof(error)) != 0 &&
        strstr(error, "c:1: expected 'name = <value>'") != NULL);
  CHECK(dccl_schedule_parse("name = kept\ncongestion constant level=0.3\n", "c", &schedule, error, sizeof(error)) == 0 &&
        strcmp(schedule.name, "kept") == 0);
  dccl_schedule_free(&schedule);
  static dccl_profile p;
  const char* base = "name = x\nnodes = 1\nranks_per_node = 1\ncompute_capability = 90\nchannels = 2\n"
                     "graph.ring.channels = 2\n";
  const char* near_misses[] = {"graph..ring.bw_intra", ".graph.ring.bw_intra", "graph.ring.bw_intra.", "truth..net.link_bw"};
  for (size_t i = 0; i < sizeof(near_misses) / sizeof(near_misses[0]); i++) {
    snprintf(text, sizeof(text), "%s%s = 5\n", base, near_misses[i]);
    char expected[128];
    snprintf(expected, sizeof(expected), "p:7: unknown key '%s'", near_misses[i]);
    CHECK_MSG(dccl_profile_parse(text, "p", &p, error, sizeof(error)) != 0, "accepted: %s", near_misses[i]);
    CHECK_MSG(strstr(error, expected) != NULL, "%s", error);
  }
  snprintf(text, sizeof(text), "%sgraph.ring.bw_intra = 5\n", base);
  CHECK(dccl_profile_parse(text, "p", &p, error, sizeof(error)) == 0 && p.graphs[DCCL_ALGO_RING].bw_intra == 5);
}

/* A name or description that does not fit its field is refused, not cut (a run would be reported under
 * a name the file does not hold); one that fits exactly is kept whole. */
static void test_long_names_refused(void) {
  char error[512], text[1024], name[80];
  memset(name, 'n', 64);
  name[64] = '\0'; /* one more than the 63 a name holds */
  dccl_workload w;
  snprintf(text, sizeof(text), "name = %s\nallreduce 1K\n", name);
  CHECK(dccl_workload_parse(text, "w", &w, error, sizeof(error)) != 0 && strstr(error, "w:1: name longer than 63") != NULL);
  static dccl_schedule schedule;
  snprintf(text, sizeof(text), "name = %s\n", name);
  CHECK(dccl_schedule_parse(text, "c", &schedule, error, sizeof(error)) != 0 && strstr(error, "c:1: name longer than 63") != NULL);
  static dccl_profile p;
  snprintf(text, sizeof(text), "name = %s\nnodes = 1\nranks_per_node = 1\ncompute_capability = 90\nchannels = 2\n", name);
  CHECK(dccl_profile_parse(text, "p", &p, error, sizeof(error)) != 0 && strstr(error, "p:1: name: value longer than 63") != NULL);
  name[63] = '\0'; /* fits */
  snprintf(text, sizeof(text), "name = %s\nallreduce 1K\n", name);
  CHECK(dccl_workload_parse(text, "w", &w, error, sizeof(error)) == 0 && strcmp(w.name, name) == 0);
  dccl_workload_free(&w);
  snprintf(text, sizeof(text), "name = %s\n", name);
  CHECK(dccl_schedule_parse(text, "c", &schedule, error, sizeof(error)) == 0 && strcmp(schedule.name, name) == 0);
  dccl_schedule_free(&schedule);
}

int main(void) {
  RUN(test_every_shipped_scenario_parses);
  RUN(test_profile_errors);
  RUN(test_workloads);
  RUN(test_schedules);
  RUN(test_workload_call_count_overflow);
  RUN(test_words_beyond_the_limit);
  RUN(test_gap_bounded_after_its_unit);
  RUN(test_onoff_huge_episodes);
  RUN(test_ramp_over_a_huge_span);
  RUN(test_near_miss_keys_refused);
  RUN(test_long_names_refused);
  TEST_SUMMARY();
}
