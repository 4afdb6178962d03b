// Connected components of the near-duplicate graph, in memory the caller owns.
//
// Rows are numbered 0..n-1 (n < 2^31). A union-find over one uint32 per row merges the
// pairs as they come (the root of a set is its smallest row number, so parent[x] <= x
// always); label_clusters() then rewrites the same array in place so that the sets of two
// or more rows are numbered 0..C-1 in the order of their first row, and cluster_of() reads
// a row's cluster. A cluster is named by its member with the smallest id, found in one
// pass over the rows (ClusterRep), so the name never depends on the order of the pairs.
// Memory: 4 bytes per row, plus a ClusterRep (16 bytes) per cluster of two or more rows.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "core/near_pairs.hpp"
#include "core/no_postgres.hpp"

namespace simhash {

// Rows a union-find can hold: the top bit of an entry marks a cluster number.
inline constexpr std::size_t kMaxClusterRows = 0x7FFFFFFF;
inline constexpr std::uint32_t kClusterFlag = 0x80000000U;
// cluster_of() of a row that has no near duplicate.
inline constexpr std::uint32_t kNoCluster = 0xFFFFFFFFU;

inline void union_find_init(std::uint32_t* parent, std::size_t n) {
  if (n > kMaxClusterRows) throw std::invalid_argument("too many rows to cluster in one call");
  for (std::size_t i = 0; i < n; ++i) parent[i] = static_cast<std::uint32_t>(i);
}

inline std::uint32_t union_find_root(std::uint32_t* parent, std::uint32_t x) noexcept {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];  // path halving
    x = parent[x];
  }
  return x;
}

inline void union_find_unite(std::uint32_t* parent, std::uint32_t a, std::uint32_t b) noexcept {
  a = union_find_root(parent, a);
  b = union_find_root(parent, b);
  if (a < b) {
    parent[b] = a;
  } else if (b < a) {
    parent[a] = b;
  }
}

// Rewrites the union-find into cluster labels and returns the number of clusters (sets of
// at least two rows). Afterwards only cluster_of() may read the array.
inline std::size_t label_clusters(std::uint32_t* parent, std::size_t n) noexcept {
  // parent[i] <= i and the parent's entry is final already: one ascending pass flattens.
  for (std::size_t i = 0; i < n; ++i) parent[i] = parent[parent[i]];
  // Flag the roots that have members.
  for (std::size_t i = 0; i < n; ++i) {
    if (parent[i] != i) parent[parent[i]] |= kClusterFlag;
  }
  // Number them: a flagged root's entry becomes flag | number; members keep their root.
  std::uint32_t clusters = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (parent[i] & kClusterFlag) parent[i] = kClusterFlag | clusters++;
  }
  return clusters;
}

// The cluster of row i after label_clusters(), or kNoCluster.
inline std::uint32_t cluster_of(const std::uint32_t* labels, std::size_t i) noexcept {
  const std::uint32_t v = labels[i];
  if (v & kClusterFlag) return v & ~kClusterFlag;  // a root
  if (v == i) return kNoCluster;                   // alone
  return labels[v] & ~kClusterFlag;                // a member: v is its root
}

// A cluster's name (its smallest id) and that row's fingerprint. Same layout as the C
// ABI's simhash_cluster_rep.
struct ClusterRep {
  std::int64_t id;
  std::uint64_t fp;
};

// Before collecting: every representative unset (id INT64_MAX, replaced by any member).
inline void reset_cluster_reps(ClusterRep* reps, std::size_t clusters) noexcept {
  for (std::size_t c = 0; c < clusters; ++c) reps[c] = ClusterRep{INT64_MAX, 0};
}

// Takes rows first..first+count-1 (ids[], fps[] indexed from 0) into their clusters'
// representatives: the smallest id wins. Rows may come in any batches, in any order.
inline void collect_cluster_reps(const std::uint32_t* labels, std::size_t first,
                                 const std::int64_t* ids, const std::uint64_t* fps,
                                 std::size_t count, ClusterRep* reps) noexcept {
  for (std::size_t r = 0; r < count; ++r) {
    const std::uint32_t c = cluster_of(labels, first + r);
    if (c == kNoCluster) continue;
    // (<= so that a member with id INT64_MAX still sets the fingerprint of an unset one)
    if (ids[r] <= reps[c].id) reps[c] = ClusterRep{ids[r], fps[r]};
  }
}

// For every fingerprint, the smallest id in its connected component of the graph whose
// edges are the pairs within layout.k bits (a chain a-b-c is one cluster even when a and
// c are farther apart than k); a row with no near duplicate names itself.
inline std::vector<std::int64_t> cluster_ids(const std::int64_t* ids, const std::uint64_t* fps,
                                             std::size_t n, const PairLayout& layout) {
  std::vector<std::uint32_t> labels(n);
  union_find_init(labels.data(), n);
  for_each_near_pair(fps, n, layout, [&](std::size_t i, std::size_t j, int) {
    union_find_unite(labels.data(), static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j));
  });
  const std::size_t clusters = label_clusters(labels.data(), n);
  std::vector<ClusterRep> reps(clusters);
  reset_cluster_reps(reps.data(), clusters);
  collect_cluster_reps(labels.data(), 0, ids, fps, n, reps.data());
  std::vector<std::int64_t> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t c = cluster_of(labels.data(), i);
    out[i] = c == kNoCluster ? ids[i] : reps[c].id;
  }
  return out;
}

}  // namespace simhash
