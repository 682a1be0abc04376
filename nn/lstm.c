/* nn/lstm.c: LSTM forward, backpropagation through time, and streaming inference. */
#include "lstm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dense.h"

static inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

size_t dccl_lstm_param_count(int in, int hidden) { return (size_t)4 * hidden * (in + hidden) + (size_t)4 * hidden; }

int dccl_lstm_init(dccl_lstm* l, dccl_params* params, int in, int hidden, int max_steps, int max_batch, dccl_rng* rng) {
  memset(l, 0, sizeof(*l));
  l->in = in;
  l->hidden = hidden;
  l->max_steps = max_steps;
  l->max_batch = max_batch;
  int width = in + hidden, H = hidden;
  l->w = dccl_params_take(params, (size_t)4 * H * width);
  l->b = dccl_params_take(params, (size_t)4 * H);
  if (l->w == NULL || l->b == NULL) return -1;
  double limit = 1.0 / sqrt((double)H);
  for (int i = 0; i < 4 * H * width; i++) l->w[i] = (float)((2 * dccl_rng_uniform(rng) - 1) * limit);
  for (int i = 0; i < 4 * H; i++) l->b[i] = i >= H && i < 2 * H ? 1.0f : 0.0f;
  size_t cells = (size_t)max_steps * max_batch;
  /* keep in step with dccl_lstm_memory_bytes */
  l->xh = calloc(cells * width, sizeof(float));
  l->gates = calloc(cells * 4 * H, sizeof(float));
  l->cells = calloc(cells * H, sizeof(float));
  l->tanh_cells = calloc(cells * H, sizeof(float));
  l->prev_cells = calloc(cells * H, sizeof(float));
  l->hiddens = calloc(cells * H, sizeof(float));
  /* backward: dz (batch x 4H), dh_next and dc_next (batch x H each); streaming step: xh and gates. */
  l->scratch = calloc((size_t)max_batch * 6 * H + (size_t)width + 4 * (size_t)H, sizeof(float));
  if (!l->xh || !l->gates || !l->cells || !l->tanh_cells || !l->prev_cells || !l->hiddens || !l->scratch) {
    dccl_lstm_free(l);
    return -1;
  }
  return 0;
}

size_t dccl_lstm_memory_bytes(const dccl_lstm* l) {
  size_t cells = (size_t)l->max_steps * l->max_batch, width = (size_t)(l->in + l->hidden), H = (size_t)l->hidden;
  size_t floats = cells * (width + 4 * H + 4 * H) + (size_t)l->max_batch * 6 * H + width + 4 * H;
  return floats * sizeof(float);
}

void dccl_lstm_free(dccl_lstm* l) {
  free(l->xh);
  free(l->gates);
  free(l->cells);
  free(l->tanh_cells);
  free(l->prev_cells);
  free(l->hiddens);
  free(l->scratch);
  l->xh = l->gates = l->cells = l->tanh_cells = l->prev_cells = l->hiddens = l->scratch = NULL;
}

/* Gates of `rows` samples (their xh rows side by side): z = W xh + b, then the nonlinearities (input,
 * forget: sigmoid; candidate: tanh; output: sigmoid), written into `gates`, 4H per sample. */
static void compute_gates(const dccl_lstm* l, const float* xh, float* gates, int rows) {
  int width = l->in + l->hidden, H = l->hidden;
  dccl_affine_rows(l->w, width, l->b, width, xh, width, gates, 4 * H, 4 * H, rows);
  for (int s = 0; s < rows; s++) {
    float* z = gates + (size_t)s * 4 * H;
    for (int r = 0; r < 2 * H; r++) z[r] = sigmoid(z[r]);
    for (int r = 2 * H; r < 3 * H; r++) z[r] = tanhf(z[r]);
    for (int r = 3 * H; r < 4 * H; r++) z[r] = sigmoid(z[r]);
  }
}

