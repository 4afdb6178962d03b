#include "core/similarity.hpp"

#include "capi/similarity_capi.h"
#include "core/isa.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iterator>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace simhash {
namespace {

// common_at_least on every instruction set path: the exact |A ∩ B| whenever it reaches
// `need`, a value below `need` otherwise, as the scalar merge; on sets of 0 to 300
// elements sharing none, some or all of them (and one a prefix or a suffix of the other),
// for every `need` around the answer.
TEST(Similarity, CommonAtLeastIsTheSameOnEveryPath) {
  std::mt19937_64 rng(77);
  const detail::Isa best = detail::best_isa();
  for (int round = 0; round < 3000; ++round) {
    const std::size_t na = rng() % 300;
    const std::size_t nb = rng() % 300;
    const int kind = static_cast<int>(rng() % 4);
    std::set<std::uint64_t> sa, sb;
    const std::uint64_t range = kind == 0 ? (na + nb + 1) * 2 : UINT64_MAX;
    while (sa.size() < na) sa.insert(rng() % range);
    std::vector<std::uint64_t> a(sa.begin(), sa.end());
    if (kind == 1) {  // b: part of a and others
      for (const auto x : a) if (rng() % 4 != 0 && sb.size() < nb) sb.insert(x);
    } else if (kind == 2 && !a.empty()) {  // b: a prefix or a suffix of a
      const std::size_t k = std::min(nb, a.size());
      if (rng() % 2) sb.insert(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(k));
      else sb.insert(a.end() - static_cast<std::ptrdiff_t>(k), a.end());
    }
    while (sb.size() < nb) sb.insert(rng() % range);
    std::vector<std::uint64_t> b(sb.begin(), sb.end());
    std::vector<std::uint64_t> both;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(both));
    const std::uint64_t exact = both.size();
    for (std::uint64_t need : {std::uint64_t{0}, std::uint64_t{1}, exact / 2, exact > 0 ? exact - 1 : 0,
                               exact, exact + 1, exact + 5}) {
      for (const detail::Isa isa : {detail::Isa::kPortable, detail::Isa::kAvx2, detail::Isa::kAvx512}) {
        if (static_cast<int>(isa) > static_cast<int>(best)) continue;
        detail::limit_isa(isa);
        const std::uint64_t got = common_at_least(a.data(), a.size(), b.data(), b.size(), need);
        const std::uint64_t swapped = common_at_least(b.data(), b.size(), a.data(), a.size(), need);
        detail::limit_isa(detail::Isa::kAvx512);
        if (exact >= need && need <= std::min(na, nb)) {
          ASSERT_EQ(got, exact) << na << " " << nb << " " << need << " " << detail::isa_name(isa);
          ASSERT_EQ(swapped, exact) << na << " " << nb << " " << need << " " << detail::isa_name(isa);
        } else {
          ASSERT_LT(got, need) << na << " " << nb << " " << need << " " << detail::isa_name(isa);
          ASSERT_LT(swapped, need) << na << " " << nb << " " << need << " " << detail::isa_name(isa);
        }
      }
    }
  }
}

// The independent reference: for ASCII text, the normalized characters are the letters and
// digits, lower-cased (white space and punctuation are not characters of any token), and a
// shingle is a substring of kSimilarityShingle of them (all of them when there are fewer).
std::set<std::string> reference_shingles(const std::string& text) {
  std::string chars;
  for (const char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
      chars.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  std::set<std::string> out;
  if (chars.empty()) return out;
  const std::size_t w = kSimilarityShingle;
  if (chars.size() < w) {
    out.insert(chars);
    return out;
  }
  for (std::size_t i = 0; i + w <= chars.size(); i++) out.insert(chars.substr(i, w));
  return out;
}

double reference_jaccard(const std::string& a, const std::string& b) {
  const auto sa = reference_shingles(a);
  const auto sb = reference_shingles(b);
  std::vector<std::string> common;
  std::set_intersection(sa.begin(), sa.end(), sb.begin(), sb.end(), std::back_inserter(common));
  const double united = static_cast<double>(sa.size() + sb.size() - common.size());
  return united == 0 ? -1.0 : static_cast<double>(common.size()) / united;
}

double jaccard_of(const std::string& a, const std::string& b) {
  const auto sa = shingle_set(a);
  const auto sb = shingle_set(b);
  return jaccard(overlap(sa.data(), sa.size(), sb.data(), sb.size()));
}

// A random ASCII text of words from a small vocabulary, and an edited copy.
std::string random_text(std::mt19937_64& rng, std::size_t words) {
  static const char* const vocab[] = {"the",  "Software", "is",      "provided", "AS",
                                      "IS",   "without",  "warranty", "of",       "any",
                                      "kind", "express",  "or",       "implied",  "2024,",
                                      "GPL-2+", "licence", "copyright", "holders", "(c)"};
  std::string out;
  for (std::size_t i = 0; i < words; i++) {
    if (i > 0) out += (rng() % 7 == 0) ? "\n" : " ";
    out += vocab[rng() % std::size(vocab)];
  }
  return out;
}

std::string edit(std::string text, std::mt19937_64& rng, int edits) {
  for (int e = 0; e < edits && !text.empty(); e++) {
    const std::size_t pos = rng() % text.size();
    switch (rng() % 3) {
      case 0: text.erase(pos, 1 + rng() % 6); break;
      case 1: text.insert(pos, rng() % 2 ? " extra words " : "X"); break;
      default: text[pos] = static_cast<char>('a' + rng() % 26); break;
    }
  }
  return text;
}

TEST(Similarity, MatchesTheReferenceOnRandomEditedPairs) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 400; i++) {
    const std::string a = random_text(rng, 1 + rng() % 120);
    const std::string b = rng() % 4 == 0 ? random_text(rng, 1 + rng() % 120)
                                         : edit(a, rng, static_cast<int>(rng() % 12));
    EXPECT_DOUBLE_EQ(jaccard_of(a, b), reference_jaccard(a, b)) << a << "\n---\n" << b;
  }
}

