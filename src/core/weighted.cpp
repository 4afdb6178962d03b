#include "core/weighted.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/fingerprint.hpp"
#include "core/mix.hpp"

namespace simhash {

Weighting parse_weighting(std::string_view name, bool allow_idf) {
  if (name == "tf") return Weighting::Tf;
  if (name == "binary") return Weighting::Binary;
  if (name == "log") return Weighting::Log;
  if (name == "idf" && allow_idf) return Weighting::Idf;
  if (name == "idf") {
    throw std::invalid_argument(
        "weighting 'idf' needs document frequencies: use simhash_tfidf(); allowed values "
        "here are 'tf', 'binary', 'log'");
  }
  throw std::invalid_argument("unknown weighting \"" + std::string(name) +
                              "\"; allowed values are 'tf', 'binary', 'log'");
}

const char* weighting_name(Weighting w) noexcept {
  switch (w) {
    case Weighting::Tf:
      return "tf";
    case Weighting::Binary:
      return "binary";
    case Weighting::Log:
      return "log";
    case Weighting::Idf:
      return "idf";
  }
  return "?";
}

namespace {
// ln 2 * 2^64, rounded down.
constexpr std::uint64_t kLn2Q64 = 0xB17217F7D1CF79ABULL;
}  // namespace

std::uint64_t ln_q32(std::uint64_t x) noexcept {
  if (x <= 1) return 0;
  const unsigned e = 63U - static_cast<unsigned>(__builtin_clzll(x));  // floor(log2 x)
  // x / 2^e in [1, 2) with 62 fractional bits: m in [2^62, 2^63).
  std::uint64_t m = e <= 62 ? x << (62 - e) : x >> 1;
  std::uint64_t frac = 0;
  for (int i = 0; i < 32; ++i) {
    // Squaring doubles the logarithm: the next bit of log2 is 1 when m^2 >= 2.
    m = static_cast<std::uint64_t>((static_cast<unsigned __int128>(m) * m) >> 62);
    frac <<= 1;
    if (m >= (std::uint64_t{1} << 63)) {
      m >>= 1;
      frac |= 1;
    }
  }
  const std::uint64_t log2_q32 = (std::uint64_t{e} << 32) | frac;  // < 2^38
  return static_cast<std::uint64_t>((static_cast<unsigned __int128>(log2_q32) * kLn2Q64) >> 64);
}

std::uint64_t DfTable::df(std::uint64_t feature) const noexcept {
  const DfEntry* end = entries + size;
  const DfEntry* it = std::lower_bound(
      entries, end, feature, [](const DfEntry& e, std::uint64_t f) { return e.feature < f; });
  return it != end && it->feature == feature ? it->df : 0;
}

void prepare_df_table(DfEntry* entries, std::size_t size, std::uint64_t docs) {
  std::sort(entries, entries + size,
            [](const DfEntry& a, const DfEntry& b) { return a.feature < b.feature; });
  for (std::size_t i = 0; i < size; ++i) {
    const auto feature = std::to_string(static_cast<std::int64_t>(entries[i].feature));
    if (i > 0 && entries[i].feature == entries[i - 1].feature) {
      throw std::invalid_argument("document frequencies: feature " + feature +
                                  " appears more than once");
    }
    if (entries[i].df < 1 || entries[i].df > docs) {
      throw std::invalid_argument("document frequencies: df of feature " + feature + " is " +
                                  std::to_string(static_cast<std::int64_t>(entries[i].df)) +
                                  ", not between 1 and the number of documents (" +
                                  std::to_string(docs) + ")");
    }
  }
}

std::uint64_t idf_q20(std::uint64_t df, std::uint64_t docs) noexcept {
  const std::uint64_t a = ln_q32(docs == UINT64_MAX ? docs : docs + 1);
  const std::uint64_t b = ln_q32(df == UINT64_MAX ? df : df + 1);
  const std::uint64_t ln_ratio = a > b ? a - b : 0;
  return (std::uint64_t{1} << 20) + ((ln_ratio + (1U << 11)) >> 12);
}

std::uint64_t feature_weight(Weighting w, std::uint64_t count, std::uint64_t idf) noexcept {
  switch (w) {
    case Weighting::Tf:
      return count;
    case Weighting::Binary:
      return 1;
    case Weighting::Log:
      return ((std::uint64_t{1} << 32) + ln_q32(count) + 128) >> 8;
    case Weighting::Idf:
      return count * idf;
  }
  return count;
}

void WeightedCounter::add(std::uint64_t hash, std::uint64_t weight, std::uint64_t occurrences) {
  if (weight > kMaxTotal - total_) {
    throw std::length_error("weighted fingerprint: total weight exceeds 2^62");
  }
  total_ += weight;
  for (unsigned i = 0; i < 64; ++i) ones_[i] += weight & (0 - ((hash >> i) & 1U));
  tie_sum_ += hash * occurrences;
  ++features_;
}

void WeightedCounter::flush() noexcept {
  for (unsigned k = 0; k < 8; ++k) {
    for (unsigned j = 0; j < 8; ++j)
      ones_[8 * k + j] += ((lanes_[k] >> (8 * j)) & 0xFFU) * unit_weight_;
    lanes_[k] = 0;
  }
  total_ += pending_ * unit_weight_;
  pending_ = 0;
}

std::uint64_t WeightedCounter::fingerprint() const noexcept {
  WeightedCounter all = *this;  // flushing must not change this object
  all.flush();
  const std::uint64_t ties = mix64(all.tie_sum_);
  std::uint64_t fp = 0;
  for (unsigned i = 0; i < 64; ++i) {
    const std::uint64_t bit = std::uint64_t{1} << i;
    const std::uint64_t twice = 2 * all.ones_[i];
    if (twice > all.total_ || (twice == all.total_ && (ties & bit) != 0)) fp |= bit;
  }
  return fp;
}

namespace {

// Ranges up to this many values are sorted by spread_sort.
constexpr std::size_t kSpreadMax = 1024;

// Sorts a[0..n), 32 < n <= kSpreadMax, whose values agree above bit shift + 8: one
// counting pass on the next bits into about n buckets (feature hashes are uniformly spread:
// about one value a bucket), a scatter into a buffer on the stack, and an insertion sort
// while copying back, in which a value only moves past the others of its bucket. (Sets of a
// few hundred shingles, a paragraph's, spent more in radix_sort's 256 buckets, most of
// them empty, and the std::sort of each, than in sorting.) Adversarial values all in one
// bucket cost n^2 / 4 moves at most: a fraction of a millisecond.
void spread_sort(std::uint64_t* a, std::size_t n, int shift) noexcept {
  unsigned bits = 1;
  while ((std::size_t{1} << bits) < n) ++bits;
  const auto top = static_cast<unsigned>(shift + 8);
  if (bits > top) bits = top;
  const unsigned low = top - bits;
  const std::uint64_t mask = (std::uint64_t{1} << bits) - 1;
  std::uint16_t start[kSpreadMax + 1] = {};
  for (std::size_t i = 0; i < n; ++i) ++start[((a[i] >> low) & mask) + 1];
  for (std::size_t b = 1; b <= mask; ++b) start[b] = static_cast<std::uint16_t>(start[b] + start[b - 1]);
  std::uint64_t spread[kSpreadMax];
  for (std::size_t i = 0; i < n; ++i) spread[start[(a[i] >> low) & mask]++] = a[i];
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t v = spread[i];
    std::size_t j = i;
    while (j > 0 && a[j - 1] > v) {
      a[j] = a[j - 1];
      --j;
    }
    a[j] = v;
  }
}

void radix_sort(std::uint64_t* a, std::size_t n, int shift) noexcept {
  if (n <= 32 || shift < 0) {
    std::sort(a, a + n);
    return;
  }
  if (n <= kSpreadMax) {
    spread_sort(a, n, shift);
    return;
  }
  std::size_t count[256] = {};
  for (std::size_t i = 0; i < n; ++i) ++count[(a[i] >> shift) & 0xFFU];
  std::size_t next[256];
  std::size_t end[256];
  std::size_t sum = 0;
  for (unsigned b = 0; b < 256; ++b) {
    next[b] = sum;
    sum += count[b];
    end[b] = sum;
  }
  // American flag sort: move every value to the next free slot of its bucket.
  for (unsigned b = 0; b < 256; ++b) {
    while (next[b] < end[b]) {
      std::uint64_t v = a[next[b]];
      unsigned d = static_cast<unsigned>((v >> shift) & 0xFFU);
      while (d != b) {
        std::swap(v, a[next[d]++]);
        d = static_cast<unsigned>((v >> shift) & 0xFFU);
      }
      a[next[b]++] = v;
    }
  }
  std::size_t start = 0;
  for (unsigned b = 0; b < 256; ++b) {
    radix_sort(a + start, count[b], shift - 8);
    start += count[b];
  }
}

unsigned digit(std::uint64_t v, unsigned shift) noexcept {
  return static_cast<unsigned>((v >> shift) & 0xFFU);
}

}  // namespace

