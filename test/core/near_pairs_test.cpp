#include "core/near_pairs.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
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
  EXPECT_THROW(make_pair_layout(3, kMaxAgreeingBlocks + 1), std::invalid_argument);
  const PairLayout l = make_pair_layout(3, 2);
  EXPECT_EQ(l.blocks, 5);
  EXPECT_EQ(l.tables, 10u);
  std::uint64_t all = 0;
  for (int b = 0; b < l.blocks; ++b) {
    EXPECT_EQ(all & l.block_masks[b], 0u);
    all |= l.block_masks[b];
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

// The pairs of a finder over tables [t0, t1), drained with the given output capacity and
// work budget per call; rows are mapped through row_of when given.
std::vector<Pair> drain(const std::vector<std::uint64_t>& fps, const PairLayout& layout,
                        std::uint32_t t0, std::uint32_t t1, std::size_t capacity, std::size_t work,
                        const std::vector<std::size_t>* row_of = nullptr) {
  const std::size_t bytes = NearPairFinder::workspace_bytes(layout, fps.size(), t0, t1);
  std::vector<std::uint64_t> workspace(bytes / 8 + 1);
  NearPairFinder finder(layout, fps.data(), fps.size(), t0, t1, workspace.data(), bytes);
  std::vector<NearPair> buffer(capacity);
  std::vector<Pair> out;
  std::size_t calls = 0;
  while (!finder.done()) {
    const std::size_t got = finder.next(buffer.data(), capacity, work);
    EXPECT_LE(got, capacity);
    for (std::size_t p = 0; p < got; ++p) {
      std::size_t i = buffer[p].i, j = buffer[p].j;
      EXPECT_LT(i, j);
      if (row_of) {
        i = (*row_of)[i];
        j = (*row_of)[j];
        if (i > j) std::swap(i, j);
      }
      out.emplace_back(i, j, buffer[p].distance);
    }
    const double f = finder.table_fraction();
    EXPECT_GE(f, 0.0);
    EXPECT_LE(f, 1.0);
    if (++calls > 100000000) {
      ADD_FAILURE() << "no progress";
      break;
    }
  }
  EXPECT_EQ(finder.next(buffer.data(), capacity, work), 0u);
  return out;
}

std::vector<Pair> sorted(std::vector<Pair> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(NearPairFinder, ResumesAfterAnyOutputCapacityAndWorkBudget) {
  for (int k : {0, 2, 3, 6}) {
    std::mt19937_64 rng(500 + k);
    auto fps = planted(150, k, rng);
    for (int c = 0; c < 12; ++c) fps.push_back(fps[0]);  // a big group of identical ones
    const auto expected = brute_force(fps, k);
    const PairLayout layout = choose_pair_layout(fps.size(), k);
    for (std::size_t capacity : {1, 2, 7, 1000}) {
      for (std::size_t work : {1, 3, 50, 100000}) {
        EXPECT_EQ(sorted(drain(fps, layout, 0, layout.tables, capacity, work)), expected)
            << "k=" << k << " capacity=" << capacity << " work=" << work;
      }
    }
  }
}

TEST(NearPairFinder, TablesSplitTheWorkWithoutOverlap) {
  for (int k = 0; k <= 8; ++k) {
    std::mt19937_64 rng(900 + k);
    const auto fps = planted(200, k, rng);
    for (int r = 1; r <= 3; ++r) {
      const PairLayout layout = make_pair_layout(k, r);
      std::vector<Pair> all;
      for (std::uint32_t t = 0; t < layout.tables; ++t) {
        const auto part = drain(fps, layout, t, t + 1, 64, 1000);
        all.insert(all.end(), part.begin(), part.end());
      }
      EXPECT_EQ(sorted(all), brute_force(fps, k)) << "k=" << k << " r=" << r;
    }
  }
}

// What the PostgreSQL glue does with more rows than memory: one table at a time, rows split
// by some bits of the table's key into partitions, a finder per partition over that table.
TEST(NearPairFinder, KeyPartitionsOfEachTableFindEveryPairOnce) {
  for (int k = 0; k <= 8; ++k) {
    for (unsigned seed = 1; seed <= 3; ++seed) {
      std::mt19937_64 rng(seed * 77 + k);
      const auto fps = planted(250, k, rng);
      const PairLayout layout = choose_pair_layout(1000000, k);  // planned for the whole input
      std::vector<Pair> all;
      for (std::uint32_t t = 0; t < layout.tables; ++t) {
        const int width = table_key_bits(layout, t);
        std::vector<std::uint64_t> keys(fps.size());
        table_keys(layout, t, fps.data(), fps.size(), keys.data());
        // partitions by the top 1..6 bits of the key, or by all of it (one key per part)
        const int bits = std::min(width, static_cast<int>(1 + (seed + t) % 6));
        const int shift = seed == 3 ? 0 : width - bits;
        std::map<std::uint64_t, std::vector<std::size_t>> parts;
        for (std::size_t i = 0; i < fps.size(); ++i) parts[keys[i] >> shift].push_back(i);
        for (const auto& [part, rows] : parts) {
          std::vector<std::uint64_t> sub;
          for (std::size_t row : rows) sub.push_back(fps[row]);
          const auto found = drain(sub, layout, t, t + 1, 5, 40, &rows);
          all.insert(all.end(), found.begin(), found.end());
        }
      }
      EXPECT_EQ(sorted(all), brute_force(fps, k)) << "k=" << k << " seed=" << seed;
    }
  }
}

TEST(NearPairFinder, TableBlocksAreTheCombinationsInLexicographicOrder) {
  for (int k : {0, 1, 3, 6, 16}) {
    for (int r = 1; r <= 4; ++r) {
      const PairLayout layout = make_pair_layout(k, r);
      std::vector<int> current;
      std::vector<std::vector<int>> expected;
      std::function<void(int)> rec = [&](int start) {
        if (static_cast<int>(current.size()) == r) {
          expected.push_back(current);
          return;
        }
        for (int b = start; b < layout.blocks; ++b) {
          current.push_back(b);
          rec(b + 1);
          current.pop_back();
        }
      };
      rec(0);
      ASSERT_EQ(expected.size(), layout.tables) << "k=" << k << " r=" << r;
      for (std::uint32_t t = 0; t < layout.tables; ++t) {
        int blocks[kMaxAgreeingBlocks];
        table_blocks(layout, t, blocks);
        EXPECT_EQ(std::vector<int>(blocks, blocks + r), expected[t]);
        int width = 0;
        std::uint64_t mask = 0;
        for (int b : expected[t]) {
          width += __builtin_popcountll(layout.block_masks[b]);
          mask |= layout.block_masks[b];
        }
        EXPECT_EQ(table_key_bits(layout, t), width);
        // equal keys exactly when the table's bits agree
        std::mt19937_64 rng(t);
        for (int trial = 0; trial < 20; ++trial) {
          std::uint64_t f[2] = {rng(), 0};
          f[1] = trial % 2 ? (f[0] ^ (rng() & ~mask)) : rng();
          std::uint64_t keys[2];
          table_keys(layout, t, f, 2, keys);
          EXPECT_EQ(keys[0] == keys[1], ((f[0] ^ f[1]) & mask) == 0);
          EXPECT_LT(keys[0], width == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width));
        }
      }
      EXPECT_THROW(table_blocks(layout, layout.tables, nullptr), std::invalid_argument);
    }
  }
}

TEST(NearPairFinder, WorkspaceIsAtMostTwentyFourBytesARow) {
  for (std::size_t n : {0, 1, 2, 1000, 100000, 3000000}) {
    for (int k = 0; k <= 8; ++k) {
      const PairLayout layout = choose_pair_layout(n, k);
      const std::size_t bytes = NearPairFinder::workspace_bytes(layout, n, 0, layout.tables);
      EXPECT_LE(bytes, 24 * n) << "n=" << n << " k=" << k;
    }
  }
  const PairLayout layout = choose_pair_layout(10, 3);
  EXPECT_THROW(NearPairFinder::workspace_bytes(layout, 10, 2, 1), std::invalid_argument);
  EXPECT_THROW(NearPairFinder::workspace_bytes(layout, 10, 0, layout.tables + 1),
               std::invalid_argument);
  std::vector<std::uint64_t> fps(10, 1), space(1);
  EXPECT_THROW(NearPairFinder(layout, fps.data(), fps.size(), 0, layout.tables, space.data(), 8),
               std::invalid_argument);
}

TEST(NearPairFinder, ReportsProgressTableByTable) {
  std::mt19937_64 rng(3);
  std::vector<std::uint64_t> fps(5000);
  for (auto& f : fps) f = rng();
  const PairLayout layout = make_pair_layout(3, 2);
  const std::size_t bytes = NearPairFinder::workspace_bytes(layout, fps.size(), 0, layout.tables);
  std::vector<std::uint64_t> workspace(bytes / 8 + 1);
  NearPairFinder finder(layout, fps.data(), fps.size(), 0, layout.tables, workspace.data(), bytes);
  std::vector<NearPair> buffer(16);
  std::uint32_t last_table = 0;
  double last_fraction = 0;
  while (!finder.done()) {
    finder.next(buffer.data(), buffer.size(), 500);
    if (finder.done()) break;
    ASSERT_GE(finder.table(), last_table);
    if (finder.table() == last_table) {
      EXPECT_GE(finder.table_fraction(), last_fraction);
    }
    last_table = finder.table();
    last_fraction = finder.table_fraction();
  }
  EXPECT_EQ(finder.table(), layout.tables);
}

TEST(Clusters, LabelsNumberTheSetsOfTwoOrMoreInOrderOfTheirFirstRow) {
  std::vector<std::uint32_t> p(8);
  union_find_init(p.data(), p.size());
  union_find_unite(p.data(), 6, 3);
  union_find_unite(p.data(), 1, 7);
  union_find_unite(p.data(), 7, 3);  // {1, 3, 6, 7}
  union_find_unite(p.data(), 5, 4);  // {4, 5}
  EXPECT_EQ(label_clusters(p.data(), p.size()), 2u);
  const std::vector<std::uint32_t> expected = {kNoCluster, 0, kNoCluster, 0, 1, 1, 0, 0};
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_EQ(cluster_of(p.data(), i), expected[i]) << i;
  EXPECT_THROW(union_find_init(nullptr, kMaxClusterRows + 1), std::invalid_argument);
}

TEST(Clusters, RepresentativesAreTheSmallestIdWhateverTheBatches) {
  for (int k : {0, 3, 6}) {
    std::mt19937_64 rng(4242 + k);
    const auto fps = planted(300, k, rng);
    std::vector<std::int64_t> ids(fps.size());
    for (auto& id : ids) id = static_cast<std::int64_t>(rng());  // negative ones too
    const auto expected =
        cluster_ids(ids.data(), fps.data(), fps.size(), choose_pair_layout(fps.size(), k));
    std::vector<std::uint32_t> labels(fps.size());
    union_find_init(labels.data(), labels.size());
    for (const auto& [i, j, d] : brute_force(fps, k)) {
      union_find_unite(labels.data(), static_cast<std::uint32_t>(j), static_cast<std::uint32_t>(i));
    }
    const std::size_t clusters = label_clusters(labels.data(), labels.size());
    std::vector<ClusterRep> reps(clusters);
    reset_cluster_reps(reps.data(), clusters);
    for (std::size_t first = 0; first < fps.size(); first += 37) {
      const std::size_t count = std::min<std::size_t>(37, fps.size() - first);
      collect_cluster_reps(labels.data(), first, ids.data() + first, fps.data() + first, count,
                           reps.data());
    }
    for (std::size_t i = 0; i < fps.size(); ++i) {
      const std::uint32_t c = cluster_of(labels.data(), i);
      EXPECT_EQ(c == kNoCluster ? ids[i] : reps[c].id, expected[i]);
      if (c != kNoCluster) {
        const auto at = std::find(ids.begin(), ids.end(), reps[c].id) - ids.begin();
        EXPECT_EQ(reps[c].fp, fps[at]);
      }
    }
  }
}

}  // namespace
}  // namespace simhash
