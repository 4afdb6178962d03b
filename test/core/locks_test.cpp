#include "core/locks.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <stdexcept>

#include "capi/search_capi.h"
#include "core/hamming.hpp"
#include "core/siphash.hpp"

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
// The test vector of the SipHash paper (appendix A): key 00..0f, message 00..0e.
TEST(Locks, SipHashMatchesThePapersVector) {
  unsigned char message[15];
  for (int i = 0; i < 15; ++i) message[i] = static_cast<unsigned char>(i);
  const std::uint64_t k0 = 0x0706050403020100ULL;
  const std::uint64_t k1 = 0x0f0e0d0c0b0a0908ULL;
  EXPECT_EQ(siphash24(k0, k1, message, sizeof(message)), 0xa129ca6149be45e5ULL);
}

// Keyed lock keys: equal keys of one table stay equal, other secrets or tables give others.
TEST(Locks, KeyedLockKeysKeepEqualityAndHideTheKey) {
  std::uint32_t a[3] = {7, 7, 8};
  simhash_key_lock_keys(a, 3, 16384, 1, 2);
  EXPECT_EQ(a[0], a[1]);
  EXPECT_NE(a[0], a[2]);
  EXPECT_NE(a[0], 7U);
  std::uint32_t b[1] = {7};
  simhash_key_lock_keys(b, 1, 16385, 1, 2);
  EXPECT_NE(b[0], a[0]);
  std::uint32_t c[1] = {7};
  simhash_key_lock_keys(c, 1, 16384, 1, 3);
  EXPECT_NE(c[0], a[0]);
}

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