void sort_features(std::uint64_t* features, std::size_t n) noexcept {
  if (n <= SlicedSort::kLeaf) {
    radix_sort(features, n, 56);
    return;
  }
  SlicedSort sort;
  sort.begin(features, n);
  while (!sort.step(SIZE_MAX)) {
  }
}

void sort_features(std::uint64_t* features, std::size_t n, Poll& poll) {
  if (n <= SlicedSort::kLeaf) {
    radix_sort(features, n, 56);
    return;
  }
  constexpr auto kSlice = static_cast<std::size_t>(Poll::kUnits);
  SlicedSort sort;
  sort.begin(features, n);
  while (!sort.step(kSlice)) poll.work(kSlice);
}

void SlicedSort::begin(std::uint64_t* a, std::size_t n) noexcept {
  a_ = a;
  n_ = n;
  depth_ = 0;
  if (n > 1) push(0, n, 56);
}

std::size_t SlicedSort::push(std::size_t start, std::size_t n, int shift) noexcept {
  if (n <= kLeaf) {
    radix_sort(a_ + start, n, shift);
    return 2 * n;
  }
  Level& l = levels_[depth_++];
  l.start = start;
  l.n = n;
  l.pos = 0;
  std::fill(l.end, l.end + 256, std::size_t{0});
  l.child = 0;
  l.shift = static_cast<std::uint32_t>(shift);
  l.phase = kCount;
  return 256;
}

