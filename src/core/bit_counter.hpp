// Weighted bit accumulation, the heart of SimHash: for every feature hash, each of the 64
// per-bit counters goes up by the feature's weight where the hash has a 1 and down where it
// has a 0; the fingerprint keeps the sign of each counter.
//
// With unit weights (term frequency: a feature occurring twice is added twice) counter i is
// 2 * ones[i] - total, so it suffices to count, per bit position, how many hashes had a 1.
// Those 64 counts are kept bit-sliced: hashes are buffered 16 at a time, and each group of
// 16 goes through a carry-save adder tree (Harley-Seal) into four 64-bit words holding bit
// 0, 1, 2 and 3 of every count, which hands out one word of carries worth 16 per group.
// Those carries are spread into 64 byte-wide lanes (8 words), which are flushed into 64-bit
// totals every 255 groups, before any lane can overflow. About 7 word operations per hash,
// with no table and no branch but the one per 16 hashes.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

#include "core/mix.hpp"
#include "core/no_postgres.hpp"

namespace simhash {

class BitCounter {
 public:
  // Adds one feature hash with weight 1.
  void add(std::uint64_t h) noexcept {
    sum_ += h;
    pending_[npending_] = h;
    if (++npending_ == kGroup) {
      add_group(pending_.data());
      npending_ = 0;
    }
  }

  // Adds n feature hashes with weight 1 each.
  void add_many(const std::uint64_t* h, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) sum_ += h[i];
    std::size_t i = 0;
    while (npending_ != 0 && i < n) {
      pending_[npending_] = h[i++];
      if (++npending_ == kGroup) {
        add_group(pending_.data());
        npending_ = 0;
      }
    }
    for (; i + kGroup <= n; i += kGroup) add_group(h + i);
    while (i < n) pending_[npending_++] = h[i++];
  }

  // Number of hashes added so far.
  std::uint64_t total() const noexcept { return groups_ * kGroup + npending_; }

  // The fingerprint: bit i is 1 when more than half of the hashes had bit i set (the
  // counter is positive), 0 when fewer did, and on a tie (counter exactly zero) bit i of
  // tie_breaker(): a mix of the sum of all hashes, which depends on the whole multiset of
  // features and on nothing else. Ties are common in short texts; breaking them towards 0
  // (or towards any one feature) would pile short texts up in a few block values.
  // Does not change the counts: more hashes may be added afterwards.
  std::uint64_t fingerprint() const noexcept {
    // The pending hashes, added one by one into copies of the planes (a ripple-carry add
    // per hash); carry16 gets what wraps past 15, at most once per bit for up to 15 hashes.
    std::uint64_t plane[4] = {ones_, twos_, fours_, eights_};
    std::uint64_t carry16 = 0;
    for (unsigned k = 0; k < npending_; ++k) {
      std::uint64_t carry = pending_[k];
      for (std::uint64_t& p : plane) {
        const std::uint64_t next = p & carry;
        p ^= carry;
        carry = next;
      }
      carry16 |= carry;
    }
    const std::uint64_t ties = tie_breaker();
    const std::uint64_t n = total();
    if (groups_ == 0) {
      // Fewer than 16 hashes: every count is below 16 and sits bit-sliced in the planes.
      // Compare all 64 with half = n / 2 at once, most significant bit first: gt = count
      // above half, eq = equal so far. 2 * count > n exactly when count > half; a tie
      // (2 * count == n) needs n even and count == half.
      const std::uint64_t half = n / 2;
      std::uint64_t gt = 0, eq = ~std::uint64_t{0};
      for (int k = 3; k >= 0; --k) {
        if ((half >> k) & 1) {
          eq &= plane[k];
        } else {
          gt |= eq & plane[k];
          eq &= ~plane[k];
        }
      }
      return gt | (n % 2 == 0 ? eq & ties : 0);
    }
    std::uint64_t fp = 0;
    for (unsigned i = 0; i < 64; ++i) {
      const std::uint64_t sixteens =
          sixteens_[i] + ((lanes_[i % 8] >> (8 * (i / 8))) & 0xFFU) + ((carry16 >> i) & 1);
      const std::uint64_t ones = 16 * sixteens + 8 * ((plane[3] >> i) & 1) +
                                 4 * ((plane[2] >> i) & 1) + 2 * ((plane[1] >> i) & 1) +
                                 ((plane[0] >> i) & 1);
      const std::uint64_t bit = std::uint64_t{1} << i;
      if (2 * ones > n || (2 * ones == n && (ties & bit) != 0)) fp |= bit;
    }
    return fp;
  }

