/* emu/plugin_loader.h: loads a plugin library the way NCCL does: dlopen(RTLD_NOW | RTLD_LOCAL), then
 * the newest tuner symbol the emulated NCCL knows (ncclTunerPlugin_v6 ... _v2) and the newest profiler
 * symbol (ncclProfiler_v6 ... _v4; DynamICCL exports no older profiler ABI). */
#ifndef DYNAMICCL_EMU_PLUGIN_LOADER_H
#define DYNAMICCL_EMU_PLUGIN_LOADER_H

#include <stddef.h>

typedef struct dccl_loaded_plugin {
  void* library;
  int tuner_version;    /* 0: no tuner found */
  int profiler_version; /* 0: no profiler found */
  const void* tuner;    /* points to an ncclTuner_v<tuner_version>_t */
  const void* profiler; /* points to an ncclProfiler_v<profiler_version>_t */
} dccl_loaded_plugin;

/* NCCL release -> newest tuner and profiler ABI it loads ("2.27" -> 4, 4; "2.30" -> 6, 6).
 * Returns 0, or -1 for an unknown release. */
int dccl_nccl_release_abis(const char* release, int* max_tuner, int* max_profiler);

/* max_tuner / max_profiler: newest ABI the emulated NCCL knows (0: do not look for that half). */
int dccl_plugin_load(const char* path, int max_tuner, int max_profiler, dccl_loaded_plugin* out, char* error,
                     size_t error_size);
void dccl_plugin_unload(dccl_loaded_plugin* plugin);

/* A plugin linked into the program: its ABI structs by version (NULL where it has none). */
typedef struct dccl_builtin_plugin {
  const void* tuner[7];    /* [v] points to an ncclTuner_v<v>_t */
  const void* profiler[7]; /* [v] points to an ncclProfiler_v<v>_t */
} dccl_builtin_plugin;

/* Resolves a builtin plugin the way dccl_plugin_load resolves a library (newest known version). */
void dccl_plugin_builtin(const dccl_builtin_plugin* builtin, int max_tuner, int max_profiler, dccl_loaded_plugin* out);

#endif
