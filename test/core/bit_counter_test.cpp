#include "core/bit_counter.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/hamming.hpp"

namespace simhash {
namespace {

// The textbook definition: one signed counter per bit.
std::uint64_t reference_fingerprint(const std::vector<std::uint64_t>& hashes) {
  std::int64_t v[64] = {};
  std::uint64_t sum = 0;
  for (std::uint64_t h : hashes) {
    sum += h;
    for (int i = 0; i < 64; ++i) v[i] += ((h >> i) & 1) ? 1 : -1;
  }
  std::uint64_t fp = 0;
  for (int i = 0; i < 64; ++i) {
    const bool tie_one = v[i] == 0 && ((mix64(sum) >> i) & 1);
    if (v[i] > 0 || tie_one) fp |= std::uint64_t{1} << i;
  }
  return fp;
}

TEST(BitCounter, MatchesTheTextbookDefinition) {
  std::mt19937_64 rng(7);
  // sizes around the group of 16, the lane flush interval (255 groups = 4080 hashes) and
  // well past it
  for (std::size_t n : {1u, 2u, 3u, 15u, 16u, 17u, 31u, 32u, 33u, 254u, 255u, 256u, 4079u, 4080u,
                        4081u, 8160u, 8161u, 70000u}) {
    for (int round = 0; round < 6; ++round) {
      std::vector<std::uint64_t> hashes(n);
      for (auto& h : hashes) {
        // rounds 1 and 2 bias bits towards 1 and towards 0, so that counters grow large in
        // both directions; round 5 has bits that are always set and always clear, so that
        // every byte lane fills at its fastest (an overflow would flip those bits)
        h = rng();
        if (round == 1) h |= 0xF0F0F0F0F0F0F0F0ULL & rng();
        if (round == 2) h &= rng();
        if (round == 5) h = (h | 0x8000000100000081ULL) & ~0x0100000000008000ULL;
      }
      BitCounter c;
      for (auto h : hashes) c.add(h);
      EXPECT_EQ(c.total(), n);
      EXPECT_EQ(c.fingerprint(), reference_fingerprint(hashes)) << "n=" << n;
      // Taking the fingerprint changes nothing: adding more afterwards still counts right.
      for (std::size_t k = 0; k < 21; ++k) {
        hashes.push_back(rng());
        c.add(hashes.back());
      }
      EXPECT_EQ(c.fingerprint(), reference_fingerprint(hashes)) << "n=" << n << " + 21";
    }
  }
}

TEST(BitCounter, AddManyEqualsAddingOneByOne) {
  std::mt19937_64 rng(8);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::uint64_t> hashes;
    BitCounter c;
    // a random mix of single adds and runs of every size, across groups and lane flushes
    const std::size_t steps = 1 + rng() % 300;
    for (std::size_t s = 0; s < steps; ++s) {
      if (rng() % 3 == 0) {
        hashes.push_back(rng());
        c.add(hashes.back());
      } else {
        std::vector<std::uint64_t> run(rng() % 70);
        for (auto& h : run) h = rng() & rng();
        c.add_many(run.data(), run.size());
        hashes.insert(hashes.end(), run.begin(), run.end());
      }
    }
    ASSERT_EQ(c.total(), hashes.size());
    ASSERT_EQ(c.fingerprint(), reference_fingerprint(hashes)) << round;
  }
}

TEST(BitCounter, TiesFollowTheMixedSumOfAllHashes) {
  const std::uint64_t a = 0xFFFF0000FFFF0000ULL, b = 0x00FF00FF00FF00FFULL;
  BitCounter c;
  c.add(a);
  c.add(b);
  // agreeing bits (a & b set, or both clear) stay; the others come from mix64(a + b)
  const std::uint64_t agree = ~(a ^ b);
  EXPECT_EQ(c.fingerprint(), (a & agree) | (mix64(a + b) & ~agree));
  // order does not matter
  BitCounter d;
  d.add(b);
  d.add(a);
  EXPECT_EQ(d.fingerprint(), c.fingerprint());
}

TEST(BitCounter, OneHashIsItsOwnFingerprint) {
  BitCounter c;
  c.add(0x8000000000000001ULL);
  EXPECT_EQ(c.fingerprint(), 0x8000000000000001ULL);
}

TEST(Hamming, Basics) {
  EXPECT_EQ(hamming(0, 0), 0);
  EXPECT_EQ(hamming(0, ~0ULL), 64);
  EXPECT_EQ(hamming(0x8000000000000000ULL, 0), 1);
  EXPECT_EQ(hamming(0xF0, 0x0F), 8);
  std::mt19937_64 rng(1);
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t a = rng(), b = rng(), c = rng();
    EXPECT_EQ(hamming(a, b), hamming(b, a));
    EXPECT_LE(hamming(a, c), hamming(a, b) + hamming(b, c));
  }
}

}  // namespace
}  // namespace simhash
