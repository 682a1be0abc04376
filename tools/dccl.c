/* tools/dccl.c: the dccl command: dispatches to its subcommands (run, table, train, inspect, eval). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sim/keyvalue.h"
#include "cli.h"

int dccl_cli_fail(const char* message) {
  fprintf(stderr, "dccl: %s\n", message);
  return 1;
}

int dccl_cli_int(const char* text, long long low, long long high, long long* out) {
  return dccl_parse_int(text, low, high, out);
}

int dccl_cli_level(const char* text, double* out) {
  return dccl_parse_double(text, out) == 0 && *out >= 0 && *out <= 1 ? 0 : -1;
}

static void usage(FILE* out) {
  fprintf(out,
          "usage: dccl <command> [options]     (dccl <command> --help for its options)\n"
          "DynamICCL's tool for the simulated cluster.\n"
          "commands:\n"
          "  run     emulate NCCL driving the plugin on a scenario and summarise latencies against\n"
          "          NCCL's default and the oracle\n"
          "  table   show NCCL's cost table, NCCL's choice and the best action per message size\n"
          "  train   train the agents on a simulated scenario and save the policy\n"
          "  eval    run several policies over several scenarios and seeds, side by side\n"
          "  inspect print what a saved policy picks per collective and message size\n");
}

int main(int argc, char** argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (strcmp(argv[1], "table") == 0) return dccl_cli_table(argc - 2, argv + 2);
  if (strcmp(argv[1], "run") == 0) return dccl_cli_run(argc - 2, argv + 2);
  if (strcmp(argv[1], "train") == 0) return dccl_cli_train(argc - 2, argv + 2);
  if (strcmp(argv[1], "eval") == 0) return dccl_cli_eval(argc - 2, argv + 2);
  if (strcmp(argv[1], "inspect") == 0) return dccl_cli_inspect(argc - 2, argv + 2);
  fprintf(stderr, "dccl: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return 2;
}
