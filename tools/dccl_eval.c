/* tools/dccl_eval.c: `dccl eval`: several policies over several scenarios and seeds, side by side in
 * one run (each run a forked process, several at once), one table per scenario and a CSV. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <dirent.h>
#include <time.h>
#include <unistd.h>

#include "../abi/builtin.h"
#include "../core/clock.h"
#include "../core/sorting.h"
#include "../emu/emulator.h"
#include "../emu/plugin_loader.h"
#include "../plugin/learner.h"
#include "../plugin/registry.h"
#include "cli.h"

#define MAX_SCENARIOS 64
#define MAX_POLICIES 8
#define MAX_SEEDS 16
#define MAX_EVENTS 65536

typedef struct scenario {
  char path[512], name[64], profile[128], workload[128], conditions[128], description[1024];
  int max_tuner, max_profiler; /* plugin ABIs of the NCCL release emulated (`nccl`, default 2.30) */
  long long calls; /* 0: the whole workload */
  int warm_start;  /* learning policies start from a policy trained on the same scenario (another seed) */
  int host_ahead;  /* each call is launched before the last kernel's end reaches the profiler (a loop of collectives) */
} scenario;

typedef struct job_result {
  int ok;
  char error[200];
  double mean_us, p99_us, vs_oracle, vs_default, convergence_median, regret[10];
  double steady_vs_oracle, steady_vs_default;
  double detection_delay, false_alarms, onsets_detected, onsets;
  uint64_t calls, rank_mismatches;
  double seconds;
} job_result;

static const char* all_policies[] = {"default", "rules", "autoccl", "bandit", "dqn", "hold", "oracle"};

static void usage(FILE* out) {
  fprintf(out,
          "usage: dccl eval [options] [SCENARIO|FOLDER ...]\n"
          "Runs every policy on every scenario (default: scenarios/suite) and seed, through the NCCL emulator\n"
          "with the plugin linked in and run synchronously (reproducible), and prints one table per scenario.\n"
          "  --policies LIST       comma-separated, of: default (NCCL), rules (NCCL example-tuner pins from the\n"
          "                        simulator's calm best choices), autoccl, bandit, dqn (DynamICCL), hold (dqn\n"
          "                        learning for a quarter of the calls, then holding), oracle (default: all)\n"
          "  --seeds N             seeds per scenario and policy (default 1)\n"
          "  --jobs N              runs at once (default 2)\n"
          "  --csv FILE            one row per run\n"
          "  --streams FILE        steady-state latency per (scenario, policy, collective, size bin) as CSV,\n"
          "                        for the scenarios named static-* (the others change conditions)\n"
          "  --logs DIR            per-call CSV and Agent-1 alarms of each run of the scenarios in --log\n"
          "  --log LIST            scenario names to log (with --logs)\n"
          "  --scale F             multiply every scenario's calls by F (0 < F <= 1; quick looks)\n"
          "Columns: mean and p99 latency (us, noise-free); x oracle and x NCCL: total latency / the oracle's and\n"
          "NCCL default's; steady: the same over the last quarter; conv: calls until a stream stays within 5%%\n"
          "of the oracle (median over streams); regret: latency beyond the oracle's so far, as a fraction of\n"
          "the oracle's, after 10%%, 50%% and 100%% of the calls; A1 delay: Agent-1's calls from a congestion\n"
          "onset to its alarm (median), detected/onsets, false alarms (alarms in calm conditions).\n");
}

