/* bench/gpu/mock/mock_plugins.h: the tuner and profiler plugins as NCCL 2.28 hosts them, per communicator:
 * loaded from NCCL_TUNER_PLUGIN and NCCL_PROFILER_PLUGIN (a path, or NAME for libnccl-tuner-NAME.so /
 * libnccl-profiler-NAME.so) with the emulator's loader (emu/plugin_loader.c), initialised profiler first,
 * then tuner, on the thread that creates the communicator; asked for every collective with a cost table
 * (getCollInfo, emu/nccl_calls.c), whose choice NCCL runs; told what ran and when (Coll start and stop,
 * then per channel KernelCh start, KernelChStop state with the GPU stamp, KernelCh stop); finalised with
 * the communicator, tuner first. */
#ifndef DYNAMICCL_MOCK_PLUGINS_H
#define DYNAMICCL_MOCK_PLUGINS_H

#include <stddef.h>
#include <stdint.h>

#include "../../../emu/plugin_loader.h"
#include "mock_model.h"

typedef struct mock_plugins {
  dccl_loaded_plugin tuner, profiler;
  void* tuner_context;
  void* profiler_context;
  int collective_events, kernel_events; /* what the profiler asked for */
  int rank;
  int one_rank_per_node; /* (PAT needs it) */
  uint64_t seq[5]; /* per collective kind, NCCL's sequence numbers */
} mock_plugins;

void mock_plugins_init(mock_plugins* plugins, uint64_t comm_id, int n_ranks, int n_nodes, int rank);
/* What NCCL runs for one collective of `bytes` (all ranks' total): the cost table, the tuner's say on
 * it, NCCL's selection. Returns 0, or -1 when nothing is left to run. */
int mock_plugins_choose(mock_plugins* plugins, ncclFunc_t func, size_t bytes, mock_execution* out);
/* The profiler's Coll event for a collective about to run (count: the API call's element count); returns
 * its handle for mock_plugins_ran, or NULL. */
void* mock_plugins_collective(mock_plugins* plugins, ncclFunc_t func, size_t count, const mock_execution* e);
/* Its kernel's channels ran from gpu_start_ns to gpu_stop_ns (the mock GPU's clock). */
void mock_plugins_ran(mock_plugins* plugins, void* collective, const mock_execution* e, uint64_t gpu_start_ns,
                      uint64_t gpu_stop_ns);
void mock_plugins_finalize(mock_plugins* plugins);

#endif
