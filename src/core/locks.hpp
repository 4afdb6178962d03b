// Serialisation keys for writers of near duplicates (the simhash_dedupe trigger).
//
// Two writers whose fingerprints are within k bits must not both succeed; writers whose
// fingerprints are unrelated should not wait on each other. Split the 64 bits into
// m = k + r blocks (the layout of blocks.hpp): two fingerprints within k bits differ in at
// most k blocks, so they agree exactly on at least r of them. A fingerprint's keys are one
// per choice of r blocks out of m: the choice and the bits of those blocks, hashed to 32
// bits. Near duplicates therefore share a key (and a lock); unrelated fingerprints share one
// only by chance, about C(m, r) * 2^(-64 r / m) per pair. r is the smallest that makes
// keys of at least kMinKeyBits bits, within kMaxLockKeys keys per fingerprint.
#pragma once
#include <cstdint>
#include <vector>

#include "core/no_postgres.hpp"

namespace simhash {

inline constexpr int kMaxLockDistance = 16;
inline constexpr int kMinKeyBits = 12;
inline constexpr int kMaxLockKeys = 160;

struct LockScheme {
  int k = 0;
  int agree = 1;   // r
  int blocks = 1;  // m = k + r
  int keys = 1;    // C(m, r)
};

// The scheme for distance k (0..kMaxLockDistance); throws std::invalid_argument otherwise.
LockScheme lock_scheme(int k);

// The keys of fp under the scheme for distance k, sorted ascending and without repeats, so
// that every writer takes its locks in one global order.
std::vector<std::uint32_t> lock_keys(std::uint64_t fp, int k);

}  // namespace simhash