const float* dccl_lstm_forward(dccl_lstm* l, const float* xs, int steps, int batch, const float* h0, const float* c0) {
  int in = l->in, H = l->hidden, width = in + H;
  for (int t = 0; t < steps; t++) {
    /* The step's inputs for the whole batch, then its gates in one pass (the samples are independent). */
    for (int b = 0; b < batch; b++) {
      size_t cell = (size_t)t * batch + b;
      float* xh = l->xh + cell * width;
      memcpy(xh, xs + cell * in, (size_t)in * sizeof(float));
      const float* h_prev = t > 0 ? l->hiddens + ((size_t)(t - 1) * batch + b) * H : (h0 ? h0 + (size_t)b * H : NULL);
      for (int k = 0; k < H; k++) xh[in + k] = h_prev ? h_prev[k] : 0.0f;
    }
    compute_gates(l, l->xh + (size_t)t * batch * width, l->gates + (size_t)t * batch * 4 * H, batch);
    for (int b = 0; b < batch; b++) {
      size_t cell = (size_t)t * batch + b;
      const float* c_prev = t > 0 ? l->cells + ((size_t)(t - 1) * batch + b) * H : (c0 ? c0 + (size_t)b * H : NULL);
      const float* gates = l->gates + cell * 4 * H;
      float *c = l->cells + cell * H, *tc = l->tanh_cells + cell * H, *pc = l->prev_cells + cell * H;
      float* h = l->hiddens + cell * H;
      for (int k = 0; k < H; k++) {
        pc[k] = c_prev ? c_prev[k] : 0.0f;
        c[k] = gates[H + k] * pc[k] + gates[k] * gates[2 * H + k];
        tc[k] = tanhf(c[k]);
        h[k] = gates[3 * H + k] * tc[k];
      }
    }
  }
  return l->hiddens;
}

void dccl_lstm_backward(dccl_lstm* l, dccl_params* params, const float* d_hiddens, int steps, int batch) {
  int in = l->in, H = l->hidden, width = in + H;
  float* gw = dccl_params_grad(params, l->w);
  float* gb = dccl_params_grad(params, l->b);
  /* scratch: dz (batch x 4H), then dh_next and dc_next (batch x H each) in the xh-sized area. */
  float* dz = l->scratch;
  float* dh_next = l->scratch + (size_t)batch * 4 * H;
  float* dc_next = dh_next + (size_t)batch * H;
  memset(dh_next, 0, (size_t)batch * 2 * H * sizeof(float));
  for (int t = steps - 1; t >= 0; t--) {
    for (int b = 0; b < batch; b++) {
      size_t cell = (size_t)t * batch + b;
      const float* gates = l->gates + cell * 4 * H;
      const float *tc = l->tanh_cells + cell * H, *pc = l->prev_cells + cell * H;
      const float* dh_out = d_hiddens + cell * H;
      float *dzb = dz + (size_t)b * 4 * H, *dhn = dh_next + (size_t)b * H, *dcn = dc_next + (size_t)b * H;
      for (int k = 0; k < H; k++) {
        float i = gates[k], f = gates[H + k], g = gates[2 * H + k], o = gates[3 * H + k];
        float dh = dh_out[k] + dhn[k];
        float dc = dh * o * (1 - tc[k] * tc[k]) + dcn[k];
        dzb[k] = dc * g * i * (1 - i);
        dzb[H + k] = dc * pc[k] * f * (1 - f);
        dzb[2 * H + k] = dc * i * (1 - g * g);
        dzb[3 * H + k] = dh * tc[k] * o * (1 - o);
        dcn[k] = dc * f;
      }
    }
    /* Parameter gradients and the gradient flowing to h_{t-1}. */
    for (int b = 0; b < batch; b++) {
      size_t cell = (size_t)t * batch + b;
      const float* xh = l->xh + cell * width;
      const float* dzb = dz + (size_t)b * 4 * H;
      float* dhn = dh_next + (size_t)b * H;
      memset(dhn, 0, (size_t)H * sizeof(float));
      for (int r = 0; r < 4 * H; r++) {
        float g = dzb[r];
        gb[r] += g;
        float* gwr = gw + (size_t)r * width;
        const float* w = l->w + (size_t)r * width;
        for (int k = 0; k < width; k++) gwr[k] += g * xh[k];
        for (int k = 0; k < H; k++) dhn[k] += g * w[in + k];
      }
    }
  }
}

void dccl_lstm_step(dccl_lstm* l, const float* x, float* h, float* c) {
  int in = l->in, H = l->hidden;
  float* xh = l->scratch + (size_t)l->max_batch * 6 * H;
  float* gates = xh + in + H;
  memcpy(xh, x, (size_t)in * sizeof(float));
  memcpy(xh + in, h, (size_t)H * sizeof(float));
  compute_gates(l, xh, gates, 1);
  for (int k = 0; k < H; k++) {
    c[k] = gates[H + k] * c[k] + gates[k] * gates[2 * H + k];
    h[k] = gates[3 * H + k] * tanhf(c[k]);
  }
}