/* ---- scenario files ---- */
static int parse_scenario(const char* path, scenario* s, char* error, size_t size) {
  FILE* f = fopen(path, "r");
  if (f == NULL) {
    snprintf(error, size, "%s: %s", path, strerror(errno));
    return -1;
  }
  memset(s, 0, sizeof(*s));
  snprintf(s->path, sizeof(s->path), "%s", path);
  strcpy(s->conditions, "calm");
  dccl_nccl_release_abis("2.30", &s->max_tuner, &s->max_profiler);
  char line[1024];
  int number = 0, in_header = 1;
  while (fgets(line, sizeof(line), f) != NULL) {
    number++;
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0] == '#') {
      if (in_header && strlen(s->description) + strlen(line) + 2 < sizeof(s->description)) {
        if (s->description[0] != '\0') strcat(s->description, " ");
        strcat(s->description, line[1] == ' ' ? line + 2 : line + 1);
      }
      continue;
    }
    in_header = 0;
    char key[64], value[512];
    if (line[strspn(line, " \t")] == '\0') continue;
    if (sscanf(line, " %63[a-z_] = %511[^\n]", key, value) != 2) {
      snprintf(error, size, "%s:%d: expected 'key = value'", path, number);
      fclose(f);
      return -1;
    }
    value[strcspn(value, " \t#")] = '\0';
    if (strcmp(key, "name") == 0) snprintf(s->name, sizeof(s->name), "%.*s", (int)sizeof(s->name) - 1, value);
    else if (strcmp(key, "profile") == 0) snprintf(s->profile, sizeof(s->profile), "%.*s", (int)sizeof(s->profile) - 1, value);
    else if (strcmp(key, "workload") == 0) snprintf(s->workload, sizeof(s->workload), "%.*s", (int)sizeof(s->workload) - 1, value);
    else if (strcmp(key, "conditions") == 0) snprintf(s->conditions, sizeof(s->conditions), "%.*s", (int)sizeof(s->conditions) - 1, value);
    else if (strcmp(key, "calls") == 0) s->calls = atoll(value);
    else if (strcmp(key, "warm_start") == 0) s->warm_start = strcmp(value, "yes") == 0;
    else if (strcmp(key, "host_ahead") == 0) s->host_ahead = strcmp(value, "yes") == 0;
    else if (strcmp(key, "nccl") == 0) {
      if (dccl_nccl_release_abis(value, &s->max_tuner, &s->max_profiler) != 0) {
        snprintf(error, size, "%s:%d: unknown NCCL release '%s' (2.21 .. 2.30)", path, number, value);
        fclose(f);
        return -1;
      }
    }
    else {
      snprintf(error, size, "%s:%d: unknown key '%s'", path, number, key);
      fclose(f);
      return -1;
    }
  }
  fclose(f);
  if (s->name[0] == '\0' || s->profile[0] == '\0' || s->workload[0] == '\0') {
    snprintf(error, size, "%s: needs name, profile and workload", path);
    return -1;
  }
  return 0;
}

static int compare_names(const void* a, const void* b) { return strcmp(*(char* const*)a, *(char* const*)b); }

static int add_scenarios(const char* path, scenario* list, int* count, char* error, size_t size) {
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(error, size, "%s: %s", path, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) {
    if (*count == MAX_SCENARIOS) {
      snprintf(error, size, "more than %d scenarios", MAX_SCENARIOS);
      return -1;
    }
    return parse_scenario(path, &list[(*count)++], error, size) == 0 ? 0 : -1;
  }
  DIR* dir = opendir(path);
  if (dir == NULL) {
    snprintf(error, size, "%s: %s", path, strerror(errno));
    return -1;
  }
  char* names[MAX_SCENARIOS];
  int n = 0;
  for (struct dirent* e; (e = readdir(dir)) != NULL && n < MAX_SCENARIOS;) {
    size_t length = strlen(e->d_name);
    if (length > 9 && strcmp(e->d_name + length - 9, ".scenario") == 0) names[n++] = strdup(e->d_name);
  }
  closedir(dir);
  qsort(names, (size_t)n, sizeof(char*), compare_names);
  int rc = 0;
  for (int i = 0; i < n; i++) {
    char file[1024];
    snprintf(file, sizeof(file), "%s/%s", path, names[i]);
    if (rc == 0 && add_scenarios(file, list, count, error, size) != 0) rc = -1;
    free(names[i]);
  }
  return rc;
}