  std::uint64_t tie_breaker() const noexcept { return mix64(sum_); }

 private:
  static constexpr unsigned kGroup = 16;
  static constexpr unsigned kLaneMax = 255;  // a byte lane holds at most 255
  static constexpr std::uint64_t kLaneBits = 0x0101010101010101ULL;

  // Carry-save adder: adds the bits of a, b and c position by position; sum and carry get
  // the low and high bit of each position's 2-bit result.
  static void csa(std::uint64_t& carry, std::uint64_t& sum, std::uint64_t a, std::uint64_t b,
                  std::uint64_t c) noexcept {
    const std::uint64_t u = a ^ b;
    carry = (a & b) | (u & c);
    sum = u ^ c;
  }

  void add_group(const std::uint64_t* h) noexcept {
    std::uint64_t twos_a, twos_b, fours_a, fours_b, eights_a, eights_b, sixteens;
    csa(twos_a, ones_, ones_, h[0], h[1]);
    csa(twos_b, ones_, ones_, h[2], h[3]);
    csa(fours_a, twos_, twos_, twos_a, twos_b);
    csa(twos_a, ones_, ones_, h[4], h[5]);
    csa(twos_b, ones_, ones_, h[6], h[7]);
    csa(fours_b, twos_, twos_, twos_a, twos_b);
    csa(eights_a, fours_, fours_, fours_a, fours_b);
    csa(twos_a, ones_, ones_, h[8], h[9]);
    csa(twos_b, ones_, ones_, h[10], h[11]);
    csa(fours_a, twos_, twos_, twos_a, twos_b);
    csa(twos_a, ones_, ones_, h[12], h[13]);
    csa(twos_b, ones_, ones_, h[14], h[15]);
    csa(fours_b, twos_, twos_, twos_a, twos_b);
    csa(eights_b, fours_, fours_, fours_a, fours_b);
    csa(sixteens, eights_, eights_, eights_a, eights_b);
    // Lane k, byte j counts the sixteens of bit 8 * j + k.
    for (unsigned k = 0; k < 8; ++k) lanes_[k] += (sixteens >> k) & kLaneBits;
    ++groups_;
    if (++lane_groups_ == kLaneMax) {
      for (unsigned k = 0; k < 8; ++k) {
        for (unsigned j = 0; j < 8; ++j) sixteens_[8 * j + k] += (lanes_[k] >> (8 * j)) & 0xFFU;
        lanes_[k] = 0;
      }
      lane_groups_ = 0;
    }
  }

  std::array<std::uint64_t, kGroup> pending_{};                 // hashes not yet in the planes
  std::uint64_t ones_ = 0, twos_ = 0, fours_ = 0, eights_ = 0;  // bits 0..3 of every count
  std::array<std::uint64_t, 8> lanes_{};      // sixteens not yet flushed, one byte per bit
  std::array<std::uint64_t, 64> sixteens_{};  // flushed sixteens per bit
  std::uint64_t groups_ = 0;                  // groups of 16 added
  std::uint64_t sum_ = 0;                     // wrapping sum of all hashes, for ties
  std::uint32_t npending_ = 0;
  std::uint32_t lane_groups_ = 0;  // groups since the lanes were flushed
};

}  // namespace simhash
