// Host-side token sampling for text generation: temperature, top-k, and a deterministic RNG whose whole
// state is one uint64 (so a run can log it, checkpoint it and replay a sample exactly).
#pragma once
#include <cstdint>

// splitmix64: advances *state and returns the next 64 random bits. Any seed (0 included) is fine.
uint64_t rng_next_u64(uint64_t* state);
// A uniform double in [0, 1) with 53 random bits (one rng_next_u64 draw).
double rng_uniform(uint64_t* state);

// Picks the next token from logits[0 .. V_valid) (entries at V_valid and beyond, e.g. a padded vocabulary's
// extra ids, are never read or chosen):
//   temperature == 0: argmax (the lowest id on ties); the RNG is not advanced.
//   temperature > 0:  softmax(logits / temperature) restricted to the top_k largest logits (top_k <= 0 or
//                     top_k >= V_valid: all of them; ties at the cut go to the lower id), sampled with
//                     exactly one rng_uniform draw, whatever top_k is. Computed in double after subtracting
//                     the maximum, so any finite logits and any temperature > 0 are safe (a tiny temperature
//                     approaches argmax).
// Non-finite logits: NaN counts as -inf (never chosen unless every logit is NaN or -inf, when the result is
// the argmax rule's, i.e. id 0); if any logit is +inf the result is the first +inf id.
// Throws std::invalid_argument for logits == nullptr, V_valid <= 0, a negative or NaN temperature, or
// rng_state == nullptr when temperature > 0.
int sample_token(const float* logits, int V_valid, float temperature, int top_k, uint64_t* rng_state);
