/* emu/plugin_loader.c: dlopen and ABI symbol resolution in NCCL's order. */
#include "plugin_loader.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int dccl_nccl_release_abis(const char* release, int* max_tuner, int* max_profiler) {
  static const struct {
    const char* release;
    int tuner, profiler;
  } releases[] = {{"2.21", 2, 0}, {"2.22", 3, 0}, {"2.23", 3, 1}, {"2.24", 4, 2}, {"2.25", 4, 3},
                  {"2.26", 4, 3}, {"2.27", 4, 4}, {"2.28", 5, 5}, {"2.29", 5, 6}, {"2.30", 6, 6}};
  for (size_t i = 0; i < sizeof(releases) / sizeof(releases[0]); i++)
    if (strcmp(release, releases[i].release) == 0) {
      *max_tuner = releases[i].tuner;
      *max_profiler = releases[i].profiler;
      return 0;
    }
  return -1;
}

int dccl_plugin_load(const char* path, int max_tuner, int max_profiler, dccl_loaded_plugin* out, char* error,
                     size_t error_size) {
  memset(out, 0, sizeof(*out));
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    snprintf(error, error_size, "cannot load %s: %s", path, dlerror());
    return -1;
  }
  /* Every version the library exports, then the newest the emulated NCCL knows (as for a builtin). */
  dccl_builtin_plugin symbols;
  char symbol[64];
  for (int v = 0; v < 7; v++) {
    snprintf(symbol, sizeof(symbol), "ncclTunerPlugin_v%d", v);
    symbols.tuner[v] = v >= 2 ? dlsym(library, symbol) : NULL;
    snprintf(symbol, sizeof(symbol), "ncclProfiler_v%d", v);
    symbols.profiler[v] = v >= 4 ? dlsym(library, symbol) : NULL;
  }
  dccl_plugin_builtin(&symbols, max_tuner, max_profiler, out);
  out->library = library;
  return 0;
}

void dccl_plugin_unload(dccl_loaded_plugin* plugin) {
  if (plugin->library != NULL) dlclose(plugin->library);
  memset(plugin, 0, sizeof(*plugin));
}

/* Only v4+ profiler ABIs carry GPU timestamps; the emulator speaks v4-v6. */
void dccl_plugin_builtin(const dccl_builtin_plugin* builtin, int max_tuner, int max_profiler, dccl_loaded_plugin* out) {
  memset(out, 0, sizeof(*out));
  for (int v = max_tuner < 6 ? max_tuner : 6; v >= 2 && out->tuner == NULL; v--)
    if (builtin->tuner[v] != NULL) {
      out->tuner = builtin->tuner[v];
      out->tuner_version = v;
    }
  for (int v = max_profiler < 6 ? max_profiler : 6; v >= 4 && out->profiler == NULL; v--)
    if (builtin->profiler[v] != NULL) {
      out->profiler = builtin->profiler[v];
      out->profiler_version = v;
    }
}
