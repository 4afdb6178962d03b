#include "core/similar_pairs.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/hamming.hpp"
#include "core/minhash.hpp"
#include "core/similarity.hpp"

namespace simhash {
namespace {

// Families of near-duplicate texts: a base of random words, copies with a few words
// changed, dropped or added, exact copies, copies differing only in case and punctuation
// (the same shingle set), a few texts without a character, and unrelated texts.
std::vector<std::string> make_texts(std::uint32_t seed, int families) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> word(0, 499);
  auto random_words = [&](int count) {
    std::vector<std::string> w;
    for (int i = 0; i < count; ++i) w.push_back("w" + std::to_string(word(rng)));
    return w;
  };
  auto join = [](const std::vector<std::string>& w) {
    std::string s;
    for (const auto& x : w) s += (s.empty() ? "" : " ") + x;
    return s;
  };
  std::vector<std::string> texts;
  for (int f = 0; f < families; ++f) {
    const auto base = random_words(20 + static_cast<int>(rng() % 40));
    texts.push_back(join(base));
    const int copies = static_cast<int>(rng() % 6);
    for (int c = 0; c < copies; ++c) {
      auto w = base;
      switch (rng() % 5) {
        case 0:
          texts.push_back(join(w));  // exact copy
          break;
        case 1: {
          std::string s = join(w);
          for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
          texts.push_back(s + "!!");  // same shingles
          break;
        }
        default: {
          const int edits = 1 + static_cast<int>(rng() % 8);
          for (int e = 0; e < edits && !w.empty(); ++e) {
            const std::size_t at = rng() % w.size();
            switch (rng() % 3) {
              case 0: w[at] = "x" + std::to_string(word(rng)); break;
              case 1: w.erase(w.begin() + static_cast<std::ptrdiff_t>(at)); break;
              default: w.insert(w.begin() + static_cast<std::ptrdiff_t>(at), "y" + std::to_string(word(rng)));
            }
          }
          texts.push_back(join(w));
        }
      }
    }
  }
  texts.push_back("");
  texts.push_back("  ... !!! ");
  texts.push_back("tiny");
  texts.push_back("TINY.");
  return texts;
}

using PairKey = std::tuple<std::int64_t, std::int64_t, double>;

// The reference: every pair of texts with characters whose sets are identical, or whose
// groups' (identical sets') candidates meet as the recipes say, and whose Jaccard is at
// least t. Ids are 1000 - 3 i (not in row order).
std::set<PairKey> reference_pairs(const std::vector<std::string>& texts, double t) {
  const auto recipes = similar_recipes(t);
  const std::size_t n = texts.size();
  std::vector<std::vector<std::uint64_t>> sets(n);
  std::vector<std::int64_t> ids(n);
  for (std::size_t i = 0; i < n; ++i) {
    sets[i] = shingle_set(texts[i]);
    ids[i] = 1000 - 3 * static_cast<std::int64_t>(i);
  }
  // Each group's representative: the row with the smallest id among identical sets.
  std::vector<std::size_t> rep(n);
  for (std::size_t i = 0; i < n; ++i) {
    rep[i] = i;
    for (std::size_t j = 0; j < n; ++j) {
      if (sets[j] == sets[i] && ids[j] < ids[rep[i]]) rep[i] = j;
    }
  }
  std::set<PairKey> out;
  for (std::size_t i = 0; i < n; ++i) {
    if (sets[i].empty()) continue;
    for (std::size_t j = i + 1; j < n; ++j) {
      if (sets[j].empty()) continue;
      bool candidate = sets[i] == sets[j];
      for (const auto& r : recipes) {
        if (candidate) break;
        if (r.lsh) {
          const auto ki = lsh_keys(sets[i].data(), sets[i].size());
          const auto kj = lsh_keys(sets[j].data(), sets[j].size());
          for (int b = 0; b < kLshBands; ++b) candidate = candidate || ki[b] == kj[b];
        } else {
          const auto fi = binary_fingerprint(texts[rep[i]], r.tokenizer, r.n);
          const auto fj = binary_fingerprint(texts[rep[j]], r.tokenizer, r.n);
          candidate = fi && fj && hamming(*fi, *fj) <= r.max_distance;
        }
      }
      if (!candidate) continue;
      const double sim = jaccard(overlap(sets[i].data(), sets[i].size(), sets[j].data(), sets[j].size()));
      if (sim >= t) out.emplace(std::min(ids[i], ids[j]), std::max(ids[i], ids[j]), sim);
    }
  }
  return out;
}

std::set<PairKey> engine_pairs(const std::vector<std::string>& texts, double t, int threads,
                               std::size_t batch, std::size_t capacity, std::size_t work) {
  SimilarPairs engine(t, threads);
  std::vector<std::int64_t> ids;
  std::vector<std::string_view> views;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    ids.push_back(1000 - 3 * static_cast<std::int64_t>(i));
    views.emplace_back(texts[i]);
  }
  for (std::size_t at = 0; at < texts.size(); at += batch) {
    const std::size_t n = std::min(batch, texts.size() - at);
    engine.add(ids.data() + at, views.data() + at, n);
  }
  EXPECT_FALSE(engine.duplicate_id().has_value());
  std::set<PairKey> out;
  std::vector<SimilarPair> buf(capacity);
  for (int guard = 0; guard < 10000000; ++guard) {
    const std::size_t got = engine.next(buf.data(), buf.size(), work);
    for (std::size_t i = 0; i < got; ++i) {
      EXPECT_LT(buf[i].id1, buf[i].id2);
      const bool fresh = out.emplace(buf[i].id1, buf[i].id2, buf[i].similarity).second;
      EXPECT_TRUE(fresh) << "pair written twice: " << buf[i].id1 << " " << buf[i].id2;
    }
    if (got == 0 && engine.done()) break;
  }
  EXPECT_TRUE(engine.done());
  return out;
}

