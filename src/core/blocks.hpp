// Fingerprint -> block keys, and the probes that find every fingerprint within Hamming
// distance k of a query through exact lookups on block keys.
//
// A layout splits the 64 bits into `blocks` contiguous ranges, block i holding bits
// [64 i / blocks, 64 (i + 1) / blocks): 2 blocks of 32 bits, 3 of 21, 21 and 22, 4 of 16...
// Each block's value is a key of a B-tree index.
//
// Multi-index hashing (Norouzi et al. 2012; the pigeonhole principle of Manku et al. 2007
// is its special case with radius 0 everywhere): if two fingerprints differ in at most k
// bits, d_0 + ... + d_{m-1} <= k where d_i is their distance within block i. Give every
// block a radius r_i >= -1 (-1: not probed) with sum(r_i + 1) >= k + 1. Were d_i > r_i for
// every block, the sum would be at least k + 1; so some block has d_i <= r_i, and probing
// block i with every value within r_i of the query's block finds the fingerprint. The
// radii that minimise probes plus candidates are chosen per query by plan_probes().
#pragma once
#include <cstdint>
#include <vector>

#include "core/no_postgres.hpp"

namespace simhash {

inline constexpr int kMinBlocks = 2;
inline constexpr int kMaxBlocks = 16;

// First bit and width of block i of a layout of `blocks` blocks (no range checks).
inline int block_low_bit(int blocks, int i) noexcept { return 64 * i / blocks; }
inline int block_width(int blocks, int i) noexcept {
  return 64 * (i + 1) / blocks - 64 * i / blocks;
}

// The value of block i: its bits moved down to bit 0 (at most 32 bits for blocks >= 2).
inline std::uint32_t block_value(std::uint64_t fp, int blocks, int i) noexcept {
  const int w = block_width(blocks, i);
  return static_cast<std::uint32_t>((fp >> block_low_bit(blocks, i)) &
                                    ((std::uint64_t{1} << w) - 1));
}

// Throws std::invalid_argument unless kMinBlocks <= blocks <= kMaxBlocks and
// 0 <= i < blocks.
void check_block(int blocks, int i);

// Number of values within Hamming distance `radius` of a value of `width` bits:
// sum of C(width, d) for d = 0..radius (0 for radius < 0), saturating at UINT64_MAX.
std::uint64_t probe_count(int width, int radius) noexcept;

// Every value of `width` bits within Hamming distance `radius` of `value`, in ascending
// order. Throws std::invalid_argument when there would be more than `limit` of them.
std::vector<std::uint32_t> probe_values(std::uint32_t value, int width, int radius,
                                        std::uint64_t limit);

// What one probe and one candidate cost, in the same (arbitrary) unit.
struct ProbeCosts {
  double probe = 1.0;      // one index descent
  double candidate = 1.0;  // one row fetched and rechecked
};

struct ProbePlan {
  std::vector<int> radius;   // per block; -1: not probed
  std::uint64_t probes = 0;  // index descents
  double candidates = 0;     // expected rows fetched (random fingerprints)
  double cost = 0;           // probes * cost.probe + candidates * cost.candidate
  bool feasible = false;     // false: the blocks cannot cover k (sum of width + 1 <= k)
};

// The radii for distance k over the blocks present (present[i] for block i of `blocks`)
// of a table of `rows` rows that minimise the expected cost; greedy over marginal costs,
// which is optimal because each block's cost is convex in its radius.
ProbePlan plan_probes(int blocks, const std::vector<bool>& present, int k, double rows,
                      const ProbeCosts& costs = {});

// The number of blocks a layout made for distances up to max_distance should have, for a
// table of about `rows` rows: the one with the smallest expected cost at max_distance
// among those whose cost at distance 3 stays within a small factor of the best possible.
int choose_blocks(int max_distance, double rows, const ProbeCosts& costs = {});

}  // namespace simhash
