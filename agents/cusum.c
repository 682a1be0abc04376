/* agents/cusum.c: two-sided CUSUM. */
#include "cusum.h"

void dccl_cusum_init(dccl_cusum* c, double k, double h) {
  c->k = k;
  c->h = h;
  c->up = c->down = 0;
}

void dccl_cusum_reset(dccl_cusum* c) { c->up = c->down = 0; }

int dccl_cusum_update(dccl_cusum* c, double u) {
  c->up = c->up + u - c->k;
  if (c->up < 0) c->up = 0;
  c->down = c->down - u - c->k;
  if (c->down < 0) c->down = 0;
  if (c->up > c->h) {
    c->up = 0;
    return 1;
  }
  if (c->down > c->h) {
    c->down = 0;
    return -1;
  }
  return 0;
}