// The caller's side of external mode: a record store and a store a band, in vectors.
struct ExternalStores {
  std::vector<unsigned char> records;
  std::vector<std::vector<std::int64_t>> bands;
  std::size_t export_cap;

  void drain(SimilarPairs& engine) {
    std::vector<unsigned char> buf(export_cap);
    for (;;) {
      const std::size_t n = engine.export_records(buf.data(), buf.size());
      if (n == 0) break;
      records.insert(records.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(n));
    }
    bands.resize(static_cast<std::size_t>(engine.lsh_bands()));
    std::vector<std::int64_t> keys(export_cap / 8);
    for (int b = 0; b < engine.lsh_bands(); ++b) {
      for (;;) {
        const std::size_t n = engine.export_keys(b, keys.data(), keys.size());
        if (n == 0) break;
        bands[b].insert(bands[b].end(), keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(n));
      }
    }
    engine.export_done();
    EXPECT_EQ(records.size(), engine.record_bytes());
  }

  // Serves what the engine waits for; false when it waits for nothing.
  bool serve(SimilarPairs& engine) {
    if (engine.need() == SimilarPairs::Need::BandKeys) {
      const auto& keys = bands.at(static_cast<std::size_t>(engine.need_band()));
      // In pieces of 3, as a caller reading a file in chunks would.
      for (std::size_t at = 0; engine.need() == SimilarPairs::Need::BandKeys; at += 3) {
        EXPECT_LT(at, keys.size() + 3);
        engine.provide_band_keys(keys.data() + at, std::min<std::size_t>(3, keys.size() - at));
      }
      return true;
    }
    if (engine.need() == SimilarPairs::Need::Sets) {
      std::uint64_t last = 0;
      for (const auto& l : engine.sets_needed()) {
        EXPECT_GE(l.offset, last);
        last = l.offset;
        EXPECT_LE(l.offset + l.bytes, records.size());
        std::memcpy(l.dest, records.data() + l.offset, l.bytes);
      }
      engine.sets_loaded();
      return true;
    }
    return false;
  }
};