TEST(Similarity, SetSizesMatchTheReference) {
  std::mt19937_64 rng(12);
  for (int i = 0; i < 200; i++) {
    const std::string a = random_text(rng, rng() % 60);
    EXPECT_EQ(shingle_set(a).size(), reference_shingles(a).size()) << a;
  }
}

TEST(Similarity, NormalizationDoesNotChangeTheSet) {
  EXPECT_EQ(jaccard_of("Permission is hereby granted, free of charge.",
                       "PERMISSION   IS HEREBY\ngranted free of charge"),
            1.0);
  EXPECT_EQ(jaccard_of("Ｆｕｌｌ ｗｉｄｔｈ", "full width"), 1.0);
}

TEST(Similarity, KnownValues) {
  // abcdefg: abcde bcdef cdefg; abcdefh: abcde bcdef cdefh -> 2 / 4.
  EXPECT_DOUBLE_EQ(jaccard_of("abcdefg", "abcdefh"), 0.5);
  EXPECT_DOUBLE_EQ(jaccard_of("abc", "abc"), 1.0);
  EXPECT_DOUBLE_EQ(jaccard_of("abc", "abd"), 0.0);
  EXPECT_DOUBLE_EQ(jaccard_of("", "..."), -1.0);  // no characters on either side
  EXPECT_DOUBLE_EQ(jaccard_of("", "abcdef"), 0.0);
  const auto a = shingle_set("abcdefg");
  const auto b = shingle_set("xx abcdefg yy");
  const Overlap o = overlap(a.data(), a.size(), b.data(), b.size());
  EXPECT_DOUBLE_EQ(containment(o), 1.0);
  EXPECT_LT(jaccard(o), 1.0);
  EXPECT_DOUBLE_EQ(containment(Overlap{0, 0, 5}), -1.0);
}

TEST(Similarity, CjkTextIsShingledByCharacters) {
  // 自由软件基金会 has 7 characters: 3 shingles of 5.
  EXPECT_EQ(shingle_set("自由软件基金会").size(), 3u);
  EXPECT_DOUBLE_EQ(jaccard_of("自由软件基金会", "自由软件基金会。"), 1.0);
  EXPECT_GT(jaccard_of("これはテストの文章です", "これはテストの文章でした"), 0.5);
}

TEST(Overlap, GallopingAgreesWithAMergeForEverySizeRatio) {
  std::mt19937_64 rng(13);
  for (int round = 0; round < 300; round++) {
    std::set<std::uint64_t> sa;
    std::set<std::uint64_t> sb;
    const std::size_t na = rng() % 50;
    const std::size_t nb = rng() % 3000;
    const std::uint64_t range = 1 + rng() % 5000;
    while (sa.size() < std::min<std::uint64_t>(na, range)) sa.insert(rng() % range);
    while (sb.size() < std::min<std::uint64_t>(nb, range)) sb.insert(rng() % range);
    std::vector<std::uint64_t> a(sa.begin(), sa.end());
    std::vector<std::uint64_t> b(sb.begin(), sb.end());
    std::vector<std::uint64_t> common;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
    const Overlap o1 = overlap(a.data(), a.size(), b.data(), b.size());
    const Overlap o2 = overlap(b.data(), b.size(), a.data(), a.size());
    EXPECT_EQ(o1.common, common.size());
    EXPECT_EQ(o2.common, common.size());
    EXPECT_EQ(o1.left, a.size());
    EXPECT_EQ(o1.right, b.size());
  }
}

