/* tools/cli.h: shared helpers of the dccl command-line tool and its subcommand entry points. */
#ifndef DYNAMICCL_TOOLS_CLI_H
#define DYNAMICCL_TOOLS_CLI_H

int dccl_cli_table(int argc, char** argv);
int dccl_cli_run(int argc, char** argv);
int dccl_cli_train(int argc, char** argv);
int dccl_cli_inspect(int argc, char** argv);
int dccl_cli_eval(int argc, char** argv);

/* Prints "dccl: <message>" on stderr and returns 1. */
int dccl_cli_fail(const char* message);
int dccl_cli_int(const char* text, long long low, long long high, long long* out);
int dccl_cli_level(const char* text, double* out);

#endif
