#include "core/locks.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

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

// Golden lock keys: what a row took as advisory locks (pg_locks' objid) when it was
// written. Keys are a persistent contract between concurrent sessions, so they must not
// change. The values for tables 16487 and 16493 were read from pg_locks after an INSERT,
// with simhash_lock_secret set to (1, 2); the rest were computed by the same code.
struct GoldenDistance {
  int k;
  std::size_t n;
  std::uint64_t digest;  // FNV-1a of the keys, in order
  std::uint32_t first;
  std::uint32_t last;
};

constexpr std::uint64_t kGoldenFp = 0x0123456789abcdefULL;
constexpr std::uint64_t kGoldenK0 = 0x0706050403020100ULL;
constexpr std::uint64_t kGoldenK1 = 0x0f0e0d0c0b0a0908ULL;

const GoldenDistance kGoldenDistance[] = {
    {0, 1, 0xc3c57b87b6a815d6ULL, 0xae810851U, 0xae810851U},
    {1, 2, 0x7fad333036003926ULL, 0x1ebdb9d5U, 0x997e3360U},
    {2, 3, 0xe3965063d551e25fULL, 0x1066744eU, 0xfef5cb57U},
    {3, 4, 0xaaab21a9067e6037ULL, 0x0dcbdc71U, 0xb635cd05U},
    {4, 5, 0x429f3b54de137fb8ULL, 0x112d9ec1U, 0xd404370fU},
    {5, 21, 0x215e2f2724c67c3bULL, 0x045db239U, 0xf5fe8215U},
    {6, 28, 0x0ec3029f4cb1aa5eULL, 0x095090c2U, 0xf9e54795U},
    {7, 36, 0x897d2f85e729ecfaULL, 0x0732cbb8U, 0xfd4e520dU},
    {8, 45, 0xde60aadade95bd02ULL, 0x02869b24U, 0xfe6a6c87U},
    {9, 55, 0xa96f6f59901738cdULL, 0x0655abfbU, 0xfc12a286U},
    {10, 66, 0xeb09996d2c7172f8ULL, 0x042ac7f4U, 0xfaa9ea12U},
    {11, 78, 0x8d387a2bb225773cULL, 0x025860c3U, 0xfc61ef82U},
    {12, 91, 0x5a98ac9eb4f36053ULL, 0x03c2e7a6U, 0xfff80120U},
    {13, 105, 0xa15e17c6f6e8777aULL, 0x02bb19e1U, 0xfe56a156U},
    {14, 120, 0xfaab707aa72b3a59ULL, 0x0039ad88U, 0xfff859ceU},
    {15, 136, 0x1e875466c3e0f409ULL, 0x03f70112U, 0xfd64fb07U},
    {16, 153, 0xabc063b434e404ebULL, 0x0063a3bcU, 0xfc8fae6cU},
};

// The LSH keys of 'the quick brown fox jumps over the lazy dog' (simhash_lsh).
const std::int64_t kGoldenLsh[20] = {
    2389549385801869523,  6362375191217843633,  -2347669518508686971, -5404740972315550863,
    -2885968359496270690, -3285359166113513407, -5567316516409768402, 7925753512538678081,
    -4911454275843824800, 93938699106402515,    -7470318454322437960, -941968520636515585,
    8971306759106947787,  -3120972503192881189, 4650468851555005231,  -3957668894738027715,
    8708779284615695443,  5260713129019061839,  -2561599193529199145, 7953058932189547380};
const std::vector<std::uint32_t> kGoldenLshKeys = {
    275299620,  315089590,  337771164,  533761661,  672082342,  687793605,  800006114,
    1294466514, 1484702418, 1571514977, 1719647806, 1996591996, 2176544981, 2256424153,
    2307301098, 2466712671, 2720768331, 2904390484, 3763766362, 4114455657};

std::uint64_t fnv1a(const std::vector<std::uint32_t>& keys) {
  std::uint64_t h = 1469598103934665603ULL;
  for (std::uint32_t key : keys) {
    h ^= key;
    h *= 1099511628211ULL;
  }
  return h;
}

