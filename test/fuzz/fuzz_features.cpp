// libFuzzer target: caller-supplied features and weights, through the C ABI exactly as
// simhash(features text[], weights float8[], min_features) drives it (src/pg/features.c):
// simhash_weights_check, simhash_features_begin with the largest weight,
// simhash_features_add for each feature, simhash_features_end.
//
// Input: byte 0 min_features (% 6, so 0 is invalid; 255 is INT32_MAX); byte 1 the mode
// (bit 0: no weights, every weight 1 as simhash(features text[]); bit 1: features are the
// tokens of the rest of the input, unit weights; bit 2: call add() with weights that were
// not checked, which must be refused, never crash); then records: a length byte (255: a
// long feature of 200..455 bytes), the feature's bytes, a weight selector byte (NaN,
// +-Infinity, -0, 0, the smallest subnormal, DBL_MAX, 1e300, negative numbers, raw 8-byte
// doubles, small integers, ...).
//
// Checks, aborting on the first violation:
//  - simhash_weights_check refuses exactly the lists with a NaN, infinite or negative
//    weight (with an error message that fits the buffer), and otherwise returns the
//    largest weight;
//  - a checked list is always accepted by add(); the fingerprint, and SIMHASH_NO_FEATURES
//    exactly when fewer than min_features weights are positive, equal a reference from the
//    definition: weight w becomes round(w / max * 2^32), 64 signed counters, ties from
//    mix64 of the sum of the feature hashes (so the order of the features never matters);
//  - with unit weights, the tokens of a text give the text's fingerprint with n = 1;
//  - a weight outside [0, max_weight] given to add() is refused with
//    SIMHASH_INVALID_ARGUMENT; a bad max_weight (NaN, negative, infinite) never crashes.
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "capi/simhash_capi.h"
#include "capi/text_options_capi.h"
#include "fuzz_util.hpp"