/* ---- one run, in a child process ---- */
typedef struct alarm_log {
  uint64_t call[MAX_EVENTS];
  int event[MAX_EVENTS];
  int count;
} alarm_log;

static void on_trigger(uint64_t call, int coll, int size_bin, int event, void* context) {
  (void)coll;
  (void)size_bin;
  alarm_log* log = context;
  if (log->count < MAX_EVENTS) {
    log->call[log->count] = call;
    log->event[log->count++] = event;
  }
}

/* Agent-1 against the scenario's schedule: congestion onsets (calm -> congested) and alarms. */
static void score_alarms(const dccl_sim* sim, uint64_t calls, const alarm_log* log, job_result* out) {
  double delays[256];
  int onsets = 0, detected = 0, false_alarms = 0;
  size_t hint = 0;
  int was_congested = 0;
  int next_alarm = 0;
  for (uint64_t c = 0; c < calls; c++) {
    dccl_conditions now;
    dccl_sim_conditions(sim, c, &hint, &now);
    int congested = now.congestion > 0.05 || now.interference > 0.05;
    while (next_alarm < log->count && log->call[next_alarm] < c) next_alarm++;
    if (congested && !was_congested && onsets < 256) {
      int k = next_alarm;
      while (k < log->count && log->event[k] != DCCL_TRIGGER_EVENT_ONSET) k++;
      if (k < log->count && log->call[k] - c < 5000) delays[detected++] = (double)(log->call[k] - c);
      onsets++;
    }
    was_congested = congested;
  }
  hint = 0;
  for (int k = 0; k < log->count; k++) {
    if (log->event[k] != DCCL_TRIGGER_EVENT_ONSET || log->call[k] >= calls) continue;
    dccl_conditions at;
    dccl_sim_conditions(sim, log->call[k], &hint, &at);
    if (at.congestion <= 0.05 && at.interference <= 0.05) false_alarms++;
  }
  dccl_sort_doubles(delays, (size_t)detected);
  out->onsets = onsets;
  out->onsets_detected = detected;
  out->detection_delay = detected > 0 ? delays[detected / 2] : NAN;
  out->false_alarms = false_alarms;
}

/* The `rules` baseline: NCCL example-tuner pins, one per collective and power-of-two size, holding the
 * simulator's best (algorithm, protocol, channels) in calm conditions: what an operator who tuned the
 * machine once, offline, would write. */
static int write_rules(const dccl_sim* sim, const char* path) {
  FILE* f = fopen(path, "w");
  if (f == NULL) return -1;
  dccl_oracle oracle;
  dccl_action_space_options options = {.max_channels = 32};
  if (dccl_oracle_init(&oracle, sim, &options) != 0) {
    fclose(f);
    return -1;
  }
  const int colls[] = {DCCL_COLL_ALLREDUCE, DCCL_COLL_ALLGATHER, DCCL_COLL_REDUCESCATTER};
  dccl_conditions calm;
  memset(&calm, 0, sizeof(calm));
  fprintf(f, "# collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks\n");
  for (int i = 0; i < 3; i++)
    for (int bin = 10; bin <= 31; bin++) {
      dccl_call call = {.coll = colls[i], .bytes = (size_t)1 << bin, .pipe_ops = 1};
      dccl_oracle_answer answer;
      dccl_oracle_query(&oracle, &call, &calm, &answer);
      if (dccl_action_is_nccl(answer.best)) continue;
      fprintf(f, "%s,%llu,%llu,%s,%s,%d,-1,-1\n", dccl_coll_name(colls[i]), 1ULL << bin, bin == 31 ? ~0ULL >> 1 : (2ULL << bin) - 1,
              dccl_algo_name(dccl_action_algo(answer.best)), dccl_proto_name(dccl_action_proto(answer.best)),
              dccl_action_channels(answer.best) > 0 ? dccl_action_channels(answer.best) : -1);
    }
  dccl_oracle_free(&oracle);
  return fclose(f);
}

