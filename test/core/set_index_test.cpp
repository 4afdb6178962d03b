// SetIndex against a brute force over the same rows: every answer of any() and best() is
// the one a search through every row sharing a key in its band would give.
#include "core/set_index.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
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

template <typename Row>
bool shares(const Row& r, const std::vector<std::int64_t>& keys) {
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

// Fuzz against a model of the trigger's search: random keys from a small space (many rows
// share keys), random sets from a small universe (similarities all around the thresholds),
// originals at random (also several originals at similarity 1, as rows loaded before the
// trigger give), repeated tags, rows held without their sets, and rows whose set is not
// their text's own (a stored set), with the text identities of SetIndex::TextId: the search
// calls a byte-identical text 1.0 whatever the sets, and link's search stops at the first
// original at 1 it meets (an order the index does not know). Every answer that is not
// kUnknown must be the model's, and kUnknown only where the model allows it.
TEST(SetIndex, FuzzAgainstTheSearch) {
  int answered = 0;
  int unknowns = 0;
  int shortcut = 0;
  for (int seed = 0; seed < 300; ++seed) {
    std::mt19937_64 rng(1000 + seed);
    const double thresholds[] = {0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0};
    const double t = thresholds[seed % 7];
    const int key_space = 50 + static_cast<int>(rng() % 500);
    const int universe = 8 + static_cast<int>(rng() % 24);
    auto random_row = [&](std::vector<std::int64_t>& keys, std::vector<std::uint64_t>& set) {
      const int base = static_cast<int>(rng() % 4);  // families: sets of one base are near
      keys.resize(kLshBands);  // and share keys now and then (rows of others by chance)
      for (auto& k : keys)
        k = rng() % 8 == 0 ? base : 4 + static_cast<std::int64_t>(rng() % key_space);
      set.clear();
      for (int e = 0; e < universe; ++e)
        if (rng() % 100 < (e % 4 == base ? 90u : 12u)) set.push_back(static_cast<std::uint64_t>(e) * 7919 + 1);
      if (set.empty()) set.push_back(1);
    };
    struct FRow {
      std::vector<std::int64_t> keys;
      std::vector<std::uint64_t> set;
      std::int64_t tag;
      bool original, held, checked;
      int text;  // checked rows: the text they hold (texts 0..5); others: their own
      SetIndex::TextId id;
    };
    auto text_id = [&](int text, bool hashed) {
      SetIndex::TextId id;
      id.length = static_cast<std::uint64_t>(text % 3);  // equal lengths, different texts
      id.hash = static_cast<std::uint64_t>(text) * 0x9E3779B97F4A7C15ULL;
      id.hashed = hashed;
      return id;
    };
    SetIndex index;
    std::vector<FRow> rows;
    const int n = 20 + static_cast<int>(rng() % 80);
    for (int i = 0; i < n; ++i) {
      FRow r;
      random_row(r.keys, r.set);
      r.tag = static_cast<std::int64_t>(rng() % 40);
      r.original = rng() % 3 != 0;
      r.held = rng() % 25 != 0;
      r.checked = rng() % 3 == 0;
      r.text = r.checked ? static_cast<int>(rng() % 6) : 1000 + i;
      r.id = text_id(r.text, rng() % 4 != 0);
      const bool size_known = rng() % 2 == 0;
      index.add(r.keys.data(), r.held ? r.set.data() : nullptr,
                r.held || size_known ? r.set.size() : SetIndex::kUnknownSize, r.tag, r.original,
                ~static_cast<std::size_t>(0), r.checked ? &r.id : nullptr);
      rows.push_back(r);
    }
    for (int q = 0; q < 40; ++q) {
      std::vector<std::int64_t> keys;
      std::vector<std::uint64_t> set;
      random_row(keys, set);
      const int text = static_cast<int>(rng() % 12);  // 0..5: the text of some checked rows
      const SetIndex::TextId qid = text_id(text, true);
      // the model
      bool any = false, may_be_unknown = false, have = false;
      int originals_at_one = 0;
      SetIndex::Hit want;
      for (const FRow& r : rows) {
        if (!shares(r, keys)) continue;
        double sim = jaccard(overlap(set.data(), set.size(), r.set.data(), r.set.size()));
        const bool same_len = r.checked && r.id.length == qid.length &&
                              (!r.id.hashed || r.id.hash == qid.hash);
        if (r.checked && r.text == text) sim = 1.0;  // the search's byte-identical text
        if (!r.held || (same_len && r.set != set)) may_be_unknown = true;
        if (sim < t) continue;
        any = true;
        if (r.original && sim >= 1.0) ++originals_at_one;
        const bool better = !have || (r.original && !want.original) ||
                            (r.original == want.original &&
                             (sim > want.similarity || (sim == want.similarity && r.tag < want.tag)));
        if (better) {
          want = {r.tag, r.original, sim};
          have = true;
        }
      }
      if (originals_at_one > 1) may_be_unknown = true;
      SetIndex::Hit hit;
      const auto a = index.any(keys.data(), set.data(), set.size(), t, &hit, &qid);
      if (a == SetIndex::Answer::kFound) {
        EXPECT_TRUE(any) << "seed " << seed << " query " << q;
        EXPECT_GE(hit.similarity, t);
      } else if (a == SetIndex::Answer::kNone) {
        EXPECT_FALSE(any) << "seed " << seed << " query " << q;
      } else {
        EXPECT_TRUE(may_be_unknown) << "seed " << seed << " query " << q;
      }
      SetIndex::Hit b;
      const auto ba = index.best(keys.data(), set.data(), set.size(), t, &b, &qid);
      if (ba == SetIndex::Answer::kFound) {
        ASSERT_TRUE(have) << "seed " << seed << " query " << q;
        EXPECT_EQ(b.tag, want.tag) << "seed " << seed << " query " << q;
        EXPECT_EQ(b.original, want.original) << "seed " << seed << " query " << q;
        EXPECT_EQ(b.similarity, want.similarity) << "seed " << seed << " query " << q;
        ++answered;
        shortcut += want.similarity >= 1.0;
      } else if (ba == SetIndex::Answer::kNone) {
        EXPECT_FALSE(have) << "seed " << seed << " query " << q;
        ++answered;
      } else {
        EXPECT_TRUE(may_be_unknown) << "seed " << seed << " query " << q;
        ++unknowns;
      }
    }
  }
  std::printf("fuzz: %d answered (%d at similarity 1), %d unknown\n", answered, shortcut, unknowns);
  EXPECT_GT(answered, 2000);
  EXPECT_GT(unknowns, 500);
  EXPECT_GT(shortcut, 100);
}

// The two cases the model above found: a stored set that is not its text's (an exact copy
// of the text must not be answered from the set), and two originals at similarity 1.
TEST(SetIndex, StoredSetAndTiesAtOne) {
  const auto set = shingle_set("the quick brown fox jumps over the lazy dog again");
  const auto other = shingle_set("an entirely different text of about the same size here");
  const auto keys = lsh_keys(set.data(), set.size());
  SetIndex::TextId id{51, 12345, true};
  SetIndex index;
  // the row's stored set is another text's: the same text (same identity) is unknown
  index.add(keys.data(), other.data(), other.size(), 7, true, ~static_cast<std::size_t>(0), &id);
  SetIndex::Hit hit;
  EXPECT_EQ(index.any(keys.data(), set.data(), set.size(), 0.8, &hit, &id), SetIndex::Answer::kUnknown);
  SetIndex::TextId another{51, 999, true};
  EXPECT_EQ(index.any(keys.data(), set.data(), set.size(), 0.8, &hit, &another), SetIndex::Answer::kNone);
  SetIndex::TextId unhashed{51, 0, false};
  EXPECT_EQ(index.any(keys.data(), set.data(), set.size(), 0.8, &hit, &unhashed), SetIndex::Answer::kUnknown);
  // an empty stored set too
  SetIndex empty;
  empty.add(keys.data(), set.data(), 0, 7, true, ~static_cast<std::size_t>(0), &id);
  EXPECT_EQ(empty.any(keys.data(), set.data(), set.size(), 0.8, &hit, &id), SetIndex::Answer::kUnknown);
  EXPECT_EQ(empty.any(keys.data(), set.data(), set.size(), 0.8, &hit, &another), SetIndex::Answer::kNone);
  // two originals at 1: best() cannot know which the search meets first
  SetIndex ties;
  ties.add(keys.data(), set.data(), set.size(), 5, true);
  EXPECT_EQ(ties.best(keys.data(), set.data(), set.size(), 0.8, &hit), SetIndex::Answer::kFound);
  EXPECT_EQ(hit.tag, 5);
  ties.add(keys.data(), set.data(), set.size(), 3, true);
  EXPECT_EQ(ties.best(keys.data(), set.data(), set.size(), 0.8, &hit), SetIndex::Answer::kUnknown);
  EXPECT_EQ(ties.any(keys.data(), set.data(), set.size(), 0.8, &hit), SetIndex::Answer::kFound);
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
