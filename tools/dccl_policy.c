/* tools/dccl_policy.c: `dccl train` (offline pretraining on the simulator) and `dccl inspect` (what a
 * saved policy would pick per collective and size). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../agents/config_agent.h"
#include "../persist/policy_file.h"
#include "cli.h"

static void train_usage(FILE* out) {
  fprintf(out,
          "usage: dccl train --profile NAME --workload NAME [--conditions NAME] --out FILE [options]\n"
          "Trains DynamICCL's agents on the simulated cluster, far faster than real time (one emulated\n"
          "rank, the plugin linked in and run synchronously), and saves the policy to FILE. An existing\n"
          "FILE for the same topology is the starting point (training continues); one that is no policy,\n"
          "a damaged one or one of an older format is reported and kept as FILE.rejected; another\n"
          "topology's policy, a newer format's or one that cannot be read (permissions) is reported and\n"
          "left alone, nothing is saved, and the exit status is 1.\n"
          "  --scenario P,W[,C]    profile, workload and conditions in one argument\n"
          "  --calls N             calls to train on (default: the whole workload)\n"
          "  --seed S              simulator seed (default 1)\n"
          "  --nccl RELEASE        NCCL release whose ABIs to emulate (default 2.30; chunk sizes need 2.30)\n"
          "  --quiet               no summary\n"
          "The policy applies to jobs of the same shape (ranks, nodes, channel limit, ABI): point\n"
          "DYNAMICCL_POLICY_FILE at it, or copy it into DYNAMICCL_POLICY_DIR under the name the plugin logs.\n");
}

int dccl_cli_train(int argc, char** argv) {
  const char* out = NULL;
  char* args[64];
  int n = 0, quiet = 0;
  char scenario_copy[512];
  args[n++] = "--policy";
  args[n++] = "learn";
  args[n++] = "--ranks";
  args[n++] = "1";
  args[n++] = "--steady";
  args[n++] = "0.25";
  for (int i = 0; i < argc; i++) {
    const char* a = argv[i];
    int more = i + 1 < argc;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      train_usage(stdout);
      return 0;
    } else if (strcmp(a, "--out") == 0 && more) {
      out = argv[++i];
    } else if (strcmp(a, "--quiet") == 0) {
      quiet = 1;
    } else if (strcmp(a, "--scenario") == 0 && more) {
      snprintf(scenario_copy, sizeof(scenario_copy), "%s", argv[++i]);
      char* profile = strtok(scenario_copy, ",");
      char* workload = strtok(NULL, ",");
      char* conditions = strtok(NULL, ",");
      if (profile == NULL || workload == NULL) return dccl_cli_fail("--scenario wants PROFILE,WORKLOAD[,CONDITIONS]");
      args[n++] = "--profile";
      args[n++] = profile;
      args[n++] = "--workload";
      args[n++] = workload;
      if (conditions != NULL) {
        args[n++] = "--conditions";
        args[n++] = conditions;
      }
    } else if ((strcmp(a, "--profile") == 0 || strcmp(a, "--workload") == 0 || strcmp(a, "--conditions") == 0 ||
                strcmp(a, "--calls") == 0 || strcmp(a, "--seed") == 0 || strcmp(a, "--nccl") == 0) &&
               more && n + 2 < 60) {
      args[n++] = argv[i];
      args[n++] = argv[++i];
    } else {
      fprintf(stderr, "dccl train: unknown or incomplete option '%s'\n", a);
      train_usage(stderr);
      return 2;
    }
  }
  if (out == NULL) {
    train_usage(stderr);
    return 2;
  }
  args[n++] = "--policy-file";
  args[n++] = (char*)out;
  setenv("DYNAMICCL_SAVE_SECONDS", "0", 1);
  if (quiet) args[n++] = "--quiet";
  /* The save replaces the file (a new one, renamed over it): the same file after the run means that
   * nothing was saved, which the plugin said why. */
  struct stat before, after;
  int existed = stat(out, &before) == 0;
  int rc = dccl_cli_run(n, args);
  if (rc == 0 && (stat(out, &after) != 0 || (existed && after.st_ino == before.st_ino && after.st_dev == before.st_dev &&
                                              after.st_mtim.tv_sec == before.st_mtim.tv_sec &&
                                              after.st_mtim.tv_nsec == before.st_mtim.tv_nsec))) {
    fprintf(stderr, "dccl train: no policy was saved to %s (the warning above says why)\n", out);
    return 1;
  }
  return rc;
}

