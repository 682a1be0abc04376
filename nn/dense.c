/* nn/dense.c: dense layers and ReLU MLPs, forward and backward. */
#include "dense.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int dccl_dense_init(dccl_dense* layer, dccl_params* params, int in, int out, dccl_rng* rng) {
  layer->in = in;
  layer->out = out;
  layer->w = dccl_params_take(params, (size_t)in * out);
  layer->b = dccl_params_take(params, (size_t)out);
  if (layer->w == NULL || layer->b == NULL) return -1;
  double limit = sqrt(6.0 / in);
  for (int i = 0; i < in * out; i++) layer->w[i] = (float)((2 * dccl_rng_uniform(rng) - 1) * limit);
  memset(layer->b, 0, (size_t)out * sizeof(float));
  return 0;
}

void dccl_relu(float* values, int n) {
  for (int i = 0; i < n; i++) values[i] = values[i] > 0 ? values[i] : 0.0f;
}

void dccl_dense_forward(const dccl_dense* layer, const float* x, float* y, int batch) {
  dccl_affine_rows(layer->w, layer->in, layer->b, layer->in, x, layer->in, y, layer->out, layer->out, batch);
}

void dccl_dense_backward(const dccl_dense* layer, dccl_params* params, const float* x, const float* dy, float* dx,
                         int batch) {
  int in = layer->in, out = layer->out;
  float* gw = dccl_params_grad(params, layer->w);
  float* gb = dccl_params_grad(params, layer->b);
  if (dx != NULL) memset(dx, 0, (size_t)batch * in * sizeof(float));
  for (int r = 0; r < batch; r++) {
    const float* xr = x + (size_t)r * in;
    const float* dyr = dy + (size_t)r * out;
    float* dxr = dx != NULL ? dx + (size_t)r * in : NULL;
    for (int o = 0; o < out; o++) {
      float g = dyr[o];
      if (g == 0) continue;
      gb[o] += g;
      float* gwo = gw + (size_t)o * in;
      const float* w = layer->w + (size_t)o * in;
      for (int i = 0; i < in; i++) gwo[i] += g * xr[i];
      if (dxr != NULL)
        for (int i = 0; i < in; i++) dxr[i] += g * w[i];
    }
  }
}

size_t dccl_mlp_param_count(const int* sizes, int n_layers) {
  size_t n = 0;
  for (int l = 0; l < n_layers; l++) n += dccl_dense_param_count(sizes[l], sizes[l + 1]);
  return n;
}

int dccl_mlp_init(dccl_mlp* mlp, dccl_params* params, const int* sizes, int n_layers, int max_batch, dccl_rng* rng) {
  memset(mlp, 0, sizeof(*mlp));
  if (n_layers < 1 || n_layers > DCCL_MLP_MAX_LAYERS) return -1;
  mlp->n_layers = n_layers;
  mlp->max_batch = max_batch;
  for (int l = 0; l <= n_layers; l++) {
    mlp->sizes[l] = sizes[l];
    mlp->activations[l] = calloc((size_t)max_batch * sizes[l], sizeof(float));
    mlp->deltas[l] = calloc((size_t)max_batch * sizes[l], sizeof(float));
    if (!mlp->activations[l] || !mlp->deltas[l]) {
      dccl_mlp_free(mlp);
      return -1;
    }
  }
  for (int l = 0; l < n_layers; l++)
    if (dccl_dense_init(&mlp->layers[l], params, sizes[l], sizes[l + 1], rng) != 0) {
      dccl_mlp_free(mlp);
      return -1;
    }
  return 0;
}

size_t dccl_mlp_memory_bytes(const dccl_mlp* mlp) {
  size_t bytes = 0;
  for (int l = 0; l <= mlp->n_layers; l++) bytes += 2 * (size_t)mlp->max_batch * mlp->sizes[l] * sizeof(float);
  return bytes;
}

void dccl_mlp_free(dccl_mlp* mlp) {
  for (int l = 0; l <= DCCL_MLP_MAX_LAYERS; l++) {
    free(mlp->activations[l]);
    free(mlp->deltas[l]);
  }
  memset(mlp, 0, sizeof(*mlp));
}

const float* dccl_mlp_forward(dccl_mlp* mlp, const float* x, int batch) {
  memcpy(mlp->activations[0], x, (size_t)batch * mlp->sizes[0] * sizeof(float));
  for (int l = 0; l < mlp->n_layers; l++) {
    dccl_dense_forward(&mlp->layers[l], mlp->activations[l], mlp->activations[l + 1], batch);
    if (l + 1 < mlp->n_layers) dccl_relu(mlp->activations[l + 1], batch * mlp->sizes[l + 1]);
  }
  return mlp->activations[mlp->n_layers];
}

void dccl_mlp_backward(dccl_mlp* mlp, dccl_params* params, const float* d_output, float* d_input, int batch) {
  int n = mlp->n_layers;
  memcpy(mlp->deltas[n], d_output, (size_t)batch * mlp->sizes[n] * sizeof(float));
  for (int l = n - 1; l >= 0; l--) {
    float* dx = l > 0 ? mlp->deltas[l] : d_input;
    dccl_dense_backward(&mlp->layers[l], params, mlp->activations[l], mlp->deltas[l + 1], dx, batch);
    if (l > 0) {
      /* ReLU: no gradient where the activation was clipped. */
      const float* a = mlp->activations[l];
      for (int i = 0; i < batch * mlp->sizes[l]; i++) dx[i] = a[i] <= 0 ? 0.0f : dx[i];
    }
  }
}