typedef struct run_options {
  const char* log_dir; /* NULL: no per-call logs */
  const char* streams_path;
  double scale;
} run_options;

static void run_job(const scenario* s, const char* policy, int seed, const run_options* ro, job_result* out) {
  memset(out, 0, sizeof(*out));
  double started = dccl_monotonic_seconds();
  char error[512];
  dccl_profile profile;
  dccl_workload workload;
  dccl_schedule schedule;
  memset(&schedule, 0, sizeof(schedule));
  if (dccl_profile_find(s->profile, &profile, error, sizeof(error)) != 0 ||
      dccl_workload_find(s->workload, &workload, error, sizeof(error)) != 0 ||
      dccl_schedule_find(s->conditions, &schedule, error, sizeof(error)) != 0) {
    snprintf(out->error, sizeof(out->error), "%.190s", error);
    return;
  }
  uint64_t total = dccl_workload_total_calls(&workload);
  if (s->calls > 0 && (uint64_t)s->calls < total) total = (uint64_t)s->calls;
  total = (uint64_t)((double)total * ro->scale);
  static dccl_sim sim;
  if (dccl_sim_init(&sim, &profile, &schedule, (uint64_t)seed, total, error, sizeof(error)) != 0) {
    snprintf(out->error, sizeof(out->error), "%.190s", error);
    return;
  }
  setenv("DYNAMICCL_COORD", "solo", 1);
  setenv("DYNAMICCL_SAVE_SECONDS", "0", 1);
  setenv("DYNAMICCL_PROFILE", "on", 1);
  int learning = strcmp(policy, "dqn") == 0 || strcmp(policy, "hold") == 0 || strcmp(policy, "autoccl") == 0 ||
                 strcmp(policy, "bandit") == 0;
  setenv("DYNAMICCL_MODE", learning ? "learn" : "default", 1);
  setenv("DYNAMICCL_AGENT", strcmp(policy, "autoccl") == 0 || strcmp(policy, "bandit") == 0 ? policy : "dqn", 1);
  char text[64];
  if (strcmp(policy, "hold") == 0) {
    snprintf(text, sizeof(text), "%llu", (unsigned long long)(total / 4 + 1));
    setenv("DYNAMICCL_LEARN_FOR", text, 1);
  }
  char temp[] = "/tmp/dccl-eval-XXXXXX";
  if (mkdtemp(temp) == NULL) {
    snprintf(out->error, sizeof(out->error), "cannot create a temporary folder");
    return;
  }
  char rules_path[600], policy_path[600];
  snprintf(rules_path, sizeof(rules_path), "%s/rules.csv", temp);
  snprintf(policy_path, sizeof(policy_path), "%s/policy.bin", temp);
  if (strcmp(policy, "rules") == 0) {
    if (write_rules(&sim, rules_path) != 0) {
      snprintf(out->error, sizeof(out->error), "cannot write the rules");
      return;
    }
    setenv("DYNAMICCL_RULES_FILE", rules_path, 1);
  }
  static dccl_builtin_plugin builtin;
  dccl_builtin_abi(builtin.tuner, builtin.profiler);
  dccl_registry_set_manual(1);
  dccl_emu_config config;
  dccl_emu_config_defaults(&config);
  config.builtin = policy[0] == 'o' ? NULL : &builtin;
  config.oracle_policy = strcmp(policy, "oracle") == 0;
  config.synchronous = 1;
  config.host_ahead = s->host_ahead;
  config.sync_step = dccl_plugin_sync_step;
  config.ranks = 1;
  config.calls = total;
  config.max_tuner = s->max_tuner;
  config.max_profiler = s->max_profiler;
  config.oracle_options.max_channels = 32;
  config.oracle_options.tune_chunk = 1;
  config.steady_fraction = 0.25;
  dccl_emu_result r;
  if (learning && s->warm_start) {
    /* A saved policy from an earlier job (another seed) on the same scenario. */
    setenv("DYNAMICCL_POLICY_FILE", policy_path, 1);
    static dccl_sim earlier;
    if (dccl_sim_init(&earlier, &profile, &schedule, (uint64_t)seed + 1000, total, error, sizeof(error)) != 0 ||
        dccl_emu_run(&config, &earlier, &workload, &r, error, sizeof(error)) != 0) {
      snprintf(out->error, sizeof(out->error), "warm-up run: %.180s", error);
      return;
    }
    dccl_sim_free(&earlier);
  }
  char call_log[700];
  int logging = ro->log_dir != NULL;
  if (logging) {
    snprintf(call_log, sizeof(call_log), "%s/%s-%s-%d.csv", ro->log_dir, s->name, policy, seed);
    config.call_log = call_log;
  }
  static alarm_log alarms;
  alarms.count = 0;
  dccl_learner_set_trigger_listener(on_trigger, &alarms);
  if (dccl_emu_run(&config, &sim, &workload, &r, error, sizeof(error)) != 0) {
    snprintf(out->error, sizeof(out->error), "%.190s", error);
    return;
  }
  dccl_learner_set_trigger_listener(NULL, NULL);
  out->ok = 1;
  out->calls = r.calls;
  out->rank_mismatches = r.rank_mismatches;
  out->mean_us = r.mean_true_us;
  out->p99_us = r.p99_true_us;
  out->vs_oracle = r.total_true_us / r.total_oracle_us;
  out->vs_default = r.total_true_us / r.total_default_us;
  out->steady_vs_oracle = r.steady_true_us / r.steady_oracle_us;
  out->steady_vs_default = r.steady_true_us / r.steady_default_us;
  out->convergence_median = r.convergence_median_calls;
  memcpy(out->regret, r.regret_curve, sizeof(out->regret));
  score_alarms(&sim, r.calls, &alarms, out);
  if (logging) {
    char path[700];
    snprintf(path, sizeof(path), "%s/%s-%s-%d-alarms.csv", ro->log_dir, s->name, policy, seed);
    FILE* f = fopen(path, "w");
    if (f != NULL) {
      fprintf(f, "call,event\n");
      for (int k = 0; k < alarms.count; k++)
        fprintf(f, "%llu,%s\n", (unsigned long long)alarms.call[k],
                alarms.event[k] == DCCL_TRIGGER_EVENT_ONSET ? "onset" : "recovered");
      fclose(f);
    }
  }
  if (ro->streams_path != NULL) {
    FILE* f = fopen(ro->streams_path, "a");
    if (f != NULL) {
      for (int c = 0; c < DCCL_NUM_COLLS; c++)
        for (int b = 0; b < DCCL_SIZE_BINS; b++) {
          const dccl_emu_stream_stats* st = &r.stream[c * DCCL_SIZE_BINS + b];
          if (st->steady_calls == 0) continue;
          fprintf(f, "%s,%s,%d,%s,%d,%.3f,%.3f,%.3f\n", s->name, policy, seed, dccl_coll_name(c), b,
                  st->steady_true_us / st->steady_calls, st->steady_oracle_us / st->steady_calls,
                  st->steady_default_us / st->steady_calls);
        }
      fclose(f);
    }
  }
  unlink(rules_path);
  unlink(policy_path);
  rmdir(temp);
  dccl_sim_free(&sim);
  dccl_workload_free(&workload);
  out->seconds = dccl_monotonic_seconds() - started;
}

