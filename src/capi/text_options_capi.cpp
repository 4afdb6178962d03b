// The C ABI of fingerprint options, weights, document frequencies and conversions.
#include <cstddef>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "capi/guard.hpp"
#include "capi/text_options_capi.h"
#include "core/convert.hpp"
#include "core/text_options.hpp"
#include "core/weighted.hpp"

namespace {

using simhash::FeatureListFingerprinter;
using simhash::TextFingerprinter;
using simhash::capi::guarded;

static_assert(std::is_trivially_copyable_v<TextFingerprinter>,
              "the state lives in caller memory and must not own resources");
static_assert(sizeof(TextFingerprinter) <= sizeof(simhash_text_state),
              "simhash_text_state is too small");
static_assert(alignof(TextFingerprinter) <= alignof(simhash_text_state),
              "simhash_text_state is underaligned");
static_assert(std::is_trivially_copyable_v<simhash::SlicedSort>,
              "the sort state lives in caller memory and must not own resources");
static_assert(sizeof(simhash::SlicedSort) <= sizeof(simhash_sort_state),
              "simhash_sort_state is too small");
static_assert(alignof(simhash::SlicedSort) <= alignof(simhash_sort_state),
              "simhash_sort_state is underaligned");
static_assert(std::is_trivially_copyable_v<FeatureListFingerprinter>,
              "the state lives in caller memory and must not own resources");
static_assert(sizeof(FeatureListFingerprinter) <= sizeof(simhash_features_state),
              "simhash_features_state is too small");
static_assert(alignof(FeatureListFingerprinter) <= alignof(simhash_features_state),
              "simhash_features_state is underaligned");

// The C struct and the core's entry are the same two 64-bit fields; the core works on the
// caller's array in place.
static_assert(sizeof(simhash_df_entry) == sizeof(simhash::DfEntry) &&
                  offsetof(simhash_df_entry, feature) == offsetof(simhash::DfEntry, feature) &&
                  offsetof(simhash_df_entry, df) == offsetof(simhash::DfEntry, df),
              "simhash_df_entry must match simhash::DfEntry");

static_assert(SIMHASH_TOKENIZER_WORD == static_cast<int>(simhash::TokenizerKind::Word) &&
                  SIMHASH_TOKENIZER_CHAR == static_cast<int>(simhash::TokenizerKind::Char),
              "tokenizer codes");
static_assert(SIMHASH_WEIGHTING_TF == static_cast<int>(simhash::Weighting::Tf) &&
                  SIMHASH_WEIGHTING_BINARY == static_cast<int>(simhash::Weighting::Binary) &&
                  SIMHASH_WEIGHTING_LOG == static_cast<int>(simhash::Weighting::Log) &&
                  SIMHASH_WEIGHTING_IDF == static_cast<int>(simhash::Weighting::Idf),
              "weighting codes");

TextFingerprinter* text_of(simhash_text_state* state) {
  if (state == nullptr) throw std::invalid_argument("null argument");
  return std::launder(reinterpret_cast<TextFingerprinter*>(state->words));
}
const TextFingerprinter* text_of(const simhash_text_state* state) noexcept {
  return std::launder(reinterpret_cast<const TextFingerprinter*>(state->words));
}
FeatureListFingerprinter* features_of(simhash_features_state* state) {
  if (state == nullptr) throw std::invalid_argument("null argument");
  return std::launder(reinterpret_cast<FeatureListFingerprinter*>(state->words));
}

std::string_view view(const char* s, std::size_t len) {
  if (s == nullptr && len != 0) throw std::invalid_argument("null argument");
  return len == 0 ? std::string_view() : std::string_view(s, len);
}

simhash_parse_result parse_result(simhash::ParseResult r) noexcept {
  switch (r) {
    case simhash::ParseResult::Ok:
      return SIMHASH_PARSE_OK;
    case simhash::ParseResult::OutOfRange:
      return SIMHASH_PARSE_OUT_OF_RANGE;
    case simhash::ParseResult::Invalid:
      break;
  }
  return SIMHASH_PARSE_INVALID;
}

}  // namespace

