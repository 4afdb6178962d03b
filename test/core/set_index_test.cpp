// SetIndex against a brute force over the same rows: every answer of any() and best() is
// the one a search through every row sharing a key in its band would give.
#include "core/set_index.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "capi/set_index_capi.h"
#include "core/minhash.hpp"
#include "core/mix.hpp"
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
      // unheld rows; originals as link would make them, tags in neither the order rows are
      // added nor its reverse, so that a tie is decided by the tag and not by the order
      // the chains give the rows in.
      const std::size_t fam = i / 8;
      const bool held = fam % 5 >= 2 && i % 7 != 3;
      const bool size_known = fam % 5 == 0 || (fam % 5 >= 2 && i % 2 == 1);
      TestRow row{keys, set, static_cast<std::int64_t>((i * 7919) % 100003), !have, held};
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

// Fuzz against a model of the trigger's search: random keys from a large space but shared
// within families, random sets from a small universe (similarities all around the
// thresholds), originals at random (several originals of similarity 1 too, as rows loaded
// before the trigger give), repeated tags, rows held without their sets (size known or
// not). Every answer that is not kUnknown must be the model's; kUnknown only where a row
// without its set shares a key. Of originals equally similar (at 1 too), the smaller tag.
TEST(SetIndex, FuzzAgainstTheSearch) {
  int answered = 0;
  int unknowns = 0;
  int at_one = 0;
  for (int seed = 0; seed < 300; ++seed) {
    std::mt19937_64 rng(1000 + seed);
    const double thresholds[] = {0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0};
    const double t = thresholds[seed % 7];
    const int key_space = 50 + static_cast<int>(rng() % 500);
    const int universe = 8 + static_cast<int>(rng() % 24);
    auto random_row = [&](std::vector<std::int64_t>& keys, std::vector<std::uint64_t>& set) {
      const int base = static_cast<int>(rng() % 4);  // families: sets of one base are near
      keys.resize(kLshBands);                        // and share keys now and then
      for (auto& k : keys)
        k = rng() % 8 == 0 ? base : 4 + static_cast<std::int64_t>(rng() % key_space);
      set.clear();
      for (int e = 0; e < universe; ++e)
        if (rng() % 100 < (e % 4 == base ? 90u : 12u))
          set.push_back(static_cast<std::uint64_t>(e) * 7919 + 1);
      if (set.empty()) set.push_back(1);
    };
    struct FRow {
      std::vector<std::int64_t> keys;
      std::vector<std::uint64_t> set;
      std::int64_t tag;
      bool original, held;
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
      const bool size_known = rng() % 2 == 0;
      index.add(r.keys.data(), r.held ? r.set.data() : nullptr,
                r.held || size_known ? r.set.size() : SetIndex::kUnknownSize, r.tag, r.original);
      rows.push_back(r);
    }
    for (int q = 0; q < 40; ++q) {
      std::vector<std::int64_t> keys;
      std::vector<std::uint64_t> set;
      random_row(keys, set);
      bool any = false, may_be_unknown = false, have = false;
      SetIndex::Hit want;
      for (const FRow& r : rows) {
        if (!shares(r, keys)) continue;
        const double sim = jaccard(overlap(set.data(), set.size(), r.set.data(), r.set.size()));
        if (!r.held) may_be_unknown = true;
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
        EXPECT_TRUE(any) << "seed " << seed << " query " << q;
        EXPECT_GE(hit.similarity, t);
      } else if (a == SetIndex::Answer::kNone) {
        EXPECT_FALSE(any) << "seed " << seed << " query " << q;
      } else {
        EXPECT_TRUE(may_be_unknown) << "seed " << seed << " query " << q;
      }
      SetIndex::Hit b;
      const auto ba = index.best(keys.data(), set.data(), set.size(), t, &b);
      if (ba == SetIndex::Answer::kFound) {
        ASSERT_TRUE(have) << "seed " << seed << " query " << q;
        EXPECT_EQ(b.tag, want.tag) << "seed " << seed << " query " << q;
        EXPECT_EQ(b.original, want.original) << "seed " << seed << " query " << q;
        EXPECT_EQ(b.similarity, want.similarity) << "seed " << seed << " query " << q;
        ++answered;
        at_one += want.similarity >= 1.0;
      } else if (ba == SetIndex::Answer::kNone) {
        EXPECT_FALSE(have) << "seed " << seed << " query " << q;
        ++answered;
      } else {
        EXPECT_TRUE(may_be_unknown) << "seed " << seed << " query " << q;
        ++unknowns;
      }
    }
  }
  std::printf("fuzz: %d answered (%d at similarity 1), %d unknown\n", answered, at_one, unknowns);
  EXPECT_GT(answered, 2000);
  EXPECT_GT(unknowns, 300);
  EXPECT_GT(at_one, 100);
}

