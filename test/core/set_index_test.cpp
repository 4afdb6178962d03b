// SetIndex against a brute force over the same rows: every answer of any() and best() is
// the one a search through every row sharing a key in its band would give.
#include "core/set_index.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "capi/set_index_capi.h"
#include "core/minhash.hpp"
#include "core/similarity.hpp"

namespace simhash {
namespace {

struct TestRow {
  std::vector<std::int64_t> keys;
  std::vector<std::uint64_t> set;
  std::int64_t tag;
  bool original;
  bool held;
};

// Texts in families: a base of random words and copies with a few words changed, so that
// many pairs are near the thresholds and many share keys without being similar.
std::vector<std::string> family_texts(std::mt19937_64& rng, int families, int copies) {
  static const char* words[] = {"licence", "software", "copyright", "permission", "granted",
                                "debian",  "package",  "warranty",  "without",    "notice",
                                "source",  "binary",   "redistribute", "modify",  "terms"};
  std::vector<std::string> out;
  for (int f = 0; f < families; ++f) {
    std::vector<std::string> base;
    const int len = 8 + static_cast<int>(rng() % 40);
    for (int i = 0; i < len; ++i) base.push_back(words[rng() % 15]);
    for (int c = 0; c < copies; ++c) {
      std::vector<std::string> w = base;
      const int edits = static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) w[rng() % w.size()] = words[rng() % 15];
      std::string t;
      for (const auto& x : w) t += x + " ";
      out.push_back(t);
    }
  }
  return out;
}

bool shares(const TestRow& r, const std::vector<std::int64_t>& keys) {
  for (int b = 0; b < kLshBands; ++b) {
    if (r.keys[b] == keys[b]) return true;
  }
  return false;
}

TEST(SetIndex, AnswersAsABruteForce) {
  for (double t : {0.7, 0.8, 0.9, 1.0}) {
    std::mt19937_64 rng(static_cast<unsigned>(t * 100));
    const auto texts = family_texts(rng, 60, 8);
    SetIndex index;
    std::vector<TestRow> rows;
    int found = 0;
    int unknown = 0;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      const auto set = shingle_set(texts[i]);
      const auto keys = lsh_keys(set.data(), set.size());
      ASSERT_EQ(keys.size(), static_cast<std::size_t>(kLshBands));
      // The brute force: the rows sharing a key, verified, the held and the unheld alike
      // (a row held without its set is still in the table): what any() and best() must
      // answer when they answer, kUnknown only when an unheld row shares a key.
      bool any = false;
      bool unheld_candidate = false;
      bool have = false;
      SetIndex::Hit want;
      for (const TestRow& r : rows) {
        if (!shares(r, keys)) continue;
        unheld_candidate = unheld_candidate || !r.held;
        const double sim = jaccard(overlap(set.data(), set.size(), r.set.data(), r.set.size()));
        if (sim < t) continue;
        any = true;
        const bool better = !have || (r.original && !want.original) ||
                            (r.original == want.original &&
                             (sim > want.similarity || (sim == want.similarity && r.tag < want.tag)));
        if (better) {
          want.tag = r.tag;
          want.original = r.original;
          want.similarity = sim;
          have = true;
        }
      }

      SetIndex::Hit hit;
      const auto a = index.any(keys.data(), set.data(), set.size(), t, &hit);
      if (a == SetIndex::Answer::kFound) {
        EXPECT_TRUE(any) << "row " << i << ": found a row the brute force did not";
        EXPECT_GE(hit.similarity, t);
      } else if (a == SetIndex::Answer::kNone) {
        EXPECT_FALSE(any) << "row " << i << ": missed a row";
      } else {
        EXPECT_TRUE(unheld_candidate) << "row " << i;
      }
      SetIndex::Hit b;
      const auto ba = index.best(keys.data(), set.data(), set.size(), t, &b);
      if (ba == SetIndex::Answer::kFound) {
        ASSERT_TRUE(have) << "row " << i;
        EXPECT_EQ(b.tag, want.tag) << "row " << i;
        EXPECT_EQ(b.original, want.original) << "row " << i;
        EXPECT_EQ(b.similarity, want.similarity) << "row " << i;
        ++found;
      } else if (ba == SetIndex::Answer::kNone) {
        EXPECT_FALSE(have) << "row " << i;
      } else {
        EXPECT_TRUE(unheld_candidate) << "row " << i;
        ++unknown;
      }

      // Rows without their sets: every seventh row, and whole families (two in five: in
      // one of them the size is known, in the other not), so that some queries meet only
      // unheld rows; originals as link would make them, tags descending so ties pick the
      // later row.
      const std::size_t fam = i / 8;
      const bool held = fam % 5 >= 2 && i % 7 != 3;
      const bool size_known = fam % 5 == 0 || (fam % 5 >= 2 && i % 2 == 1);
      TestRow row{keys, set, 100000 - static_cast<std::int64_t>(i), !have, held};
      if (row.held) {
        index.add(keys.data(), set.data(), set.size(), row.tag, row.original);
      } else {
        index.add(keys.data(), nullptr, size_known ? set.size() : SetIndex::kUnknownSize, row.tag,
                  row.original);
      }
      rows.push_back(row);
    }
    EXPECT_GT(found, 15) << "threshold " << t;
    EXPECT_GT(unknown, 0) << "threshold " << t;
    EXPECT_EQ(index.rows(), rows.size());
    EXPECT_GT(index.bytes(), 0u);
  }
}

