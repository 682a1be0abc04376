/* bench/gpu/mock/mock_cuda.h: the part of the CUDA runtime API that bench/gpu's C programs call, declared
 * from NVIDIA's public API documentation for the mock runtime (mock_cudart.c), and the mock GPU's clock.
 * Types and values match the real runtime's ABI: collbench is compiled against the real headers. */
#ifndef DYNAMICCL_MOCK_CUDA_H
#define DYNAMICCL_MOCK_CUDA_H

#include <stddef.h>

typedef enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600
} cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};

typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;

cudaError_t cudaSetDevice(int device);
cudaError_t cudaMalloc(void** pointer, size_t size);
cudaError_t cudaFree(void* pointer);
cudaError_t cudaMemcpy(void* destination, const void* source, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* milliseconds, cudaEvent_t start, cudaEvent_t end);
const char* cudaGetErrorString(cudaError_t error);

/* The mock GPU's clock in ns, which its events read: the monotonic clock, or, with
 * DYNAMICCL_MOCK_CLOCK=model, a clock of its own that only the mock NCCL's collectives advance, each by
 * the modelled time of what ran (timings that repeat exactly, for tests). Mock NCCL finds these two with
 * dlsym, so it also runs on a real CUDA runtime (on the monotonic clock). */
unsigned long long mockCudaClockNs(void);
void mockCudaAdvanceClock(unsigned long long ns);

#endif