namespace {

using simhash::fuzz::Input;
namespace reference = simhash::reference;

double weight_of(Input& in) {
  const std::uint8_t sel = in.byte();
  switch (sel % 20) {
    case 0: return 1.0;
    case 1: return 0.0;
    case 2: return -0.0;
    case 3: return std::numeric_limits<double>::quiet_NaN();
    case 4: return std::numeric_limits<double>::infinity();
    case 5: return -std::numeric_limits<double>::infinity();
    case 6: return DBL_MAX;
    case 7: return std::numeric_limits<double>::denorm_min();
    case 8: return -1.0;
    case 9: return 1e300;
    case 10: return 1e-300;
    case 11: {
      const std::uint64_t bits = in.u64();
      double d;
      std::memcpy(&d, &bits, sizeof d);
      return d;
    }
    case 12: return in.byte();
    case 13: return 0.5;
    case 14: return std::ldexp(1.0, static_cast<int>(in.byte()) - 128);
    case 15: return -std::numeric_limits<double>::denorm_min();
    case 16: return DBL_MIN;
    case 17: return static_cast<double>(in.u16()) / 7.0;
    case 18: return 4294967296.0;
    default: return 1.0 + in.byte() / 256.0;
  }
}

bool bad_weight(double w) { return std::isnan(w) || std::isinf(w) || w < 0; }

// The reference fingerprint of features with checked weights.
std::optional<std::uint64_t> reference_fingerprint(const std::vector<std::string>& features,
                                                   const std::vector<double>& weights,
                                                   double max_weight, std::int64_t min_features) {
  __int128 v[64] = {};
  std::uint64_t ties = 0, counted = 0;
  for (std::size_t i = 0; i < features.size(); ++i) {
    if (!(weights[i] > 0)) continue;  // weight 0 (or -0): left out entirely
    const auto q = static_cast<std::uint64_t>(std::llround(weights[i] / max_weight * 4294967296.0));
    const std::uint64_t h =
        XXH3_64bits_withSeed(features[i].data(), features[i].size(), reference::kSeed);
    for (int b = 0; b < 64; ++b) v[b] += ((h >> b) & 1) ? __int128(q) : -__int128(q);
    ties += h;
    ++counted;
  }
  if (counted == 0 || counted < static_cast<std::uint64_t>(min_features)) return std::nullopt;
  const std::uint64_t t = reference::mix64(ties);
  std::uint64_t fp = 0;
  for (int b = 0; b < 64; ++b) {
    if (v[b] > 0 || (v[b] == 0 && ((t >> b) & 1))) fp |= std::uint64_t{1} << b;
  }
  return fp;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  const std::uint8_t b0 = in.byte();
  const std::uint8_t mode = in.byte();
  const std::int32_t min_features = b0 == 255 ? INT32_MAX : b0 % 6;
  const bool unweighted = (mode & 1) != 0;
  const bool tokens = (mode & 2) != 0;
  const bool unchecked = (mode & 4) != 0;

  std::vector<std::string> features;
  std::vector<double> weights;
  std::string text;
  if (tokens) {
    text = std::string(in.rest());
    features = reference::tokens(text, false);
    weights.assign(features.size(), 1.0);
  } else {
    while (!in.empty()) {
      const std::uint8_t len = in.byte();
      features.emplace_back(in.bytes(len == 255 ? 200 + in.byte() : len % 40));
      weights.push_back(unweighted ? 1.0 : weight_of(in));
    }
  }

  simhash::fuzz::ErrBuf err(mode >> 3);
  simhash_features_state state;

  if (unchecked) {
    // add() with weights nobody checked, under whatever max_weight the first one gives.
    const double max_weight = weights.empty() ? 1.0 : weights[0];
    if (simhash_features_begin(&state, max_weight, err.data(), err.cap()) != SIMHASH_OK) {
      FUZZ_CHECK(false);
    }
    for (std::size_t i = 0; i < features.size(); ++i) {
      const simhash_status s = simhash_features_add(&state, features[i].data(), features[i].size(),
                                                    weights[i], err.data(), err.cap());
      // Documented (src/core/weighted.hpp): a weight that is not finite, negative or
      // larger than max_weight is refused.
      const bool ok = std::isfinite(weights[i]) && weights[i] >= 0 && weights[i] <= max_weight;
      FUZZ_CHECK(s == (ok ? SIMHASH_OK : SIMHASH_INVALID_ARGUMENT));
      if (!ok) err.check_terminated();
    }
    std::uint64_t fp;
    const simhash_status s = simhash_features_end(&state, 1, &fp, err.data(), err.cap());
    FUZZ_CHECK(s == SIMHASH_OK || s == SIMHASH_NO_FEATURES);
    return 0;
  }

  double max_weight = -1;
  const simhash_status checked =
      simhash_weights_check(weights.data(), weights.size(), &max_weight, err.data(), err.cap());
  bool any_bad = false;
  double want_max = 0;
  for (double w : weights) {
    any_bad = any_bad || bad_weight(w);
    if (!bad_weight(w)) want_max = std::max(want_max, w);
  }
  if (any_bad) {
    FUZZ_CHECK(checked == SIMHASH_INVALID_ARGUMENT);
    err.check_terminated();
    return 0;
  }
  FUZZ_CHECK(checked == SIMHASH_OK && max_weight == want_max);

  FUZZ_CHECK(simhash_features_begin(&state, max_weight, err.data(), err.cap()) == SIMHASH_OK);
  for (std::size_t i = 0; i < features.size(); ++i) {
    FUZZ_CHECK(simhash_features_add(&state, features[i].data(), features[i].size(), weights[i],
                                    err.data(), err.cap()) == SIMHASH_OK);
  }
  std::uint64_t fp = 0;
  const simhash_status ended = simhash_features_end(&state, min_features, &fp, err.data(), err.cap());
  if (min_features < 1) {
    FUZZ_CHECK(ended == SIMHASH_INVALID_ARGUMENT);
    err.check_terminated();
    return 0;
  }
  const auto want = reference_fingerprint(features, weights, max_weight, min_features);
  FUZZ_CHECK((ended == SIMHASH_OK) == want.has_value());
  if (want) FUZZ_CHECK(fp == *want);

  if (tokens && min_features == 1) {
    // The tokens with unit weights are the text with n = 1.
    simhash_state s;
    simhash_options o{1, 0};
    char e[128];
    FUZZ_CHECK(simhash_begin(&s, &o, e, sizeof e) == SIMHASH_OK);
    FUZZ_CHECK(simhash_feed(&s, text.data(), text.size(), e, sizeof e) == SIMHASH_OK);
    std::uint64_t text_fp = 0;
    const simhash_status st = simhash_end(&s, &text_fp, e, sizeof e);
    FUZZ_CHECK((st == SIMHASH_OK) == (ended == SIMHASH_OK));
    if (st == SIMHASH_OK) FUZZ_CHECK(text_fp == fp);
  }
  return 0;
}
