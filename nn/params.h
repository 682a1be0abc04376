/* nn/params.h: one contiguous block of trainable parameters with their gradients and Adam moments.
 * Layers take slices of it at setup; the optimizer, gradient clipping and persistence then work on
 * the whole block. Everything is allocated once, in dccl_params_init. */
#ifndef DYNAMICCL_NN_PARAMS_H
#define DYNAMICCL_NN_PARAMS_H

#include <stddef.h>
#include <stdint.h>

typedef struct dccl_params {
  float* values;
  float* grads;
  float* m; /* Adam first moment */
  float* v; /* Adam second moment */
  size_t count, used;
  uint64_t steps; /* Adam steps taken */
} dccl_params;

/* Reserves `count` parameters (all zero). 0, or -1 when out of memory. */
int dccl_params_init(dccl_params* p, size_t count);
void dccl_params_free(dccl_params* p);
/* Bytes allocated for the block: values, gradients and both Adam moments. */
static inline size_t dccl_params_memory_bytes(const dccl_params* p) { return 4 * p->count * sizeof(float); }
/* Hands out the next n parameters; their gradients are at the same offset in `grads`. NULL when the
 * block is exhausted (a setup bug: callers size the block exactly). */
float* dccl_params_take(dccl_params* p, size_t n);
static inline float* dccl_params_grad(dccl_params* p, const float* value) { return p->grads + (value - p->values); }

void dccl_params_zero_grads(dccl_params* p);
/* Scales gradients down so their global L2 norm is at most max_norm; returns the norm before. Gradients
 * whose norm is not finite (an overflow) are zeroed: the step that follows moves by its momentum alone. */
double dccl_params_clip(dccl_params* p, double max_norm);
/* One Adam step (bias-corrected) on every parameter, then zeroes the gradients. */
void dccl_params_adam(dccl_params* p, double learning_rate, double beta1, double beta2, double epsilon);
/* dst = (1 - tau) dst + tau src, parameter by parameter (target networks); blocks of equal size. */
void dccl_params_blend(dccl_params* dst, const dccl_params* src, double tau);
/* Copies values (not moments) between blocks of equal size. */
void dccl_params_copy_values(dccl_params* dst, const dccl_params* src);

#endif
