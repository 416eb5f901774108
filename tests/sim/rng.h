/*
 * rng.h - the simulation's only source of randomness: splitmix64, seeded
 * per run, so that a seed reproduces a run exactly.
 */
#ifndef CTSYNCD_SIM_RNG_H
#define CTSYNCD_SIM_RNG_H

#include <stdbool.h>
#include <stdint.h>

struct rng {
	uint64_t s;
};

static inline uint64_t rng_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Seeds n and n+1 must not give the same stream shifted by one step: mix the seed first. */
static inline void rng_seed(struct rng *r, uint64_t seed)
{
	r->s = rng_mix(rng_mix(seed + 0x2545f4914f6cdd1dull));
}

static inline uint64_t rng_next(struct rng *r)
{
	return rng_mix(r->s += 0x9e3779b97f4a7c15ull);
}

static inline uint32_t rng_u32(struct rng *r)
{
	return (uint32_t)(rng_next(r) >> 32);
}

/* Uniform in [0, n); n > 0. */
static inline uint32_t rng_below(struct rng *r, uint32_t n)
{
	return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* Uniform in [lo, hi]. */
static inline uint32_t rng_range(struct rng *r, uint32_t lo, uint32_t hi)
{
	return lo + rng_below(r, hi - lo + 1);
}

/* Uniform in [0, 1). */
static inline double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

static inline bool rng_chance(struct rng *r, double p)
{
	return p > 0 && rng_unit(r) < p;
}

#endif