// Pairs through external mode, switched after `switch_after` rows (0: before the first).
std::set<PairKey> external_pairs(const std::vector<std::string>& texts, double t, int threads,
                                 std::size_t batch, std::size_t switch_after, std::size_t budget,
                                 std::size_t export_cap, std::size_t work) {
  SimilarPairs engine(t, threads);
  ExternalStores stores{{}, {}, export_cap};
  std::vector<std::int64_t> ids;
  std::vector<std::string_view> views;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    ids.push_back(1000 - 3 * static_cast<std::int64_t>(i));
    views.emplace_back(texts[i]);
  }
  engine.set_record_budget(budget);
  for (std::size_t at = 0; at < texts.size(); at += batch) {
    if (at >= switch_after && !engine.external()) {
      engine.go_external();
      stores.drain(engine);
    }
    const std::size_t n = std::min(batch, texts.size() - at);
    engine.add(ids.data() + at, views.data() + at, n);
    if (engine.external()) stores.drain(engine);
  }
  EXPECT_TRUE(engine.external());
  EXPECT_FALSE(engine.duplicate_id().has_value());
  std::set<PairKey> out;
  std::vector<SimilarPair> buf(64);
  for (int guard = 0; guard < 10000000; ++guard) {
    const std::size_t got = engine.next(buf.data(), buf.size(), work);
    for (std::size_t i = 0; i < got; ++i) {
      const bool fresh = out.emplace(buf[i].id1, buf[i].id2, buf[i].similarity).second;
      EXPECT_TRUE(fresh) << "pair written twice: " << buf[i].id1 << " " << buf[i].id2;
    }
    if (got == 0 && engine.done()) break;
    stores.serve(engine);
  }
  EXPECT_TRUE(engine.done());
  return out;
}

// The fingerprints of the recipes below 0.7 are fed a chunk at a time into a buffer that
// grows: the same value as one feed into a buffer sized for the worst case, on texts of
// several chunks whose multi-byte characters (and U+FDFA, 18 features) straddle the cuts.
TEST(SimilarPairs, BinaryFingerprintInChunksEqualsOneFeed) {
  std::mt19937 rng(7);
  const std::vector<std::string> pieces = {"alpha ", "b\xC3\xA9ta ", "\xE6\x97\xA5\xE6\x9C\xAC ",
                                           "\xEF\xB7\xBA ", "\xF0\x9F\x98\x80x ", "Gamma, ", "42 "};
  for (const std::size_t bytes : {std::size_t{0}, std::size_t{10}, std::size_t{65535},
                                  std::size_t{65537}, std::size_t{300000}}) {
    std::string text;
    while (text.size() < bytes) text += pieces[rng() % pieces.size()];
    for (const auto& r : std::vector<std::pair<TokenizerKind, int>>{
             {TokenizerKind::Char, 3}, {TokenizerKind::Char, 5}, {TokenizerKind::Word, 1}}) {
      TextOptions options;
      options.tokenizer = r.first;
      options.n = r.second;
      options.weighting = Weighting::Binary;
      TextFingerprinter whole(options);
      std::vector<std::uint64_t> buffer;
      if (whole.needs_buffer()) {
        buffer.resize(whole.capacity_for(text.size()));
        whole.set_buffer(buffer.data(), buffer.size());
      }
      whole.feed(text.data(), text.size());
      EXPECT_EQ(binary_fingerprint(text, r.first, r.second), whole.fingerprint())
          << bytes << " bytes, n " << r.second;
    }
  }
}

TEST(SimilarPairs, ExternalModeGivesTheSameAnswer) {
  const auto texts = make_texts(17, 90);
  for (const double t : {0.5, 0.65, 0.8, 1.0}) {
    const auto expected = reference_pairs(texts, t);
    EXPECT_GT(expected.size(), 10U) << t;
    // From the start; after some rows (the sets so far exported at the switch); tiny budgets
    // (a candidate's records at a time) and export buffers (records in pieces); threads.
    EXPECT_EQ(external_pairs(texts, t, 1, 1000, 0, 1 << 20, 4096, 1 << 20), expected) << t;
    EXPECT_EQ(external_pairs(texts, t, 2, 13, 40, 64, 16, 7), expected) << t;
    EXPECT_EQ(external_pairs(texts, t, 3, 5, 6, 3000, 8, 1 << 12), expected) << t;
  }
}

