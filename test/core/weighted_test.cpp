#include "core/weighted.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/fingerprint.hpp"
#include "core/mix.hpp"
#include "test_util.hpp"

namespace simhash {
namespace {

double q32(std::uint64_t v) { return static_cast<double>(v) / 4294967296.0; }

TEST(LnQ32, MatchesTheNaturalLogarithm) {
  EXPECT_EQ(ln_q32(0), 0u);
  EXPECT_EQ(ln_q32(1), 0u);
  std::vector<std::uint64_t> xs;
  for (std::uint64_t x = 1; x <= 5000; ++x) xs.push_back(x);
  for (unsigned e = 0; e < 64; ++e) {
    xs.push_back(std::uint64_t{1} << e);
    xs.push_back((std::uint64_t{1} << e) + 1);
    xs.push_back((std::uint64_t{1} << e) - 1);
  }
  xs.push_back(UINT64_MAX);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20000; ++i) xs.push_back(rng() >> (rng() % 64));
  for (const std::uint64_t x : xs) {
    if (x == 0) continue;
    // long double: the reference must be finer than the 2^-28 the function promises.
    const long double want = std::log(static_cast<long double>(x));
    EXPECT_NEAR(static_cast<long double>(q32(ln_q32(x))), want, std::ldexp(1.0L, -28)) << x;
  }
}

TEST(LnQ32, IsMonotone) {
  std::uint64_t prev = 0;
  for (std::uint64_t x = 1; x <= 100000; ++x) {
    const std::uint64_t v = ln_q32(x);
    ASSERT_GE(v, prev) << x;
    prev = v;
  }
}

TEST(LnQ32, GoldenValues) {
  // Integer arithmetic only: these are the values on every machine. They are part of the
  // format of fingerprints made with the 'log' and IDF weightings.
  EXPECT_EQ(ln_q32(2), 2977044471u);
  EXPECT_EQ(ln_q32(10), 9889527670u);
  EXPECT_EQ(ln_q32(1000000), 59337166023u);
}

TEST(Idf, Factor) {
  EXPECT_EQ(idf_q20(5, 5), 1u << 20);  // in every document: 1 + ln(1) = 1
  EXPECT_EQ(idf_q20(0, 0), 1u << 20);  // an empty table: plain term frequency
  for (std::uint64_t docs : {1, 10, 1000, 123456789}) {
    for (std::uint64_t df :
         {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{2}, docs / 2, docs}) {
      if (df > docs) continue;
      const double want = 1.0 + std::log((1.0 + docs) / (1.0 + df));
      EXPECT_NEAR(idf_q20(df, docs) / 1048576.0, want, 2e-6) << df << "/" << docs;
    }
  }
  EXPECT_GT(idf_q20(1, 100), idf_q20(2, 100));
  EXPECT_GT(idf_q20(0, 100), idf_q20(1, 100));
}

TEST(FeatureWeight, Scales) {
  EXPECT_EQ(feature_weight(Weighting::Tf, 7, 0), 7u);
  EXPECT_EQ(feature_weight(Weighting::Binary, 7, 0), 1u);
  EXPECT_EQ(feature_weight(Weighting::Log, 1, 0), 1u << 24);
  EXPECT_NEAR(feature_weight(Weighting::Log, 10, 0) / 16777216.0, 1 + std::log(10.0), 1e-7);
  EXPECT_EQ(feature_weight(Weighting::Idf, 3, idf_q20(1, 1)), 3u << 20);
}

TEST(Weighting, NamesAndErrors) {
  EXPECT_EQ(parse_weighting("tf"), Weighting::Tf);
  EXPECT_EQ(parse_weighting("binary"), Weighting::Binary);
  EXPECT_EQ(parse_weighting("log"), Weighting::Log);
  EXPECT_EQ(parse_weighting("idf", true), Weighting::Idf);
  for (const char* w : {"tf", "binary", "log", "idf"}) {
    EXPECT_STREQ(weighting_name(parse_weighting(w, true)), w);
  }
  try {
    parse_weighting("TF");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown weighting \"TF\"; allowed values are 'tf', 'binary', 'log'");
  }
  try {
    parse_weighting("idf");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("simhash_tfidf"), std::string::npos) << e.what();
  }
}

