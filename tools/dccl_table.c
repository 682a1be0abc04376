/* tools/dccl_table.c: `dccl table`: NCCL's cost table, NCCL's choice and the oracle's best action per
 * message size for a simulated profile; can write the oracle's choices as a fixed decision table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../persist/table_text.h"
#include "../sim/sim.h"
#include "cli.h"

static void usage(FILE* out) {
  fprintf(out,
          "usage: dccl table --profile NAME [options]\n"
          "Shows, per power-of-two message size, NCCL's cost table and choice on a simulated profile and the\n"
          "best action the oracle finds, with their true latencies.\n"
          "  --profile NAME        hardware profile (scenarios/profiles/NAME.profile or a path)\n"
          "  --collective C        allreduce, allgather, reducescatter, broadcast, reduce or all (default allreduce)\n"
          "  --min SIZE --max SIZE size range (default 1K to 1G)\n"
          "  --pipeops N           numPipeOps (default 1)\n"
          "  --congestion X        network congestion level in [0,1] (default 0)\n"
          "  --interference X      compute interference level in [0,1] (default 0)\n"
          "  --max-channels N      largest channel count the oracle tries (default 32)\n"
          "  --chunk               let the oracle tune chunk sizes (tuner v6)\n"
          "  --costs               also print NCCL's whole cost table for each size\n"
          "  --by-pair             also print the best true latency of every algorithm/protocol pair\n"
          "  --actions LIST        also print the true latency of each listed action (comma-separated,\n"
          "                        e.g. ring/simple/ch=2,tree/ll/ch=1; '-' when NCCL could not run it)\n"
          "  --write-fixed FILE    write the oracle's choices as a decision table for DYNAMICCL_MODE=fixed\n");
}

static void print_costs(const float* cost) {
  for (int a = 0; a < DCCL_NUM_ALGOS; a++) {
    int any = 0;
    for (int p = 0; p < DCCL_NUM_PROTOS; p++) any |= cost[a * DCCL_NUM_PROTOS + p] >= 0;
    if (!any) continue;
    printf("      %-15s", dccl_algo_name(a));
    for (int p = 0; p < DCCL_NUM_PROTOS; p++) {
      float c = cost[a * DCCL_NUM_PROTOS + p];
      if (c < 0) printf("  %6s=%-10s", dccl_proto_name(p), "-");
      else printf("  %6s=%-10.2f", dccl_proto_name(p), c);
    }
    printf("\n");
  }
}

/* The true latency of an explicit action as NCCL would run it; INFINITY where NCCL's cost table (`cost`)
 * leaves its algorithm/protocol out or it cannot be executed. */
static double true_latency(const dccl_sim* sim, const float* cost, const dccl_call* call, dccl_action action,
                           const dccl_conditions* conditions) {
  int a = dccl_action_algo(action), p = dccl_action_proto(action);
  dccl_execution e;
  if (a < 0 || cost[a * DCCL_NUM_PROTOS + p] < 0 || dccl_sim_execute(sim, call, action, &e) != 0) return INFINITY;
  return dccl_sim_true_us(sim, call, &e, conditions);
}

/* Best true latency of each (algorithm, protocol) over the channel and chunk options. */
static void print_pairs(const dccl_oracle* oracle, const dccl_call* call, const dccl_conditions* conditions) {
  double best[DCCL_NUM_ALGOS][DCCL_NUM_PROTOS];
  for (int a = 0; a < DCCL_NUM_ALGOS; a++)
    for (int p = 0; p < DCCL_NUM_PROTOS; p++) best[a][p] = INFINITY;
  float cost[DCCL_NUM_ALGOS * DCCL_NUM_PROTOS];
  dccl_nccl_cost_table(&oracle->sim->model, call->coll, call->bytes, call->pipe_ops, cost);
  for (int i = 0; i < oracle->n_actions[call->coll]; i++) {
    dccl_action action = oracle->actions[call->coll][i];
    double us = true_latency(oracle->sim, cost, call, action, conditions);
    int a = dccl_action_algo(action), p = dccl_action_proto(action);
    if (us < best[a][p]) best[a][p] = us;
  }
  printf("          ");
  for (int a = 0; a < DCCL_NUM_ALGOS; a++)
    for (int p = 0; p < DCCL_NUM_PROTOS; p++)
      if (isfinite(best[a][p])) printf(" %s/%s=%.1f", dccl_algo_name(a), dccl_proto_name(p), best[a][p]);
  printf("\n");
}