// A row's keys through the C ABI the trigger calls (src/pg/dedupe_metric.c), checked
// against the core's.
std::vector<std::uint32_t> distance_keys(std::uint64_t fp, int k, std::uint32_t table,
                                         std::uint64_t k0, std::uint64_t k1) {
  const simhash_lock_secret secret{table, k0, k1};
  std::uint32_t out[SIMHASH_MAX_LOCK_KEYS];
  std::size_t n = 0;
  char err[128];
  EXPECT_EQ(simhash_row_lock_keys(fp, k, &secret, out, SIMHASH_MAX_LOCK_KEYS, &n, err, sizeof err),
            SIMHASH_OK);
  std::vector<std::uint32_t> keys(out, out + n);
  EXPECT_EQ(keys, row_lock_keys(fp, k, LockSecret{table, k0, k1}));
  return keys;
}

std::vector<std::uint32_t> lsh_keys(const std::int64_t* lsh, std::size_t n, std::uint32_t table,
                                    std::uint64_t k0, std::uint64_t k1) {
  const simhash_lock_secret secret{table, k0, k1};
  std::uint32_t out[SIMHASH_MAX_LOCK_KEYS];
  return std::vector<std::uint32_t>(out, out + simhash_lsh_row_lock_keys(lsh, n, &secret, out));
}

TEST(Locks, DistanceRowKeysAreTheGoldenOnes) {
  for (const GoldenDistance& g : kGoldenDistance) {
    const auto keys = distance_keys(kGoldenFp, g.k, 16384, kGoldenK0, kGoldenK1);
    ASSERT_EQ(keys.size(), g.n) << "k=" << g.k;
    EXPECT_EQ(fnv1a(keys), g.digest) << "k=" << g.k;
    EXPECT_EQ(keys.front(), g.first) << "k=" << g.k;
    EXPECT_EQ(keys.back(), g.last) << "k=" << g.k;
    EXPECT_EQ(lock_key_bound(g.k), g.n) << "k=" << g.k;  // the bound of one row
    std::uint64_t bound = 0;
    char err[128];
    EXPECT_EQ(simhash_lock_key_bound(g.k, &bound, err, sizeof err), SIMHASH_OK);
    EXPECT_EQ(bound, g.n);
  }
  EXPECT_EQ(distance_keys(81985529216486895ULL, 3, 16487, 1, 2),
            (std::vector<std::uint32_t>{728660440, 2849993291, 3344689340, 4225500515}));
  EXPECT_EQ(distance_keys(~std::uint64_t{0}, 3, 16487, 1, 2),
            (std::vector<std::uint32_t>{1005922317, 2138069411, 2680776157, 3434765158}));
}

TEST(Locks, LshRowKeysAreTheGoldenOnes) {
  EXPECT_EQ(lsh_keys(kGoldenLsh, 20, 16493, 1, 2), kGoldenLshKeys);
  const std::int64_t repeated[4] = {5, 5, -7, 5};  // equal LSH keys, one lock key
  EXPECT_EQ(lsh_keys(repeated, 4, 16493, 1, 2),
            (std::vector<std::uint32_t>{2775911391, 3068516061}));
  EXPECT_TRUE(lsh_keys(repeated, 0, 16493, 1, 2).empty());
}

TEST(Locks, RowKeysRefuseWhatTheFingerprintsKeysRefuse) {
  const simhash_lock_secret secret{16384, 1, 2};
  std::uint32_t out[SIMHASH_MAX_LOCK_KEYS];
  std::size_t n = 0;
  char err[128];
  EXPECT_EQ(simhash_row_lock_keys(42, 8, &secret, out, 2, &n, err, sizeof err),
            SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(simhash_row_lock_keys(42, 17, &secret, out, SIMHASH_MAX_LOCK_KEYS, &n, err, sizeof err),
            SIMHASH_INVALID_ARGUMENT);
  std::uint64_t bound = 0;
  EXPECT_EQ(simhash_lock_key_bound(17, &bound, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
}

// A statement's keys: ascending, each once.
TEST(Locks, SortDistinctKeys) {
  std::uint32_t keys[] = {9, 3, 9, 1, 3, 3, 0xffffffffU};
  ASSERT_EQ(simhash_sort_distinct_keys(keys, 7), 4u);
  EXPECT_EQ(std::vector<std::uint32_t>(keys, keys + 4),
            (std::vector<std::uint32_t>{1, 3, 9, 0xffffffffU}));
  EXPECT_EQ(simhash_sort_distinct_keys(keys, 0), 0u);
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
