/* bench/gpu/mock/mock_cudart.c: a mock CUDA runtime: host memory, calls done at once, events on the mock clock. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mock_cuda.h"

struct CUstream_st {
  int unused;
};

struct CUevent_st {
  unsigned long long stamp_ns;
  int recorded;
};

static unsigned long long monotonic_ns(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (unsigned long long)now.tv_sec * 1000000000ULL + (unsigned long long)now.tv_nsec;
}

/* DYNAMICCL_MOCK_CLOCK=model: the clock starts at 1 s and moves only when mock NCCL advances it. */
static _Atomic int clock_mode = -1; /* -1: not read yet, 0: monotonic, 1: model */
static _Atomic unsigned long long model_clock_ns = 1000000000ULL;

static int model_clock(void) {
  int mode = atomic_load(&clock_mode);
  if (mode < 0) {
    const char* value = getenv("DYNAMICCL_MOCK_CLOCK");
    mode = value != NULL && strcmp(value, "model") == 0;
    atomic_store(&clock_mode, mode);
  }
  return mode;
}

unsigned long long mockCudaClockNs(void) { return model_clock() ? atomic_load(&model_clock_ns) : monotonic_ns(); }

void mockCudaAdvanceClock(unsigned long long ns) {
  if (model_clock()) atomic_fetch_add(&model_clock_ns, ns);
}

cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidDevice; }

cudaError_t cudaMalloc(void** pointer, size_t size) {
  if (pointer == NULL) return cudaErrorInvalidValue;
  *pointer = malloc(size > 0 ? size : 1);
  return *pointer != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFree(void* pointer) {
  free(pointer);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* destination, const void* source, size_t count, enum cudaMemcpyKind kind) {
  if ((int)kind < (int)cudaMemcpyHostToHost || (int)kind > (int)cudaMemcpyDefault) return cudaErrorInvalidValue;
  if (count > 0 && (destination == NULL || source == NULL)) return cudaErrorInvalidValue;
  if (count > 0) memmove(destination, source, count);
  return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  if (stream == NULL) return cudaErrorInvalidValue;
  *stream = calloc(1, sizeof(**stream));
  return *stream != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
}

/* Work on a mock stream is done when its call returns. */
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  (void)stream;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  if (event == NULL) return cudaErrorInvalidValue;
  *event = calloc(1, sizeof(**event));
  return *event != NULL ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  (void)stream;
  if (event == NULL) return cudaErrorInvalidResourceHandle;
  event->stamp_ns = mockCudaClockNs();
  event->recorded = 1;
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  return event != NULL ? cudaSuccess : cudaErrorInvalidResourceHandle;
}

cudaError_t cudaEventElapsedTime(float* milliseconds, cudaEvent_t start, cudaEvent_t end) {
  if (milliseconds == NULL) return cudaErrorInvalidValue;
  if (start == NULL || end == NULL || !start->recorded || !end->recorded) return cudaErrorInvalidResourceHandle;
  *milliseconds = (float)(((double)end->stamp_ns - (double)start->stamp_ns) / 1e6);
  return cudaSuccess;
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
  case cudaSuccess: return "no error";
  case cudaErrorInvalidValue: return "invalid argument";
  case cudaErrorMemoryAllocation: return "out of memory";
  case cudaErrorInvalidDevice: return "invalid device ordinal (the mock CUDA runtime has device 0 only)";
  case cudaErrorInvalidResourceHandle: return "invalid resource handle";
  case cudaErrorNotReady: return "device not ready";
  default: return "unrecognized error code";
  }
}
