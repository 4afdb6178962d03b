// libFuzzer target: fingerprints of ready-made tokens, as simhash(tsvector, n, weighting,
// min_features) makes them.
//
// Parsing a tsvector is PostgreSQL's own (tsvectorin); the extension's glue
// (src/pg/tsvector.c) only orders the lexemes by position and hands each to the core
// with simhash_text_token(), which is what this target fuzzes, with the glue's ordering
// and buffer handling restated here. In a SQL_ASCII database lexemes are any bytes, so
// tokens here are too (broken UTF-8 included).
//
// Input: byte 0: bit 0 tokenizer (word, as SQL; char, which the C ABI also allows);
// bits 1-2 weighting (tf, binary, log, idf with an empty table); byte 1: n = byte % 12 - 1;
// byte 2: min_features = byte % 5; then lexemes: a flags byte (bits 0-1: number of
// positions, 0 = none, which makes the whole tsvector a bag of lexemes), a length byte
// (255: 300 + a byte), the positions (2 bytes each, 14 bits used, as WEP_GETPOS), the bytes.
//
// Checks, aborting on the first violation: invalid options refused, valid ones accepted, no
// internal error; every token accepted once the buffer is reserved as the glue reserves it
// (len + 2 features); the fingerprint (or SIMHASH_NO_FEATURES below min_features) and the
// number of features equal the reference: the tokens hashed as they are (or split into
// characters), shingled n at a time in position order (n = 1 for a bag), weighted from the
// definition.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "capi/text_options_capi.h"
#include "fuzz_util.hpp"

namespace {

using simhash::Weighting;
using simhash::fuzz::FeatureBuffer;
using simhash::fuzz::Input;

struct Lexeme {
  std::string bytes;
  std::vector<std::uint16_t> positions;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  const std::uint8_t b0 = in.byte(), b1 = in.byte(), b2 = in.byte();
  simhash_text_options options;
  options.tokenizer = b0 & 1;
  options.weighting = (b0 >> 1) & 3;
  options.n = b1 % 12 - 1;
  options.min_features = b2 % 5;

  std::vector<Lexeme> lexemes;
  bool positions = true;
  while (!in.empty() && lexemes.size() < 2000) {
    Lexeme l;
    const std::uint8_t flags = in.byte();
    const std::uint8_t len = in.byte();
    for (int p = 0; p < (flags & 3); ++p) l.positions.push_back(in.u16() & 0x3FFF);
    l.bytes = std::string(in.bytes(len == 255 ? 300 + in.byte() : len));
    if (l.positions.empty()) positions = false;
    lexemes.push_back(std::move(l));
  }

  simhash::fuzz::ErrBuf err(b2 >> 3);
  simhash_text_state state;
  const simhash_status begun = simhash_text_begin(&state, &options, 1, err.data(), err.cap());
  const bool valid = options.n >= 0 && options.n <= 8 && options.min_features >= 1;
  FUZZ_CHECK(begun == (valid ? SIMHASH_OK : SIMHASH_INVALID_ARGUMENT));
  if (!valid) {
    err.check_terminated();
    return 0;
  }

  // The order the glue feeds them in: by position, then by lexeme; a bag in its own order.
  std::vector<std::size_t> order;
  if (positions) {
    std::vector<std::pair<std::uint16_t, std::size_t>> at;
    for (std::size_t i = 0; i < lexemes.size(); ++i) {
      for (std::uint16_t p : lexemes[i].positions) at.emplace_back(p, i);
    }
    std::sort(at.begin(), at.end());
    for (const auto& a : at) order.push_back(a.second);
  } else {
    options.n = 1;
    FUZZ_CHECK(simhash_text_begin(&state, &options, 1, err.data(), err.cap()) == SIMHASH_OK);
    for (std::size_t i = 0; i < lexemes.size(); ++i) order.push_back(i);
  }

  FeatureBuffer buffer(&state);
  std::vector<std::string> tokens;
  for (std::size_t i : order) {
    const std::string& t = lexemes[i].bytes;
    buffer.reserve(t.size() + 2);
    FUZZ_CHECK(simhash_text_token(&state, t.data(), t.size(), err.data(), err.cap()) == SIMHASH_OK);
    tokens.push_back(t);
  }
  buffer.reserve(0);

  const bool chars = options.tokenizer == SIMHASH_TOKENIZER_CHAR;
  const int n = options.n == 0 ? (chars ? 5 : 3) : options.n;
  const std::vector<std::uint64_t> features = simhash::reference::features(
      simhash::fuzz::units(tokens, chars), static_cast<std::size_t>(n));

  std::uint64_t fp = 0, count = 0;
  const simhash_status ended = simhash_text_end(&state, nullptr, 0, 0, &fp, &count, err.data(),
                                                err.cap());
  FUZZ_CHECK(ended == SIMHASH_OK || ended == SIMHASH_NO_FEATURES);
  FUZZ_CHECK(count == features.size());
  const bool enough = features.size() >= static_cast<std::uint64_t>(options.min_features);
  FUZZ_CHECK((ended == SIMHASH_OK) == enough);
  if (enough) {
    const std::map<std::uint64_t, std::uint64_t> no_df;
    const auto want = simhash::fuzz::weighted_reference(
        features, static_cast<Weighting>(options.weighting), &no_df, 0);
    FUZZ_CHECK(want.has_value() && *want == fp);
  }
  return 0;
}
