// All pairs of fingerprints within Hamming distance k, without comparing every pair.
//
// Split the 64 bits into m = k + r blocks. Two fingerprints that differ in at most k bits
// differ in at most k blocks, so at least r blocks agree exactly (pigeonhole). For every
// choice of r blocks out of m (a "table") the fingerprints are sorted by those blocks, and
// only fingerprints with equal keys are compared. A pair that agrees on several choices is
// reported only by the first of them in lexicographic order, so each pair comes out once.
// r trades the number of tables, C(m, r), against the size of the groups compared; it is
// chosen by a cost model from n and k (or given).
#pragma once
#include "core/no_postgres.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace simhash {

inline constexpr int kMaxPairDistance = 16;

struct PairLayout {
  int k = 0;       // largest distance reported
  int agree = 1;   // r: blocks that must agree
  int blocks = 1;  // m = k + r
  std::vector<std::uint64_t> block_masks;      // bits of each block
  std::vector<std::vector<int>> combinations;  // each table's r blocks, lexicographic
};

// The layout with the smallest estimated cost for n random fingerprints. Throws
// std::invalid_argument when k is outside 0..kMaxPairDistance.
PairLayout choose_pair_layout(std::size_t n, int k);

// The layout for k with r agreeing blocks. Throws std::invalid_argument when out of range.
PairLayout make_pair_layout(int k, int agree);

// Calls emit(i, j, distance) with i < j for every pair of fps[] within layout.k bits,
// each pair exactly once. Identical fingerprints are pairs at distance 0.
void for_each_near_pair(const std::uint64_t* fps, std::size_t n, const PairLayout& layout,
                        const std::function<void(std::size_t, std::size_t, int)>& emit);

}  // namespace simhash
