// The C ABI of all pairs and clusters, used the way the PostgreSQL glue uses it: whole
// input in memory, and partitioned by key as when the input does not fit.
#include "capi/pairs_capi.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/clusters.hpp"
#include "core/hamming.hpp"
#include "core/near_pairs.hpp"

namespace {

using Pair = std::tuple<std::int64_t, std::int64_t, int>;

std::vector<std::uint64_t> random_with_neighbours(std::size_t base, int k, std::mt19937_64& rng) {
  std::vector<std::uint64_t> fps;
  for (std::size_t i = 0; i < base; ++i) {
    std::uint64_t f = rng();
    fps.push_back(f);
    if (i % 4 == 0) {  // a chain, steps of k bits (at most)
      for (int s = 0; s < 3; ++s) {
        for (int b = 0; b < k; ++b) f ^= std::uint64_t{1} << (rng() % 64);
        fps.push_back(f);
      }
    }
    if (i % 9 == 0) fps.push_back(fps.back());
  }
  std::shuffle(fps.begin(), fps.end(), rng);
  return fps;
}

std::vector<Pair> brute_force(const std::vector<std::int64_t>& ids,
                              const std::vector<std::uint64_t>& fps, int k) {
  std::vector<Pair> out;
  for (std::size_t i = 0; i < fps.size(); ++i) {
    for (std::size_t j = i + 1; j < fps.size(); ++j) {
      const int d = simhash::hamming(fps[i], fps[j]);
      if (d <= k) out.emplace_back(std::min(ids[i], ids[j]), std::max(ids[i], ids[j]), d);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

struct Finder {
  simhash_pair_iter iter;
  std::vector<std::uint64_t> workspace;
};

// Runs a finder through the C ABI over fps and tables [t0, t1); calls on_pairs per batch.
template <class OnPairs>
void run_finder(const simhash_pair_plan& plan, const std::vector<std::uint64_t>& fps,
                std::uint32_t t0, std::uint32_t t1, OnPairs on_pairs) {
  char err[128];
  std::size_t bytes = 0;
  ASSERT_EQ(simhash_pair_workspace_bytes(&plan, fps.size(), t0, t1, &bytes, err, sizeof(err)),
            SIMHASH_OK)
      << err;
  Finder f;
  f.workspace.resize(bytes / 8 + 1);
  ASSERT_EQ(simhash_pair_iter_begin(&f.iter, &plan, fps.data(), fps.size(), t0, t1,
                                    f.workspace.data(), bytes, err, sizeof(err)),
            SIMHASH_OK)
      << err;
  simhash_pair buffer[33];
  for (int32_t finished = 0; !finished;) {
    std::size_t count = 0;
    ASSERT_EQ(simhash_pair_iter_next(&f.iter, buffer, 33, 777, &count, &finished, err, sizeof(err)),
              SIMHASH_OK);
    on_pairs(buffer, count);
  }
}

TEST(PairsCapi, InMemoryEqualsBruteForce) {
  char err[128];
  for (int k = 0; k <= 8; ++k) {
    std::mt19937_64 rng(31 + k);
    const auto fps = random_with_neighbours(120, k, rng);
    std::vector<std::int64_t> ids(fps.size());
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = 1000 - 3 * static_cast<std::int64_t>(i);
    simhash_pair_plan plan;
    ASSERT_EQ(simhash_pair_plan_init(&plan, fps.size(), k, err, sizeof(err)), SIMHASH_OK);
    std::uint32_t tables = 0;
    simhash_pair_plan_shape(&plan, &tables, nullptr, nullptr);
    std::vector<Pair> got;
    run_finder(plan, fps, 0, tables, [&](const simhash_pair* p, std::size_t n) {
      for (std::size_t x = 0; x < n; ++x) {
        const std::int64_t a = ids[p[x].i], b = ids[p[x].j];
        got.emplace_back(std::min(a, b), std::max(a, b), p[x].distance);
      }
    });
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, brute_force(ids, fps, k)) << "k=" << k;
  }
}

// The glue's spill mode: for every table, rows go into partitions by the top bits of the
// table's key (recursively, when a partition is still too big), each partition is searched
// on its own, and clusters are merged through the partition's row numbers.
TEST(PairsCapi, PartitionedPairsAndClustersEqualBruteForce) {
  char err[128];
  for (int k : {0, 1, 3, 5, 8}) {
    std::mt19937_64 rng(77 + k);
    const auto fps = random_with_neighbours(200, k, rng);
    const std::size_t n = fps.size();
    std::vector<std::int64_t> ids(n);
    for (std::size_t i = 0; i < n; ++i)
      ids[i] = static_cast<std::int64_t>(rng() % 1000000) * 1000 + static_cast<std::int64_t>(i);
    simhash_pair_plan plan;
    ASSERT_EQ(simhash_pair_plan_init(&plan, n, k, err, sizeof(err)), SIMHASH_OK);
    std::uint32_t tables = 0;
    simhash_pair_plan_shape(&plan, &tables, nullptr, nullptr);
    std::vector<std::uint32_t> parent(n);
    ASSERT_EQ(simhash_clusters_init(parent.data(), n, err, sizeof(err)), SIMHASH_OK);
    std::vector<Pair> got;
    const std::size_t fit = 40;  // rows a partition may hold
    for (std::uint32_t t = 0; t < tables; ++t) {
      const int width = simhash_pair_table_key_bits(&plan, t);
      ASSERT_GT(width, 0);
      std::vector<std::uint64_t> keys(n);
      ASSERT_EQ(simhash_pair_table_keys(&plan, t, fps.data(), n, keys.data(), err, sizeof(err)),
                SIMHASH_OK);
      // (rows, bits of the key used so far)
      std::vector<std::pair<std::vector<std::uint64_t>, int>> stack;
      std::vector<std::uint64_t> all(n);
      for (std::size_t i = 0; i < n; ++i) all[i] = i;
      stack.emplace_back(all, 0);
      while (!stack.empty()) {
        auto [rows, used] = stack.back();
        stack.pop_back();
        if (rows.size() > fit && used < width) {
          const int bits = std::min(2, width - used);
          std::map<std::uint64_t, std::vector<std::uint64_t>> parts;
          for (std::uint64_t r : rows) {
            parts[(keys[r] >> (width - used - bits)) & ((std::uint64_t{1} << bits) - 1)].push_back(
                r);
          }
          for (auto& [p, sub] : parts) stack.emplace_back(sub, used + bits);
          continue;
        }
        std::vector<std::uint64_t> sub;
        for (std::uint64_t r : rows) sub.push_back(fps[r]);
        run_finder(plan, sub, t, t + 1, [&](const simhash_pair* p, std::size_t count) {
          for (std::size_t x = 0; x < count; ++x) {
            const std::int64_t a = ids[rows[p[x].i]], b = ids[rows[p[x].j]];
            got.emplace_back(std::min(a, b), std::max(a, b), p[x].distance);
          }
          ASSERT_EQ(
              simhash_clusters_unite(parent.data(), n, p, count, rows.data(), err, sizeof(err)),
              SIMHASH_OK);
        });
      }
    }
    std::sort(got.begin(), got.end());
    const auto expected = brute_force(ids, fps, k);
    EXPECT_EQ(got, expected) << "k=" << k;

    // clusters: label, then representatives in batches, as the glue reads its rows file
    std::size_t clusters = 0;
    ASSERT_EQ(simhash_clusters_label(parent.data(), n, &clusters, err, sizeof(err)), SIMHASH_OK);
    std::vector<simhash_cluster_rep> reps(clusters);
    for (std::size_t first = 0; first < n; first += 50) {
      const std::size_t count = std::min<std::size_t>(50, n - first);
      ASSERT_EQ(
          simhash_clusters_collect(parent.data(), n, first, ids.data() + first, fps.data() + first,
                                   count, reps.data(), clusters, err, sizeof(err)),
          SIMHASH_OK);
    }
    std::vector<std::uint32_t> of(n);
    ASSERT_EQ(simhash_clusters_lookup(parent.data(), n, 0, n, of.data(), err, sizeof(err)),
              SIMHASH_OK);
    // reference: relax labels over the brute-force edges until nothing changes
    std::map<std::int64_t, std::int64_t> label;
    for (auto id : ids) label[id] = id;
    for (bool changed = true; changed;) {
      changed = false;
      for (const auto& [a, b, d] : expected) {
        const std::int64_t m = std::min(label[a], label[b]);
        if (label[a] != m || label[b] != m) {
          label[a] = label[b] = m;
          changed = true;
        }
      }
    }
    std::set<std::int64_t> with_neighbours;
    for (const auto& [a, b, d] : expected) {
      with_neighbours.insert(a);
      with_neighbours.insert(b);
    }
    for (std::size_t i = 0; i < n; ++i) {
      if (with_neighbours.count(ids[i]) == 0) {
        EXPECT_EQ(of[i], SIMHASH_NO_CLUSTER);
        continue;
      }
      ASSERT_LT(of[i], clusters);
      EXPECT_EQ(reps[of[i]].id, label[ids[i]]);
      const auto at = std::find(ids.begin(), ids.end(), reps[of[i]].id) - ids.begin();
      EXPECT_EQ(reps[of[i]].fp, fps[at]);
    }
  }
}

TEST(PairsCapi, InvalidArgumentsAreStatusesWithMessages) {
  char err[128];
  simhash_pair_plan plan;
  EXPECT_EQ(simhash_pair_plan_init(&plan, 10, -1, err, sizeof(err)), SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(err), "max_distance must be between 0 and 16, got -1");
  EXPECT_EQ(simhash_pair_plan_init(&plan, 10, 17, err, sizeof(err)), SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(simhash_pair_plan_init(nullptr, 10, 3, err, sizeof(err)), SIMHASH_INVALID_ARGUMENT);
  ASSERT_EQ(simhash_pair_plan_init(&plan, 10, 3, err, sizeof(err)), SIMHASH_OK);
  std::uint32_t tables = 0;
  simhash_pair_plan_shape(&plan, &tables, nullptr, nullptr);
  EXPECT_EQ(simhash_pair_table_key_bits(&plan, tables), 0);
  std::size_t bytes = 0;
  EXPECT_EQ(simhash_pair_workspace_bytes(&plan, 10, 0, tables + 1, &bytes, err, sizeof(err)),
            SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(simhash_pair_workspace_bytes(&plan, std::size_t{1} << 33, 0, tables, &bytes, err,
                                         sizeof(err)),
            SIMHASH_INVALID_ARGUMENT);
  ASSERT_EQ(simhash_pair_workspace_bytes(&plan, 10, 0, tables, &bytes, err, sizeof(err)),
            SIMHASH_OK);
  std::vector<std::uint64_t> fps(10, 7), space(bytes / 8 + 2);
  simhash_pair_iter iter;
  EXPECT_EQ(simhash_pair_iter_begin(&iter, &plan, fps.data(), 10, 0, tables, space.data(),
                                    bytes - 8, err, sizeof(err)),
            SIMHASH_INVALID_ARGUMENT);
  EXPECT_NE(std::string(err).find("workspace too small"), std::string::npos);
  EXPECT_EQ(
      simhash_pair_iter_begin(&iter, &plan, fps.data(), 10, 0, tables,
                              reinterpret_cast<char*>(space.data()) + 4, bytes, err, sizeof(err)),
      SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(simhash_pair_iter_begin(&iter, &plan, nullptr, 10, 0, tables, space.data(), bytes, err,
                                    sizeof(err)),
            SIMHASH_INVALID_ARGUMENT);
  ASSERT_EQ(simhash_pair_iter_begin(&iter, &plan, fps.data(), 10, 0, tables, space.data(), bytes,
                                    err, sizeof(err)),
            SIMHASH_OK);
  std::size_t count = 0;
  int32_t finished = 0;
  EXPECT_EQ(simhash_pair_iter_next(&iter, nullptr, 5, 100, &count, &finished, err, sizeof(err)),
            SIMHASH_INVALID_ARGUMENT);
  // 10 identical fingerprints: all 45 pairs at distance 0, through a one-pair buffer
  std::size_t total = 0;
  simhash_pair one;
  for (finished = 0; !finished;) {
    ASSERT_EQ(simhash_pair_iter_next(&iter, &one, 1, 1000, &count, &finished, err, sizeof(err)),
              SIMHASH_OK);
    if (count) {
      EXPECT_EQ(one.distance, 0);
    }
    total += count;
  }
  EXPECT_EQ(total, 45u);
  std::vector<std::uint32_t> parent(4);
  EXPECT_EQ(simhash_clusters_init(parent.data(), 4, err, sizeof(err)), SIMHASH_OK);
  const simhash_pair bad = {0, 4, 0};
  EXPECT_EQ(simhash_clusters_unite(parent.data(), 4, &bad, 1, nullptr, err, sizeof(err)),
            SIMHASH_INVALID_ARGUMENT);
  std::uint32_t out[2];
  EXPECT_EQ(simhash_clusters_lookup(parent.data(), 4, 3, 2, out, err, sizeof(err)),
            SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(
      simhash_clusters_init(nullptr, std::size_t{SIMHASH_MAX_CLUSTER_ROWS} + 1, err, sizeof(err)),
      SIMHASH_INVALID_ARGUMENT);
}

TEST(PairsCapi, DuplicateIdsDenseAndSparse) {
  char err[128];
  auto check = [&](std::vector<std::int64_t> ids, bool expect_found, std::int64_t expect_dup) {
    std::vector<std::uint64_t> space(simhash_duplicate_id_workspace_bytes(ids.size()) / 8 + 1);
    const auto copy = ids;
    int32_t found = -1;
    std::int64_t dup = 0;
    ASSERT_EQ(simhash_find_duplicate_id(ids.data(), ids.size(), space.data(), space.size() * 8,
                                        &found, &dup, err, sizeof(err)),
              SIMHASH_OK);
    EXPECT_EQ(found, expect_found ? 1 : 0);
    if (expect_found) {
      EXPECT_EQ(dup, expect_dup);
    }
    EXPECT_EQ(ids, copy);
  };
  check({}, false, 0);
  check({5}, false, 0);
  check({1, 2, 3, 4, 5, 6}, false, 0);
  check({6, 2, 3, 9, 2, 6}, true, 2);  // dense: a bitmap
  check({-5, -4, -5}, true, -5);
  check({INT64_MIN, INT64_MAX, 0}, false, 0);  // sparse: sorted
  check({INT64_MAX, INT64_MIN, 17, INT64_MIN, INT64_MAX}, true, INT64_MIN);
  std::mt19937_64 rng(5);
  std::vector<std::int64_t> big(100000);
  for (auto& v : big) v = static_cast<std::int64_t>(rng());
  check(big, false, 0);
  big[777] = big[99999];
  check(big, true, big[777]);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<std::int64_t>(i * 3);
  check(big, false, 0);
  big[5] = 3;
  check(big, true, 3);
  std::vector<std::int64_t> two = {1, 1};
  std::uint64_t small[2];
  int32_t found = 0;
  std::int64_t dup = 0;
  EXPECT_EQ(simhash_find_duplicate_id(two.data(), 2, small, sizeof(small), &found, &dup, err,
                                      sizeof(err)),
            SIMHASH_INVALID_ARGUMENT);
}

}  // namespace
