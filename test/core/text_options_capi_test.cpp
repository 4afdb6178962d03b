#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "capi/text_options_capi.h"
#include "core/fingerprint.hpp"

namespace {

simhash_text_options options(int32_t tokenizer = SIMHASH_TOKENIZER_WORD, int32_t n = 0,
                             int32_t weighting = SIMHASH_WEIGHTING_TF, int32_t min = 1) {
  return simhash_text_options{tokenizer, n, weighting, min};
}

// The glue's loop: feed in chunks of at most `chunk` bytes, growing the buffer as needed.
simhash_status fingerprint(const std::string& text, const simhash_text_options& o,
                           std::uint64_t* fp, std::size_t chunk = 7,
                           const std::vector<simhash_df_entry>& df = {}, std::int64_t docs = 0) {
  simhash_text_state st;
  char err[256];
  std::vector<std::uint64_t> buf;
  simhash_status s = simhash_text_begin(&st, &o, 0, err, sizeof err);
  if (s != SIMHASH_OK) return s;
  std::size_t done = 0;
  while (done < text.size()) {
    const std::size_t want = std::min(text.size() - done, chunk);
    if (simhash_text_feed_limit(&st) < want) {
      buf.resize(std::max(2 * buf.size(), simhash_text_capacity_for(&st, want)));
      EXPECT_EQ(simhash_text_set_buffer(&st, buf.data(), buf.size(), err, sizeof err), SIMHASH_OK);
    }
    s = simhash_text_feed(&st, text.data() + done, want, err, sizeof err);
    if (s != SIMHASH_OK) return s;
    done += want;
  }
  std::uint64_t features = 0;
  return simhash_text_end(&st, df.data(), df.size(), docs, fp, &features, err, sizeof err);
}

TEST(OptionsCApi, ParseNames) {
  int32_t v = -1;
  char err[128];
  EXPECT_EQ(simhash_parse_tokenizer("char", 4, &v, err, sizeof err), SIMHASH_OK);
  EXPECT_EQ(v, SIMHASH_TOKENIZER_CHAR);
  EXPECT_EQ(simhash_parse_tokenizer("chars", 5, &v, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  EXPECT_STREQ(err, "unknown tokenizer \"chars\"; allowed values are 'word', 'char'");
  EXPECT_EQ(simhash_parse_tokenizer(nullptr, 0, &v, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(simhash_parse_tokenizer(nullptr, 3, &v, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(simhash_parse_weighting("log", 3, 0, &v, err, sizeof err), SIMHASH_OK);
  EXPECT_EQ(v, SIMHASH_WEIGHTING_LOG);
  EXPECT_EQ(simhash_parse_weighting("idf", 3, 0, &v, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(simhash_parse_weighting("idf", 3, 1, &v, err, sizeof err), SIMHASH_OK);
  EXPECT_EQ(v, SIMHASH_WEIGHTING_IDF);
  EXPECT_EQ(simhash_parse_weighting("tf", 2, 0, nullptr, err, sizeof err),
            SIMHASH_INVALID_ARGUMENT);
}

TEST(OptionsCApi, DefaultsEqualTheDefaultFingerprint) {
  const std::string text = "The quick brown fox jumps over the lazy dog";
  std::uint64_t fp = 0;
  ASSERT_EQ(fingerprint(text, options(), &fp), SIMHASH_OK);
  EXPECT_EQ(fp, *simhash::fingerprint(text));
  ASSERT_EQ(fingerprint(text, options(SIMHASH_TOKENIZER_WORD, 0, SIMHASH_WEIGHTING_BINARY), &fp),
            SIMHASH_OK);
  EXPECT_EQ(fp, *simhash::fingerprint(text));  // no repeated trigram: binary = tf
}

TEST(OptionsCApi, NoFeaturesAndMinFeatures) {
  std::uint64_t fp = 99;
  EXPECT_EQ(fingerprint("", options(SIMHASH_TOKENIZER_CHAR), &fp), SIMHASH_NO_FEATURES);
  EXPECT_EQ(fingerprint("a b c d e", options(SIMHASH_TOKENIZER_WORD, 3, 0, 3), &fp), SIMHASH_OK);
  EXPECT_EQ(fingerprint("a b c d e", options(SIMHASH_TOKENIZER_WORD, 3, 0, 4), &fp),
            SIMHASH_NO_FEATURES);
  EXPECT_EQ(fingerprint("a b c d e", options(SIMHASH_TOKENIZER_WORD, 3, 1, 4), &fp),
            SIMHASH_NO_FEATURES);
}

TEST(OptionsCApi, InvalidOptions) {
  simhash_text_state st;
  char err[128];
  simhash_text_options o = options(SIMHASH_TOKENIZER_WORD, 9);
  EXPECT_EQ(simhash_text_begin(&st, &o, 0, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  EXPECT_STREQ(err, "n must be between 1 and 8 (or 0 for the tokenizer's default), got 9");
  o = options(SIMHASH_TOKENIZER_WORD, 0, SIMHASH_WEIGHTING_TF, 0);
  EXPECT_EQ(simhash_text_begin(&st, &o, 0, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  EXPECT_STREQ(err, "min_features must be at least 1, got 0");
  o = options(7);
  EXPECT_EQ(simhash_text_begin(&st, &o, 0, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  o = options(0, 0, 9);
  EXPECT_EQ(simhash_text_begin(&st, &o, 0, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(simhash_text_begin(nullptr, &o, 0, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(simhash_text_begin(&st, nullptr, 0, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
}

TEST(OptionsCApi, BufferMisuseIsAnInternalErrorNotACrash) {
  simhash_text_state st;
  char err[128];
  const simhash_text_options o = options(SIMHASH_TOKENIZER_CHAR, 0, SIMHASH_WEIGHTING_BINARY);
  ASSERT_EQ(simhash_text_begin(&st, &o, 0, err, sizeof err), SIMHASH_OK);
  EXPECT_EQ(simhash_text_feed_limit(&st), 0u);
  EXPECT_EQ(simhash_text_feed(&st, "abc", 3, err, sizeof err), SIMHASH_INTERNAL_ERROR);
  EXPECT_STREQ(err, "feature buffer too small for this chunk");
  EXPECT_EQ(simhash_text_feed(&st, nullptr, 3, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(simhash_text_set_buffer(&st, nullptr, 5, err, sizeof err), SIMHASH_INTERNAL_ERROR);
  EXPECT_EQ(simhash_text_feed_limit(nullptr), 0u);
}

TEST(OptionsCApi, Idf) {
  const std::string text = "alpha beta alpha gamma alpha delta";
  std::uint64_t tf = 0, idf = 0;
  const simhash_text_options o = options(SIMHASH_TOKENIZER_WORD, 1, SIMHASH_WEIGHTING_IDF);
  ASSERT_EQ(fingerprint(text, options(SIMHASH_TOKENIZER_WORD, 1), &tf), SIMHASH_OK);
  ASSERT_EQ(fingerprint(text, o, &idf), SIMHASH_OK);  // no table: tf
  EXPECT_EQ(tf, idf);
  std::vector<simhash_df_entry> df = {{simhash::hash_bytes("alpha", 5), 100},
                                      {simhash::hash_bytes("beta", 4), 1}};
  char err[256];
  ASSERT_EQ(simhash_df_prepare(df.data(), df.size(), 100, err, sizeof err), SIMHASH_OK);
  ASSERT_EQ(fingerprint(text, o, &idf, 5, df, 100), SIMHASH_OK);
  EXPECT_NE(tf, idf);

  std::vector<simhash_df_entry> bad = {{1, 5}};
  EXPECT_EQ(simhash_df_prepare(bad.data(), bad.size(), 4, err, sizeof err),
            SIMHASH_INVALID_ARGUMENT);
  EXPECT_STREQ(err,
               "document frequencies: df of feature 1 is 5, not between 1 and the number of "
               "documents (4)");
  EXPECT_EQ(simhash_df_prepare(bad.data(), bad.size(), -1, err, sizeof err),
            SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(simhash_df_prepare(nullptr, 0, 0, err, sizeof err), SIMHASH_OK);
}

TEST(OptionsCApi, Distinct) {
  simhash_text_state st;
  char err[128];
  const simhash_text_options o = options(SIMHASH_TOKENIZER_WORD, 1);
  ASSERT_EQ(simhash_text_begin(&st, &o, 1, err, sizeof err), SIMHASH_OK);
  std::vector<std::uint64_t> buf(simhash_text_capacity_for(&st, 11));
  ASSERT_EQ(simhash_text_set_buffer(&st, buf.data(), buf.size(), err, sizeof err), SIMHASH_OK);
  ASSERT_EQ(simhash_text_feed(&st, "x y x z x y", 11, err, sizeof err), SIMHASH_OK);
  std::vector<std::uint64_t> counts(2);
  std::size_t n = 0;
  EXPECT_EQ(simhash_text_distinct(&st, counts.data(), counts.size(), &n, err, sizeof err),
            SIMHASH_INVALID_ARGUMENT);  // 6 features do not fit in 2 counts
  counts.resize(simhash_text_size(&st) + 6);
  ASSERT_EQ(simhash_text_distinct(&st, counts.data(), counts.size(), &n, err, sizeof err),
            SIMHASH_OK);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(counts[0] + counts[1] + counts[2], 6u);
}

// The glue sorts a collecting state's features in slices (simhash_text_sort), checking for
// interrupts between them: the distinct features and the weighted fingerprints are the ones
// the unsliced path gives, counts may be left out, and the buffer cannot move meanwhile.
TEST(OptionsCApi, SortInSlices) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "w" + std::to_string(i * 7919 % 5003) + " ";
  char err[256];
  for (int32_t weighting : {SIMHASH_WEIGHTING_BINARY, SIMHASH_WEIGHTING_LOG}) {
    const simhash_text_options o = options(SIMHASH_TOKENIZER_CHAR, 5, weighting);
    simhash_text_state plain;
    simhash_text_state sliced;
    ASSERT_EQ(simhash_text_begin(&plain, &o, 1, err, sizeof err), SIMHASH_OK);
    std::vector<std::uint64_t> buf(simhash_text_capacity_for(&plain, text.size()));
    ASSERT_EQ(simhash_text_set_buffer(&plain, buf.data(), buf.size(), err, sizeof err),
              SIMHASH_OK);
    ASSERT_EQ(simhash_text_feed(&plain, text.data(), text.size(), err, sizeof err), SIMHASH_OK);
    std::vector<std::uint64_t> buf2 = buf;
    std::memcpy(&sliced, &plain, sizeof plain);
    ASSERT_EQ(simhash_text_set_buffer(&sliced, buf2.data(), buf2.size(), err, sizeof err),
              SIMHASH_OK);

    simhash_sort_state sort;
    int32_t finished = 0;
    int slices = 0;
    while (!finished) {
      ASSERT_EQ(simhash_text_sort(&sliced, &sort, 1000, &finished, err, sizeof err), SIMHASH_OK);
      ++slices;
      if (slices == 2) {
        std::vector<std::uint64_t> other(buf2.size());
        EXPECT_EQ(simhash_text_set_buffer(&sliced, other.data(), other.size(), err, sizeof err),
                  SIMHASH_INTERNAL_ERROR);
      }
    }
    EXPECT_GT(slices, 50);

    simhash_text_state plain2;
    std::vector<std::uint64_t> buf3 = buf;
    std::memcpy(&plain2, &plain, sizeof plain);
    ASSERT_EQ(simhash_text_set_buffer(&plain2, buf3.data(), buf3.size(), err, sizeof err),
              SIMHASH_OK);
    std::uint64_t want = 0;
    std::uint64_t got = 0;
    ASSERT_EQ(simhash_text_end(&plain2, nullptr, 0, 0, &want, nullptr, err, sizeof err),
              SIMHASH_OK);
    simhash_text_state sliced2;
    std::memcpy(&sliced2, &sliced, sizeof sliced);
    ASSERT_EQ(simhash_text_end(&sliced2, nullptr, 0, 0, &got, nullptr, err, sizeof err),
              SIMHASH_OK);
    EXPECT_EQ(got, want);

    std::vector<std::uint64_t> counts(buf.size());
    std::size_t n_plain = 0;
    std::size_t n_sliced = 0;
    ASSERT_EQ(simhash_text_distinct(&plain, counts.data(), counts.size(), &n_plain, err,
                                    sizeof err),
              SIMHASH_OK);
    ASSERT_EQ(simhash_text_distinct(&sliced, nullptr, 0, &n_sliced, err, sizeof err),
              SIMHASH_OK);
    ASSERT_EQ(n_sliced, n_plain);
    ASSERT_TRUE(std::equal(buf.begin(), buf.begin() + n_plain, buf2.begin()));
  }
  EXPECT_EQ(simhash_text_sort(nullptr, nullptr, 1, nullptr, err, sizeof err),
            SIMHASH_INVALID_ARGUMENT);
}

TEST(OptionsCApi, FeaturesAndWeights) {
  char err[128];
  const double w[] = {1, 2, std::nan("")};
  double max = 0;
  EXPECT_EQ(simhash_weights_check(w, 2, &max, err, sizeof err), SIMHASH_OK);
  EXPECT_EQ(max, 2);
  EXPECT_EQ(simhash_weights_check(w, 3, &max, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  EXPECT_STREQ(err, "weight number 3 is NaN; weights must be finite and >= 0");
  EXPECT_EQ(simhash_weights_check(nullptr, 0, &max, err, sizeof err), SIMHASH_OK);
  EXPECT_EQ(max, 0);

  simhash_features_state st;
  ASSERT_EQ(simhash_features_begin(&st, 1.0, err, sizeof err), SIMHASH_OK);
  for (const char* t : {"quick", "brown", "fox"}) {
    ASSERT_EQ(simhash_features_add(&st, t, std::strlen(t), 1.0, err, sizeof err), SIMHASH_OK);
  }
  ASSERT_EQ(simhash_features_add(&st, "", 0, 0.0, err, sizeof err), SIMHASH_OK);
  std::uint64_t fp = 0;
  ASSERT_EQ(simhash_features_end(&st, 1, &fp, err, sizeof err), SIMHASH_OK);
  EXPECT_EQ(fp, *simhash::fingerprint("quick brown fox", simhash::Options{1, false}));
  EXPECT_EQ(simhash_features_end(&st, 4, &fp, err, sizeof err), SIMHASH_NO_FEATURES);
  EXPECT_EQ(simhash_features_end(&st, 0, &fp, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(simhash_features_add(&st, "x", 1, 5.0, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(simhash_features_add(nullptr, "x", 1, 1.0, err, sizeof err), SIMHASH_INVALID_ARGUMENT);

  // An unchecked infinite weight under an infinite max_weight is the caller's mistake
  // (22023), not an internal error (XX000): found by test/fuzz/fuzz_features.
  const double inf = std::numeric_limits<double>::infinity();
  ASSERT_EQ(simhash_features_begin(&st, inf, err, sizeof err), SIMHASH_OK);
  EXPECT_EQ(simhash_features_add(&st, "x", 1, inf, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
}

TEST(OptionsCApi, Conversions) {
  char hex[16];
  simhash_format_hex(0xabcULL, hex);
  EXPECT_EQ(std::string(hex, 16), "0000000000000abc");
  std::uint64_t v = 0;
  EXPECT_EQ(simhash_parse_hex("0xABC", 5, &v), SIMHASH_PARSE_OK);
  EXPECT_EQ(v, 0xabcu);
  EXPECT_EQ(simhash_parse_hex("xyz", 3, &v), SIMHASH_PARSE_INVALID);
  EXPECT_EQ(simhash_parse_hex(nullptr, 0, &v), SIMHASH_PARSE_INVALID);
  char dec[20];
  EXPECT_EQ(std::string(dec, simhash_format_decimal(UINT64_MAX, dec)), "18446744073709551615");
  EXPECT_EQ(simhash_parse_decimal("18446744073709551616", 20, &v), SIMHASH_PARSE_OUT_OF_RANGE);
  EXPECT_EQ(simhash_parse_decimal("12", 2, &v), SIMHASH_PARSE_OK);
  EXPECT_EQ(v, 12u);
  EXPECT_EQ(simhash_parse_decimal("1x", 2, &v), SIMHASH_PARSE_INVALID);
}

}  // namespace
