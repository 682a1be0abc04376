/* nn/loss.c: Huber loss. */
#include "loss.h"

#include <math.h>
#include <stddef.h>

double dccl_huber(const float* prediction, const float* target, float* gradient, int n, double delta) {
  double total = 0;
  for (int i = 0; i < n; i++) {
    double e = (double)prediction[i] - target[i];
    double a = fabs(e);
    total += a <= delta ? 0.5 * e * e : delta * (a - 0.5 * delta);
    if (gradient != NULL) gradient[i] = (float)((a <= delta ? e : delta * (e > 0 ? 1 : -1)) / n);
  }
  return n > 0 ? total / n : 0;
}
