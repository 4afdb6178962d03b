// Weighted bit accumulation, the heart of SimHash: for every feature hash, each of the 64
// per-bit counters goes up by the feature's weight where the hash has a 1 and down where it
// has a 0; the fingerprint keeps the sign of each counter.
//
// With unit weights (term frequency: a feature occurring twice is added twice) counter i is
// 2 * ones[i] - total, so it suffices to count, per bit position, how many hashes had a 1.
// That count is kept in 64 byte-wide lanes packed into eight 64-bit words: one table lookup
// and one addition per hash byte, no branches; the lanes are flushed into 64-bit totals
// before any of them can overflow.
#pragma once
#include "core/no_postgres.hpp"

#include <array>
#include <cstdint>

#include "core/mix.hpp"

namespace simhash {

namespace detail {
// kSpread[b] has byte j set to 1 exactly when bit j of b is set.
constexpr std::array<std::uint64_t, 256> make_spread() {
  std::array<std::uint64_t, 256> t{};
  for (unsigned b = 0; b < 256; ++b) {
    std::uint64_t v = 0;
    for (unsigned j = 0; j < 8; ++j) {
      if ((b >> j) & 1U) v |= std::uint64_t{1} << (8 * j);
    }
    t[b] = v;
  }
  return t;
}
inline constexpr std::array<std::uint64_t, 256> kSpread = make_spread();
}  // namespace detail

class BitCounter {
 public:
  // Adds one feature hash with weight 1.
  void add(std::uint64_t h) noexcept {
    sum_ += h;
    for (unsigned k = 0; k < 8; ++k) lanes_[k] += detail::kSpread[(h >> (8 * k)) & 0xFFU];
    if (++pending_ == kLaneMax) flush();
  }

  // Number of hashes added so far.
  std::uint64_t total() const noexcept { return total_ + pending_; }

  // The fingerprint: bit i is 1 when more than half of the hashes had bit i set (the
  // counter is positive), 0 when fewer did, and on a tie (counter exactly zero) bit i of
  // tie_breaker(): a mix of the sum of all hashes, which depends on the whole multiset of
  // features and on nothing else. Ties are common in short texts; breaking them towards 0
  // (or towards any one feature) would pile short texts up in a few block values.
  std::uint64_t fingerprint() noexcept {
    flush();
    const std::uint64_t ties = tie_breaker();
    std::uint64_t fp = 0;
    for (unsigned i = 0; i < 64; ++i) {
      const std::uint64_t bit = std::uint64_t{1} << i;
      if (2 * ones_[i] > total_ || (2 * ones_[i] == total_ && (ties & bit) != 0)) fp |= bit;
    }
    return fp;
  }

  std::uint64_t tie_breaker() const noexcept { return mix64(sum_); }

 private:
  static constexpr std::uint32_t kLaneMax = 255;  // a byte lane holds at most 255

  void flush() noexcept {
    for (unsigned k = 0; k < 8; ++k) {
      for (unsigned j = 0; j < 8; ++j) ones_[8 * k + j] += (lanes_[k] >> (8 * j)) & 0xFFU;
      lanes_[k] = 0;
    }
    total_ += pending_;
    pending_ = 0;
  }

  std::array<std::uint64_t, 8> lanes_{};
  std::array<std::uint64_t, 64> ones_{};
  std::uint64_t total_ = 0;
  std::uint64_t sum_ = 0;  // wrapping sum of all hashes, for ties
  std::uint32_t pending_ = 0;
};

}  // namespace simhash
