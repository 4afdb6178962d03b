// The dedupe trigger's one rule for which near duplicate of a new row wins (the row a link
// names, the key a reject shows), used by every path that answers for the trigger: the
// search of a table and of a view (candidate_wins(), src/pg/dedupe_policy.c) and the
// statement memo's index of sets (SetIndex::best, src/core/set_index.cpp). Originals (rows
// not themselves linked to another; every row under reject and skip) before linked rows,
// then the closest (the largest similarity, or the smallest Hamming distance); two rows
// equal on both tie, and under policy link the smaller key wins, which the caller compares
// (keys are SQL values). Pure, PostgreSQL-free, tested in test/core/dedupe_rule_test.cpp.
#pragma once

#include "core/no_postgres.hpp"

namespace simhash {

// A near duplicate as the rule sees it. closeness: the similarity with a threshold, minus
// the distance with a Hamming distance (larger is closer either way).
struct NearRow {
  bool original;
  double closeness;
};

enum class Preference : int { kFirst = -1, kTie = 0, kSecond = 1 };

constexpr Preference prefer(NearRow a, NearRow b) noexcept {
  if (a.original != b.original) return a.original ? Preference::kFirst : Preference::kSecond;
  if (a.closeness != b.closeness) {
    return a.closeness > b.closeness ? Preference::kFirst : Preference::kSecond;
  }
  return Preference::kTie;
}

}  // namespace simhash