bool SlicedSort::step(std::size_t work) noexcept {
  std::size_t done = 0;
  while (depth_ > 0 && done < work) {
    Level& l = levels_[depth_ - 1];
    std::uint64_t* a = a_ + l.start;
    const unsigned shift = l.shift;
    switch (l.phase) {
      case kCount: {
        const std::size_t stop = l.pos + std::min(l.n - l.pos, work - done);
        for (std::size_t i = l.pos; i < stop; ++i) ++l.end[digit(a[i], shift)];
        done += stop - l.pos;
        l.pos = stop;
        if (l.pos < l.n) break;
        bool one_bucket = false;
        std::size_t sum = l.start;
        for (unsigned b = 0; b < 256; ++b) {
          one_bucket = one_bucket || l.end[b] == l.n;
          next_[b] = sum;
          sum += l.end[b];
          l.end[b] = sum;
        }
        l.child = 0;
        l.phase = one_bucket ? kDescend : kPermute;
        break;
      }
      case kPermute: {
        // American flag sort, as radix_sort: every value to the next free slot of its
        // bucket. next_ and end are absolute offsets into a_.
        std::uint64_t* base = a_;
        unsigned b = l.child;
        while (b < 256 && done < work) {
          if (next_[b] >= l.end[b]) {
            ++b;
            continue;
          }
          const std::size_t hole = next_[b];
          std::uint64_t v = base[hole];
          unsigned d = digit(v, shift);
          while (d != b && done < work) {
            std::swap(v, base[next_[d]++]);
            d = digit(v, shift);
            ++done;
          }
          if (d == b) {
            base[next_[b]++] = v;
            ++done;
          } else {
            base[hole] = v;  // out of work mid-cycle: the value in hand goes back to the hole
          }
        }
        l.child = b;
        if (b == 256) {
          l.child = 0;
          l.phase = kDescend;
        }
        break;
      }
      case kDescend: {
        // Buckets of the last byte hold equal values: nothing left to sort.
        if (shift == 0) {
          --depth_;
          break;
        }
        bool pushed = false;
        while (l.child < 256 && done < work && !pushed) {
          const unsigned c = l.child++;
          const std::size_t lo = c == 0 ? l.start : l.end[c - 1];
          const std::size_t m = l.end[c] - lo;
          if (m <= 1) continue;
          pushed = m > kLeaf;
          done += push(lo, m, static_cast<int>(shift) - 8);
        }
        if (!pushed && levels_[depth_ - 1].child == 256) --depth_;
        break;
      }
    }
  }
  return depth_ == 0;
}

