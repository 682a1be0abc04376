/* nn/lstm.h: a single LSTM layer (gates input, forget, cell, output) with batched sequence forward,
 * backpropagation through time, and an allocation-free streaming step for inference. */
#ifndef DYNAMICCL_NN_LSTM_H
#define DYNAMICCL_NN_LSTM_H

#include "../core/rng.h"
#include "params.h"

typedef struct dccl_lstm {
  int in, hidden;
  float* w; /* 4H x (in + H): rows of the i, f, g, o gates */
  float* b; /* 4H (forget-gate bias starts at 1) */
  int max_steps, max_batch;
  /* caches of the last sequence forward, [t][batch][...] */
  float* xh;    /* in + H: input and previous hidden state */
  float* gates; /* 4H, after their nonlinearities */
  float* cells; /* H: c_t */
  float* tanh_cells;
  float* prev_cells; /* H: c_{t-1} */
  float* hiddens;    /* H: h_t, the layer's outputs */
  float* scratch;    /* 6H x batch for the backward pass, then (in + 5H) for streaming steps */
} dccl_lstm;

size_t dccl_lstm_param_count(int in, int hidden);
int dccl_lstm_init(dccl_lstm* lstm, dccl_params* params, int in, int hidden, int max_steps, int max_batch, dccl_rng* rng);
void dccl_lstm_free(dccl_lstm* lstm);
/* Bytes of the sequence caches and scratch (the parameters live in their dccl_params block). */
size_t dccl_lstm_memory_bytes(const dccl_lstm* lstm);

/* xs: steps x batch x in. h0, c0: batch x H (NULL: zeros). Returns the hidden states, steps x batch x H
 * (valid until the next forward). */
const float* dccl_lstm_forward(dccl_lstm* lstm, const float* xs, int steps, int batch, const float* h0, const float* c0);
/* d_hiddens: steps x batch x H, the loss gradient for every output. Accumulates parameter gradients;
 * the initial state is treated as a constant. */
void dccl_lstm_backward(dccl_lstm* lstm, dccl_params* params, const float* d_hiddens, int steps, int batch);

/* One step for one sequence: updates h and c (H floats each) in place. No caches, no allocation. */
void dccl_lstm_step(dccl_lstm* lstm, const float* x, float* h, float* c);

#endif
