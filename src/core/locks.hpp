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
#include <cstddef>
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

// The most lock keys of a fingerprint at distance k (throws as lock_scheme()).
std::size_t lock_key_bound(int k);

// What a row's lock keys are keyed with: its table (OID) and the database's secret.
struct LockSecret {
  std::uint32_t table = 0;
  std::uint64_t k0 = 0;
  std::uint64_t k1 = 0;
};

// The lock keys a row takes, ascending and distinct. Every role can read the keys of the
// locks held in pg_locks, so each key is keyed with the secret (keyed_lock_key() of
// siphash.hpp): equal keys of one table stay equal, and nothing of the row can be read from
// them. Under distance k: the keys of its fingerprint fp (throws as lock_scheme()).
std::vector<std::uint32_t> row_lock_keys(std::uint64_t fp, int k, const LockSecret& secret);

// Under a threshold: its LSH keys lsh[0..n), each folded to 32 bits (rows that share an LSH
// key share a lock key), into out[0..n); returns how many.
std::size_t lsh_row_lock_keys(const std::int64_t* lsh, std::size_t n, const LockSecret& secret,
                              std::uint32_t* out) noexcept;

// Sorts keys[0..n) and drops repeats; returns how many are left.
std::size_t sort_distinct(std::uint32_t* keys, std::size_t n) noexcept;

}  // namespace simhash