// The textbook definition: signed counters, sign per bit, ties from the occurrence sum.
std::uint64_t reference(const std::vector<std::uint64_t>& hashes,
                        const std::vector<std::uint64_t>& weights,
                        const std::vector<std::uint64_t>& occurrences) {
  long double counter[64] = {};
  std::uint64_t sum = 0;
  for (std::size_t f = 0; f < hashes.size(); ++f) {
    for (int i = 0; i < 64; ++i) {
      counter[i] += ((hashes[f] >> i) & 1) ? static_cast<long double>(weights[f])
                                           : -static_cast<long double>(weights[f]);
    }
    sum += hashes[f] * occurrences[f];
  }
  const std::uint64_t ties = mix64(sum);
  std::uint64_t fp = 0;
  for (int i = 0; i < 64; ++i) {
    if (counter[i] > 0 || (counter[i] == 0 && ((ties >> i) & 1))) fp |= std::uint64_t{1} << i;
  }
  return fp;
}

TEST(WeightedCounter, MatchesTheTextbookDefinition) {
  std::mt19937_64 rng(11);
  for (int round = 0; round < 2000; ++round) {
    const std::size_t n = 1 + rng() % 20;
    std::vector<std::uint64_t> h(n), w(n), occ(n);
    WeightedCounter c;
    for (std::size_t f = 0; f < n; ++f) {
      // Few distinct hashes and small weights: plenty of exact ties.
      h[f] = round % 2 ? rng() : (rng() % 4) * 0x5555555555555555ULL;
      w[f] = round % 3 ? 1 + rng() % 3 : rng() >> 8;
      occ[f] = 1 + rng() % 3;
      c.add(h[f], w[f], occ[f]);
    }
    ASSERT_EQ(c.fingerprint(), reference(h, w, occ)) << round;
    EXPECT_EQ(c.features(), n);
  }
}

TEST(WeightedCounter, UnitAddsEqualWeightedAdds) {
  std::mt19937_64 rng(13);
  for (std::uint64_t unit : {std::uint64_t{1}, std::uint64_t{1} << 24, std::uint64_t{1} << 32}) {
    for (int round = 0; round < 200; ++round) {
      const std::size_t n = 1 + rng() % 1200;  // past the 255-add lane flush, often
      std::vector<std::uint64_t> h(n), w(n), occ(n, 1);
      WeightedCounter lanes(unit), plain;
      for (std::size_t f = 0; f < n; ++f) {
        h[f] = round % 2 ? rng() : (rng() % 8) * 0x0101010101010101ULL;
        const bool is_unit = rng() % 4 != 0;
        w[f] = is_unit ? unit : unit * (1 + rng() % 5);
        if (is_unit) {
          lanes.add_unit(h[f]);
        } else {
          lanes.add(h[f], w[f]);
        }
        plain.add(h[f], w[f]);
      }
      ASSERT_EQ(lanes.fingerprint(), plain.fingerprint()) << unit << " " << round;
      ASSERT_EQ(lanes.fingerprint(), reference(h, w, occ));
      ASSERT_EQ(lanes.features(), n);
    }
  }
}

TEST(SortFeatures, SortsLikeStdSort) {
  std::mt19937_64 rng(21);
  // (33 to 1,024 values: the counting sort into about one bucket a value; 5,000 and more:
  // radix passes whose buckets end in it, at lower bytes.)
  for (std::size_t n : {0, 1, 2, 32, 33, 100, 129, 300, 1000, 1024, 1025, 5000, 100000, 400000}) {
    for (int kind = 0; kind < 4; ++kind) {
      std::vector<std::uint64_t> v(n);
      for (auto& x : v) {
        switch (kind) {
          case 0:
            x = rng();
            break;  // hashes
          case 1:
            x = rng() % 10;
            break;  // few values, all top bytes 0
          case 2:
            x = (rng() % 3) << 56 | (rng() % 1000);
            break;
          default:
            x = 0x0123456789abcdefULL;
            break;  // all equal
        }
      }
      auto want = v;
      std::sort(want.begin(), want.end());
      sort_features(v.data(), v.size());
      ASSERT_EQ(v, want) << n << " " << kind;
    }
  }
}