TEST(SimilarPairs, ExternalModeClusters) {
  const auto texts = make_texts(19, 70);
  for (const double t : {0.6, 0.8}) {
    SimilarPairs memory(t, 1);
    SimilarPairs external(t, 2);
    ExternalStores stores{{}, {}, 24};
    std::vector<std::int64_t> ids;
    std::vector<std::string_view> views;
    for (std::size_t i = 0; i < texts.size(); ++i) {
      ids.push_back(static_cast<std::int64_t>(i) * 7 % 101);
      views.emplace_back(texts[i]);
    }
    memory.add(ids.data(), views.data(), ids.size());
    external.set_record_budget(200);
    external.add(ids.data(), views.data(), 10);
    external.go_external();
    stores.drain(external);
    external.add(ids.data() + 10, views.data() + 10, ids.size() - 10);
    stores.drain(external);
    while (!memory.cluster_step(50)) {
    }
    for (int guard = 0; guard < 1000000; ++guard) {
      if (external.cluster_step(50)) break;
      stores.serve(external);
    }
    const auto a = memory.cluster_rows();
    const auto b = external.cluster_rows();
    EXPECT_GT(a.size(), 5U);
    ASSERT_EQ(a.size(), b.size()) << t;
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].id, b[i].id);
      EXPECT_EQ(a[i].cluster_id, b[i].cluster_id);
      EXPECT_DOUBLE_EQ(a[i].similarity, b[i].similarity);
    }
  }
}

TEST(SimilarPairs, MatchesTheReferenceAtEveryThreshold) {
  const auto texts = make_texts(7, 60);
  for (const double t : {0.3, 0.5, 0.65, 0.7, 0.8, 0.9, 1.0}) {
    const auto expected = reference_pairs(texts, t);
    EXPECT_GT(expected.size(), 10U) << t;
    EXPECT_EQ(engine_pairs(texts, t, 1, 1000, 4096, 1 << 20), expected) << t;
  }
}

TEST(SimilarPairs, ThreadsBatchesAndBudgetsDoNotChangeTheAnswer) {
  const auto texts = make_texts(11, 120);
  for (const double t : {0.5, 0.8}) {
    const auto expected = reference_pairs(texts, t);
    EXPECT_EQ(engine_pairs(texts, t, 3, 7, 1, 1), expected) << t;
    EXPECT_EQ(engine_pairs(texts, t, 2, 1000, 3, 5), expected) << t;
    EXPECT_EQ(engine_pairs(texts, t, 4, 64, 100, 17), expected) << t;
  }
}

// Over 1,024 groups: the bands are sorted by the radix sort (in memory, and from the band
// keys a caller hands back in external mode), whose order must be std::sort's.
TEST(SimilarPairs, ManyGroupsGiveTheReferenceAnswer) {
  const auto texts = make_texts(23, 480);
  const double t = 0.8;
  const auto expected = reference_pairs(texts, t);
  {
    SimilarPairs engine(t, 1);
    std::vector<std::int64_t> ids(texts.size());
    std::vector<std::string_view> views(texts.begin(), texts.end());
    for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int64_t>(i);
    engine.add(ids.data(), views.data(), ids.size());
    EXPECT_GT(engine.groups(), 1024U);
  }
  EXPECT_EQ(engine_pairs(texts, t, 2, 500, 4096, 1 << 16), expected);
  EXPECT_EQ(external_pairs(texts, t, 2, 500, 1000, 1 << 16, 4096, 1 << 16), expected);
}

// Rows whose features outgrow the room their slice's chunk has left (a long run of U+FDFA,
// 18 features a 3-byte character, across pieces of 64 kB) move to a chunk of their own: the
// same sets, groups and pairs as shingle_set gives, among short rows before and after.
TEST(SimilarPairs, RowsThatOutgrowTheirChunk) {
  std::string big;
  while (big.size() < 300000) big += "\xEF\xB7\xBA abc ";
  std::vector<std::string> texts = {"some short text here", big, big, big + " tail words",
                                    "some short text here too", "\xEF\xB7\xBA"};
  for (const double t : {0.8, 1.0}) {
    const auto expected = reference_pairs(texts, t);
    EXPECT_EQ(engine_pairs(texts, t, 1, 1000, 64, 1 << 16), expected) << t;
    EXPECT_EQ(engine_pairs(texts, t, 2, 2, 64, 1 << 16), expected) << t;
  }
}

