// Weighted SimHash: features with weights other than one per occurrence.
//
// The default fingerprint (fingerprint.hpp) adds every occurrence of a feature with weight 1
// (term frequency) and never allocates. The other weightings need each distinct feature's
// count first: the features of a document are collected (in memory the caller owns), sorted,
// counted, and every distinct feature is added once with its weight. Caller-supplied
// features come with their own weights.
//
// Every weight is an integer (a fixed-point number) and the counters are integers, so the
// fingerprint is the same on every machine and in any order of addition: no floating-point
// sum whose rounding depends on the order, the compiler (FMA contraction) or the libm (log).
// Logarithms are computed with integer arithmetic only (ln_q32).
//
// With integer weights w_f the rule is the textbook one: counter i = sum of w_f over the
// features whose hash has bit i set minus the sum over those where it is clear; bit i is 1
// when counter i is positive, 0 when negative, and when it is exactly 0, bit i of
// mix64(wrapping sum of the feature hashes), as in bit_counter.hpp. In that sum a feature
// counts as often as the weighting sees it: once per occurrence for tf and idf, once for
// binary and log (so that binary really ignores repetition). With tf this is exactly the
// default fingerprint (tested).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/interrupt.hpp"
#include "core/no_postgres.hpp"

namespace simhash {

enum class Weighting : std::uint8_t {
  Tf = 0,      // weight = occurrences (the default; same fingerprint as fingerprint.hpp)
  Binary = 1,  // weight = 1 per distinct feature
  Log = 2,     // weight = 1 + ln(occurrences)
  Idf = 3,     // weight = occurrences * (1 + ln((1 + docs) / (1 + df)))
};

// The weighting named `name` ('tf', 'binary', 'log'; 'idf' only when allow_idf). Throws
// std::invalid_argument naming the allowed values.
Weighting parse_weighting(std::string_view name, bool allow_idf = false);
const char* weighting_name(Weighting w) noexcept;

// ln(x) for x >= 1 as a fixed-point number with 32 fractional bits, computed with integer
// arithmetic only (binary logarithm by repeated squaring, times ln 2), so it is the same
// everywhere. Within 2^-28 of the true value. ln_q32(0) is 0.
std::uint64_t ln_q32(std::uint64_t x) noexcept;

// Document frequencies for the Idf weighting: entries sorted by feature (as unsigned), each
// feature once, 1 <= df <= docs (check with prepare_df_table).
struct DfEntry {
  std::uint64_t feature;
  std::uint64_t df;
};
struct DfTable {
  const DfEntry* entries = nullptr;
  std::size_t size = 0;
  std::uint64_t docs = 0;  // number of documents the frequencies were counted over

  // The document frequency of a feature; 0 when it is not in the table.
  std::uint64_t df(std::uint64_t feature) const noexcept;
};

// Sorts entries by feature and checks them: every feature once, 1 <= df <= docs. Throws
// std::invalid_argument saying what is wrong (features shown as signed 64-bit values, as
// SQL shows them).
void prepare_df_table(DfEntry* entries, std::size_t size, std::uint64_t docs);

// The idf factor 1 + ln((1 + docs) / (1 + df)) as a fixed-point number with 20 fractional
// bits (at least 1.0: df <= docs). A feature missing from the table (df = 0) gets the
// largest factor, 1 + ln(1 + docs).
std::uint64_t idf_q20(std::uint64_t df, std::uint64_t docs) noexcept;

// How many times a feature occurring `count` times enters the tie rule's sum of hashes:
// `count` for Tf and Idf, 1 for Binary and Log.
inline std::uint64_t tie_occurrences(Weighting w, std::uint64_t count) noexcept {
  return w == Weighting::Tf || w == Weighting::Idf ? count : 1;
}

// The integer weight of a feature occurring `count` times (count >= 1) under a weighting;
// `idf` is idf_q20 of the feature for Weighting::Idf and ignored otherwise. Scales: Tf and
// Binary are plain counts, Log has 24 fractional bits, Idf 20. One document uses one scale.
std::uint64_t feature_weight(Weighting w, std::uint64_t count, std::uint64_t idf) noexcept;

namespace detail {
// kByteLanes[b] has byte j set to 1 exactly when bit j of b is set.
constexpr std::array<std::uint64_t, 256> make_byte_lanes() {
  std::array<std::uint64_t, 256> t{};
  for (unsigned b = 0; b < 256; ++b) {
    for (unsigned j = 0; j < 8; ++j) {
      if ((b >> j) & 1U) t[b] |= std::uint64_t{1} << (8 * j);
    }
  }
  return t;
}
inline constexpr std::array<std::uint64_t, 256> kByteLanes = make_byte_lanes();
}  // namespace detail

// 64 weighted bit counters. Trivially copyable; never allocates.
//
// Most features of a document carry one and the same weight (every feature under
// 'binary', the ones occurring once under 'tf' and 'log', caller features without
// weights): add_unit() counts those in 64 byte-wide lanes, a table lookup and an addition
// per hash byte, and multiplies by the unit weight only when the lanes are flushed. Other
// weights go through add(), 64 masked additions.
class WeightedCounter {
 public:
  // Largest total weight: keeps 2 * counter within 64 bits.
  static constexpr std::uint64_t kMaxTotal = std::uint64_t{1} << 62;