/* ---- the parent: jobs, progress, tables ---- */
typedef struct job {
  int scenario, policy, seed;
  pid_t pid;
  int pipe;
  int done;
  job_result result;
} job;

static void progress(int done, int total, double started) {
  if (!isatty(2)) return;
  double elapsed = dccl_monotonic_seconds() - started;
  double left = done > 0 ? elapsed / done * (total - done) : 0;
  fprintf(stderr, "\r  %d/%d runs, %.0f s elapsed, about %.0f s left   ", done, total, elapsed, left);
  if (done == total) fprintf(stderr, "\n");
}

static double average(const job* jobs, int n, int scenario_index, int policy, size_t offset, int* count) {
  double sum = 0;
  *count = 0;
  for (int i = 0; i < n; i++) {
    if (jobs[i].scenario != scenario_index || jobs[i].policy != policy || !jobs[i].result.ok) continue;
    double v = *(const double*)((const char*)&jobs[i].result + offset);
    if (isnan(v)) continue;
    sum += v;
    (*count)++;
  }
  return *count > 0 ? sum / *count : NAN;
}

#define FIELD(name) offsetof(job_result, name)

int dccl_cli_eval(int argc, char** argv) {
  const char* policy_list = "default,rules,autoccl,bandit,dqn,hold,oracle";
  const char* csv_path = NULL;
  long long seeds = 1, jobs_at_once = 2;
  run_options ro = {NULL, NULL, 1.0};
  const char* log_list = "";
  static scenario scenarios[MAX_SCENARIOS];
  int n_scenarios = 0;
  char error[1024];
  for (int i = 0; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--policies") == 0 && v) {
      policy_list = v;
      i++;
    } else if (strcmp(a, "--seeds") == 0 && v) {
      if (dccl_cli_int(v, 1, MAX_SEEDS, &seeds) != 0) return dccl_cli_fail("--seeds must be 1..16");
      i++;
    } else if (strcmp(a, "--jobs") == 0 && v) {
      if (dccl_cli_int(v, 1, 64, &jobs_at_once) != 0) return dccl_cli_fail("--jobs must be 1..64");
      i++;
    } else if (strcmp(a, "--csv") == 0 && v) {
      csv_path = v;
      i++;
    } else if (strcmp(a, "--streams") == 0 && v) {
      ro.streams_path = v;
      i++;
    } else if (strcmp(a, "--logs") == 0 && v) {
      ro.log_dir = v;
      i++;
    } else if (strcmp(a, "--log") == 0 && v) {
      log_list = v;
      i++;
    } else if (strcmp(a, "--scale") == 0 && v) {
      ro.scale = atof(v);
      if (!(ro.scale > 0 && ro.scale <= 1)) return dccl_cli_fail("--scale must be in (0, 1]");
      i++;
    } else if (a[0] == '-') {
      usage(stderr);
      return 2;
    } else if (add_scenarios(a, scenarios, &n_scenarios, error, sizeof(error)) != 0) {
      return dccl_cli_fail(error);
    }
  }
  if (n_scenarios == 0) {
    const char* folders[] = {"scenarios/suite", getenv("DYNAMICCL_SCENARIOS")};
    for (int k = 0; k < 2 && n_scenarios == 0; k++) {
      if (folders[k] == NULL) continue;
      char path[1024];
      snprintf(path, sizeof(path), k == 0 ? "%s" : "%s/suite", folders[k]);
      struct stat st;
      if (stat(path, &st) == 0 && add_scenarios(path, scenarios, &n_scenarios, error, sizeof(error)) != 0)
        return dccl_cli_fail(error);
    }
    if (n_scenarios == 0) return dccl_cli_fail("no scenarios (give files or folders, or run from the repository)");
  }
  int policies[MAX_POLICIES], n_policies = 0;
  char list[256];
  snprintf(list, sizeof(list), "%s", policy_list);
  for (char* token = strtok(list, ","); token != NULL; token = strtok(NULL, ",")) {
    int found = -1;
    for (int k = 0; k < (int)(sizeof(all_policies) / sizeof(all_policies[0])); k++)
      if (strcmp(token, all_policies[k]) == 0) found = k;
    if (found < 0 || n_policies == MAX_POLICIES) return dccl_cli_fail("unknown policy in --policies");
    policies[n_policies++] = found;
  }
  if (ro.log_dir != NULL) mkdir(ro.log_dir, 0755);
  if (ro.streams_path != NULL) {
    FILE* f = fopen(ro.streams_path, "w");
    if (f == NULL) return dccl_cli_fail("cannot write --streams file");
    fprintf(f, "scenario,policy,seed,collective,size_bin,steady_us,oracle_us,default_us\n");
    fclose(f);
  }

  int n_jobs = n_scenarios * n_policies * (int)seeds;
  job* jobs = calloc((size_t)n_jobs, sizeof(job));
  if (jobs == NULL) return dccl_cli_fail("out of memory");
  int k = 0;
  for (int s = 0; s < n_scenarios; s++)
    for (int p = 0; p < n_policies; p++)
      for (int seed = 1; seed <= seeds; seed++) jobs[k++] = (job){s, policies[p], seed, 0, -1, 0, {0}};
  double started = dccl_monotonic_seconds();
  int next = 0, running = 0, finished = 0;
  fflush(stdout);
  while (finished < n_jobs) {
    while (running < jobs_at_once && next < n_jobs) {
      job* j = &jobs[next++];
      int fds[2];
      if (pipe(fds) != 0) return dccl_cli_fail("cannot create a pipe");
      j->pid = fork();
      if (j->pid == 0) {
        close(fds[0]);
        run_options mine = ro;
        char pattern[80];
        snprintf(pattern, sizeof(pattern), ",%s,", scenarios[j->scenario].name);
        char padded[300];
        snprintf(padded, sizeof(padded), ",%s,", log_list);
        if (strstr(padded, pattern) == NULL) mine.log_dir = NULL;
        if (ro.streams_path != NULL && strstr(scenarios[j->scenario].name, "static") == NULL) mine.streams_path = NULL;
        /* Quiet: the plugin's log lines are not the report. */
        FILE* null = freopen("/dev/null", "w", stderr);
        (void)null;
        job_result result;
        run_job(&scenarios[j->scenario], all_policies[j->policy], j->seed, &mine, &result);
        ssize_t written = write(fds[1], &result, sizeof(result));
        _exit(written == (ssize_t)sizeof(result) ? 0 : 1);
      }
      close(fds[1]);
      j->pipe = fds[0];
      running++;
    }
    int status;
    pid_t pid = wait(&status);
    if (pid < 0) break;
    for (int i = 0; i < n_jobs; i++)
      if (jobs[i].pid == pid && !jobs[i].done) {
        ssize_t got = read(jobs[i].pipe, &jobs[i].result, sizeof(job_result));
        if (got != (ssize_t)sizeof(job_result)) {
          memset(&jobs[i].result, 0, sizeof(job_result));
          snprintf(jobs[i].result.error, sizeof(jobs[i].result.error), "the run crashed");
        }
        close(jobs[i].pipe);
        jobs[i].done = 1;
        running--;
        finished++;
        progress(finished, n_jobs, started);
      }
  }

  FILE* csv = csv_path != NULL ? fopen(csv_path, "w") : NULL;
  if (csv_path != NULL && csv == NULL) return dccl_cli_fail("cannot write the CSV file");
  if (csv != NULL) {
    fprintf(csv, "scenario,policy,seed,calls,mean_us,p99_us,x_oracle,x_default,steady_x_oracle,steady_x_default,"
                 "convergence_calls,a1_delay_calls,a1_detected,onsets,a1_false_alarms,rank_mismatches,seconds");
    for (int d = 1; d <= 10; d++) fprintf(csv, ",regret_%d0", d);
    fprintf(csv, "\n");
    for (int i = 0; i < n_jobs; i++) {
      const job_result* r = &jobs[i].result;
      if (!r->ok) continue;
      fprintf(csv, "%s,%s,%d,%llu,%.3f,%.3f,%.5f,%.5f,%.5f,%.5f,%.0f,%.1f,%.0f,%.0f,%.0f,%llu,%.1f",
              scenarios[jobs[i].scenario].name, all_policies[jobs[i].policy], jobs[i].seed, (unsigned long long)r->calls,
              r->mean_us, r->p99_us, r->vs_oracle, r->vs_default, r->steady_vs_oracle, r->steady_vs_default,
              r->convergence_median, r->detection_delay, r->onsets_detected, r->onsets, r->false_alarms,
              (unsigned long long)r->rank_mismatches, r->seconds);
      for (int d = 0; d < 10; d++) fprintf(csv, ",%.5f", r->regret[d]);
      fprintf(csv, "\n");
    }
    fclose(csv);
  }
  int failures = 0;
  for (int i = 0; i < n_jobs; i++)
    if (!jobs[i].result.ok) {
      fprintf(stderr, "dccl eval: %s / %s / seed %d failed: %s\n", scenarios[jobs[i].scenario].name,
              all_policies[jobs[i].policy], jobs[i].seed, jobs[i].result.error);
      failures++;
    }
  for (int s = 0; s < n_scenarios; s++) {
    printf("\n== %s (%s, %s, %s; %lld seed%s) ==\n%s\n", scenarios[s].name, scenarios[s].profile, scenarios[s].workload,
           scenarios[s].conditions, seeds, seeds == 1 ? "" : "s", scenarios[s].description);
    printf("  %-8s %10s %10s %9s %8s %8s %8s %7s %8s %8s %8s %9s %8s %6s\n", "policy", "mean us", "p99 us", "x oracle",
           "x NCCL", "steady", "st NCCL", "conv", "rgt@10%", "rgt@50%", "rgt@100", "A1 delay", "detected", "false");
    for (int p = 0; p < n_policies; p++) {
      int count;
      double mean = average(jobs, n_jobs, s, policies[p], FIELD(mean_us), &count);
      if (count == 0) continue;
      int c2;
      printf("  %-8s %10.1f %10.1f %9.4f %8.4f %8.4f %8.4f %7.0f %8.4f %8.4f %8.4f", all_policies[policies[p]], mean,
             average(jobs, n_jobs, s, policies[p], FIELD(p99_us), &c2),
             average(jobs, n_jobs, s, policies[p], FIELD(vs_oracle), &c2),
             average(jobs, n_jobs, s, policies[p], FIELD(vs_default), &c2),
             average(jobs, n_jobs, s, policies[p], FIELD(steady_vs_oracle), &c2),
             average(jobs, n_jobs, s, policies[p], FIELD(steady_vs_default), &c2),
             average(jobs, n_jobs, s, policies[p], FIELD(convergence_median), &c2),
             average(jobs, n_jobs, s, policies[p], FIELD(regret[0]), &c2),
             average(jobs, n_jobs, s, policies[p], FIELD(regret[4]), &c2),
             average(jobs, n_jobs, s, policies[p], FIELD(regret[9]), &c2));
      double onsets = average(jobs, n_jobs, s, policies[p], FIELD(onsets), &c2);
      double delay = average(jobs, n_jobs, s, policies[p], FIELD(detection_delay), &c2);
      int a1 = strcmp(all_policies[policies[p]], "dqn") == 0 || strcmp(all_policies[policies[p]], "bandit") == 0;
      if (a1 && c2 > 0) printf(" %9.0f", delay);
      else printf(" %9s", "-");
      if (a1) printf(" %4.0f/%-3.0f %6.0f", average(jobs, n_jobs, s, policies[p], FIELD(onsets_detected), &c2), onsets,
                     average(jobs, n_jobs, s, policies[p], FIELD(false_alarms), &c2));
      else printf(" %8s %6s", "-", "-");
      printf("\n");
    }
  }
  printf("\n%d runs in %.0f s (%lld at once)%s\n", n_jobs, dccl_monotonic_seconds() - started, jobs_at_once,
         failures ? "; some failed, see above" : "");
  free(jobs);
  return failures ? 1 : 0;
}