TEST(SetIndex, CapiFindsAnAddedRow) {
  const auto set = shingle_set("the quick brown fox jumps over the lazy dog");
  const auto keys = lsh_keys(set.data(), set.size());
  simhash_set_index* index = nullptr;
  char err[256];
  ASSERT_EQ(simhash_set_index_create(&index, err, sizeof(err)), SIMHASH_OK);
  std::int64_t tag = 0;
  int original = 0;
  double sim = 0;
  EXPECT_EQ(simhash_set_index_find(index, keys.data(), set.data(), set.size(), nullptr, 0.8, 1, &tag,
                                   &original, &sim),
            SIMHASH_SET_NONE);
  ASSERT_EQ(simhash_set_index_add(index, keys.data(), set.data(), set.size(), 42, 1,
                                  SIZE_MAX, nullptr, err, sizeof(err)),
            SIMHASH_OK);
  EXPECT_EQ(simhash_set_index_find(index, keys.data(), set.data(), set.size(), nullptr, 0.8, 1, &tag,
                                   &original, &sim),
            SIMHASH_SET_FOUND);
  EXPECT_EQ(tag, 42);
  EXPECT_EQ(original, 1);
  EXPECT_EQ(sim, 1.0);
  EXPECT_EQ(simhash_set_index_rows(index), 1u);
  EXPECT_EQ(simhash_set_index_held(index), 1u);
  // past the hold limit, a row is added without its set: a query meeting it is unknown
  ASSERT_EQ(simhash_set_index_add(index, keys.data(), set.data(), set.size(), 7, 1,
                                  simhash_set_index_bytes(index), nullptr, err, sizeof(err)),
            SIMHASH_OK);
  EXPECT_EQ(simhash_set_index_rows(index), 2u);
  EXPECT_EQ(simhash_set_index_held(index), 2u);  // room in the first chunk
  SetIndex small;
  std::vector<std::uint64_t> big(70000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = i * 3 + 1;
  small.add(keys.data(), big.data(), big.size(), 1, true, small.bytes() + 1000);
  EXPECT_EQ(small.held(), 0u);
  EXPECT_EQ(small.rows(), 1u);
  SetIndex::Hit hit;
  EXPECT_EQ(small.any(keys.data(), big.data(), big.size(), 0.8, &hit), SetIndex::Answer::kUnknown);
  simhash_set_index_free(index);
}

}  // namespace
}  // namespace simhash
