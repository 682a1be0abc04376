/* abi/builtin.h: the plugin's exported ABI structs, for programs that link the plugin statically
 * (the dccl tool, tests, benches) instead of dlopen()ing the shared library. */
#ifndef DYNAMICCL_ABI_BUILTIN_H
#define DYNAMICCL_ABI_BUILTIN_H

/* Fills tuner[v] with &ncclTunerPlugin_v<v> (v = 2..6) and profiler[v] with &ncclProfiler_v<v>
 * (v = 4..6); other entries are NULL. */
void dccl_builtin_abi(const void* tuner[7], const void* profiler[7]);

#endif
