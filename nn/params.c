/* nn/params.c: parameter blocks, Adam, global-norm gradient clipping, target-network blending. */
#include "params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int dccl_params_init(dccl_params* p, size_t count) {
  memset(p, 0, sizeof(*p));
  p->values = calloc(count ? count : 1, sizeof(float));
  p->grads = calloc(count ? count : 1, sizeof(float));
  p->m = calloc(count ? count : 1, sizeof(float));
  p->v = calloc(count ? count : 1, sizeof(float));
  if (!p->values || !p->grads || !p->m || !p->v) {
    dccl_params_free(p);
    return -1;
  }
  p->count = count;
  return 0;
}

void dccl_params_free(dccl_params* p) {
  free(p->values);
  free(p->grads);
  free(p->m);
  free(p->v);
  memset(p, 0, sizeof(*p));
}

float* dccl_params_take(dccl_params* p, size_t n) {
  if (p->used + n > p->count) return NULL;
  float* slice = p->values + p->used;
  p->used += n;
  return slice;
}

void dccl_params_zero_grads(dccl_params* p) { memset(p->grads, 0, p->count * sizeof(float)); }

double dccl_params_clip(dccl_params* p, double max_norm) {
  /* Four partial sums (in double) instead of one chain of dependent additions: 4x faster, the same
   * result to double rounding, which the float scale below absorbs. */
  double sums[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 4 <= p->count; i += 4)
    for (int k = 0; k < 4; k++) sums[k] += (double)p->grads[i + k] * p->grads[i + k];
  for (; i < p->count; i++) sums[0] += (double)p->grads[i] * p->grads[i];
  double norm = sqrt((sums[0] + sums[1]) + (sums[2] + sums[3]));
  if (!isfinite(norm)) {
    /* An overflowed gradient is dropped, not scaled: scaling it would make every weight NaN. */
    memset(p->grads, 0, p->count * sizeof(float));
    return norm;
  }
  if (norm > max_norm && norm > 0) {
    float scale = (float)(max_norm / norm);
    for (size_t j = 0; j < p->count; j++) p->grads[j] *= scale;
  }
  return norm;
}

void dccl_params_adam(dccl_params* p, double learning_rate, double beta1, double beta2, double epsilon) {
  p->steps++;
  double correction1 = 1.0 - pow(beta1, (double)p->steps), correction2 = 1.0 - pow(beta2, (double)p->steps);
  float step = (float)(learning_rate * sqrt(correction2) / correction1);
  float b1 = (float)beta1, b2 = (float)beta2, eps = (float)epsilon;
  for (size_t i = 0; i < p->count; i++) {
    float g = p->grads[i];
    p->m[i] = b1 * p->m[i] + (1 - b1) * g;
    p->v[i] = b2 * p->v[i] + (1 - b2) * g * g;
    p->values[i] -= step * p->m[i] / (sqrtf(p->v[i]) + eps);
    p->grads[i] = 0;
  }
}

void dccl_params_blend(dccl_params* dst, const dccl_params* src, double tau) {
  float t = (float)tau;
  size_t n = dst->count < src->count ? dst->count : src->count;
  for (size_t i = 0; i < n; i++) dst->values[i] = (1 - t) * dst->values[i] + t * src->values[i];
}

void dccl_params_copy_values(dccl_params* dst, const dccl_params* src) {
  size_t n = dst->count < src->count ? dst->count : src->count;
  memcpy(dst->values, src->values, n * sizeof(float));
}
