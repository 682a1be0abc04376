/* sim/workload.h: a workload is the sequence of collectives a job issues, read from a file under
 * scenarios/workloads/ (format in scenarios/README.md):
 *   <collective> <size> [x<count>] [gap=<duration>] [pause=<duration>] [pipeops=<n>] [regbuff=0|1]
 *   sweep <collective> <min> <max> [x<count>] [gap=<duration>] [pause=<duration>] [pipeops=<n>] [regbuff=0|1]
 *   repeat <iterations>
 * Sizes take K/M/G suffixes; a sweep issues every power of two from min to max; `gap` is the compute
 * time before each call; `pause` is the application's wait for its stream before the line's first call
 * (each size's, in a sweep) and the host work after it (collbench's check of the last size's results);
 * `repeat` runs the whole list that many times. */
#ifndef DYNAMICCL_SIM_WORKLOAD_H
#define DYNAMICCL_SIM_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#define DCCL_WORKLOAD_MAX_OPS 4096

typedef struct dccl_workload_op {
  int coll;
  size_t bytes;
  uint64_t count;
  double gap_us;
  double pause_us;
  int pipe_ops;
  int reg_buff;
} dccl_workload_op;

typedef struct dccl_workload {
  char name[64];
  dccl_workload_op* ops;
  int n_ops;
  uint64_t iterations;
  uint64_t calls_per_iteration;
} dccl_workload;

/* One call of the workload. */
typedef struct dccl_call {
  uint64_t index; /* 0-based call number of the communicator */
  int coll;
  size_t bytes;
  double gap_us;
  int pipe_ops;
  int reg_buff;
  double pause_us; /* > 0: the stream drained and the host paused this long before the call (`pause`) */
  uint64_t run_start; /* index of the first call of its run: the consecutive calls of this collective and size */
} dccl_call;

typedef struct dccl_workload_cursor {
  const dccl_workload* workload;
  int op;
  uint64_t within_op, iteration, call, limit;
  dccl_call previous; /* the last call given (when `call` > 0) */
} dccl_workload_cursor;

int dccl_workload_parse(const char* text, const char* source, dccl_workload* out, char* error, size_t error_size);
int dccl_workload_find(const char* name_or_path, dccl_workload* out, char* error, size_t error_size);
void dccl_workload_free(dccl_workload* workload);
uint64_t dccl_workload_total_calls(const dccl_workload* workload);

/* The first call of the run that `call` belongs to, `previous` the call right before it (NULL: none): the
 * consecutive calls of one collective and size make a run. */
uint64_t dccl_call_run_start(const dccl_call* previous, const dccl_call* call);

/* Iterates the calls; `limit` caps the number of calls (0: the whole workload). */
void dccl_workload_start(dccl_workload_cursor* cursor, const dccl_workload* workload, uint64_t limit);
int dccl_workload_next(dccl_workload_cursor* cursor, dccl_call* out);

#endif
