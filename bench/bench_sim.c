/* bench/bench_sim.c: simulator throughput on one core: simulated calls per second, each call being
 * NCCL's cost table, NCCL's selection and chunking, the true latency under the conditions of that
 * call, and a noisy measurement. Reports the median of 5 timed rounds per profile, and the oracle's
 * query rate with its cache.   Usage: bench_sim [calls-per-round]   (default 1000000) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/clock.h"
#include "../core/sorting.h"
#include "../sim/sim.h"

int main(int argc, char** argv) {
  long calls = argc > 1 ? atol(argv[1]) : 1000000;
  if (calls < 1000) calls = 1000;
  const char* profiles[] = {"nvlink-h100x8", "h100-4x8-ib", "roce-16x1"};
  char error[512];
  dccl_schedule schedule;
  if (dccl_schedule_parse("congestion onoff level=0.7 on=3000 off=12000\ninterference constant level=0.3\n", "bench",
                          &schedule, error, sizeof(error)) != 0) {
    fprintf(stderr, "%s\n", error);
    return 1;
  }
  printf("DynamICCL simulator throughput, one core, %ld calls per round, median of 5 rounds\n", calls);
  double checksum = 0;
  for (size_t p = 0; p < sizeof(profiles) / sizeof(profiles[0]); p++) {
    dccl_profile profile;
    static dccl_sim sim;
    if (dccl_profile_find(profiles[p], &profile, error, sizeof(error)) != 0 ||
        dccl_sim_init(&sim, &profile, &schedule, 1, (uint64_t)calls, error, sizeof(error)) != 0) {
      fprintf(stderr, "%s\n", error);
      return 1;
    }
    double rates[5];
    for (int round = 0; round < 5; round++) {
      size_t hint = 0;
      double start = dccl_monotonic_seconds();
      for (long i = 0; i < calls; i++) {
        dccl_call call = {.index = (uint64_t)i, .coll = (int)(i % 5), .bytes = (size_t)1 << (10 + i % 21), .pipe_ops = 1};
        dccl_conditions c;
        dccl_sim_conditions(&sim, call.index, &hint, &c);
        dccl_execution e;
        dccl_sim_execute(&sim, &call, DCCL_ACTION_NCCL, &e);
        double us = dccl_sim_true_us(&sim, &call, &e, &c);
        checksum += dccl_sim_measure(&sim, call.coll, (double)call.bytes, us, &c, call.index, 0);
      }
      rates[round] = calls / (dccl_monotonic_seconds() - start);
    }
    dccl_sort_doubles(rates, 5);
    printf("  %-22s %8.2f million simulated calls per second\n", profiles[p], rates[2] / 1e6);

    dccl_action_space_options options = {.max_channels = 32, .tune_chunk = 1};
    dccl_oracle oracle;
    dccl_oracle_init(&oracle, &sim, &options);
    size_t hint = 0;
    double start = dccl_monotonic_seconds();
    long queries = calls / 10;
    for (long i = 0; i < queries; i++) {
      dccl_call call = {.index = (uint64_t)i, .coll = (int)(i % 5), .bytes = (size_t)1 << (10 + i % 21), .pipe_ops = 1};
      dccl_conditions c;
      dccl_sim_conditions(&sim, call.index * 10, &hint, &c);
      dccl_oracle_answer a;
      dccl_oracle_query(&oracle, &call, &c, &a);
      checksum += a.best_us;
    }
    printf("  %-22s %8.2f million oracle queries per second (%.1f%% cache hits)\n", "", queries / (dccl_monotonic_seconds() - start) / 1e6,
           100.0 * (double)oracle.hits / (double)(oracle.hits + oracle.misses));
    dccl_oracle_free(&oracle);
    dccl_sim_free(&sim);
  }
  printf("  (checksum %.6g)\n", checksum);
  return 0;
}