extern "C" {

simhash_status simhash_parse_tokenizer(const char* name, std::size_t len, int32_t* tokenizer,
                                       char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (tokenizer == nullptr) throw std::invalid_argument("null argument");
    *tokenizer = static_cast<int32_t>(simhash::parse_tokenizer(view(name, len)));
    return SIMHASH_OK;
  });
}

simhash_status simhash_parse_weighting(const char* name, std::size_t len, int32_t allow_idf,
                                       int32_t* weighting, char* errbuf,
                                       std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (weighting == nullptr) throw std::invalid_argument("null argument");
    *weighting = static_cast<int32_t>(simhash::parse_weighting(view(name, len), allow_idf != 0));
    return SIMHASH_OK;
  });
}

simhash_status simhash_text_begin(simhash_text_state* state, const simhash_text_options* options,
                                  int32_t collect, char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (state == nullptr || options == nullptr) throw std::invalid_argument("null argument");
    if (options->tokenizer < 0 || options->tokenizer > SIMHASH_TOKENIZER_CHAR) {
      throw std::invalid_argument("unknown tokenizer code");
    }
    if (options->weighting < 0 || options->weighting > SIMHASH_WEIGHTING_IDF) {
      throw std::invalid_argument("unknown weighting code");
    }
    simhash::TextOptions o;
    o.tokenizer = static_cast<simhash::TokenizerKind>(options->tokenizer);
    o.n = options->n;
    o.weighting = static_cast<simhash::Weighting>(options->weighting);
    o.min_features = options->min_features;
    new (state->words) TextFingerprinter(o, collect != 0);
    return SIMHASH_OK;
  });
}

std::size_t simhash_text_feed_limit(const simhash_text_state* state) noexcept {
  return state == nullptr ? 0 : text_of(state)->feed_limit();
}

std::size_t simhash_text_capacity_for(const simhash_text_state* state, std::size_t bytes) noexcept {
  return state == nullptr ? 0 : text_of(state)->capacity_for(bytes);
}

std::size_t simhash_text_size(const simhash_text_state* state) noexcept {
  return state == nullptr ? 0 : text_of(state)->size();
}

simhash_status simhash_text_set_buffer(simhash_text_state* state, uint64_t* buffer,
                                       std::size_t capacity, char* errbuf,
                                       std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    text_of(state)->set_buffer(buffer, capacity);
    return SIMHASH_OK;
  });
}

simhash_status simhash_text_feed(simhash_text_state* state, const char* data, std::size_t len,
                                 char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    const std::string_view chunk = view(data, len);
    if (!chunk.empty()) text_of(state)->feed(chunk.data(), chunk.size());
    return SIMHASH_OK;
  });
}

simhash_status simhash_text_token(simhash_text_state* state, const char* data, std::size_t len,
                                  char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    const std::string_view token = view(data, len);
    text_of(state)->token(reinterpret_cast<const unsigned char*>(token.data()), token.size());
    return SIMHASH_OK;
  });
}

simhash_status simhash_df_prepare(simhash_df_entry* entries, std::size_t size, int64_t docs,
                                  char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (entries == nullptr && size != 0) throw std::invalid_argument("null argument");
    if (docs < 0) {
      throw std::invalid_argument("document frequencies: the number of documents is negative");
    }
    simhash::prepare_df_table(reinterpret_cast<simhash::DfEntry*>(entries), size,
                              static_cast<std::uint64_t>(docs));
    return SIMHASH_OK;
  });
}

simhash_status simhash_text_end(simhash_text_state* state, const simhash_df_entry* df,
                                std::size_t df_size, int64_t docs, uint64_t* fingerprint,
                                uint64_t* features, char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (fingerprint == nullptr || (df == nullptr && df_size != 0) || docs < 0) {
      throw std::invalid_argument("invalid argument");
    }
    const simhash::DfTable table{reinterpret_cast<const simhash::DfEntry*>(df), df_size,
                                 static_cast<std::uint64_t>(docs)};
    TextFingerprinter* f = text_of(state);
    const auto fp = f->fingerprint(&table);
    if (features != nullptr) *features = f->features();
    if (!fp) return SIMHASH_NO_FEATURES;
    *fingerprint = *fp;
    return SIMHASH_OK;
  });
}