// peak_bytes() bounds what add() holds afterwards (and the buffers it grows meanwhile):
// checked before each add against bytes() after it, for held and unheld rows, originals
// and not, across chunk and head rebuilds.
TEST(SetIndex, PeakBytesBoundsEveryAdd) {
  std::mt19937_64 rng(7);
  SetIndex index;
  std::vector<std::int64_t> keys(kLshBands);
  std::vector<std::uint64_t> set;
  for (int i = 0; i < 20000; ++i) {
    for (auto& k : keys) k = static_cast<std::int64_t>(rng() % 5000);
    set.resize(50 + rng() % 400);
    for (auto& h : set) h = rng();
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    const bool original = i % 3 != 0;
    const bool given = i % 11 != 0;
    const std::size_t hold_limit = i < 15000 ? SIZE_MAX : index.bytes();
    const std::size_t before = index.bytes();
    const std::size_t peak = index.peak_bytes(set.size(), given, original, hold_limit);
    ASSERT_GE(peak, before);
    index.add(keys.data(), given ? set.data() : nullptr, set.size(), i, original, hold_limit);
    ASSERT_LE(index.bytes(), peak) << "row " << i;
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
  EXPECT_EQ(simhash_set_index_find(index, keys.data(), set.data(), set.size(), 0.8, 1, &tag,
                                   &original, &sim),
            SIMHASH_SET_NONE);
  ASSERT_EQ(simhash_set_index_add(index, keys.data(), set.data(), set.size(), 42, 1,
                                  SIZE_MAX, err, sizeof(err)),
            SIMHASH_OK);
  EXPECT_EQ(simhash_set_index_find(index, keys.data(), set.data(), set.size(), 0.8, 1, &tag,
                                   &original, &sim),
            SIMHASH_SET_FOUND);
  EXPECT_EQ(tag, 42);
  EXPECT_EQ(original, 1);
  EXPECT_EQ(sim, 1.0);
  EXPECT_EQ(simhash_set_index_rows(index), 1u);
  EXPECT_EQ(simhash_set_index_held(index), 1u);
  // a row that could take the index past its budget is not added
  EXPECT_EQ(simhash_set_index_add(index, keys.data(), set.data(), set.size(), 7, 1,
                                  simhash_set_index_bytes(index), err, sizeof(err)),
            SIMHASH_LIMIT_EXCEEDED);
  EXPECT_EQ(simhash_set_index_rows(index), 1u);
  ASSERT_EQ(simhash_set_index_add(index, keys.data(), set.data(), set.size(), 7, 1,
                                  4 * simhash_set_index_bytes(index), err, sizeof(err)),
            SIMHASH_OK);
  EXPECT_EQ(simhash_set_index_rows(index), 2u);
  EXPECT_EQ(simhash_set_index_held(index), 2u);  // room in the first chunk
  // past three quarters of the budget, a row is added without its set: a query meeting it
  // is unknown
  SetIndex small;
  std::vector<std::uint64_t> big(70000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = i * 3 + 1;
  const std::size_t budget = small.peak_bytes(big.size(), false, true, 0);
  EXPECT_FALSE(small.try_add(keys.data(), big.data(), big.size(), 1, true, budget - 1));
  EXPECT_EQ(small.rows(), 0u);
  EXPECT_TRUE(small.try_add(keys.data(), big.data(), big.size(), 1, true, budget));
  EXPECT_EQ(small.held(), 0u);
  EXPECT_EQ(small.rows(), 1u);
  SetIndex::Hit hit;
  EXPECT_EQ(small.any(keys.data(), big.data(), big.size(), 0.8, &hit), SetIndex::Answer::kUnknown);
  simhash_set_index_free(index);
}

// A key is a candidate's only in its own band: the search (shares_lsh_key() in
// src/pg/dedupe_search.c) compares the keys band by band, so a row whose key of band 1 is
// the new row's key of band 0 is never verified, however similar.
TEST(SetIndex, KeysMatchInTheirOwnBandOnly) {
  const auto set = shingle_set("the quick brown fox jumps over the lazy dog");
  std::vector<std::int64_t> row_keys(kLshBands);
  std::vector<std::int64_t> query(kLshBands);
  for (int b = 0; b < kLshBands; ++b) {
    row_keys[b] = 1000 + b;
    query[b] = 5000 + b;
  }
  query[0] = row_keys[1];
  SetIndex index;
  index.add(row_keys.data(), set.data(), set.size(), 1, true);
  SetIndex::Hit hit;
  EXPECT_EQ(index.any(query.data(), set.data(), set.size(), 0.5, &hit), SetIndex::Answer::kNone);
  EXPECT_EQ(index.best(query.data(), set.data(), set.size(), 0.5, &hit), SetIndex::Answer::kNone);
  query[1] = row_keys[1];
  EXPECT_EQ(index.any(query.data(), set.data(), set.size(), 0.5, &hit), SetIndex::Answer::kFound);
  EXPECT_EQ(hit.tag, 1);
  // The same with a key whose chains of bands 0 and 1 share a head (of the 1024 of a new
  // index: its bucket() as set_index.cpp computes it), so that only the band tells apart.
  std::int64_t k = 0;
  auto head = [](int band, std::int64_t key) {
    return mix64(static_cast<std::uint64_t>(key) ^
                 (static_cast<std::uint64_t>(band) * 0x9E3779B97F4A7C15ULL)) & 1023;
  };
  while (head(0, k) != head(1, k)) ++k;
  row_keys[1] = k;
  query[0] = k;
  query[1] = 5001;
  SetIndex shared_head;
  shared_head.add(row_keys.data(), set.data(), set.size(), 1, true);
  EXPECT_EQ(shared_head.any(query.data(), set.data(), set.size(), 0.5, &hit), SetIndex::Answer::kNone);
  EXPECT_EQ(shared_head.best(query.data(), set.data(), set.size(), 0.5, &hit), SetIndex::Answer::kNone);
}

// Ties at the same similarity: best() names the smallest tag of the best class, whatever
// order the rows came in (the link policy's order: originals, the most similar, the
// smallest key), at similarity 1 too.
TEST(SetIndex, TiesPickTheSmallestTag) {
  const auto set = shingle_set("the quick brown fox jumps over the lazy dog");
  const auto keys = lsh_keys(set.data(), set.size());
  SetIndex index;
  for (std::int64_t tag : {50, 7, 90, 3, 60}) index.add(keys.data(), set.data(), set.size(), tag, tag != 3);
  SetIndex::Hit hit;
  // every original is of similarity 1: the smallest tag of the originals
  ASSERT_EQ(index.best(keys.data(), set.data(), set.size(), 0.8, &hit), SetIndex::Answer::kFound);
  EXPECT_EQ(hit.tag, 7);
  EXPECT_EQ(hit.similarity, 1.0);
  // below 1, the smallest tag of the originals
  auto near = set;
  near.push_back(~std::uint64_t{0});  // one shingle more: 1 - 1/(n + 1)
  ASSERT_EQ(index.best(keys.data(), near.data(), near.size(), 0.8, &hit), SetIndex::Answer::kFound);
  EXPECT_EQ(hit.tag, 7);  // 3 is smaller, but not an original
  EXPECT_TRUE(hit.original);
  EXPECT_LT(hit.similarity, 1.0);
  // one original of similarity 1 (the others linked): that one
  SetIndex one;
  for (std::int64_t tag : {50, 7, 90}) one.add(keys.data(), set.data(), set.size(), tag, tag == 90);
  ASSERT_EQ(one.best(keys.data(), set.data(), set.size(), 0.8, &hit), SetIndex::Answer::kFound);
  EXPECT_EQ(hit.tag, 90);
  EXPECT_EQ(hit.similarity, 1.0);
}

// bytes() counts what the index allocates, which the trigger compares with
// maintenance_work_mem: every held set (a set larger than a chunk, in one of its own), the
// keys and chain links of every row, and the chain heads (at least two a node in each of
// the two tables).
TEST(SetIndex, BytesCountWhatIsHeld) {
  std::mt19937_64 rng(7);
  const auto texts = family_texts(rng, 40, 8);
  SetIndex index;
  std::size_t hashes = 0;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const auto set = shingle_set(texts[i]);
    const auto keys = lsh_keys(set.data(), set.size());
    index.add(keys.data(), set.data(), set.size(), static_cast<std::int64_t>(i), true);
    hashes += set.size();
  }
  std::vector<std::uint64_t> big(70000);  // more than a chunk of 2^14 hashes
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = i * 3 + 1;
  std::vector<std::int64_t> keys(kLshBands, 42);
  index.add(keys.data(), big.data(), big.size(), -1, true);
  hashes += big.size();
  const std::size_t rows = texts.size() + 1;
  EXPECT_EQ(index.held(), rows);
  const std::size_t nodes = rows * kLshBands;
  // every row an original (skip, reject): one table of heads
  EXPECT_GE(index.bytes(), hashes * sizeof(std::uint64_t) + nodes * (8 + 4) + 2 * nodes * 4);
  SetIndex::Hit hit;
  ASSERT_EQ(index.any(keys.data(), big.data(), big.size(), 1.0, &hit), SetIndex::Answer::kFound);
  EXPECT_EQ(hit.tag, -1);
  // a row added after it still finds its own chunk
  const auto set = shingle_set("a text added after the large one");
  const auto k2 = lsh_keys(set.data(), set.size());
  index.add(k2.data(), set.data(), set.size(), -2, true);
  ASSERT_EQ(index.any(k2.data(), set.data(), set.size(), 1.0, &hit), SetIndex::Answer::kFound);
  EXPECT_EQ(hit.tag, -2);
  ASSERT_EQ(index.any(keys.data(), big.data(), big.size(), 1.0, &hit), SetIndex::Answer::kFound);
  EXPECT_EQ(hit.tag, -1);
  // rows without their sets: the keys, links and heads alone
  SetIndex unheld;
  for (std::int64_t i = 0; i < 5000; ++i) {
    for (int b = 0; b < kLshBands; ++b) keys[b] = i * kLshBands + b;
    unheld.add(keys.data(), nullptr, SetIndex::kUnknownSize, i, true);
  }
  EXPECT_EQ(unheld.held(), 0u);
  EXPECT_GE(unheld.bytes(), 5000 * kLshBands * (8 + 4 + 2 * 4));
  // one row that is not an original (link) brings the second table, as large
  const std::size_t originals_only = unheld.bytes();
  keys.assign(kLshBands, -7);
  unheld.add(keys.data(), nullptr, SetIndex::kUnknownSize, -7, false);
  EXPECT_GE(unheld.bytes(), originals_only + 2 * 5000 * kLshBands * 4);
  SetIndex::Hit hit2;
  EXPECT_EQ(unheld.best(keys.data(), big.data(), big.size(), 0.8, &hit2), SetIndex::Answer::kUnknown);
  // row 3's key of band 1 in every band: found through band 1 alone (held without its set)
  keys.assign(kLshBands, 3 * kLshBands + 1);
  EXPECT_EQ(unheld.any(keys.data(), big.data(), big.size(), 0.8, &hit2), SetIndex::Answer::kUnknown);
}

}  // namespace
}  // namespace simhash
