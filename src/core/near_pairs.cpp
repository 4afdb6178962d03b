#include "core/near_pairs.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/hamming.hpp"

namespace simhash {

namespace {

void combinations_of(int m, int r, std::vector<int>& current, int start,
                     std::vector<std::vector<int>>& out) {
  if (static_cast<int>(current.size()) == r) {
    out.push_back(current);
    return;
  }
  for (int b = start; b < m; ++b) {
    current.push_back(b);
    combinations_of(m, r, current, b + 1, out);
    current.pop_back();
  }
}

double binomial(int m, int r) {
  double c = 1;
  for (int i = 1; i <= r; ++i) c = c * (m - r + i) / i;
  return c;
}

// Keys up to this many bits may be bucketed by a counting sort; wider ones are sorted.
constexpr int kCountingSortBits = 24;

void check_k(int k) {
  if (k < 0 || k > kMaxPairDistance) {
    throw std::invalid_argument("max_distance must be between 0 and " +
                                std::to_string(kMaxPairDistance) + ", got " + std::to_string(k));
  }
}

}  // namespace

PairLayout make_pair_layout(int k, int agree) {
  check_k(k);
  if (agree < 1 || k + agree > 64) {
    throw std::invalid_argument("agreeing blocks must be between 1 and " + std::to_string(64 - k));
  }
  PairLayout l;
  l.k = k;
  l.agree = agree;
  l.blocks = k + agree;
  for (int i = 0; i < l.blocks; ++i) {
    const int lo = 64 * i / l.blocks;
    const int hi = 64 * (i + 1) / l.blocks;
    const std::uint64_t mask =
        (hi - lo == 64) ? ~std::uint64_t{0} : (((std::uint64_t{1} << (hi - lo)) - 1) << lo);
    l.block_masks.push_back(mask);
  }
  std::vector<int> current;
  combinations_of(l.blocks, agree, current, 0, l.combinations);
  return l;
}

PairLayout choose_pair_layout(std::size_t n, int k) {
  check_k(k);
  // Cost of one table, in rough nanoseconds measured with build/bench_pairs: bucketing n
  // keys (a counting sort at ~4 ns a key when the key is narrow enough, a radix sort at
  // ~3 ns per key and 11-bit digit up to 32 bits, else an indirect comparison sort at ~8 ns
  // per key and level), plus ~1 ns per comparison inside groups of
  // equal keys, n^2 / 2^key_bits / 2 of them for random fingerprints.
  int best_r = 1;
  double best_cost = 0;
  const double dn = static_cast<double>(std::max<std::size_t>(n, 2));
  for (int r = 1; r <= 64 - k && r <= 8; ++r) {
    const int m = k + r;
    const double tables = binomial(m, r);
    if (tables > 5000) break;
    const double key_bits = 64.0 * r / m;
    const bool counting = key_bits <= kCountingSortBits && std::pow(2.0, key_bits) <= 4 * dn + 65536;
    const double bucketing = counting          ? 4 * dn
                             : key_bits <= 32 ? 3 * dn * std::ceil(key_bits / 11)
                                              : 8 * dn * std::log2(dn);
    const double per_table = bucketing + dn * dn / std::pow(2.0, key_bits) / 2;
    const double cost = tables * per_table;
    if (r == 1 || cost < best_cost) {
      best_cost = cost;
      best_r = r;
    }
  }
  return make_pair_layout(k, best_r);
}

namespace {

// Compares every pair inside one group of fingerprints sharing a table's key, and emits
// those within k bits whose first agreeing table is this one.
void compare_group(const std::uint64_t* fps, const std::uint32_t* members, std::size_t count,
                   const PairLayout& layout, const std::vector<int>& combo,
                   const std::function<void(std::size_t, std::size_t, int)>& emit) {
  const int m = layout.blocks;
  const int r = layout.agree;
  for (std::size_t a = 0; a < count; ++a) {
    const std::uint64_t fa = fps[members[a]];
    for (std::size_t b = a + 1; b < count; ++b) {
      const std::uint64_t fb = fps[members[b]];
      const int d = hamming(fa, fb);
      if (d > layout.k) continue;
      // Report only from the first table (in lexicographic order) whose blocks all agree:
      // the one made of the pair's first r agreeing blocks.
      const std::uint64_t diff = fa ^ fb;
      bool first = true;
      int found = 0;
      for (int blk = 0; blk < m && found < r; ++blk) {
        if ((diff & layout.block_masks[blk]) != 0) continue;
        if (blk != combo[found]) {
          first = false;
          break;
        }
        ++found;
      }
      if (!first) continue;
      std::size_t i = members[a], j = members[b];
      if (i > j) std::swap(i, j);
      emit(i, j, d);
    }
  }
}

}  // namespace

void for_each_near_pair(const std::uint64_t* fps, std::size_t n, const PairLayout& layout,
                        const std::function<void(std::size_t, std::size_t, int)>& emit) {
  if (n < 2) return;
  if (n > UINT32_MAX) throw std::invalid_argument("too many fingerprints for one call");
  std::vector<std::uint64_t> keys(n);
  std::vector<std::uint32_t> order(n);
  std::vector<std::uint32_t> counts;
  std::vector<std::uint64_t> packed, scratch;

  for (const std::vector<int>& combo : layout.combinations) {
    // The table's key: its blocks' bits packed together.
    // Blocks are contiguous bit ranges in ascending order, so each block moves down by
    // the bits skipped below it; with one block the key is a single shift.
    int width = 0;
    std::uint64_t key_mask = 0;
    for (int b : combo) {
      width += __builtin_popcountll(layout.block_masks[b]);
      key_mask |= layout.block_masks[b];
    }
    if (combo.size() == 1) {
      const int shift = __builtin_ctzll(key_mask);
      for (std::size_t i = 0; i < n; ++i) keys[i] = (fps[i] & key_mask) >> shift;
    } else {
      for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t key = 0;
        int out = 0;
        for (int b : combo) {
          const std::uint64_t mask = layout.block_masks[b];
          key |= ((fps[i] & mask) >> __builtin_ctzll(mask)) << out;
          out += __builtin_popcountll(mask);
        }
        keys[i] = key;
      }
    }

    // A counting sort pays for every bucket: only when there are not many more buckets
    // than fingerprints.
    if (width <= kCountingSortBits && (std::size_t{1} << width) <= 4 * n + 65536) {
      const std::size_t buckets = std::size_t{1} << width;
      counts.assign(buckets + 1, 0);
      for (std::size_t i = 0; i < n; ++i) ++counts[keys[i] + 1];
      for (std::size_t b = 0; b < buckets; ++b) counts[b + 1] += counts[b];
      // counts[b] is now where bucket b starts; fill, then walk the buckets.
      std::vector<std::uint32_t> next(counts.begin(), counts.end() - 1);
      for (std::size_t i = 0; i < n; ++i) order[next[keys[i]]++] = static_cast<std::uint32_t>(i);
      for (std::size_t b = 0; b < buckets; ++b) {
        const std::size_t size = counts[b + 1] - counts[b];
        if (size > 1) compare_group(fps, order.data() + counts[b], size, layout, combo, emit);
      }
    } else if (width <= 32) {
      // Key and index packed in one word, LSD radix sort on the key's bits, 11 at a time.
      packed.resize(n);
      scratch.resize(n);
      for (std::size_t i = 0; i < n; ++i) packed[i] = (keys[i] << 32) | i;
      constexpr int kDigit = 11;
      std::vector<std::uint32_t> hist(std::size_t{1} << kDigit);
      for (int shift = 32; shift < 32 + width; shift += kDigit) {
        std::fill(hist.begin(), hist.end(), 0);
        for (std::uint64_t v : packed) ++hist[(v >> shift) & ((1U << kDigit) - 1)];
        std::uint32_t sum = 0;
        for (auto& h : hist) {
          const std::uint32_t c = h;
          h = sum;
          sum += c;
        }
        for (std::uint64_t v : packed) scratch[hist[(v >> shift) & ((1U << kDigit) - 1)]++] = v;
        packed.swap(scratch);
      }
      for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint32_t>(packed[i]);
      for (std::size_t lo = 0; lo < n;) {
        std::size_t hi = lo + 1;
        while (hi < n && (packed[hi] >> 32) == (packed[lo] >> 32)) ++hi;
        if (hi - lo > 1) compare_group(fps, order.data() + lo, hi - lo, layout, combo, emit);
        lo = hi;
      }
    } else {
      std::iota(order.begin(), order.end(), std::uint32_t{0});
      std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return keys[a] < keys[b] || (keys[a] == keys[b] && a < b);
      });
      for (std::size_t lo = 0; lo < n;) {
        std::size_t hi = lo + 1;
        while (hi < n && keys[order[hi]] == keys[order[lo]]) ++hi;
        if (hi - lo > 1) compare_group(fps, order.data() + lo, hi - lo, layout, combo, emit);
        lo = hi;
      }
    }
  }
}

}  // namespace simhash
