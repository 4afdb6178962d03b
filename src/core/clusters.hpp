// Connected components of the near-duplicate graph.
#pragma once
#include "core/no_postgres.hpp"

#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

#include "core/near_pairs.hpp"

namespace simhash {

// Disjoint sets over 0..n-1 with path halving; the root of a set is the element with the
// smallest key (keys[] given at construction), so a set's name never depends on the order
// in which pairs arrive.
class UnionFind {
 public:
  explicit UnionFind(const std::int64_t* keys, std::size_t n) : keys_(keys), parent_(n) {
    std::iota(parent_.begin(), parent_.end(), std::size_t{0});
  }
  std::size_t find(std::size_t x) noexcept {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  void unite(std::size_t a, std::size_t b) noexcept {
    a = find(a);
    b = find(b);
    if (a == b) return;
    if (keys_[b] < keys_[a] || (keys_[b] == keys_[a] && b < a)) std::swap(a, b);
    parent_[b] = a;
  }

 private:
  const std::int64_t* keys_;
  std::vector<std::size_t> parent_;
};

// For every fingerprint, the smallest id in its connected component of the graph whose
// edges are the pairs within layout.k bits (a chain a-b-c is one cluster even when a and
// c are farther apart than k).
inline std::vector<std::int64_t> cluster_ids(const std::int64_t* ids, const std::uint64_t* fps,
                                             std::size_t n, const PairLayout& layout) {
  UnionFind uf(ids, n);
  for_each_near_pair(fps, n, layout, [&](std::size_t i, std::size_t j, int) { uf.unite(i, j); });
  std::vector<std::int64_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = ids[uf.find(i)];
  return out;
}

}  // namespace simhash