TEST(Overlap, RefusesUnsortedOrRepeatedInput) {
  const std::uint64_t unsorted[] = {3, 1};
  const std::uint64_t repeated[] = {1, 1};
  const std::uint64_t fine[] = {1, 2};
  EXPECT_THROW(overlap(unsorted, 2, fine, 2), std::invalid_argument);
  EXPECT_THROW(overlap(fine, 2, repeated, 2), std::invalid_argument);
  EXPECT_THROW(overlap(nullptr, 1, fine, 2), std::invalid_argument);
  EXPECT_EQ(overlap(nullptr, 0, fine, 2).common, 0u);
}

TEST(JaccardBound, IsMinOverMax) {
  EXPECT_DOUBLE_EQ(jaccard_bound(4, 8), 0.5);
  EXPECT_DOUBLE_EQ(jaccard_bound(8, 4), 0.5);
  EXPECT_DOUBLE_EQ(jaccard_bound(0, 0), -1.0);
}

TEST(SetDigest, EqualSetsEqualDigestsAndAGoldenValue) {
  const auto a = shingle_set("The Quick, brown FOX!");
  const auto b = shingle_set("the quick brown fox");
  const auto c = shingle_set("the quick brown fax");
  EXPECT_EQ(set_digest(a.data(), a.size()), set_digest(b.data(), b.size()));
  EXPECT_NE(set_digest(a.data(), a.size()), set_digest(c.data(), c.size()));
  EXPECT_NE(set_digest(a.data(), a.size() - 1), set_digest(a.data(), a.size()));
  const auto g = shingle_set("The quick brown fox jumps over the lazy dog");
  // Pinned with expected/simhash_similar.out (the digest as a signed bigint there).
  EXPECT_EQ(static_cast<std::int64_t>(set_digest(g.data(), g.size())), 5264863188361503184LL);
}


// ---- ShingleCounter: distinct shingles of a prefix, capped ----

// Texts with multi-byte characters, combining marks and long words, so that pieces cut
// inside UTF-8 sequences, between a letter and its marks, and inside words.
std::string mixed_text(std::mt19937_64& rng, std::size_t words) {
  static const char* const vocab[] = {
      "the", "Software", "e\xCC\x81t\xC3\xA9", "\xEF\xAC\x81le", "\xE6\xBC\xA2\xE5\xAD\x97",
      "\xF0\x9F\x98\x80", "Stra\xC3\x9F" "e", "warranty,", "(c)", "\xD0\x9F\xD1\x80\xD0\xB8",
      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
      "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab",
      "x\xCC\x88\xCC\x81"};
  std::string out;
  for (std::size_t i = 0; i < words; i++) {
    if (i > 0) out += (rng() % 5 == 0) ? "\n" : " ";
    out += vocab[rng() % std::size(vocab)];
    if (rng() % 7 == 0) out += std::to_string(rng() % 1000);
  }
  return out;
}

struct Counted {
  std::uint64_t count;
  bool over;
  std::vector<std::uint64_t> set;  // when ended within the cap
};

// Feeds text[0..prefix) in pieces of at most `piece` bytes; ends the text when `end`.
Counted count_prefix(const std::string& text, std::size_t prefix, std::size_t piece,
                     std::uint64_t cap, bool end) {
  std::vector<std::uint64_t> table(ShingleCounter::table_size_for(cap));
  ShingleCounter c(cap, table.data(), table.size());
  for (std::size_t at = 0; at < prefix; at += piece) {
    c.feed(text.data() + at, std::min(piece, prefix - at));
  }
  if (end) c.end();
  Counted out{c.count(), c.over(), {}};
  if (end && !c.over()) {
    out.set.resize(c.count());
    EXPECT_EQ(c.sorted(out.set.data(), out.set.size()), c.count());
  }
  return out;
}

TEST(ShingleCounter, EndedWithinTheCapIsTheShingleSet) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; round++) {
    const std::string text = round % 2 == 0 ? mixed_text(rng, rng() % 60) : random_text(rng, rng() % 60);
    const auto expected = shingle_set(text);
    for (const std::size_t piece : {std::size_t{1}, std::size_t{3}, std::size_t{64}, text.size() + 1}) {
      const Counted got = count_prefix(text, text.size(), std::max<std::size_t>(piece, 1),
                                       expected.size(), true);
      ASSERT_FALSE(got.over);
      ASSERT_EQ(got.set, expected) << "round " << round << ", pieces of " << piece;
    }
  }
}

