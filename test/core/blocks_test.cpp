#include "core/blocks.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <stdexcept>
#include <vector>

#include "capi/search_capi.h"
#include "core/hamming.hpp"

namespace simhash {
namespace {

TEST(Blocks, LayoutCoversEveryBitOnce) {
  for (int b = kMinBlocks; b <= kMaxBlocks; ++b) {
    std::uint64_t seen = 0;
    int total = 0;
    for (int i = 0; i < b; ++i) {
      const int lo = block_low_bit(b, i);
      const int w = block_width(b, i);
      EXPECT_GE(w, 4);
      EXPECT_LE(w, 32);
      const std::uint64_t mask = ((std::uint64_t{1} << w) - 1) << lo;
      EXPECT_EQ(seen & mask, 0u) << "blocks overlap";
      seen |= mask;
      total += w;
      EXPECT_EQ(block_value(~std::uint64_t{0}, b, i), (std::uint64_t{1} << w) - 1);
    }
    EXPECT_EQ(seen, ~std::uint64_t{0});
    EXPECT_EQ(total, 64);
  }
}

TEST(Blocks, ValuesReassembleTheFingerprint) {
  std::mt19937_64 rng(1);
  for (int round = 0; round < 1000; ++round) {
    const std::uint64_t fp = rng();
    for (int b = kMinBlocks; b <= kMaxBlocks; ++b) {
      std::uint64_t back = 0;
      for (int i = 0; i < b; ++i) {
        back |= std::uint64_t{block_value(fp, b, i)} << block_low_bit(b, i);
      }
      ASSERT_EQ(back, fp);
    }
  }
}

TEST(Blocks, CheckBlockRejectsBadArguments) {
  EXPECT_THROW(check_block(1, 0), std::invalid_argument);
  EXPECT_THROW(check_block(17, 0), std::invalid_argument);
  EXPECT_THROW(check_block(4, 4), std::invalid_argument);
  EXPECT_THROW(check_block(4, -1), std::invalid_argument);
  EXPECT_NO_THROW(check_block(16, 15));
}

// Exhaustive: every value of small widths, compared with a direct count.
TEST(Blocks, ProbesAreExactlyTheValuesWithinTheRadius) {
  std::mt19937_64 rng(2);
  for (int width = 1; width <= 12; ++width) {
    for (int radius = 0; radius <= width + 1; ++radius) {
      const auto value = static_cast<std::uint32_t>(rng() & ((1U << width) - 1));
      std::vector<std::uint32_t> expected;
      for (std::uint32_t v = 0; v < (1U << width); ++v) {
        if (hamming(v, value) <= radius) expected.push_back(v);
      }
      const std::vector<std::uint32_t> got = probe_values(value, width, radius, 1U << 20);
      ASSERT_EQ(got, expected) << "width " << width << " radius " << radius;
      ASSERT_EQ(probe_count(width, radius), expected.size());
    }
  }
  EXPECT_EQ(probe_count(32, -1), 0u);
  EXPECT_EQ(probe_count(32, 2), 1u + 32u + 496u);
  EXPECT_EQ(probe_count(64, 64), ~std::uint64_t{0});  // 2^64 saturates
  EXPECT_TRUE(probe_values(5, 8, -1, 10).empty());
  EXPECT_THROW(probe_values(0, 32, 8, 1000), std::invalid_argument);  // over the limit
  EXPECT_THROW(probe_values(0, 33, 1, 1000), std::invalid_argument);
}

std::uint64_t flip(std::uint64_t x, int bits, std::mt19937_64& rng) {
  std::set<int> positions;
  while (static_cast<int>(positions.size()) < bits) positions.insert(static_cast<int>(rng() % 64));
  for (int p : positions) x ^= std::uint64_t{1} << p;
  return x;
}

// The guarantee the index rewrite relies on: with the planned radii, every fingerprint
// within k of the query is within radius r_i of it on some probed block i, for every
// layout, with blocks missing, and every k the blocks can cover.
TEST(Blocks, PlannedProbesFindEveryNeighbour) {
  std::mt19937_64 rng(3);
  for (int b = kMinBlocks; b <= kMaxBlocks; ++b) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<bool> present(static_cast<std::size_t>(b), true);
      if (trial % 2 == 1) {  // drop some blocks, keep at least one
        for (int i = 0; i < b; ++i) present[static_cast<std::size_t>(i)] = (rng() % 3) != 0;
        present[static_cast<std::size_t>(rng() % b)] = true;
      }
      const double rows = static_cast<double>(std::uint64_t{1} << (10 + rng() % 20));
      for (int k = 0; k <= 16; ++k) {
        const ProbePlan plan = plan_probes(b, present, k, rows);
        int reach = 0;  // the largest distance the present blocks can cover
        for (int i = 0; i < b; ++i) {
          if (present[static_cast<std::size_t>(i)]) {
            reach += block_width(b, i) + 1;
          }
        }
        ASSERT_EQ(plan.feasible, k + 1 <= reach);
        if (!plan.feasible) continue;
        int sum = 0;
        for (int i = 0; i < b; ++i) {
          const int r = plan.radius[static_cast<std::size_t>(i)];
          ASSERT_GE(r, -1);
          if (!present[static_cast<std::size_t>(i)]) {
            ASSERT_EQ(r, -1);
          }
          sum += r + 1;
        }
        ASSERT_GE(sum, k + 1);
        for (int pair = 0; pair < 200; ++pair) {
          const std::uint64_t q = rng();
          const std::uint64_t x = flip(q, static_cast<int>(rng() % (k + 1)), rng);
          bool found = false;
          for (int i = 0; i < b && !found; ++i) {
            const int r = plan.radius[static_cast<std::size_t>(i)];
            found = r >= 0 && hamming(block_value(x, b, i), block_value(q, b, i)) <= r;
          }
          ASSERT_TRUE(found) << "b=" << b << " k=" << k << " q=" << q << " x=" << x;
        }
      }
    }
  }
}

