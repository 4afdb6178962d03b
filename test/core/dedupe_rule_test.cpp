// The dedupe trigger's winner rule (core/dedupe_rule.hpp) and its C ABI: originals first,
// then the closest; equal on both is a tie, whatever the order the two are given in.
#include <gtest/gtest.h>

#include <vector>

#include "capi/dedupe_rule_capi.h"
#include "core/dedupe_rule.hpp"

namespace simhash {
namespace {

TEST(DedupeRule, OriginalsBeforeLinkedRowsWhateverTheirCloseness) {
  EXPECT_EQ(prefer({true, 0.5}, {false, 1.0}), Preference::kFirst);
  EXPECT_EQ(prefer({false, 1.0}, {true, 0.5}), Preference::kSecond);
  EXPECT_EQ(prefer({true, -3}, {false, 0}), Preference::kFirst);  // distances: 3 beats 0
}

TEST(DedupeRule, ThenTheClosest) {
  EXPECT_EQ(prefer({true, 0.9}, {true, 0.8}), Preference::kFirst);
  EXPECT_EQ(prefer({false, 0.8}, {false, 0.9}), Preference::kSecond);
  EXPECT_EQ(prefer({true, -1}, {true, -2}), Preference::kFirst);  // distance 1 before 2
}

TEST(DedupeRule, EqualOnBothIsATie) {
  EXPECT_EQ(prefer({true, 0.8}, {true, 0.8}), Preference::kTie);
  EXPECT_EQ(prefer({false, -2}, {false, -2}), Preference::kTie);
}

// Antisymmetric, and the C ABI says the same for every pair of a small grid.
TEST(DedupeRule, AntisymmetricAndTheCapiAgrees) {
  std::vector<NearRow> rows;
  for (bool original : {false, true}) {
    for (double c : {-3.0, -1.0, 0.0, 0.5, 0.8, 1.0}) rows.push_back({original, c});
  }
  for (const NearRow& a : rows) {
    for (const NearRow& b : rows) {
      const int ab = static_cast<int>(prefer(a, b));
      EXPECT_EQ(ab, -static_cast<int>(prefer(b, a)));
      EXPECT_EQ(ab, simhash_dedupe_prefer(a.original, a.closeness, b.original, b.closeness));
    }
  }
}

}  // namespace
}  // namespace simhash