static void inspect_usage(FILE* out) {
  fprintf(out,
          "usage: dccl inspect POLICY_FILE [--all] [--arms COLLECTIVE:SIZE]\n"
          "Checks a saved policy and prints, per collective and message size, the action it would pick\n"
          "(frozen mode: no exploration) with the evidence behind it: samples and the measured speed-up\n"
          "over NCCL's own choice. --all also lists cells where it keeps NCCL's choice; --arms lists every\n"
          "action measured in the cells of one collective and size (e.g. --arms allreduce:1M); with --all\n"
          "also the runnable actions never measured there, with the DQN's prediction.\n");
}

/* Every measured action of the cells of one collective and size (`untried`: also the runnable actions
 * never measured there, with the DQN's prediction). */
static void print_arms(dccl_config_agent* agent, const char* which, int untried) {
  char name[64];
  snprintf(name, sizeof(name), "%s", which);
  char* colon = strchr(name, ':');
  unsigned long long bytes = 0;
  int coll = -1;
  if (colon != NULL) {
    *colon = '\0';
    coll = dccl_coll_parse(name);
    if (dccl_parse_bytes(colon + 1, &bytes) != 0) coll = -1;
  }
  if (coll < 0 || bytes == 0) {
    fprintf(stderr, "dccl inspect: --arms wants COLLECTIVE:SIZE, e.g. allreduce:1M\n");
    return;
  }
  for (int pipe = 0; pipe < DCCL_PIPE_BUCKETS; pipe++)
    for (int reg = 0; reg < DCCL_REG_STATES; reg++) {
      dccl_agent_cell* c = dccl_agent_cell_slot(agent, dccl_cell_index(coll, dccl_size_bin(bytes), pipe, reg), 0);
      if (c == NULL) continue;
      for (int context = 0; context < DCCL_AGENT_CONTEXTS; context++) {
        const dccl_arm* nccl = &c->nccl[context];
        if (nccl->count < 1) continue;
        printf("\n  %s %s pipe %d reg %d, %s context: NCCL's choice %.0f samples, mean %.2f us", name, colon + 1, pipe,
               reg, context ? "congested" : "calm", nccl->count, exp(nccl->mean));
        if (c->channel_cap > 0) printf("; NCCL runs requests for more than %d channels on %d", c->channel_cap, c->channel_cap);
        printf("\n    %-32s %8s %10s %8s %10s %10s %7s\n", "action", "samples", "mean us", "sd %", "vs NCCL", "DQN says",
               "ran on");
        static float predicted[4096];
        float state[DCCL_STATE_FEATURES];
        dccl_dynamic_state calm = c->dynamic;
        calm.trigger_state = context ? DCCL_TRIGGER_CONGESTED : DCCL_TRIGGER_NONE;
        dccl_state_features(state, &c->info, &calm);
        int n = agent->n_actions[coll] < 4096 ? agent->n_actions[coll] : 4096;
        dccl_q_evaluate(&agent->q, state, agent->action_features[coll], n, predicted);
        for (int i = 0; i < agent->n_actions[coll]; i++) {
          const dccl_arm* a = &c->arms[(size_t)context * agent->max_actions + i];
          int measured = a->count >= 0.5f;
          if (!measured && !a->invalid && !(untried && dccl_agent_arm_runnable(agent, a, coll, i))) continue;
          char text[96];
          dccl_action_format(agent->actions[coll][i], text, sizeof(text));
          const char* note = a->invalid ? " (invalid)" : measured ? "" : " (untried)";
          double dqn = i < n ? exp(predicted[i]) : 0.0;
          char ran[16] = "-"; /* the channels NCCL last ran it on, where known */
          if (a->channels_ran > 0) snprintf(ran, sizeof(ran), "%d ch", a->channels_ran);
          if (!measured) {
            printf("    %-32s %8s %10s %8s %10s %9.3fx %7s%s\n", text, "-", "-", "-", "-", dqn, ran, note);
            continue;
          }
          double sd = a->count >= 2 ? sqrt(a->m2 / (a->count - 1)) : 0;
          printf("    %-32s %8.1f %10.2f %8.2f %9.3fx %9.3fx %7s%s\n", text, a->count, exp(a->mean), 100 * sd,
                 exp(nccl->mean - a->mean), dqn, ran, note);
        }
      }
    }
}