/* The true latency of each listed action, as NCCL would run it; '-' where it cannot. */
static void print_actions(const dccl_sim* sim, const dccl_call* call, const dccl_conditions* conditions, const char* list) {
  char copy[1024];
  snprintf(copy, sizeof(copy), "%s", list);
  float cost[DCCL_NUM_ALGOS * DCCL_NUM_PROTOS];
  dccl_nccl_cost_table(&sim->model, call->coll, call->bytes, call->pipe_ops, cost);
  printf("          ");
  char* save = NULL;
  for (char* name = strtok_r(copy, ",", &save); name != NULL; name = strtok_r(NULL, ",", &save)) {
    dccl_action action;
    double us = dccl_action_parse(name, &action) == 0 ? true_latency(sim, cost, call, action, conditions) : INFINITY;
    if (isfinite(us)) printf(" %s=%.2f", name, us);
    else printf(" %s=-", name);
  }
  printf("\n");
}

int dccl_cli_table(int argc, char** argv) {
  const char *profile_name = NULL, *collective = "allreduce", *write_fixed = NULL, *actions = NULL;
  unsigned long long min_bytes = 1024, max_bytes = 1ULL << 30;
  long long pipe_ops = 1, max_channels = 32;
  double congestion = 0, interference = 0;
  int chunk = 0, costs = 0, by_pair = 0;
  for (int i = 0; i < argc; i++) {
    const char* a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--profile") == 0 && i + 1 < argc) profile_name = argv[++i];
    else if (strcmp(a, "--collective") == 0 && i + 1 < argc) collective = argv[++i];
    else if (strcmp(a, "--min") == 0 && i + 1 < argc) {
      if (dccl_parse_bytes(argv[++i], &min_bytes) != 0 || min_bytes == 0) return dccl_cli_fail("bad --min");
    } else if (strcmp(a, "--max") == 0 && i + 1 < argc) {
      if (dccl_parse_bytes(argv[++i], &max_bytes) != 0) return dccl_cli_fail("bad --max");
    } else if (strcmp(a, "--pipeops") == 0 && i + 1 < argc) {
      if (dccl_cli_int(argv[++i], 1, 1 << 20, &pipe_ops) != 0) return dccl_cli_fail("bad --pipeops");
    } else if (strcmp(a, "--max-channels") == 0 && i + 1 < argc) {
      if (dccl_cli_int(argv[++i], 1, 64, &max_channels) != 0) return dccl_cli_fail("bad --max-channels");
    } else if (strcmp(a, "--congestion") == 0 && i + 1 < argc) {
      if (dccl_cli_level(argv[++i], &congestion) != 0) return dccl_cli_fail("bad --congestion (0..1)");
    } else if (strcmp(a, "--interference") == 0 && i + 1 < argc) {
      if (dccl_cli_level(argv[++i], &interference) != 0) return dccl_cli_fail("bad --interference (0..1)");
    } else if (strcmp(a, "--chunk") == 0) chunk = 1;
    else if (strcmp(a, "--costs") == 0) costs = 1;
    else if (strcmp(a, "--by-pair") == 0) by_pair = 1;
    else if (strcmp(a, "--write-fixed") == 0 && i + 1 < argc) write_fixed = argv[++i];
    else if (strcmp(a, "--actions") == 0 && i + 1 < argc) actions = argv[++i];
    else {
      fprintf(stderr, "dccl table: unknown or incomplete option '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (profile_name == NULL) {
    usage(stderr);
    return 2;
  }
  int first_coll = 0, last_coll = DCCL_NUM_COLLS - 1;
  if (strcmp(collective, "all") != 0) {
    first_coll = last_coll = dccl_coll_parse(collective);
    if (first_coll < 0) return dccl_cli_fail("unknown --collective");
  }
  char error[512];
  dccl_profile profile;
  if (dccl_profile_find(profile_name, &profile, error, sizeof(error)) != 0) return dccl_cli_fail(error);
  static dccl_sim sim;
  if (dccl_sim_init(&sim, &profile, NULL, 1, 1, error, sizeof(error)) != 0) return dccl_cli_fail(error);
  dccl_action_space_options options = {.max_channels = (int)max_channels, .tune_chunk = chunk};
  dccl_oracle oracle;
  if (dccl_oracle_init(&oracle, &sim, &options) != 0) return dccl_cli_fail("out of memory");
  dccl_conditions conditions = {congestion, interference};
  dccl_table* fixed = write_fixed ? calloc(1, sizeof(dccl_table)) : NULL;

  printf("profile %s: %s (%d ranks on %d nodes); congestion %.2f, interference %.2f\n", profile.name,
         profile.description, profile.n_ranks, profile.n_nodes, congestion, interference);
  for (int coll = first_coll; coll <= last_coll; coll++) {
    printf("\n%s\n%8s  %-28s %10s  %-28s %10s  %9s\n", dccl_coll_name(coll), "size", "NCCL's choice", "NCCL us",
           "best action", "best us", "NCCL/best");
    for (unsigned long long bytes = min_bytes; bytes <= max_bytes; bytes *= 2) {
      dccl_call call = {.coll = coll, .bytes = (size_t)bytes, .pipe_ops = (int)pipe_ops};
      dccl_oracle_answer answer;
      dccl_oracle_query(&oracle, &call, &conditions, &answer);
      char size[32], nccl_text[64], best_text[96];
      dccl_format_bytes(bytes, size, sizeof(size));
      const dccl_execution* d = &answer.default_execution;
      snprintf(nccl_text, sizeof(nccl_text), "%s/%s/ch=%d/chunk=%zu", dccl_algo_name(d->algo), dccl_proto_name(d->proto),
               d->channels, d->chunk);
      if (answer.best == DCCL_ACTION_NCCL) snprintf(best_text, sizeof(best_text), "(NCCL's)");
      else dccl_action_format(answer.best, best_text, sizeof(best_text));
      printf("%8s  %-28s %10.2f  %-28s %10.2f  %9.3f\n", size, nccl_text, answer.default_us, best_text, answer.best_us,
             answer.default_us / answer.best_us);
      if (costs) {
        float cost[DCCL_NUM_ALGOS * DCCL_NUM_PROTOS];
        dccl_nccl_cost_table(&sim.model, coll, (size_t)bytes, (int)pipe_ops, cost);
        print_costs(cost);
      }
      if (by_pair) print_pairs(&oracle, &call, &conditions);
      if (actions != NULL) print_actions(&sim, &call, &conditions, actions);
      if (fixed != NULL) {
        int bin = dccl_size_bin((size_t)bytes);
        dccl_table_set_range(fixed, coll, bin, bin, answer.best);
        if (bytes == min_bytes && bin > 0) dccl_table_set_range(fixed, coll, 0, bin - 1, answer.best);
        if (bytes * 2 > max_bytes) dccl_table_set_range(fixed, coll, bin + 1, DCCL_SIZE_BINS - 1, answer.best);
      }
      if (bytes > max_bytes / 2) break;
    }
  }
  int rc = 0;
  if (fixed != NULL) {
    if (dccl_table_text_save(write_fixed, fixed, error, sizeof(error)) != 0) rc = dccl_cli_fail(error);
    else printf("\nwrote the oracle's choices to %s\n", write_fixed);
    free(fixed);
  }
  dccl_oracle_free(&oracle);
  dccl_sim_free(&sim);
  return rc;
}