std::optional<std::uint64_t> weighted_fingerprint(std::uint64_t* features, std::size_t n,
                                                  Weighting weighting, const DfTable* df,
                                                  bool sorted) {
  if (n == 0) return std::nullopt;
  if (weighting == Weighting::Idf && df == nullptr) {
    throw std::invalid_argument("weighting 'idf' needs a table of document frequencies");
  }
  if (!sorted) sort_features(features, n);
  // The weight of a feature occurring once (Idf: never used, every feature has its own).
  WeightedCounter counter(feature_weight(weighting, 1, idf_q20(0, 0)));
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i + 1;
    while (j < n && features[j] == features[i]) ++j;
    const std::uint64_t count = j - i;
    if (weighting == Weighting::Binary || (count == 1 && weighting != Weighting::Idf)) {
      counter.add_unit(features[i]);
    } else {
      const std::uint64_t idf =
          weighting == Weighting::Idf ? idf_q20(df->df(features[i]), df->docs) : 0;
      counter.add(features[i], feature_weight(weighting, count, idf),
                  tie_occurrences(weighting, count));
    }
    i = j;
  }
  return counter.fingerprint();
}

std::size_t distinct_features(std::uint64_t* features, std::size_t n, std::uint64_t* counts,
                              bool sorted) {
  if (!sorted) sort_features(features, n);
  std::size_t out = 0;
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i + 1;
    while (j < n && features[j] == features[i]) ++j;
    features[out] = features[i];
    if (counts != nullptr) counts[out] = j - i;
    ++out;
    i = j;
  }
  return out;
}

std::uint64_t quantize_weight(double weight, double max_weight) noexcept {
  if (!(weight > 0) || !(max_weight > 0)) return 0;
  // weight <= max_weight, so the quotient is in (0, 1] and the result in [0, 2^32]; the
  // division and the scaling by a power of two are exact IEEE operations.
  return static_cast<std::uint64_t>(std::llround(weight / max_weight * 4294967296.0));
}

double check_weights(const double* weights, std::size_t n) {
  double max = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double w = weights[i];
    if (std::isnan(w) || std::isinf(w) || w < 0) {
      const char* what = std::isnan(w) ? "NaN" : std::isinf(w) ? "infinite" : "negative";
      throw std::invalid_argument("weight number " + std::to_string(i + 1) + " is " + what +
                                  "; weights must be finite and >= 0");
    }
    max = std::max(max, w);
  }
  return max;
}

void FeatureListFingerprinter::add(const void* bytes, std::size_t len, double weight) {
  // Also refuses NaN, and infinity when max_weight is infinite too: inf / inf would be
  // quantized from NaN into a weight beyond the counters' bound (an internal error).
  if (!(std::isfinite(weight) && weight >= 0 && weight <= max_weight_)) {
    throw std::invalid_argument(
        "weight not finite or outside [0, max_weight]: check_weights() first");
  }
  if (weight == 0) return;
  const std::uint64_t q = quantize_weight(weight, max_weight_);
  if (q == kUnit) {
    counter_.add_unit(hash_bytes(bytes, len));
  } else {
    counter_.add(hash_bytes(bytes, len), q, 1);
  }
}

std::optional<std::uint64_t> FeatureListFingerprinter::fingerprint(
    std::int64_t min_features) const noexcept {
  const std::uint64_t n = counter_.features();
  if (n == 0 || n < static_cast<std::uint64_t>(min_features < 1 ? 1 : min_features)) {
    return std::nullopt;
  }
  return counter_.fingerprint();
}

}  // namespace simhash