  explicit WeightedCounter(std::uint64_t unit_weight = 1) noexcept : unit_weight_(unit_weight) {}

  // Adds a feature hash with integer weight `weight` that stands for `occurrences`
  // occurrences (used only by the tie rule). Throws std::length_error if the total weight
  // would exceed kMaxTotal (impossible for the inputs the documented scales allow).
  void add(std::uint64_t hash, std::uint64_t weight, std::uint64_t occurrences = 1);

  // Adds a feature hash with the unit weight, standing for one occurrence. Unit adds stay
  // far below kMaxTotal for any input the documented scales allow (at most 2^35 features
  // of a 1 GB text times a unit weight of at most 2^24 for text, 2^28 features of an array
  // times 2^32 for caller weights), so they are not checked one by one.
  void add_unit(std::uint64_t hash) noexcept {
    tie_sum_ += hash;
    ++features_;
    for (unsigned k = 0; k < 8; ++k) lanes_[k] += detail::kByteLanes[(hash >> (8 * k)) & 0xFFU];
    if (++pending_ == kLaneMax) flush();
  }

  // Number of add() and add_unit() calls.
  std::uint64_t features() const noexcept { return features_; }

  // The fingerprint (see the top of this file). Meaningful when features() > 0.
  std::uint64_t fingerprint() const noexcept;

 private:
  static constexpr std::uint32_t kLaneMax = 255;  // a byte lane holds at most 255

  void flush() noexcept;

  std::uint64_t ones_[64] = {};  // per bit: sum of the weights of hashes with the bit set
  std::uint64_t lanes_[8] = {};  // unit adds not flushed yet: a count per bit, in bytes
  std::uint64_t total_ = 0;      // sum of all weights (flushed)
  std::uint64_t tie_sum_ = 0;    // wrapping sum of hash * occurrences
  std::uint64_t features_ = 0;
  std::uint64_t unit_weight_;
  std::uint32_t pending_ = 0;  // unit adds in the lanes
};

// Sorts feature hashes in place, ascending: an in-place MSD radix sort on the top bytes
// (feature hashes are uniformly spread, so buckets shrink fast), a counting pass into
// about one bucket a value and an insertion sort for ranges of up to 1,024 values,
// std::sort for the smallest. No heap memory; at most 8 levels of 6 kB of stack, and
// 10 kB for the last range. Large inputs go through
// SlicedSort in one slice.
void sort_features(std::uint64_t* features, std::size_t n) noexcept;
// The same, in slices of Poll::kUnits values, asking `poll` between them (throws Interrupted;
// the values are then in no particular order).
void sort_features(std::uint64_t* features, std::size_t n, Poll& poll);

// The same sort done in slices of bounded work, so that a caller can do something else
// between slices (the PostgreSQL glue checks for interrupts: a 64-million-feature sort takes
// seconds). Trivially copyable, never allocates: the state of the radix sort's levels (at
// most 8 of them, one per byte) lives in the object, which the C ABI keeps in caller memory.
//
// Ranges of at most kLeaf values are sorted in one go by the recursive sort (a few hundred
// microseconds at most); larger ones are counted, permuted (American flag sort, resumable at
// any element: a value in hand goes back into the hole it came from) and descended into a
// bucket at a time. A range whose values all fall into one bucket is not permuted.
class SlicedSort {
 public:
  static constexpr std::size_t kLeaf = std::size_t{1} << 14;

