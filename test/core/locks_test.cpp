#include "core/locks.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <stdexcept>

#include "capi/search_capi.h"
#include "core/hamming.hpp"

namespace simhash {
namespace {

std::uint64_t flip(std::uint64_t x, int bits, std::mt19937_64& rng) {
  std::set<int> positions;
  while (static_cast<int>(positions.size()) < bits) positions.insert(static_cast<int>(rng() % 64));
  for (int p : positions) x ^= std::uint64_t{1} << p;
  return x;
}

bool share_a_key(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
  std::vector<std::uint32_t> both;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
  return !both.empty();
}

// The property the trigger relies on: fingerprints within k bits always share a lock key.
TEST(Locks, NearDuplicatesAlwaysShareAKey) {
  std::mt19937_64 rng(11);
  for (int k = 0; k <= kMaxLockDistance; ++k) {
    for (int trial = 0; trial < 2000; ++trial) {
      const std::uint64_t a = rng();
      const std::uint64_t b = flip(a, static_cast<int>(rng() % (k + 1)), rng);
      ASSERT_TRUE(share_a_key(lock_keys(a, k), lock_keys(b, k))) << "k=" << k;
    }
  }
}

TEST(Locks, KeysAreSortedDistinctAndAsManyAsTheSchemeSays) {
  std::mt19937_64 rng(12);
  for (int k = 0; k <= kMaxLockDistance; ++k) {
    const LockScheme s = lock_scheme(k);
    EXPECT_EQ(s.blocks, s.k + s.agree);
    EXPECT_LE(s.keys, kMaxLockKeys);
    const auto keys = lock_keys(rng(), k);
    EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
    EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end());
    EXPECT_GE(keys.size() + 2, static_cast<std::size_t>(s.keys));  // repeats only by chance
    EXPECT_LE(keys.size(), static_cast<std::size_t>(s.keys));
  }
  EXPECT_THROW(lock_scheme(-1), std::invalid_argument);
  EXPECT_THROW(lock_scheme(17), std::invalid_argument);
}

// Unrelated writers rarely share a lock: measured rate against the scheme's estimate.
TEST(Locks, UnrelatedFingerprintsRarelyShareAKey) {
  std::mt19937_64 rng(13);
  for (int k : {3, 6, 8}) {
    const LockScheme s = lock_scheme(k);
    const double expected = s.keys * std::ldexp(1.0, -64 * s.agree / s.blocks);
    int shared = 0;
    const int pairs = 20000;
    for (int i = 0; i < pairs; ++i) {
      const std::uint64_t a = rng();
      std::uint64_t b = rng();
      while (hamming(a, b) <= k) b = rng();
      shared += share_a_key(lock_keys(a, k), lock_keys(b, k)) ? 1 : 0;
    }
    EXPECT_LT(static_cast<double>(shared) / pairs, 3 * expected + 0.001) << "k=" << k;
  }
}

TEST(Locks, CapiCopiesTheKeys) {
  char err[128];
  std::uint32_t out[SIMHASH_MAX_LOCK_KEYS];
  std::size_t n = 0;
  EXPECT_EQ(simhash_lock_keys(42, 3, out, SIMHASH_MAX_LOCK_KEYS, &n, err, sizeof err), SIMHASH_OK);
  EXPECT_EQ(n, 4u);
  EXPECT_EQ(std::vector<std::uint32_t>(out, out + n), lock_keys(42, 3));
  EXPECT_EQ(simhash_lock_keys(42, 8, out, 2, &n, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(simhash_lock_keys(42, 17, out, SIMHASH_MAX_LOCK_KEYS, &n, err, sizeof err),
            SIMHASH_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace simhash