int dccl_cli_inspect(int argc, char** argv) {
  const char* path = NULL;
  const char* arms = NULL;
  int all = 0;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      inspect_usage(stdout);
      return 0;
    } else if (strcmp(argv[i], "--all") == 0) {
      all = 1;
    } else if (strcmp(argv[i], "--arms") == 0 && i + 1 < argc) {
      arms = argv[++i];
    } else if (path == NULL && argv[i][0] != '-') {
      path = argv[i];
    } else {
      inspect_usage(stderr);
      return 2;
    }
  }
  if (path == NULL) {
    inspect_usage(stderr);
    return 2;
  }
  char error[512];
  dccl_policy_meta meta;
  if (dccl_policy_load(path, 0, &meta, NULL, NULL, NULL, error, sizeof(error)) != 0) return dccl_cli_fail(error);
  dccl_agent_options options;
  dccl_agent_default_options(&options);
  options.learning = 0;
  options.n_ranks = (int)meta.n_ranks;
  options.n_nodes = (int)meta.n_nodes;
  options.space.max_channels = (int)meta.max_channels;
  options.space.tune_chunk = (int)meta.tune_chunk;
  static dccl_config_agent agent;
  if (dccl_agent_init(&agent, &options) != 0) return dccl_cli_fail("out of memory");
  if (dccl_policy_load(path, meta.fingerprint, &meta, &agent, NULL, NULL, error, sizeof(error)) != 0) {
    dccl_agent_free(&agent);
    return dccl_cli_fail(error);
  }
  printf("policy %s: format v%u, fingerprint %016llx, %u ranks on %u nodes, channels up to %u, chunk sizes %s,\n"
         "learned from %llu measurements; leftover estimates of %u cells\n\n",
         path, meta.version, (unsigned long long)meta.fingerprint, meta.n_ranks, meta.n_nodes, meta.max_channels,
         meta.tune_chunk ? "tuned" : "NCCL's", (unsigned long long)meta.observations, meta.leftover_cells);
  static dccl_table table;
  dccl_table_fill(&table, DCCL_ACTION_NCCL);
  dccl_agent_exploit_table(&agent, &table);
  printf("  %-14s %8s %5s %4s  %-32s %8s %8s %10s\n", "collective", "bytes", "pipe", "reg", "action", "samples",
         "tried", "vs NCCL");
  int shown = 0;
  for (int cell = 0; cell < DCCL_TABLE_CELLS; cell++) {
    dccl_agent_cell* c = dccl_agent_cell_slot(&agent, cell, 0);
    if (c == NULL) continue;
    dccl_action action = dccl_table_get(&table, cell);
    if (dccl_action_is_nccl(action) && !all) continue;
    int coll, bin, pipe, reg;
    dccl_cell_decode(cell, &coll, &bin, &pipe, &reg);
    char size[32], text[96];
    dccl_format_bytes(1ULL << bin, size, sizeof(size));
    dccl_action_format(action, text, sizeof(text));
    int context = c->context, tried = 0;
    double samples = c->nccl[context].count, speedup = 1.0;
    for (int i = 0; i < agent.n_actions[coll]; i++) {
      const dccl_arm* a = &c->arms[(size_t)context * agent.max_actions + i];
      if (a->count >= 1) tried++;
      if (agent.actions[coll][i] == action) {
        samples = a->count;
        speedup = exp(c->nccl[context].mean - a->mean);
      }
    }
    printf("  %-14s %8s %5d %4d  %-32s %8.0f %8d %9.3fx\n", dccl_coll_name(coll), size, pipe, reg, text, samples, tried,
           speedup);
    shown++;
  }
  if (shown == 0) printf("  (no cell where the policy departs from NCCL's choice)\n");
  if (arms != NULL) print_arms(&agent, arms, all);
  printf("\n  'vs NCCL' = NCCL's measured latency / the action's (> 1: faster than NCCL), geometric means;\n"
         "  'tried' = actions measured in that cell.\n");
  dccl_agent_free(&agent);
  return 0;
}