// The pigeonhole special case: k + 1 blocks with radius 0 everywhere.
TEST(Blocks, PigeonholeIsTheCheapestPlanWhenBlocksAreWide) {
  const ProbePlan p = plan_probes(4, std::vector<bool>(4, true), 3, 1e4);
  EXPECT_EQ(p.radius, (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(p.probes, 4u);
}

// The policy documented in the README (simhash_layout_blocks): wide blocks for big tables,
// more blocks for larger distances; never more blocks for more rows.
TEST(Blocks, ChooseBlocksGoldenValues) {
  EXPECT_EQ(choose_blocks(0, 1e6), 2);
  EXPECT_EQ(choose_blocks(3, 1e4), 4);
  EXPECT_EQ(choose_blocks(3, 1e6), 3);
  EXPECT_EQ(choose_blocks(3, 1e7), 2);
  EXPECT_EQ(choose_blocks(6, 1e7), 3);
  EXPECT_EQ(choose_blocks(8, 1e7), 3);
  EXPECT_EQ(choose_blocks(16, 1e6), 4);
  for (int k = 0; k <= 16; ++k) {
    EXPECT_LE(choose_blocks(k, 1e8), choose_blocks(k, 1e6)) << "k=" << k;
    EXPECT_LE(choose_blocks(k, 1e6), choose_blocks(k, 1e4)) << "k=" << k;
  }
  EXPECT_THROW(choose_blocks(-1, 1e6), std::invalid_argument);
  EXPECT_THROW(choose_blocks(65, 1e6), std::invalid_argument);
}

TEST(SearchCapi, ReportsErrorsThroughTheStatus) {
  char err[128];
  std::uint32_t value = 0;
  EXPECT_EQ(simhash_block_value(~0ULL, 2, 1, &value, err, sizeof err), SIMHASH_OK);
  EXPECT_EQ(value, 0xFFFFFFFFu);
  EXPECT_EQ(simhash_block_value(1, 1, 0, &value, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  EXPECT_STREQ(err, "blocks must be between 2 and 16, got 1");
  EXPECT_EQ(simhash_block_value(1, 2, 0, nullptr, err, sizeof err), SIMHASH_INVALID_ARGUMENT);

  std::uint32_t out[64];
  std::size_t n = 0;
  EXPECT_EQ(simhash_block_probes(0, 16, 0, 1, out, 64, &n, err, sizeof err), SIMHASH_OK);
  EXPECT_EQ(n, 5u);  // a 4-bit block: itself and 4 neighbours
  EXPECT_EQ(simhash_block_probes(0, 2, 0, 2, out, 64, &n, err, sizeof err),
            SIMHASH_INVALID_ARGUMENT);  // 529 probes do not fit in 64
  EXPECT_EQ(simhash_block_probes(0, 2, 0, 0, nullptr, 1, &n, err, sizeof err),
            SIMHASH_INVALID_ARGUMENT);

  simhash_probe_plan plan;
  EXPECT_EQ(simhash_plan_probes(3, 0x7, 6, 1e6, 1.0, &plan, err, sizeof err), SIMHASH_OK);
  EXPECT_EQ(plan.feasible, 1);
  EXPECT_EQ(plan.radius[3], -1);
  EXPECT_EQ(simhash_plan_probes(3, 0x1, 30, 1e6, 1.0, &plan, err, sizeof err), SIMHASH_OK);
  EXPECT_EQ(plan.feasible, 0);  // one 21-bit block cannot cover 30 bits
  EXPECT_EQ(simhash_plan_probes(3, 0x7, -1, 1e6, 1.0, &plan, err, sizeof err),
            SIMHASH_INVALID_ARGUMENT);

  std::int32_t blocks = 0;
  EXPECT_EQ(simhash_choose_blocks(3, 1e7, &blocks, err, sizeof err), SIMHASH_OK);
  EXPECT_EQ(blocks, 2);
  EXPECT_EQ(simhash_choose_blocks(3, 1e7, nullptr, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace simhash