TEST(SimilarPairs, ClustersAreTheComponentsOfThePairs) {
  const auto texts = make_texts(13, 80);
  const double t = 0.8;
  const auto pairs = reference_pairs(texts, t);
  // Components of the reference pairs by a plain union over ids.
  std::map<std::int64_t, std::int64_t> parent;
  std::function<std::int64_t(std::int64_t)> find = [&](std::int64_t x) {
    while (parent[x] != x) x = parent[x];
    return x;
  };
  std::map<std::int64_t, double> best;
  for (const auto& [a, b, s] : pairs) {
    parent.emplace(a, a);
    parent.emplace(b, b);
    const std::int64_t ra = find(a);
    const std::int64_t rb = find(b);
    parent[std::max(ra, rb)] = std::min(ra, rb);
    best[a] = std::max(best.count(a) ? best[a] : 0.0, s);
    best[b] = std::max(best.count(b) ? best[b] : 0.0, s);
  }
  std::vector<SimilarClusterRow> expected;
  for (const auto& [id, p] : parent) expected.push_back({id, find(id), best[id]});
  std::sort(expected.begin(), expected.end(), [](const auto& x, const auto& y) {
    return x.cluster_id != y.cluster_id ? x.cluster_id < y.cluster_id : x.id < y.id;
  });

  SimilarPairs engine(t, 2);
  std::vector<std::int64_t> ids;
  std::vector<std::string_view> views;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    ids.push_back(1000 - 3 * static_cast<std::int64_t>(i));
    views.emplace_back(texts[i]);
  }
  engine.add(ids.data(), views.data(), ids.size());
  while (!engine.cluster_step(10)) {
  }
  const auto rows = engine.cluster_rows();
  ASSERT_EQ(rows.size(), expected.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].id, expected[i].id);
    EXPECT_EQ(rows[i].cluster_id, expected[i].cluster_id);
    EXPECT_DOUBLE_EQ(rows[i].similarity, expected[i].similarity);
  }
}

TEST(SimilarPairs, DuplicateIdsAndBadThresholds) {
  SimilarPairs engine(0.8, 1);
  const std::int64_t ids[] = {5, 3, 5};
  const std::string_view texts[] = {"a b c d e f", "x y z", "a b c d e f g"};
  engine.add(ids, texts, 3);
  ASSERT_TRUE(engine.duplicate_id().has_value());
  EXPECT_EQ(*engine.duplicate_id(), 5);
  // Ids of rows left out (no character, or a NULL text given by add_id) count too.
  SimilarPairs empty(0.8, 1);
  const std::int64_t ids2[] = {1, 2, 1};
  const std::string_view texts2[] = {"hello world", "hello world", "!!!"};
  empty.add(ids2, texts2, 3);
  ASSERT_TRUE(empty.duplicate_id().has_value());
  EXPECT_EQ(*empty.duplicate_id(), 1);
  SimilarPairs nulls(0.8, 1);
  nulls.add(ids2, texts2, 2);
  EXPECT_FALSE(nulls.duplicate_id().has_value());
  nulls.add_id(2);
  ASSERT_TRUE(nulls.duplicate_id().has_value());
  EXPECT_EQ(*nulls.duplicate_id(), 2);
  EXPECT_THROW(SimilarPairs(0.0, 1), std::invalid_argument);
  EXPECT_THROW(SimilarPairs(1.5, 1), std::invalid_argument);
  EXPECT_THROW(SimilarPairs(std::nan(""), 1), std::invalid_argument);
}

TEST(SimilarPairs, EmptyInput) {
  SimilarPairs engine(0.8, 2);
  SimilarPair buf[4];
  EXPECT_EQ(engine.next(buf, 4, 100), 0U);
  EXPECT_TRUE(engine.done());
  SimilarPairs clusters(0.5, 2);
  EXPECT_TRUE(clusters.cluster_step(100));
  EXPECT_TRUE(clusters.cluster_rows().empty());
}

}  // namespace
}  // namespace simhash
