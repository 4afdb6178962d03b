#include "core/minhash.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include "core/mix.hpp"
#include "core/similarity.hpp"

namespace simhash {

namespace {

// Format constants (see the header): changing any of them changes every stored key.
constexpr std::uint64_t kValueSeed = 0x9E3779B97F4A7C15ULL;
constexpr std::uint64_t kProbeSeed = 0xD1B54A32D192ED03ULL;
constexpr std::uint64_t kBandSeed = 0x8CB92BA72F3D8DD7ULL;

// floor(x * n / 2^64): a bin of n chosen by the high bits of x.
std::size_t scale(std::uint64_t x, std::size_t n) noexcept {
  return static_cast<std::size_t>((static_cast<unsigned __int128>(x) * n) >> 64);
}

// One permutation hashing: each shingle's mixed value into its bin, keeping the smallest.
// `Filled` is std::vector<bool> or a plain array of bool.
template <typename Filled>
void fold(std::uint64_t* sig, Filled& filled, std::size_t k, const std::uint64_t* set,
          std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint64_t v = mix64(set[i] ^ kValueSeed);
    const std::size_t b = scale(v, k);
    // An empty bin holds the largest value (both callers start there): the minimum is
    // then v, as when a first value is taken; without a branch that mispredicts.
    sig[b] = v < sig[b] ? v : sig[b];
    filled[b] = true;
  }
}

// Optimal densification: the probe sequence of bin i depends on i and the attempt only.
// Some bin is filled, and the sequence is pseudo-random over all bins, so the loop ends; a
// bound keeps it finite whatever happens, then the scan takes the next one.
// The first kTabledProbes bins of every bin's probe sequence for the kLshBands * kLshRows
// bins of the keys, computed once: the probes of a sketch's empty bins, a mix and a
// multiply each, took as long as folding the shingles into the bins.
constexpr std::size_t kSketchBins = static_cast<std::size_t>(kLshBands) * kLshRows;
constexpr std::uint64_t kTabledProbes = 16;
struct ProbeTable {
  std::uint8_t bin[kSketchBins][kTabledProbes];
  ProbeTable() noexcept {
    static_assert(kSketchBins <= 256, "bins must fit a byte");
    for (std::size_t i = 0; i < kSketchBins; ++i) {
      for (std::uint64_t a = 1; a <= kTabledProbes; ++a) {
        bin[i][a - 1] = static_cast<std::uint8_t>(
            scale(mix64(kProbeSeed ^ (static_cast<std::uint64_t>(i) << 32) ^ a), kSketchBins));
      }
    }
  }
};
const ProbeTable& probe_table() noexcept {
  static const ProbeTable table;
  return table;
}

template <typename Filled>
void densify(std::uint64_t* sig, const Filled& filled, std::size_t k) noexcept {
  const ProbeTable* table = k == kSketchBins ? &probe_table() : nullptr;
  for (std::size_t i = 0; i < k; ++i) {
    if (filled[i]) continue;
    std::size_t from = k;
    for (std::uint64_t attempt = 1; attempt <= 64 * k && from == k; ++attempt) {
      const std::size_t j = table != nullptr && attempt <= kTabledProbes
                                ? table->bin[i][attempt - 1]
                                : scale(mix64(kProbeSeed ^ (i << 32) ^ attempt), k);
      if (filled[j]) from = j;
    }
    if (from == k) {
      for (std::size_t j = 1; j <= k; ++j) {
        if (filled[(i + j) % k]) {
          from = (i + j) % k;
          break;
        }
      }
    }
    sig[i] = sig[from];
  }
}

}  // namespace

std::vector<std::uint64_t> minhash_signature(const std::uint64_t* set, std::size_t n, int bins) {
  if (bins < 1) throw std::invalid_argument("a MinHash signature needs at least one bin");
  if (set == nullptr && n > 0) throw std::invalid_argument("null shingle set");
  if (n == 0) return {};
  constexpr std::uint64_t kEmpty = std::numeric_limits<std::uint64_t>::max();
  const auto k = static_cast<std::size_t>(bins);
  std::vector<std::uint64_t> sig(k, kEmpty);
  std::vector<bool> filled(k, false);
  fold(sig.data(), filled, k, set, n);
  densify(sig.data(), filled, k);
  return sig;
}

void LshSketch::add(const std::uint64_t* set, std::size_t n) noexcept {
  if (set == nullptr || n == 0) return;
  if (!any_) {
    for (auto& v : sig_) v = std::numeric_limits<std::uint64_t>::max();
    any_ = true;
  }
  fold(sig_, filled_, static_cast<std::size_t>(kBins), set, n);
}

namespace {

// The band keys of a signature of bands * rows values into keys[0..bands).
void band_keys(const std::uint64_t* signature, int bands, int rows, std::int64_t* keys) noexcept {
  for (int b = 0; b < bands; ++b) {
    std::uint64_t h = mix64(kBandSeed ^ (static_cast<std::uint64_t>(kLshVersion) << 40) ^
                            (static_cast<std::uint64_t>(rows) << 20) ^ static_cast<std::uint64_t>(b));
    for (int r = 0; r < rows; ++r) {
      h = mix64(h ^ signature[static_cast<std::size_t>(b) * static_cast<std::size_t>(rows) +
                              static_cast<std::size_t>(r)]);
      h += kValueSeed;
    }
    keys[static_cast<std::size_t>(b)] = static_cast<std::int64_t>(mix64(h));
  }
}

}  // namespace

std::vector<std::int64_t> LshSketch::keys() const {
  if (!any_) return {};
  std::vector<std::int64_t> keys(static_cast<std::size_t>(kLshBands));
  keys_into(keys.data());
  return keys;
}

bool LshSketch::keys_into(std::int64_t* keys) const noexcept {
  if (!any_) return false;
  std::uint64_t sig[kBins];
  std::copy(sig_, sig_ + kBins, sig);
  densify(sig, filled_, static_cast<std::size_t>(kBins));
  band_keys(sig, kLshBands, kLshRows, keys);
  return true;
}

std::vector<std::int64_t> lsh_band_keys(const std::vector<std::uint64_t>& signature, int bands,
                                        int rows) {
  if (bands < 1 || rows < 1 ||
      signature.size() != static_cast<std::size_t>(bands) * static_cast<std::size_t>(rows)) {
    throw std::invalid_argument("a signature of bands * rows values is needed");
  }
  std::vector<std::int64_t> keys(static_cast<std::size_t>(bands));
  band_keys(signature.data(), bands, rows, keys.data());
  return keys;
}

std::vector<std::int64_t> lsh_keys(const std::uint64_t* set, std::size_t n) {
  if (n == 0) return {};
  return lsh_band_keys(minhash_signature(set, n, kLshBands * kLshRows), kLshBands, kLshRows);
}

std::vector<std::int64_t> lsh_keys(std::string_view text) {
  const std::vector<std::uint64_t> set = shingle_set(text);
  return lsh_keys(set.data(), set.size());
}

}  // namespace simhash
