// NearFilter against a brute force: never a false "no"; with an unbounded walk, exact.
#include "core/near_filter.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "capi/near_filter_capi.h"
#include "core/hamming.hpp"

namespace simhash {
namespace {

bool brute_within(const std::vector<std::uint64_t>& members, std::uint64_t fp, int k) {
  for (std::uint64_t m : members)
    if (hamming(m, fp) <= k) return true;
  return false;
}

// A fingerprint at exactly d bits from fp (d distinct random positions flipped).
std::uint64_t flip(std::uint64_t fp, int d, std::mt19937_64& rng) {
  std::uint64_t mask = 0;
  while (__builtin_popcountll(mask) < d) mask |= std::uint64_t{1} << (rng() % 64);
  return fp ^ mask;
}

TEST(NearFilter, ExactAgainstBruteForceForEveryK) {
  for (int k = 0; k <= 16; k++) {
    std::mt19937_64 rng(1000 + static_cast<unsigned>(k));
    NearFilter f(k, 1u << 30);
    std::vector<std::uint64_t> members;
    for (int i = 0; i < 3000; i++) {
      // Queries near members (at k - 1, k, k + 1 bits) and random ones, before each add.
      const int d = std::max(0, k + static_cast<int>(rng() % 3) - 1);
      std::uint64_t q =
          members.empty() || i % 3 == 0 ? rng() : flip(members[rng() % members.size()], d, rng);
      ASSERT_EQ(f.may_have_within(q), brute_within(members, q, k)) << "k=" << k << " i=" << i;
      std::uint64_t m =
          i % 4 == 0 && !members.empty()
              ? flip(members[rng() % members.size()], static_cast<int>(rng() % (k + 2)), rng)
              : rng();
      f.add(m);
      members.push_back(m);
    }
    EXPECT_EQ(f.size(), members.size());
    EXPECT_GT(f.bytes(), members.size() * 8);
  }
}

// Many members (the recent tier merged into the settled arrays again and again, start
// tables of every size, blocks wider than their start table's prefix at k = 0 and 1),
// queries between the adds: exact with an unbounded walk.
TEST(NearFilter, ExactAcrossMergesAgainstBruteForce) {
  for (int k : {0, 1, 3, 6, 16}) {
    std::mt19937_64 rng(77 + static_cast<unsigned>(k));
    NearFilter f(k, 1u << 30);
    std::vector<std::uint64_t> members;
    for (int i = 0; i < 150000; i++) {
      // families: a tenth of the members lie within k + 1 of an earlier one
      std::uint64_t m = i % 10 == 0 && !members.empty()
                            ? flip(members[rng() % members.size()], static_cast<int>(rng() % (k + 2)), rng)
                            : rng();
      f.add(m);
      members.push_back(m);
      if (i % 997 == 0) {
        for (int j = 0; j < 20; j++) {
          const int d = std::max(0, k + static_cast<int>(rng() % 3) - 1);
          std::uint64_t q = j % 4 == 0 ? rng() : flip(members[rng() % members.size()], d, rng);
          ASSERT_EQ(f.may_have_within(q), brute_within(members, q, k)) << "k=" << k << " i=" << i;
        }
      }
    }
    EXPECT_EQ(f.size(), members.size());
  }
}

// add_many (a whole table at once) between single adds, with duplicates: exact.
TEST(NearFilter, AddManyAgainstBruteForce) {
  for (int k : {0, 3, 7}) {
    std::mt19937_64 rng(500 + static_cast<unsigned>(k));
    NearFilter f(k, 1u << 30);
    std::vector<std::uint64_t> members;
    for (int round = 0; round < 4; round++) {
      std::vector<std::uint64_t> batch;
      for (int i = 0; i < 30000; i++)
        batch.push_back(i % 5 == 0 && !members.empty() ? members[rng() % members.size()]
                        : i % 7 == 0 && !batch.empty()
                            ? flip(batch[rng() % batch.size()], static_cast<int>(rng() % (k + 2)), rng)
                            : rng());
      f.add_many(batch.data(), batch.size());
      members.insert(members.end(), batch.begin(), batch.end());
      for (int i = 0; i < 3000; i++) {
        std::uint64_t m = rng();
        f.add(m);
        members.push_back(m);
      }
      for (int j = 0; j < 300; j++) {
        const int d = std::max(0, k + static_cast<int>(rng() % 3) - 1);
        std::uint64_t q = j % 3 == 0 ? rng() : flip(members[rng() % members.size()], d, rng);
        ASSERT_EQ(f.may_have_within(q), brute_within(members, q, k)) << "k=" << k << " round=" << round;
      }
    }
    EXPECT_EQ(f.size(), members.size());
  }
  NearFilter empty(3);
  empty.add_many(nullptr, 0);
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_FALSE(empty.may_have_within(42));
}

// add_many_step: the steps one by one, with queries between them (never a false "no" for
// a member added before; afterwards exact, as add_many), and a run stopped half way.
TEST(NearFilter, AddManyStepsAgainstBruteForce) {
  const int k = 3;
  std::mt19937_64 rng(77);
  NearFilter f(k, 1u << 30);
  std::vector<std::uint64_t> before;
  for (int i = 0; i < 5000; i++) {
    before.push_back(rng());
    f.add(before.back());
  }
  std::vector<std::uint64_t> batch;
  for (int i = 0; i < 20000; i++)
    batch.push_back(i % 4 == 0 ? flip(before[rng() % before.size()], 2, rng) : rng());
  std::vector<std::uint64_t> all = before;
  all.insert(all.end(), batch.begin(), batch.end());
  for (int step = 0; step <= k + 1; step++) {
    f.add_many_step(batch.data(), batch.size(), step);
    for (int j = 0; j < 300; j++) {
      std::uint64_t q = flip(before[rng() % before.size()], static_cast<int>(rng() % (k + 1)), rng);
      ASSERT_TRUE(f.may_have_within(q)) << "step " << step;
    }
  }
  EXPECT_EQ(f.size(), all.size());
  for (int j = 0; j < 2000; j++) {
    const int d = static_cast<int>(rng() % (k + 3));
    std::uint64_t q = j % 3 == 0 ? rng() : flip(all[rng() % all.size()], d, rng);
    ASSERT_EQ(f.may_have_within(q), brute_within(all, q, k));
  }
  NearFilter half(k, 1u << 30);
  for (std::uint64_t m : before) half.add(m);
  half.add_many_step(batch.data(), batch.size(), 0);
  half.add_many_step(batch.data(), batch.size(), 1);
  for (std::uint64_t m : before) ASSERT_TRUE(half.may_have_within(m));
  EXPECT_THROW(half.add_many_step(batch.data(), batch.size(), k + 2), std::invalid_argument);
}

TEST(NearFilter, BoundedWalkSaysMaybeNeverNo) {
  // Skewed: every member shares block 0 (low 16 bits zero) and is far from the queries.
  const int k = 3;
  NearFilter f(k, 8);
  std::vector<std::uint64_t> members;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; i++) {
    std::uint64_t m = rng() & ~std::uint64_t{0xFFFF};
    f.add(m);
    members.push_back(m);
  }
  int maybes = 0;
  for (int i = 0; i < 2000; i++) {
    std::uint64_t q =
        i % 2 ? rng() & ~std::uint64_t{0xFFFF} : flip(members[rng() % members.size()], k, rng);
    bool truth = brute_within(members, q, k);
    bool answer = f.may_have_within(q);
    if (truth) {
      ASSERT_TRUE(answer);
    }
    maybes += answer && !truth;
  }
  EXPECT_GT(maybes, 0);  // the walk was cut: a "maybe" without a member within k
}

TEST(NearFilter, RejectsBadArguments) {
  EXPECT_THROW(NearFilter(-1), std::invalid_argument);
  EXPECT_THROW(NearFilter(17), std::invalid_argument);
  EXPECT_THROW(NearFilter(3, 0), std::invalid_argument);
}

// max_members(): what a budget allows a filter made at once (0 below the fixed tables, at
// most 2^31 - 1), and such a filter holds no more than the budget once made.
TEST(NearFilter, MaxMembersWithinBudget) {
  const std::size_t fixed3 = 4 * 65537 * 4 + 65536 * 8;
  EXPECT_EQ(NearFilter::max_members(0, 3), 0u);
  EXPECT_EQ(NearFilter::max_members(fixed3, 3), 0u);
  EXPECT_EQ(NearFilter::max_members(fixed3 + 56 * 1000, 3), 1000u);
  EXPECT_EQ(NearFilter::max_members(~std::size_t{0}, 3), 2147483647u);
  EXPECT_EQ(simhash_near_filter_max_members(fixed3 + 56 * 1000, 3), 1000u);
  const std::size_t budget = 8 << 20;
  std::mt19937_64 rng(5);
  std::vector<std::uint64_t> fps(NearFilter::max_members(budget, 3));
  for (auto& fp : fps) fp = rng();
  NearFilter f(3);
  f.add_many(fps.data(), fps.size());
  EXPECT_LE(f.bytes(), budget);
}

// add_within() adds, and looks at the bytes once every 1024 members.
TEST(NearFilter, AddWithinLooksEvery1024Members) {
  NearFilter f(3);
  for (int i = 1; i < 1024; ++i) ASSERT_TRUE(f.add_within(static_cast<std::uint64_t>(i), 0));
  EXPECT_FALSE(f.add_within(1024, 0));
  EXPECT_EQ(f.size(), 1024u);
  EXPECT_TRUE(f.add_within(1025, 0));
  NearFilter g(3);
  for (int i = 1; i <= 5000; ++i) ASSERT_TRUE(g.add_within(static_cast<std::uint64_t>(i), SIZE_MAX));
}

TEST(NearFilter, CApi) {
  char err[256];
  simhash_near_filter* f = nullptr;
  EXPECT_EQ(simhash_near_filter_create(17, &f, err, sizeof(err)), SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(f, nullptr);
  ASSERT_EQ(simhash_near_filter_create(3, &f, err, sizeof(err)), SIMHASH_OK);
  EXPECT_EQ(simhash_near_filter_may_have(f, 0x0123456789ABCDEFULL), 0);
  ASSERT_EQ(simhash_near_filter_add(f, 0x0123456789ABCDEFULL, SIZE_MAX, err, sizeof(err)), SIMHASH_OK);
  EXPECT_EQ(simhash_near_filter_may_have(f, 0x0123456789ABCDEFULL ^ 0x7ULL), 1);
  EXPECT_EQ(simhash_near_filter_may_have(f, 0x0123456789ABCDEFULL ^ 0xFULL), 0);
  EXPECT_GT(simhash_near_filter_bytes(f), 0u);
  EXPECT_EQ(simhash_near_filter_size(f), 1u);
  const uint64_t many[] = {0xFFFF000000000000ULL, 0x00000000FFFF0000ULL};
  EXPECT_EQ(simhash_near_filter_add_many_step(f, many, 2, 5, err, sizeof(err)),
            SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(simhash_near_filter_add_many_step(f, many, 2, -1, err, sizeof(err)),
            SIMHASH_INVALID_ARGUMENT);
  for (int32_t step = 0; step <= 4; step++)
    ASSERT_EQ(simhash_near_filter_add_many_step(f, many, 2, step, err, sizeof(err)), SIMHASH_OK);
  EXPECT_EQ(simhash_near_filter_may_have(f, 0xFFFF000000000001ULL), 1);
  EXPECT_EQ(simhash_near_filter_may_have(f, 0x00000000FFFF0001ULL), 1);
  EXPECT_EQ(simhash_near_filter_may_have(f, 0x0123456789ABCDEFULL ^ 0x7ULL), 1);
  simhash_near_filter_free(f);
  simhash_near_filter_free(nullptr);
}

}  // namespace
}  // namespace simhash