// common() counts without sorting what it holds: the overlap of the two sets, whatever A is.
TEST(ShingleCounter, CommonIsTheOverlapWithTheSetCounted) {
  std::mt19937_64 rng(13);
  for (int round = 0; round < 200; round++) {
    const std::string text = round % 2 == 0 ? mixed_text(rng, rng() % 60) : random_text(rng, rng() % 60);
    const std::string other = round % 3 == 0 ? text : mixed_text(rng, rng() % 60);
    const auto counted = shingle_set(text);
    auto a = shingle_set(other);
    if (round % 5 == 0) a.push_back(0);  // the shingle 0, kept apart by the counter
    std::shuffle(a.begin(), a.end(), rng);
    std::vector<std::uint64_t> table(ShingleCounter::table_size_for(counted.size()));
    ShingleCounter c(counted.size(), table.data(), table.size());
    c.feed(text.data(), text.size());
    c.end();
    auto sorted_a = a;
    std::sort(sorted_a.begin(), sorted_a.end());
    sorted_a.erase(std::unique(sorted_a.begin(), sorted_a.end()), sorted_a.end());
    ASSERT_EQ(c.common(a.data(), a.size()),
              overlap(sorted_a.data(), sorted_a.size(), counted.data(), counted.size()).common)
        << "round " << round;
  }
  std::vector<std::uint64_t> table(ShingleCounter::table_size_for(1));
  ShingleCounter over(1, table.data(), table.size());
  const std::string text = "many different words here";
  over.feed(text.data(), text.size());
  over.end();
  ASSERT_TRUE(over.over());
  EXPECT_THROW(over.common(nullptr, 0), std::logic_error);
}

TEST(ShingleCounter, EveryShingleOfAPrefixIsOneOfTheText) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 60; round++) {
    const std::string text = mixed_text(rng, 40);
    const auto whole = shingle_set(text);
    for (std::size_t prefix = 0; prefix <= text.size(); prefix++) {
      // Not ended: the table itself holds what was counted (0 marks a free slot).
      std::vector<std::uint64_t> table(ShingleCounter::table_size_for(whole.size()));
      ShingleCounter c(whole.size(), table.data(), table.size());
      c.feed(text.data(), prefix);
      ASSERT_FALSE(c.over());
      ASSERT_LE(c.count(), whole.size());
      for (const std::uint64_t h : table) {
        if (h == 0) continue;
        ASSERT_TRUE(std::binary_search(whole.begin(), whole.end(), h))
            << "round " << round << ", prefix " << prefix << " counts a shingle the text lacks";
      }
    }
  }
}

TEST(ShingleCounter, CountIsMonotoneAndStopsPastTheCap) {
  std::mt19937_64 rng(13);
  const std::string text = mixed_text(rng, 400);
  const std::size_t total = shingle_set(text).size();
  ASSERT_GT(total, 100u);
  for (const std::uint64_t cap : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{50},
                                  std::uint64_t{total - 1}, std::uint64_t{total}}) {
    std::vector<std::uint64_t> table(ShingleCounter::table_size_for(cap));
    ShingleCounter c(cap, table.data(), table.size());
    std::uint64_t last = 0;
    for (std::size_t at = 0; at < text.size(); at += 17) {
      c.feed(text.data() + at, std::min<std::size_t>(17, text.size() - at));
      ASSERT_GE(c.count(), last);
      ASSERT_LE(c.count(), cap + 1);
      last = c.count();
    }
    c.end();
    EXPECT_EQ(c.over(), total > cap) << "cap " << cap;
    EXPECT_EQ(c.count(), std::min<std::uint64_t>(total, cap + 1)) << "cap " << cap;
    std::vector<std::uint64_t> out(cap + 1);
    if (c.over()) {
      EXPECT_THROW(c.sorted(out.data(), out.size()), std::logic_error);
    }
  }
}

