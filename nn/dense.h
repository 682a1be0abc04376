/* nn/dense.h: fully connected layers and small multi-layer perceptrons (ReLU between layers, linear
 * output), batched, with backward passes that accumulate gradients into a parameter block. */
#ifndef DYNAMICCL_NN_DENSE_H
#define DYNAMICCL_NN_DENSE_H

#include "../core/rng.h"
#include "params.h"

typedef struct dccl_dense {
  int in, out;
  float* w; /* out x in, row-major */
  float* b; /* out */
} dccl_dense;

/* Takes in*out + out parameters from the block; He-uniform initialisation from `rng`. */
int dccl_dense_init(dccl_dense* layer, dccl_params* params, int in, int out, dccl_rng* rng);
static inline size_t dccl_dense_param_count(int in, int out) { return (size_t)in * out + out; }
/* y[r][o] = start[o] + sum over i < n of w[o * w_stride + i] * x[r * x_stride + i], for `rows` rows and
 * `out` outputs written at y[r * y_stride + o]; each sum added in order of i, as a plain loop would. */
void dccl_affine_rows(const float* w, int w_stride, const float* start, int n, const float* x, int x_stride,
                      float* y, int y_stride, int out, int rows);
/* ReLU in place: every value not above 0 (NaN included) becomes 0; a select, so it vectorizes. */
void dccl_relu(float* values, int n);
/* y[batch][out] = x[batch][in] W^T + b */
void dccl_dense_forward(const dccl_dense* layer, const float* x, float* y, int batch);
/* Accumulates dW, db from x and dy; writes dx when not NULL. */
void dccl_dense_backward(const dccl_dense* layer, dccl_params* params, const float* x, const float* dy, float* dx,
                         int batch);

#define DCCL_MLP_MAX_LAYERS 4

typedef struct dccl_mlp {
  int n_layers;
  int sizes[DCCL_MLP_MAX_LAYERS + 1];
  dccl_dense layers[DCCL_MLP_MAX_LAYERS];
  int max_batch;
  float* activations[DCCL_MLP_MAX_LAYERS + 1]; /* [0] is the input copy; [n_layers] the output */
  float* deltas[DCCL_MLP_MAX_LAYERS + 1];
} dccl_mlp;

/* sizes[0] inputs ... sizes[n_layers] outputs. Parameters come from `params`; activation buffers
 * for up to max_batch rows are allocated here. 0, or -1 (out of memory or parameters). */
int dccl_mlp_init(dccl_mlp* mlp, dccl_params* params, const int* sizes, int n_layers, int max_batch, dccl_rng* rng);
size_t dccl_mlp_param_count(const int* sizes, int n_layers);
void dccl_mlp_free(dccl_mlp* mlp);
/* Bytes of the activation and delta buffers (the parameters live in their dccl_params block). */
size_t dccl_mlp_memory_bytes(const dccl_mlp* mlp);
/* Forward pass of `batch` rows; returns the output rows (batch x sizes[n_layers]). */
const float* dccl_mlp_forward(dccl_mlp* mlp, const float* x, int batch);
/* Backward pass for the last forward; d_output is batch x outputs. Accumulates gradients. Writes the
 * gradient with respect to the input into d_input when not NULL. */
void dccl_mlp_backward(dccl_mlp* mlp, dccl_params* params, const float* d_output, float* d_input, int batch);

#endif
