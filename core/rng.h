/* core/rng.h: an explicit, seedable random generator (xoshiro256**, seeded through splitmix64).
 * Every context that needs randomness owns one of these; there is no global random state. */
#ifndef DYNAMICCL_CORE_RNG_H
#define DYNAMICCL_CORE_RNG_H

#include <stdint.h>

typedef struct dccl_rng {
  uint64_t state[4];
} dccl_rng;

void dccl_rng_seed(dccl_rng* rng, uint64_t seed);
uint64_t dccl_rng_next(dccl_rng* rng);
/* Uniform in [0, 1). */
double dccl_rng_uniform(dccl_rng* rng);
/* Uniform integer in [0, bound), bound > 0. */
uint64_t dccl_rng_below(dccl_rng* rng, uint64_t bound);
/* Standard normal (Box-Muller, one value per call). */
double dccl_rng_normal(dccl_rng* rng);

/* splitmix64 step: a good 64-bit mixer, also used to derive independent seeds and hashes. */
uint64_t dccl_mix64(uint64_t x);

#endif