TEST(ShingleCounter, GrowsItsTableAsTheCountGrows) {
  std::mt19937_64 rng(17);
  const std::string text = mixed_text(rng, 3000);
  const auto expected = shingle_set(text);
  std::vector<std::vector<std::uint64_t>> tables(1, std::vector<std::uint64_t>(16));
  ShingleCounter c(expected.size(), tables.back().data(), 16);
  EXPECT_THROW(c.feed(text.data(), text.size()), std::logic_error);  // no room for it all
  for (std::size_t at = 0; at < text.size(); at += 100) {
    const std::size_t n = std::min<std::size_t>(100, text.size() - at);
    if (c.table_size() < c.table_size_before(n)) {
      tables.emplace_back(c.table_size_before(n));
      c.grow(tables.back().data(), tables.back().size());
    }
    c.feed(text.data() + at, n);
  }
  if (c.table_size() < c.table_size_before(0)) {
    tables.emplace_back(c.table_size_before(0));
    c.grow(tables.back().data(), tables.back().size());
  }
  c.end();
  ASSERT_FALSE(c.over());
  std::vector<std::uint64_t> out(c.count());
  c.sorted(out.data(), out.size());
  EXPECT_EQ(out, expected);
  // Never more than the cap needs.
  EXPECT_LE(c.table_size(), ShingleCounter::table_size_for(expected.size()));
}

TEST(ShingleCounter, ThroughTheCApi) {
  std::mt19937_64 rng(19);
  const std::string text = mixed_text(rng, 500);
  const auto expected = shingle_set(text);
  char err[256];
  simhash_shingle_counter state;
  std::vector<std::vector<std::uint64_t>> tables(1, std::vector<std::uint64_t>(SIMHASH_SHINGLE_COUNTER_MIN_TABLE));
  ASSERT_EQ(simhash_shingle_counter_begin(&state, expected.size(), tables.back().data(),
                                          tables.back().size(), err, sizeof(err)),
            SIMHASH_OK);
  std::uint64_t count = 0;
  // Feeding more than the table holds is refused, not a crash.
  EXPECT_EQ(simhash_shingle_counter_feed(&state, text.data(), text.size(), &count, err, sizeof(err)),
            SIMHASH_INTERNAL_ERROR);
  for (std::size_t at = 0; at < text.size(); at += 333) {
    const std::size_t n = std::min<std::size_t>(333, text.size() - at);
    const std::size_t need = simhash_shingle_counter_table_before(&state, n);
    if (need > simhash_shingle_counter_table_size(&state)) {
      tables.emplace_back(need);
      ASSERT_EQ(simhash_shingle_counter_grow(&state, tables.back().data(), need, nullptr, err,
                                             sizeof(err)),
                SIMHASH_OK);
    }
    ASSERT_EQ(simhash_shingle_counter_feed(&state, text.data() + at, n, &count, err, sizeof(err)),
              SIMHASH_OK);
  }
  const std::size_t need = simhash_shingle_counter_table_before(&state, 0);
  if (need > simhash_shingle_counter_table_size(&state)) {
    tables.emplace_back(need);
    ASSERT_EQ(
        simhash_shingle_counter_grow(&state, tables.back().data(), need, nullptr, err, sizeof(err)),
        SIMHASH_OK);
  }
  ASSERT_EQ(simhash_shingle_counter_end(&state, &count, err, sizeof(err)), SIMHASH_OK);
  ASSERT_EQ(count, expected.size());
  std::vector<std::uint64_t> out(count);
  std::size_t n = 0;
  EXPECT_EQ(simhash_shingle_counter_set(&state, out.data(), out.size() - 1, &n, nullptr, err,
                                        sizeof(err)),
            SIMHASH_INVALID_ARGUMENT);
  ASSERT_EQ(
      simhash_shingle_counter_set(&state, out.data(), out.size(), &n, nullptr, err, sizeof(err)),
      SIMHASH_OK);
  out.resize(n);
  EXPECT_EQ(out, expected);
  EXPECT_EQ(simhash_shingle_counter_table_for(0), 16u);
  EXPECT_EQ(simhash_shingle_counter_table_for(std::uint64_t{1} << 62), 0u);
  EXPECT_EQ(simhash_shingle_counter_begin(nullptr, 1, out.data(), 16, err, sizeof(err)),
            SIMHASH_INVALID_ARGUMENT);
}

TEST(ShingleCounter, ShortTextsAndTheTable) {
  const std::uint64_t cap = 10;
  std::vector<std::uint64_t> table(ShingleCounter::table_size_for(cap));
  EXPECT_GE(table.size(), 2 * (cap + 1));
  EXPECT_THROW(ShingleCounter(cap, table.data(), 24), std::invalid_argument);
  EXPECT_THROW(ShingleCounter(cap, table.data(), 8), std::invalid_argument);
  for (const std::string text : {"", "  ,, ", "abc", "ab cd", "abcde"}) {
    ShingleCounter c(cap, table.data(), table.size());
    c.feed(text.data(), text.size());
    c.end();
    std::vector<std::uint64_t> out(c.count());
    c.sorted(out.data(), out.size());
    EXPECT_EQ(out, shingle_set(text)) << text;
  }
}

}  // namespace
}  // namespace simhash
