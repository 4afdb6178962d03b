// libFuzzer target: fingerprints with every option, through the C ABI the SQL functions use
// (src/capi/simhash_capi.h for simhash(text); text_options_capi.h for simhash(body,
// tokenizer, n, weighting, min_features), simhash_features and simhash_tfidf).
//
// Input: 4 bytes of options, then the text (any bytes).
//   byte 0: bit 0 tokenizer (word, char); bits 1-2 weighting (tf, binary, log, idf);
//           bit 3 collect (keep the features, as simhash_features does); bit 4 cjk_bigrams
//           (simhash_begin); bits 5-6 the instruction set (portable, AVX2, AVX-512, best)
//   byte 1: n = byte % 12 - 1 (-1..10: 0 is the default, -1, 9 and 10 are invalid);
//           254 and 255 are INT32_MAX and INT32_MIN
//   byte 2: min_features = byte % 8 (0 is invalid); 255 is INT32_MAX, 254 is -1
//   byte 3: bits 0-4 the number of documents of the IDF table (1..32); bits 5-7 a defect
//           put into that table (duplicate feature, df 0, df > docs) when they are 5..7;
//           the whole byte also seeds where the text is cut into chunks
//
// Checks, aborting on the first violation:
//  - invalid options are refused with SIMHASH_INVALID_ARGUMENT, valid ones accepted; no
//    call ever returns SIMHASH_INTERNAL_ERROR;
//  - the fingerprint, and SIMHASH_NO_FEATURES exactly when the text has fewer features than
//    min_features, equal a reference computed from the definition (reference tokens ->
//    characters for 'char' -> shingles of n -> integer weights -> 64 signed counters);
//    the number of features reported equals the reference's;
//  - the text is fed in chunks cut anywhere, with the feature buffer grown the way the
//    glue grows it (ASan sees any use of a freed buffer or a write past one);
//  - the features kept by a collecting state (simhash_text_distinct) are ascending and
//    distinct, with counts that add up to the features, equal to the reference's;
//  - simhash_begin/feed/end (the default fingerprint, with cjk_bigrams) equals the
//    reference fingerprint for n = 1..8, and equals the word/tf fingerprint with options;
//  - simhash_df_prepare refuses a table with a defect and accepts one without.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "capi/simhash_capi.h"
#include "capi/text_options_capi.h"
#include "core/isa.hpp"
#include "fuzz_util.hpp"

