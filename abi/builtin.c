/* abi/builtin.c: hands out the plugin's ABI structs to statically linked programs. */
#include "builtin.h"

#include <stddef.h>

#include "nccl_profiler_abi.h"
#include "nccl_tuner_abi.h"

extern const ncclTuner_v2_t ncclTunerPlugin_v2;
extern const ncclTuner_v3_t ncclTunerPlugin_v3;
extern const ncclTuner_v4_t ncclTunerPlugin_v4;
extern const ncclTuner_v5_t ncclTunerPlugin_v5;
extern const ncclTuner_v6_t ncclTunerPlugin_v6;
extern const ncclProfiler_v4_t ncclProfiler_v4;
extern const ncclProfiler_v5_t ncclProfiler_v5;
extern const ncclProfiler_v6_t ncclProfiler_v6;

void dccl_builtin_abi(const void* tuner[7], const void* profiler[7]) {
  for (int v = 0; v < 7; v++) tuner[v] = profiler[v] = NULL;
  tuner[2] = &ncclTunerPlugin_v2;
  tuner[3] = &ncclTunerPlugin_v3;
  tuner[4] = &ncclTunerPlugin_v4;
  tuner[5] = &ncclTunerPlugin_v5;
  tuner[6] = &ncclTunerPlugin_v6;
  profiler[4] = &ncclProfiler_v4;
  profiler[5] = &ncclProfiler_v5;
  profiler[6] = &ncclProfiler_v6;
}