simhash_status simhash_text_distinct(simhash_text_state* state, uint64_t* counts,
                                     std::size_t counts_cap, std::size_t* distinct, char* errbuf,
                                     std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (distinct == nullptr || (counts == nullptr && counts_cap != 0)) {
      throw std::invalid_argument("null argument");
    }
    *distinct = text_of(state)->distinct(counts, counts_cap);
    return SIMHASH_OK;
  });
}

simhash_status simhash_text_collected(simhash_text_state* state, std::size_t* size, char* errbuf,
                                      std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (size == nullptr) throw std::invalid_argument("null argument");
    *size = text_of(state)->collected();
    return SIMHASH_OK;
  });
}

simhash_status simhash_text_drain(simhash_text_state* state, char* errbuf,
                                  std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    text_of(state)->drain();
    return SIMHASH_OK;
  });
}

simhash_status simhash_text_sort(simhash_text_state* state, simhash_sort_state* sort,
                                 std::size_t work, int32_t* finished, char* errbuf,
                                 std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (sort == nullptr || finished == nullptr) throw std::invalid_argument("null argument");
    TextFingerprinter* f = text_of(state);
    if (!f->sorting()) new (sort->words) simhash::SlicedSort();
    auto* s = std::launder(reinterpret_cast<simhash::SlicedSort*>(sort->words));
    *finished = f->sort_step(*s, work == 0 ? 1 : work) ? 1 : 0;
    return SIMHASH_OK;
  });
}

simhash_status simhash_weights_check(const double* weights, std::size_t n, double* max_weight,
                                     char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (max_weight == nullptr || (weights == nullptr && n != 0)) {
      throw std::invalid_argument("null argument");
    }
    *max_weight = simhash::check_weights(weights, n);
    return SIMHASH_OK;
  });
}

simhash_status simhash_features_begin(simhash_features_state* state, double max_weight,
                                      char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (state == nullptr) throw std::invalid_argument("null argument");
    new (state->words) FeatureListFingerprinter(max_weight);
    return SIMHASH_OK;
  });
}

simhash_status simhash_features_add(simhash_features_state* state, const char* data,
                                    std::size_t len, double weight, char* errbuf,
                                    std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    const std::string_view feature = view(data, len);
    features_of(state)->add(feature.data(), feature.size(), weight);
    return SIMHASH_OK;
  });
}

simhash_status simhash_features_end(simhash_features_state* state, int32_t min_features,
                                    uint64_t* fingerprint, char* errbuf,
                                    std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (fingerprint == nullptr) throw std::invalid_argument("null argument");
    if (min_features < 1) {
      throw std::invalid_argument("min_features must be at least 1, got " +
                                  std::to_string(min_features));
    }
    const auto fp = features_of(state)->fingerprint(min_features);
    if (!fp) return SIMHASH_NO_FEATURES;
    *fingerprint = *fp;
    return SIMHASH_OK;
  });
}

void simhash_format_hex(uint64_t value, char* out16) noexcept {
  if (out16 != nullptr) simhash::format_hex16(value, out16);
}

simhash_parse_result simhash_parse_hex(const char* s, std::size_t len, uint64_t* value) noexcept {
  if (value == nullptr || (s == nullptr && len != 0)) return SIMHASH_PARSE_INVALID;
  std::uint64_t v = 0;
  const auto r = simhash::parse_hex64(len == 0 ? std::string_view() : std::string_view(s, len), v);
  if (r == simhash::ParseResult::Ok) *value = v;
  return parse_result(r);
}

std::size_t simhash_format_decimal(uint64_t value, char* out20) noexcept {
  return out20 == nullptr ? 0 : simhash::format_decimal(value, out20);
}

simhash_parse_result simhash_parse_decimal(const char* s, std::size_t len,
                                           uint64_t* value) noexcept {
  if (value == nullptr || (s == nullptr && len != 0)) return SIMHASH_PARSE_INVALID;
  std::uint64_t v = 0;
  const auto r =
      simhash::parse_unsigned_decimal(len == 0 ? std::string_view() : std::string_view(s, len), v);
  if (r == simhash::ParseResult::Ok) *value = v;
  return parse_result(r);
}

}  // extern "C"