  SlicedSort() noexcept = default;
  // Starts sorting a[0..n); a must stay valid and unchanged by others until done().
  void begin(std::uint64_t* a, std::size_t n) noexcept;
  // Sorts for about `work` units (a value counted or moved is one; a range of m <= kLeaf
  // values sorted in one go is 2 m, so a slice may overrun by that much) and returns done().
  // Any work >= 1 makes progress.
  bool step(std::size_t work) noexcept;
  bool done() const noexcept { return depth_ == 0; }
  const std::uint64_t* data() const noexcept { return a_; }
  std::size_t size() const noexcept { return n_; }

 private:
  enum Phase : std::uint32_t { kCount = 0, kPermute = 1, kDescend = 2 };
  struct Level {
    std::size_t start;
    std::size_t n;
    std::size_t pos;         // kCount: values counted so far
    std::size_t end[256];    // kCount: counts; afterwards each bucket's end (absolute)
    std::uint32_t child;     // kDescend: next bucket; kPermute: bucket being filled
    std::uint32_t shift;     // the byte this level sorts on
    Phase phase;
  };
  // Pushes a range to sort on byte `shift`, or sorts it at once when small; returns the work.
  std::size_t push(std::size_t start, std::size_t n, int shift) noexcept;

  // Left uninitialized until used (push() and the end of counting fill them): a sort of a
  // short text must not pay for clearing 19 kB.
  Level levels_[8];
  std::size_t next_[256];  // kPermute (only the deepest level permutes): free slots
  std::uint64_t* a_ = nullptr;
  std::size_t n_ = 0;
  int depth_ = 0;
};

// The fingerprint of a document's feature hashes (one per occurrence, any order): sorts
// them in place, counts equal neighbours and adds every distinct feature once with its
// weight. `df` is needed for Weighting::Idf and ignored otherwise. nullopt when n == 0.
// With `sorted` the features are already in ascending order and are not sorted again.
std::optional<std::uint64_t> weighted_fingerprint(std::uint64_t* features, std::size_t n,
                                                  Weighting weighting, const DfTable* df = nullptr,
                                                  bool sorted = false);

// Sorts a document's feature hashes and keeps each once, in ascending (unsigned) order,
// writing its number of occurrences to counts[i] (room for n; counts may be null when the
// numbers are not wanted). Returns the number of distinct features. With `sorted` the
// features are already in ascending order (SlicedSort) and are not sorted again.
std::size_t distinct_features(std::uint64_t* features, std::size_t n, std::uint64_t* counts,
                              bool sorted = false);

// Caller-supplied weights (finite, >= 0) become integers relative to the largest weight of
// the document: round(w / max_weight * 2^32). SimHash only compares sums of weights, so
// scaling all of them by one factor does not change the fingerprint (beyond rounding).
std::uint64_t quantize_weight(double weight, double max_weight) noexcept;

// The fingerprint of caller-supplied features and weights (SQL: simhash(features text[],
// weights float8[])). A feature's hash is hash_bytes() of its bytes as given, so a list of
// the tokenizer's tokens with unit weights has the fingerprint of the text with n = 1. A
// weight of 0 leaves the feature out entirely (it is not counted by min_features and does
// not take part in the tie rule). Weights are quantized with quantize_weight(), so
// max_weight must be the largest weight of the list (check_weights()).
class FeatureListFingerprinter {
 public:
  explicit FeatureListFingerprinter(double max_weight) noexcept
      : max_weight_(max_weight), counter_(kUnit) {}

  // Throws std::invalid_argument for a weight that is not finite, negative or larger than
  // max_weight.
  void add(const void* bytes, std::size_t len, double weight);
  std::uint64_t features() const noexcept { return counter_.features(); }
  // nullopt when fewer than min_features features had a positive weight.
  std::optional<std::uint64_t> fingerprint(std::int64_t min_features) const noexcept;

 private:
  // The quantized largest weight (quantize_weight): features with it are unit adds.
  static constexpr std::uint64_t kUnit = std::uint64_t{1} << 32;

  double max_weight_;
  WeightedCounter counter_;
};

// Checks caller-supplied weights (finite and >= 0; throws std::invalid_argument naming the
// 1-based position of the first bad one) and returns the largest.
double check_weights(const double* weights, std::size_t n);

}  // namespace simhash
