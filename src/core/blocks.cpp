#include "core/blocks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace simhash {

void check_block(int blocks, int i) {
  if (blocks < kMinBlocks || blocks > kMaxBlocks) {
    throw std::invalid_argument("blocks must be between " + std::to_string(kMinBlocks) + " and " +
                                std::to_string(kMaxBlocks) + ", got " + std::to_string(blocks));
  }
  if (i < 0 || i >= blocks) {
    throw std::invalid_argument("block must be between 0 and " + std::to_string(blocks - 1) +
                                " for a layout of " + std::to_string(blocks) + " blocks, got " +
                                std::to_string(i));
  }
}

std::uint64_t probe_count(int width, int radius) noexcept {
  if (radius < 0) return 0;
  if (radius > width) radius = width;
  // C(width, d) computed incrementally; width <= 64 keeps every term exact in 128 bits.
  unsigned __int128 term = 1;
  unsigned __int128 total = 0;
  for (int d = 0; d <= radius; ++d) {
    if (d > 0) term = term * static_cast<unsigned>(width - d + 1) / static_cast<unsigned>(d);
    total += term;
    if (total > std::numeric_limits<std::uint64_t>::max()) {
      return std::numeric_limits<std::uint64_t>::max();
    }
  }
  return static_cast<std::uint64_t>(total);
}

namespace {

// Appends value with every choice of `left` more bits flipped among bits [from, width).
void flip_more(std::uint32_t value, int from, int width, int left,
               std::vector<std::uint32_t>& out) {
  out.push_back(value);
  if (left == 0) return;
  for (int b = from; b < width; ++b)
    flip_more(value ^ (std::uint32_t{1} << b), b + 1, width, left - 1, out);
}

}  // namespace

std::vector<std::uint32_t> probe_values(std::uint32_t value, int width, int radius,
                                        std::uint64_t limit) {
  if (width < 1 || width > 32) throw std::invalid_argument("block width must be 1..32");
  if (radius < 0) return {};
  const std::uint64_t n = probe_count(width, radius);
  if (n > limit) {
    throw std::invalid_argument("radius " + std::to_string(radius) + " on a " +
                                std::to_string(width) + "-bit block means " + std::to_string(n) +
                                " probes, more than the limit of " + std::to_string(limit));
  }
  std::vector<std::uint32_t> out;
  out.reserve(static_cast<std::size_t>(n));
  flip_more(value, 0, width, std::min(radius, width), out);
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

double block_cost(int width, int radius, double rows, const ProbeCosts& costs) {
  if (radius < 0) return 0;
  const double probes = static_cast<double>(probe_count(width, radius));
  return probes * (costs.probe + costs.candidate * rows / std::ldexp(1.0, width));
}

}  // namespace

ProbePlan plan_probes(int blocks, const std::vector<bool>& present, int k, double rows,
                      const ProbeCosts& costs) {
  check_block(blocks, 0);
  if (static_cast<int>(present.size()) != blocks) {
    throw std::invalid_argument("present must have one entry per block");
  }
  if (k < 0 || k > 64) throw std::invalid_argument("distance must be between 0 and 64");
  ProbePlan plan;
  plan.radius.assign(static_cast<std::size_t>(blocks), -1);
  // k + 1 steps, each raising the radius of the block where that costs least.
  for (int step = 0; step <= k; ++step) {
    int best = -1;
    double best_extra = 0;
    for (int i = 0; i < blocks; ++i) {
      const int w = block_width(blocks, i);
      const int r = plan.radius[static_cast<std::size_t>(i)];
      if (!present[static_cast<std::size_t>(i)] || r >= w) continue;
      const double extra = block_cost(w, r + 1, rows, costs) - block_cost(w, r, rows, costs);
      if (best < 0 || extra < best_extra) {
        best = i;
        best_extra = extra;
      }
    }
    if (best < 0) return plan;  // every present block is probed whole: k is out of reach
    ++plan.radius[static_cast<std::size_t>(best)];
  }
  plan.feasible = true;
  for (int i = 0; i < blocks; ++i) {
    const int w = block_width(blocks, i);
    const int r = plan.radius[static_cast<std::size_t>(i)];
    const std::uint64_t p = probe_count(w, r);
    plan.probes = (p > std::numeric_limits<std::uint64_t>::max() - plan.probes)
                      ? std::numeric_limits<std::uint64_t>::max()
                      : plan.probes + p;
    plan.candidates += static_cast<double>(p) * rows / std::ldexp(1.0, w);
  }
  plan.cost = static_cast<double>(plan.probes) * costs.probe + plan.candidates * costs.candidate;
  return plan;
}

int choose_blocks(int max_distance, double rows, const ProbeCosts& costs) {
  if (max_distance < 0 || max_distance > 64) {
    throw std::invalid_argument("max_distance must be between 0 and 64");
  }
  int best = kMinBlocks;
  double best_cost = 0;
  for (int b = kMinBlocks; b <= kMaxBlocks; ++b) {
    const ProbePlan p = plan_probes(b, std::vector<bool>(static_cast<std::size_t>(b), true),
                                    max_distance, rows, costs);
    if (!p.feasible) continue;
    if (b == kMinBlocks || p.cost < best_cost) {
      best = b;
      best_cost = p.cost;
    }
  }
  return best;
}

}  // namespace simhash