// Values of the kinds that stress a radix sort: hashes, few values, one top byte with few
// low values, all equal.
std::vector<std::uint64_t> sort_input(std::size_t n, int kind, std::mt19937_64& rng) {
  std::vector<std::uint64_t> v(n);
  for (auto& x : v) {
    switch (kind) {
      case 0:
        x = rng();
        break;
      case 1:
        x = rng() % 10;
        break;
      case 2:
        x = (rng() % 3) << 56 | (rng() % 1000);
        break;
      case 3:
        x = rng() % 1000 * 0x9E3779B97F4A7C15ULL;  // few values, spread over all bytes
        break;
      default:
        x = 0x0123456789abcdefULL;
        break;
    }
  }
  return v;
}

// The sort the PostgreSQL glue runs between interrupt checks: in slices of bounded work it
// sorts exactly like std::sort, needs about one slice per `work` values per pass, and
// after any slice the array is still a permutation of the input (a cancel between slices
// leaves nothing half-moved).
TEST(SlicedSort, SortsLikeStdSortInSlices) {
  std::mt19937_64 rng(2121);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{5000},
                        SlicedSort::kLeaf + 1, std::size_t{300000}}) {
    for (int kind = 0; kind < 5; ++kind) {
      for (std::size_t work : {std::size_t{1}, std::size_t{97}, std::size_t{65536}}) {
        if (work == 1 && n > 20000) continue;  // slow, and 97 covers the same paths
        std::vector<std::uint64_t> v = sort_input(n, kind, rng);
        auto want = v;
        std::sort(want.begin(), want.end());
        SlicedSort sort;
        sort.begin(v.data(), v.size());
        std::size_t slices = 0;
        while (!sort.step(work)) {
          ++slices;
          if ((slices & (slices - 1)) == 0) {  // after slices 1, 2, 4, 8, ...
            auto now = v;
            std::sort(now.begin(), now.end());
            ASSERT_EQ(now, want) << "not a permutation after slice " << slices;
          }
        }
        ASSERT_EQ(v, want) << n << " " << kind << " " << work;
        if (n > SlicedSort::kLeaf) {
          // At least one pass over the values, in slices of `work` (a leaf may overrun).
          EXPECT_GE(slices + 1, n / (work + 2 * SlicedSort::kLeaf)) << n << " " << kind;
        }
        ASSERT_TRUE(sort.step(work));  // done stays done
      }
    }
  }
}

// A slice never does much more than it is given: on 4 million hashes, slices of 2^16 units
// each take a small fraction of the whole sort (the glue relies on this for a cancel to land
// within milliseconds; a slice may overrun by one leaf of kLeaf values).
TEST(SlicedSort, SlicesAreBounded) {
  std::mt19937_64 rng(7);
  std::vector<std::uint64_t> v = sort_input(std::size_t{1} << 22, 0, rng);
  SlicedSort sort;
  sort.begin(v.data(), v.size());
  std::size_t slices = 1;
  while (!sort.step(std::size_t{1} << 16)) ++slices;
  // Counting and permuting the top level alone is 2 * 2^22 units: 128 slices.
  EXPECT_GE(slices, 128u);
  EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
}

TEST(WeightedCounter, RefusesTotalsBeyondTheBound) {
  WeightedCounter c;
  c.add(1, WeightedCounter::kMaxTotal - 1);
  c.add(2, 1);
  EXPECT_THROW(c.add(3, 1), std::length_error);
}

TEST(WeightedFingerprint, TfEqualsOneAdditionPerOccurrence) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 500; ++round) {
    std::vector<std::uint64_t> f(1 + rng() % 50);
    for (auto& x : f) x = rng() % 7 == 0 ? 42 : rng() % (1 + round);
    WeightedCounter each;
    for (auto x : f) each.add(x, 1, 1);
    auto copy = f;
    ASSERT_EQ(*weighted_fingerprint(copy.data(), copy.size(), Weighting::Tf), each.fingerprint());
  }
}

