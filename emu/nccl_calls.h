/* emu/nccl_calls.h: how NCCL calls each tuner and profiler ABI version. These wrappers reproduce
 * NCCL's per-version adapters (src/plugin/tuner/tuner_v*.cc, profiler_v*.cc): argument order, the
 * v2 tuner's algorithm/protocol outputs and NCCL's handling of them, descriptor layouts. */
#ifndef DYNAMICCL_EMU_NCCL_CALLS_H
#define DYNAMICCL_EMU_NCCL_CALLS_H

#include <stddef.h>
#include <stdint.h>

#include "../abi/nccl_abi.h"
#include "plugin_loader.h"

/* Tuner. Init order and arguments as NCCL passes them; returns the plugin's result code. */
int dccl_emu_tuner_init(const dccl_loaded_plugin* plugin, void** context, uint64_t comm_id, int n_ranks, int n_nodes,
                        ncclDebugLogger_t logger);
/* getCollInfo on NCCL's cost table (float[7][3]); for v2, NCCL's shim: derive the collNet/NVLS
 * support flags from the table and zero the returned pair's entry if it is not ignored. */
void dccl_emu_tuner_get_coll_info(const dccl_loaded_plugin* plugin, void* context, int coll, size_t bytes,
                                  int num_pipe_ops, int reg_buff, float* cost, int* n_channels);
/* getChunkSize when the plugin has it (v6 with a non-NULL function); returns 1 when called. */
int dccl_emu_tuner_chunk_size(const dccl_loaded_plugin* plugin, void* context, int coll, size_t bytes, int algo,
                              int proto, int channels, size_t* chunk);
void dccl_emu_tuner_finalize(const dccl_loaded_plugin* plugin, void* context);

/* Profiler. */
int dccl_emu_profiler_init(const dccl_loaded_plugin* plugin, void** context, uint64_t comm_id, int* activation_mask,
                           int n_nodes, int n_ranks, int rank, ncclDebugLogger_t logger);
/* A Coll event; `parent` is the call's CollApi handle (v5, v6; NCCL passes it in parentObj). */
void* dccl_emu_profiler_coll_start(const dccl_loaded_plugin* plugin, void* context, int rank, void* parent, uint64_t seq,
                                   int coll, size_t count, const char* datatype, int channels, int algo, int proto);
/* The CollApi event NCCL 2.28+ starts when a collective is enqueued (profiler v5, v6; NULL for v4),
 * graphCaptured set while the stream is being captured into a CUDA graph. */
void* dccl_emu_profiler_coll_api_start(const dccl_loaded_plugin* plugin, void* context, int rank, int coll,
                                       size_t count, const char* datatype, int graph_captured);
void* dccl_emu_profiler_channel_start(const dccl_loaded_plugin* plugin, void* context, int rank, void* parent,
                                      int channel, uint64_t gpu_start_ns);
/* recordEventState(KernelChStop, stop stamp) then stopEvent, as NCCL's proxy does. */
void dccl_emu_profiler_channel_stop(const dccl_loaded_plugin* plugin, void* handle, uint64_t gpu_stop_ns);
void dccl_emu_profiler_stop(const dccl_loaded_plugin* plugin, void* handle);
void dccl_emu_profiler_finalize(const dccl_loaded_plugin* plugin, void* context);

/* NCCL's names for collectives, algorithms and protocols as the profiler sees them. */
const char* dccl_emu_nccl_func_name(int coll);
const char* dccl_emu_nccl_algo_name(int algo);
const char* dccl_emu_nccl_proto_name(int proto);

#endif