namespace {

using simhash::Weighting;
using simhash::fuzz::FeatureBuffer;
using simhash::fuzz::Input;
using simhash::fuzz::Rng;
namespace reference = simhash::reference;

constexpr simhash::detail::Isa kIsas[4] = {
    simhash::detail::Isa::kPortable, simhash::detail::Isa::kAvx2, simhash::detail::Isa::kAvx512,
    simhash::detail::Isa::kAvx512};

// simhash(text) through simhash_begin/feed/end, fed in chunks.
std::optional<std::uint64_t> default_fingerprint(std::string_view text, int n, bool bigrams,
                                                 Rng& rng) {
  simhash_state state;
  simhash_options options{n, bigrams ? 1 : 0};
  char err[256];
  FUZZ_CHECK(simhash_begin(&state, &options, err, sizeof err) == SIMHASH_OK);
  for (std::string_view c : simhash::fuzz::chunks(text, rng, 1 + rng.below(300))) {
    FUZZ_CHECK(simhash_feed(&state, c.data(), c.size(), err, sizeof err) == SIMHASH_OK);
  }
  std::uint64_t fp = 0;
  const simhash_status s = simhash_end(&state, &fp, err, sizeof err);
  FUZZ_CHECK(s == SIMHASH_OK || s == SIMHASH_NO_FEATURES);
  if (s == SIMHASH_NO_FEATURES) return std::nullopt;
  return fp;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  const std::uint8_t b0 = in.byte(), b1 = in.byte(), b2 = in.byte(), b3 = in.byte();
  const std::string_view text = in.rest();

  simhash::detail::limit_isa(kIsas[(b0 >> 5) & 3]);

  simhash_text_options options;
  options.tokenizer = b0 & 1;
  options.weighting = (b0 >> 1) & 3;
  const bool collect = (b0 & 8) != 0;
  const bool bigrams = (b0 & 16) != 0;
  options.n = b1 == 255 ? INT32_MIN : b1 == 254 ? INT32_MAX : b1 % 12 - 1;
  options.min_features = b2 == 255 ? INT32_MAX : b2 == 254 ? -1 : b2 % 8;
  const std::uint64_t docs = 1 + (b3 & 31);
  const int defect = b3 >> 5;
  Rng rng(b3 ^ (std::uint64_t{b0} << 8) ^ (std::uint64_t{size} << 16));

  const bool valid = options.n >= 0 && options.n <= 8 && options.min_features >= 1;
  const bool chars = options.tokenizer == SIMHASH_TOKENIZER_CHAR;
  const int n = options.n == 0 ? (chars ? 5 : 3) : options.n;

  simhash_text_state state;
  simhash::fuzz::ErrBuf err(b2 % 40);
  const simhash_status begun = simhash_text_begin(&state, &options, collect, err.data(), err.cap());
  if (!valid) {
    FUZZ_CHECK(begun == SIMHASH_INVALID_ARGUMENT);
    err.check_terminated();
    return 0;
  }
  FUZZ_CHECK(begun == SIMHASH_OK);

  // The reference: tokens, units, shingles.
  const std::vector<std::string> tokens = reference::tokens(text, false);
  const std::vector<std::string> units = simhash::fuzz::units(tokens, chars);
  const std::vector<std::uint64_t> features =
      reference::features(units, static_cast<std::size_t>(n));

  // The document frequencies of IDF: some of the text's features (and a few others), each
  // with a df in 1..docs; then possibly a defect.
  std::vector<simhash_df_entry> table;
  std::map<std::uint64_t, std::uint64_t> df;
  if (options.weighting == SIMHASH_WEIGHTING_IDF) {
    for (std::uint64_t f : features) {
      if ((f >> 7) % 3 == 0 || df.count(f)) continue;
      df[f] = 1 + (f >> 20) % docs;
      table.push_back({f, df[f]});
    }
    for (int i = 0; i < 3; ++i) {
      const std::uint64_t f = rng.next();
      if (df.count(f)) continue;
      df[f] = 1 + rng.below(docs);
      table.push_back({f, df[f]});
    }
    for (std::size_t i = table.size(); i > 1; --i) std::swap(table[i - 1], table[rng.below(i)]);
    if (defect >= 5) {
      if (defect == 5) table.push_back(table[rng.below(table.size())]);
      if (defect == 6) table[rng.below(table.size())].df = 0;
      if (defect == 7) table[rng.below(table.size())].df = docs + 1 + rng.below(3);
      char e[256];
      FUZZ_CHECK(simhash_df_prepare(table.data(), table.size(), static_cast<std::int64_t>(docs), e,
                                    sizeof e) == SIMHASH_INVALID_ARGUMENT);
      return 0;
    }
    char e[256];
    FUZZ_CHECK(simhash_df_prepare(table.data(), table.size(), static_cast<std::int64_t>(docs), e,
                                  sizeof e) == SIMHASH_OK);
    for (std::size_t i = 1; i < table.size(); ++i) FUZZ_CHECK(table[i - 1].feature < table[i].feature);
  }

  FeatureBuffer buffer(&state);
  buffer.feed(text, rng, 1 + rng.below(700));
  buffer.reserve(0);

  // A copy of the state for simhash_text_distinct, with its own copy of the buffer.
  simhash_text_state copy;
  std::vector<std::uint64_t> copy_buffer;
  if (buffer.collecting()) {
    std::memcpy(&copy, &state, sizeof state);
    copy_buffer.assign(buffer.data(), buffer.data() + buffer.capacity());
    char e[256];
    FUZZ_CHECK(simhash_text_set_buffer(&copy, copy_buffer.data(), copy_buffer.size(), e,
                                       sizeof e) == SIMHASH_OK);
  }

  std::uint64_t fp = 0, count = 0;
  const simhash_status ended =
      simhash_text_end(&state, table.data(), table.size(), static_cast<std::int64_t>(docs), &fp,
                       &count, err.data(), err.cap());
  FUZZ_CHECK(ended == SIMHASH_OK || ended == SIMHASH_NO_FEATURES);
  FUZZ_CHECK(count == features.size());
  const bool enough = features.size() >= static_cast<std::uint64_t>(options.min_features);
  FUZZ_CHECK((ended == SIMHASH_OK) == enough);
  if (enough) {
    const auto expected = simhash::fuzz::weighted_reference(
        features, static_cast<Weighting>(options.weighting), &df, docs);
    FUZZ_CHECK(expected.has_value() && *expected == fp);
  }

  if (buffer.collecting()) {
    std::vector<std::uint64_t> counts(copy_buffer.size());
    std::size_t distinct = 0;
    char e[256];
    FUZZ_CHECK(simhash_text_distinct(&copy, counts.data(), counts.size(), &distinct, e, sizeof e) ==
               SIMHASH_OK);
    std::map<std::uint64_t, std::uint64_t> want;
    for (std::uint64_t f : features) ++want[f];
    FUZZ_CHECK(distinct == want.size());
    std::size_t i = 0;
    for (const auto& [f, c] : want) {
      FUZZ_CHECK(copy_buffer[i] == f && counts[i] == c);
      ++i;
    }
  }

  // simhash(text): the default fingerprint, with the shingle size and cjk_bigrams.
  if (options.n >= 1) {
    const auto got = default_fingerprint(text, options.n, bigrams, rng);
    const auto want = reference::fingerprint_of_features(reference::features(
        bigrams ? reference::tokens(text, true) : tokens, static_cast<std::size_t>(options.n)));
    FUZZ_CHECK(got == want);
    if (!bigrams && !chars && options.weighting == SIMHASH_WEIGHTING_TF &&
        options.min_features == 1) {
      FUZZ_CHECK(got.has_value() == (ended == SIMHASH_OK));
      if (got) FUZZ_CHECK(*got == fp);
    }
  }
  return 0;
}
