/* core/rng.c: xoshiro256** generator with splitmix64 seeding, uniform and normal draws. */
#include "rng.h"

#include <math.h>

uint64_t dccl_mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

void dccl_rng_seed(dccl_rng* rng, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < 4; i++) {
    x = dccl_mix64(x);
    rng->state[i] = x;
  }
  if ((rng->state[0] | rng->state[1] | rng->state[2] | rng->state[3]) == 0) rng->state[0] = 1;
}

static inline uint64_t rotate_left(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t dccl_rng_next(dccl_rng* rng) {
  uint64_t* s = rng->state;
  uint64_t result = rotate_left(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotate_left(s[3], 45);
  return result;
}

double dccl_rng_uniform(dccl_rng* rng) { return (double)(dccl_rng_next(rng) >> 11) * 0x1.0p-53; }

uint64_t dccl_rng_below(dccl_rng* rng, uint64_t bound) {
  /* Rejection sampling removes modulo bias. */
  uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
  uint64_t x;
  do x = dccl_rng_next(rng);
  while (x >= limit);
  return x % bound;
}

double dccl_rng_normal(dccl_rng* rng) {
  double u1 = dccl_rng_uniform(rng);
  double u2 = dccl_rng_uniform(rng);
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
