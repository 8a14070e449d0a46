/*
 * rng.h -- the tests' pseudo-random numbers: deterministic per seed, so
 * that a run that failed can be repeated (the tests that take a seed print
 * it). Header only (static inline), for every test program.
 *
 *     uint64_t state = seed;            // never 0
 *     unsigned x = (unsigned)(xorshift64(&state) % 10);
 */
#ifndef BATON_TESTS_RNG_H
#define BATON_TESTS_RNG_H

#include <stdint.h>

/* Marsaglia's xorshift64: the next number of the sequence in *state. */
static inline uint64_t xorshift64(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

/* xorshift64* (Vigna): a multiplied xorshift, with better low bits. */
static inline uint64_t xorshift64star(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1Dull;
}

#endif /* BATON_TESTS_RNG_H */
