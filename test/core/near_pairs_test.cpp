#include "core/near_pairs.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "core/clusters.hpp"
#include "core/hamming.hpp"

namespace simhash {
namespace {

using Pair = std::tuple<std::size_t, std::size_t, int>;

std::uint64_t flip_bits(std::uint64_t x, int bits, std::mt19937_64& rng) {
  std::set<int> positions;
  while (static_cast<int>(positions.size()) < bits) positions.insert(static_cast<int>(rng() % 64));
  for (int p : positions) x ^= std::uint64_t{1} << p;
  return x;
}

// Random fingerprints with planted neighbours at every distance 0..k+2, duplicates
// included, and chains.
std::vector<std::uint64_t> planted(std::size_t base, int k, std::mt19937_64& rng) {
  std::vector<std::uint64_t> fps;
  for (std::size_t i = 0; i < base; ++i) {
    const std::uint64_t f = rng();
    fps.push_back(f);
    if (i % 3 == 0) fps.push_back(flip_bits(f, static_cast<int>(rng() % (k + 3)), rng));
    if (i % 7 == 0) fps.push_back(f);  // an identical fingerprint
    if (i % 11 == 0) {                 // a chain, each step within k
      std::uint64_t g = f;
      for (int s = 0; s < 3; ++s) {
        g = flip_bits(g, std::max(0, k - static_cast<int>(rng() % 2)), rng);
        fps.push_back(g);
      }
    }
  }
  std::shuffle(fps.begin(), fps.end(), rng);
  return fps;
}

std::vector<Pair> brute_force(const std::vector<std::uint64_t>& fps, int k) {
  std::vector<Pair> out;
  for (std::size_t i = 0; i < fps.size(); ++i) {
    for (std::size_t j = i + 1; j < fps.size(); ++j) {
      const int d = hamming(fps[i], fps[j]);
      if (d <= k) out.emplace_back(i, j, d);
    }
  }
  return out;
}

std::vector<Pair> indexed(const std::vector<std::uint64_t>& fps, const PairLayout& layout) {
  std::vector<Pair> out;
  for_each_near_pair(fps.data(), fps.size(), layout,
                     [&](std::size_t i, std::size_t j, int d) { out.emplace_back(i, j, d); });
  std::sort(out.begin(), out.end());
  return out;
}

TEST(NearPairs, EqualsBruteForceForEveryLayout) {
  for (int k = 0; k <= 8; ++k) {
    for (unsigned seed = 1; seed <= 4; ++seed) {
      std::mt19937_64 rng(seed * 1000 + k);
      const auto fps = planted(300, k, rng);
      const auto expected = brute_force(fps, k);
      ASSERT_FALSE(expected.empty());
      for (int r = 1; r <= 3; ++r) {
        EXPECT_EQ(indexed(fps, make_pair_layout(k, r)), expected) << "k=" << k << " r=" << r;
      }
      EXPECT_EQ(indexed(fps, choose_pair_layout(fps.size(), k)), expected) << "k=" << k;
    }
  }
}

TEST(NearPairs, IdenticalFingerprintsAreReportedOnce) {
  const std::vector<std::uint64_t> fps(5, 0x1234);
  const auto pairs = indexed(fps, choose_pair_layout(fps.size(), 3));
  EXPECT_EQ(pairs.size(), 10u);  // C(5, 2)
  for (const auto& p : pairs) EXPECT_EQ(std::get<2>(p), 0);
}

TEST(NearPairs, LayoutsAreValidated) {
  EXPECT_THROW(choose_pair_layout(10, -1), std::invalid_argument);
  EXPECT_THROW(choose_pair_layout(10, kMaxPairDistance + 1), std::invalid_argument);
  EXPECT_THROW(make_pair_layout(3, 0), std::invalid_argument);
  const PairLayout l = make_pair_layout(3, 2);
  EXPECT_EQ(l.blocks, 5);
  EXPECT_EQ(l.combinations.size(), 10u);
  std::uint64_t all = 0;
  for (auto m : l.block_masks) {
    EXPECT_EQ(all & m, 0u);
    all |= m;
  }
  EXPECT_EQ(all, ~std::uint64_t{0});
}

TEST(Clusters, ChainsAreOneClusterNamedByTheSmallestId) {
  // a - b - c within 2 bits each step, a and c 4 bits apart; d far away
  const std::uint64_t a = 0, b = 0x3, c = 0xF, d = ~std::uint64_t{0};
  const std::vector<std::uint64_t> fps = {c, d, a, b};
  const std::vector<std::int64_t> ids = {30, 40, 10, 20};
  const auto cl = cluster_ids(ids.data(), fps.data(), fps.size(), choose_pair_layout(4, 2));
  EXPECT_EQ(cl, (std::vector<std::int64_t>{10, 40, 10, 10}));
}

TEST(Clusters, EqualConnectedComponentsOfTheBruteForceGraph) {
  for (int k = 0; k <= 8; k += 2) {
    std::mt19937_64 rng(77 + k);
    const auto fps = planted(200, k, rng);
    std::vector<std::int64_t> ids(fps.size());
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int64_t>(rng() % 100000);
    // reference: repeated relaxation of labels over brute-force edges
    std::vector<std::int64_t> label = ids;
    const auto edges = brute_force(fps, k);
    for (bool changed = true; changed;) {
      changed = false;
      for (const auto& [i, j, dist] : edges) {
        const std::int64_t m = std::min(label[i], label[j]);
        if (label[i] != m || label[j] != m) {
          label[i] = label[j] = m;
          changed = true;
        }
      }
    }
    EXPECT_EQ(cluster_ids(ids.data(), fps.data(), fps.size(), choose_pair_layout(fps.size(), k)),
              label)
        << "k=" << k;
  }
}

}  // namespace
}  // namespace simhash