TEST(WeightedFingerprint, EachWeighting) {
  std::mt19937_64 rng(9);
  std::vector<DfEntry> table;
  for (std::uint64_t f = 0; f < 40; f += 2) table.push_back({f, 1 + f % 9});
  prepare_df_table(table.data(), table.size(), 9);
  const DfTable df{table.data(), table.size(), 9};
  for (Weighting w : {Weighting::Tf, Weighting::Binary, Weighting::Log, Weighting::Idf}) {
    for (int round = 0; round < 300; ++round) {
      std::vector<std::uint64_t> f(1 + rng() % 60);
      for (auto& x : f) x = rng() % 40;
      // Reference: count by brute force, weight, textbook counters.
      std::vector<std::uint64_t> hashes, weights, occ;
      for (std::uint64_t v = 0; v < 40; ++v) {
        const auto count = static_cast<std::uint64_t>(std::count(f.begin(), f.end(), v));
        if (count == 0) continue;
        hashes.push_back(v);
        weights.push_back(feature_weight(w, count, idf_q20(df.df(v), 9)));
        occ.push_back(w == Weighting::Tf || w == Weighting::Idf ? count : 1);
      }
      std::shuffle(f.begin(), f.end(), rng);
      ASSERT_EQ(*weighted_fingerprint(f.data(), f.size(), w, &df), reference(hashes, weights, occ))
          << weighting_name(w);
    }
  }
  std::uint64_t none[1] = {1};
  EXPECT_FALSE(weighted_fingerprint(none, 0, Weighting::Tf).has_value());
  EXPECT_THROW(weighted_fingerprint(none, 1, Weighting::Idf, nullptr), std::invalid_argument);
}

TEST(WeightedFingerprint, BinaryIgnoresRepetition) {
  // Even in the tie rule: two features give counters of 0 wherever their hashes differ.
  std::mt19937_64 rng(12);
  for (int round = 0; round < 100; ++round) {
    const std::uint64_t x = rng(), y = rng();
    std::uint64_t a[] = {x, y};
    std::uint64_t b[] = {x, y, x, x, y};
    EXPECT_EQ(*weighted_fingerprint(a, 2, Weighting::Binary),
              *weighted_fingerprint(b, 5, Weighting::Binary));
    std::uint64_t c[] = {x, y};
    std::uint64_t d[] = {x, y, x, y};  // tf: same counters up to a factor, other ties
    EXPECT_NE(*weighted_fingerprint(c, 2, Weighting::Tf),
              *weighted_fingerprint(d, 4, Weighting::Tf));
  }
}

TEST(WeightedFingerprint, IdfWithAnEmptyTableIsTf) {
  std::mt19937_64 rng(2);
  const DfTable empty{nullptr, 0, 0};
  for (int round = 0; round < 200; ++round) {
    std::vector<std::uint64_t> f(1 + rng() % 30);
    for (auto& x : f) x = rng() % 10 ? rng() : 7;
    auto g = f;
    ASSERT_EQ(weighted_fingerprint(f.data(), f.size(), Weighting::Idf, &empty),
              weighted_fingerprint(g.data(), g.size(), Weighting::Tf));
  }
}

TEST(DfTable, PrepareSortsAndChecks) {
  std::vector<DfEntry> t = {{5, 1}, {UINT64_MAX, 3}, {1, 2}};
  prepare_df_table(t.data(), t.size(), 3);
  EXPECT_EQ(t[0].feature, 1u);
  EXPECT_EQ(t[2].feature, UINT64_MAX);
  const DfTable df{t.data(), t.size(), 3};
  EXPECT_EQ(df.df(5), 1u);
  EXPECT_EQ(df.df(UINT64_MAX), 3u);
  EXPECT_EQ(df.df(4), 0u);

  auto message = [](std::vector<DfEntry> v, std::uint64_t docs) -> std::string {
    try {
      prepare_df_table(v.data(), v.size(), docs);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message({{UINT64_MAX, 1}, {UINT64_MAX, 2}}, 2),
            "document frequencies: feature -1 appears more than once");
  EXPECT_EQ(message({{7, 0}}, 2),
            "document frequencies: df of feature 7 is 0, not between 1 and the number of "
            "documents (2)");
  EXPECT_EQ(message({{7, 3}}, 2),
            "document frequencies: df of feature 7 is 3, not between 1 and the number of "
            "documents (2)");
  EXPECT_EQ(message({{7, static_cast<std::uint64_t>(-4)}}, 2),
            "document frequencies: df of feature 7 is -4, not between 1 and the number of "
            "documents (2)");
  EXPECT_EQ(message({}, 0), "");
}

TEST(Weights, CheckAndQuantize) {
  const double ok[] = {0.5, 0, 2, 1e300};
  EXPECT_EQ(check_weights(ok, 4), 1e300);
  EXPECT_EQ(check_weights(ok, 0), 0);
  auto message = [](std::vector<double> w) -> std::string {
    try {
      check_weights(w.data(), w.size());
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message({1, std::nan("")}), "weight number 2 is NaN; weights must be finite and >= 0");
  EXPECT_EQ(message({std::numeric_limits<double>::infinity()}),
            "weight number 1 is infinite; weights must be finite and >= 0");
  EXPECT_EQ(message({1, 2, -0.5}), "weight number 3 is negative; weights must be finite and >= 0");
  EXPECT_EQ(message({-0.0}), "");  // -0 is zero

  EXPECT_EQ(quantize_weight(3, 3), 1ULL << 32);
  EXPECT_EQ(quantize_weight(1.5, 3), 1ULL << 31);
  EXPECT_EQ(quantize_weight(0, 3), 0u);
  EXPECT_EQ(quantize_weight(1e-300, 1e300), 0u);
  EXPECT_EQ(quantize_weight(1, 0), 0u);
}

TEST(FeatureList, UnitWeightsOverTokensAreTheUnigramFingerprint) {
  for (const std::string& text : test::tricky_texts()) {
    const auto tokens = test::tokenize(text, false);
    FeatureListFingerprinter f(1.0);
    for (const auto& t : tokens) f.add(t.data(), t.size(), 1.0);
    const auto want = fingerprint(text, Options{1, false});
    EXPECT_EQ(f.fingerprint(1), want) << text;
    EXPECT_EQ(f.features(), tokens.size());
  }
}

TEST(FeatureList, WeightsZeroScaleAndMinimum) {
  const char* words[] = {"alpha", "beta", "gamma", "delta"};
  const double w[] = {1, 2.5, 0.25, 4};
  auto fp = [&](double scale, bool with_zero) {
    FeatureListFingerprinter f(4 * scale);
    for (int i = 0; i < 4; ++i) f.add(words[i], std::strlen(words[i]), w[i] * scale);
    if (with_zero) f.add("zero", 4, 0.0);
    return f.fingerprint(1);
  };
  EXPECT_EQ(fp(1, false), fp(1, true));   // a zero weight leaves the feature out
  EXPECT_EQ(fp(1, false), fp(8, false));  // scaling by a power of two is exact
  EXPECT_EQ(fp(1, false), fp(0.125, false));

  FeatureListFingerprinter f(1.0);
  f.add("a", 1, 1.0);
  f.add("b", 1, 0.0);
  EXPECT_TRUE(f.fingerprint(1).has_value());
  EXPECT_FALSE(f.fingerprint(2).has_value());
  EXPECT_THROW(f.add("c", 1, 2.0), std::invalid_argument);  // above max_weight
  EXPECT_THROW(f.add("c", 1, std::nan("")), std::invalid_argument);
  // Found by test/fuzz/fuzz_features: with an infinite max_weight an infinite weight was
  // let through, quantized from inf / inf = NaN, and failed as an internal error
  // ("total weight exceeds 2^62") instead of being refused.
  const double inf = std::numeric_limits<double>::infinity();
  FeatureListFingerprinter unbounded(inf);
  EXPECT_THROW(unbounded.add("c", 1, inf), std::invalid_argument);
  unbounded.add("c", 1, 1.0);  // finite weights under an infinite maximum quantize to 0
  EXPECT_TRUE(unbounded.fingerprint(1).has_value());
  FeatureListFingerprinter empty(0.0);
  empty.add("x", 1, 0.0);
  EXPECT_FALSE(empty.fingerprint(1).has_value());
}

}  // namespace
}  // namespace simhash
