#include "core/near_pairs.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "core/hamming.hpp"

namespace simhash {

namespace {

// C(m, r) for the small arguments of a layout (m <= 64, r <= kMaxAgreeingBlocks), exact.
std::uint64_t choose(int m, int r) {
  if (r < 0 || r > m) return 0;
  std::uint64_t c = 1;
  for (int i = 1; i <= r; ++i) c = c * static_cast<std::uint64_t>(m - r + i) / i;
  return c;
}

// Keys up to this many bits may be bucketed by a counting sort, when there are at most two
// buckets per fingerprint (a counting sort pays for every bucket, in time and memory: the
// workspace stays within 24 bytes a row, however small the input). Wider keys take the
// radix sort: a counting sort scatters into one write position per bucket, and beyond
// 2^16 buckets (256 kB of counters) those stop fitting in cache: 11M fingerprints into
// 2^21 buckets took 0.36 s a table, the radix sort's two passes 0.28 s (with the search).
constexpr int kCountingSortBits = 16;
bool use_counting_sort(int width, std::size_t n) {
  return width <= kCountingSortBits && (std::size_t{1} << width) <= 2 * n;
}

// The radix sort of keys up to 32 bits works on key << 32 | row, kRadixDigit bits a pass.
constexpr int kRadixDigit = 11;

void check_k(int k) {
  if (k < 0 || k > kMaxPairDistance) {
    throw std::invalid_argument("max_distance must be between 0 and " +
                                std::to_string(kMaxPairDistance) + ", got " + std::to_string(k));
  }
}

// A table's key as at most kMaxAgreeingBlocks contiguous bit ranges ("segments", adjacent
// blocks merged): key = sum over segments of ((fp & mask) >> shift) << out.
struct KeyRecipe {
  int segments = 0;
  int width = 0;
  std::uint64_t mask[kMaxAgreeingBlocks];
  int shift[kMaxAgreeingBlocks];
  int out[kMaxAgreeingBlocks];

  std::uint64_t key(std::uint64_t fp) const noexcept {
    std::uint64_t k = 0;
    for (int s = 0; s < segments; ++s) k |= ((fp & mask[s]) >> shift[s]) << out[s];
    return k;
  }
};

KeyRecipe key_recipe(const PairLayout& layout, const int* combo) {
  KeyRecipe kr;
  for (int p = 0; p < layout.agree; ++p) {
    const std::uint64_t m = layout.block_masks[combo[p]];
    const bool adjacent = p > 0 && combo[p] == combo[p - 1] + 1;
    if (adjacent) {
      kr.mask[kr.segments - 1] |= m;
    } else {
      kr.mask[kr.segments] = m;
      kr.shift[kr.segments] = __builtin_ctzll(m);
      kr.out[kr.segments] = kr.width;
      ++kr.segments;
    }
    kr.width += __builtin_popcountll(m);
  }
  return kr;
}

// Fills keys[] with the recipe's keys, with a fast path for a single segment.
template <class Key>
void fill_keys(const KeyRecipe& kr, const std::uint64_t* fps, std::size_t n, Key* keys) {
  if (kr.segments == 1) {
    const std::uint64_t mask = kr.mask[0];
    const int shift = kr.shift[0];
    for (std::size_t i = 0; i < n; ++i) keys[i] = static_cast<Key>((fps[i] & mask) >> shift);
  } else {
    for (std::size_t i = 0; i < n; ++i) keys[i] = static_cast<Key>(kr.key(fps[i]));
  }
}

std::size_t round8(std::size_t bytes) { return (bytes + 7) & ~std::size_t{7}; }

}  // namespace

PairLayout make_pair_layout(int k, int agree) {
  check_k(k);
  if (agree < 1 || agree > kMaxAgreeingBlocks || k + agree > 64) {
    throw std::invalid_argument("agreeing blocks must be between 1 and " +
                                std::to_string(std::min(kMaxAgreeingBlocks, 64 - k)));
  }
  PairLayout l;
  l.k = k;
  l.agree = agree;
  l.blocks = k + agree;
  const std::uint64_t tables = choose(l.blocks, agree);
  if (tables > kMaxPairTables) {
    throw std::invalid_argument("a layout of " + std::to_string(tables) + " tables is too large");
  }
  l.tables = static_cast<std::uint32_t>(tables);
  for (int i = 0; i < l.blocks; ++i) {
    const int lo = 64 * i / l.blocks;
    const int hi = 64 * (i + 1) / l.blocks;
    l.block_masks[i] =
        (hi - lo == 64) ? ~std::uint64_t{0} : (((std::uint64_t{1} << (hi - lo)) - 1) << lo);
  }
  return l;
}

PairLayout choose_pair_layout(std::size_t n, int k) {
  check_k(k);
  // Cost of one table, in rough nanoseconds measured with build/bench_pairs: bucketing n
  // keys (a counting sort at ~4 ns a key when the key is narrow enough, a radix sort at
  // ~3 ns per key and 11-bit digit up to 32 bits, else an indirect comparison sort at ~8 ns
  // per key and level), plus ~1 ns per comparison inside groups of equal keys,
  // n^2 / 2^key_bits / 2 of them for random fingerprints.
  int best_r = 1;
  double best_cost = 0;
  const double dn = static_cast<double>(std::max<std::size_t>(n, 2));
  for (int r = 1; r <= 64 - k && r <= kMaxAgreeingBlocks; ++r) {
    const int m = k + r;
    const double tables = static_cast<double>(choose(m, r));
    if (tables > 5000) break;
    const double key_bits = 64.0 * r / m;
    const bool counting = key_bits <= kCountingSortBits && std::pow(2.0, key_bits) <= 2 * dn;
    const double bucketing = counting         ? 4 * dn
                             : key_bits <= 32 ? 3 * dn * std::ceil(key_bits / kRadixDigit)
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

void table_blocks(const PairLayout& layout, std::uint32_t t, int* blocks_out) {
  if (t >= layout.tables) throw std::invalid_argument("table out of range");
  // Unrank: count the combinations that start with each candidate block in turn.
  std::uint64_t rank = t;
  int x = 0;
  for (int pos = 0; pos < layout.agree; ++pos) {
    for (;; ++x) {
      const std::uint64_t c = choose(layout.blocks - x - 1, layout.agree - pos - 1);
      if (rank < c) {
        blocks_out[pos] = x++;
        break;
      }
      rank -= c;
    }
  }
}

int table_key_bits(const PairLayout& layout, std::uint32_t t) {
  int combo[kMaxAgreeingBlocks];
  table_blocks(layout, t, combo);
  return key_recipe(layout, combo).width;
}

void table_keys(const PairLayout& layout, std::uint32_t t, const std::uint64_t* fps, std::size_t n,
                std::uint64_t* keys) {
  int combo[kMaxAgreeingBlocks];
  table_blocks(layout, t, combo);
  fill_keys(key_recipe(layout, combo), fps, n, keys);
}

// Workspace: region A (8n bytes), region B (8n bytes), then the counting sort's buckets.
// Afterwards the fingerprints in key order (sorted_fps_) and their row numbers (order_) are
// in A and B, so that groups are compared from contiguous memory.
//   counting:   A = keys (uint32) and order (uint32), B = fingerprints, C = bucket starts
//   radix:      A and B = key << 32 | row, sorted back and forth; then the fingerprints are
//               gathered into the free one and the rows packed down in place in the other
//   comparison: A = keys (uint64), B = order; then the fingerprints replace the keys
std::size_t NearPairFinder::workspace_bytes(const PairLayout& layout, std::size_t n,
                                            std::uint32_t table_begin, std::uint32_t table_end) {
  if (table_begin > table_end || table_end > layout.tables) {
    throw std::invalid_argument("table range out of bounds");
  }
  if (n > UINT32_MAX) throw std::invalid_argument("too many fingerprints for one call");
  if (n < 2 || table_begin == table_end) return 0;
  std::size_t buckets = 0;
  for (std::uint32_t t = table_begin; t < table_end; ++t) {
    const int width = table_key_bits(layout, t);
    if (use_counting_sort(width, n)) buckets = std::max(buckets, std::size_t{1} << width);
  }
  return 16 * n + round8(4 * buckets);
}

NearPairFinder::NearPairFinder(const PairLayout& layout, const std::uint64_t* fps, std::size_t n,
                               std::uint32_t table_begin, std::uint32_t table_end, void* workspace,
                               std::size_t workspace_bytes)
    : layout_(layout),
      fps_(fps),
      n_(n),
      table_(table_begin),
      table_end_(table_end),
      combo_(),
      workspace_(static_cast<unsigned char*>(workspace)),
      workspace_bytes_(workspace_bytes),
      bucketed_(false),
      order_(nullptr),
      sorted_fps_(nullptr),
      key_mask_(0),
      cursor_(0),
      lo_(0),
      hi_(0),
      a_(0),
      b_(0) {
  const std::size_t needed = NearPairFinder::workspace_bytes(layout, n, table_begin, table_end);
  if (workspace_bytes < needed || (needed > 0 && workspace == nullptr)) {
    throw std::invalid_argument("workspace too small: " + std::to_string(workspace_bytes) +
                                " bytes, " + std::to_string(needed) + " needed");
  }
  if (n > 0 && fps == nullptr) throw std::invalid_argument("null fingerprints");
  if (n < 2) table_ = table_end_;
  if (!done()) table_blocks(layout_, table_, combo_);
}

double NearPairFinder::table_fraction() const noexcept {
  if (!bucketed_ || n_ == 0) return 0;
  return static_cast<double>(cursor_) / static_cast<double>(n_);
}

void NearPairFinder::bucket_table() {
  const KeyRecipe kr = key_recipe(layout_, combo_);
  const std::size_t n = n_;
  unsigned char* region_a = workspace_;
  unsigned char* region_b = workspace_ + 8 * n;
  key_mask_ = 0;
  for (int s = 0; s < kr.segments; ++s) key_mask_ |= kr.mask[s];
  if (use_counting_sort(kr.width, n)) {
    auto* keys = reinterpret_cast<std::uint32_t*>(region_a);
    order_ = keys + n;
    sorted_fps_ = reinterpret_cast<std::uint64_t*>(region_b);
    auto* starts = reinterpret_cast<std::uint32_t*>(workspace_ + 16 * n);
    const std::size_t buckets = std::size_t{1} << kr.width;
    fill_keys(kr, fps_, n, keys);
    std::memset(starts, 0, buckets * sizeof(std::uint32_t));
    for (std::size_t i = 0; i < n; ++i) ++starts[keys[i]];
    std::uint32_t sum = 0;
    for (std::size_t b = 0; b < buckets; ++b) {
      const std::uint32_t c = starts[b];
      starts[b] = sum;
      sum += c;
    }
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint32_t at = starts[keys[i]]++;
      order_[at] = static_cast<std::uint32_t>(i);
      sorted_fps_[at] = fps_[i];
    }
  } else if (kr.width <= 32) {
    auto* src = reinterpret_cast<std::uint64_t*>(region_a);
    auto* dst = reinterpret_cast<std::uint64_t*>(region_b);
    fill_keys(kr, fps_, n, src);
    for (std::size_t i = 0; i < n; ++i) src[i] = (src[i] << 32) | i;
    std::uint32_t hist[std::size_t{1} << kRadixDigit];
    constexpr std::uint64_t kDigitMask = (1U << kRadixDigit) - 1;
    for (int shift = 32; shift < 32 + kr.width; shift += kRadixDigit) {
      std::memset(hist, 0, sizeof(hist));
      for (std::size_t i = 0; i < n; ++i) ++hist[(src[i] >> shift) & kDigitMask];
      if (hist[(src[0] >> shift) & kDigitMask] == n) continue;  // one digit value: no move
      std::uint32_t sum = 0;
      for (auto& h : hist) {
        const std::uint32_t c = h;
        h = sum;
        sum += c;
      }
      for (std::size_t i = 0; i < n; ++i) dst[hist[(src[i] >> shift) & kDigitMask]++] = src[i];
      std::swap(src, dst);
    }
    // dst is free: the fingerprints in order go there (random reads: prefetching a few
    // dozen ahead keeps many cache misses in flight); the rows are packed down in src
    // (entry i moves from byte 8i to byte 4i, after it has been read).
    sorted_fps_ = dst;
    order_ = reinterpret_cast<std::uint32_t*>(src);
    constexpr std::size_t kAhead = 32;
    for (std::size_t i = 0; i < n; ++i) {
      if (i + kAhead < n) __builtin_prefetch(fps_ + static_cast<std::uint32_t>(src[i + kAhead]));
      const std::uint32_t row = static_cast<std::uint32_t>(src[i]);
      sorted_fps_[i] = fps_[row];
      order_[i] = row;
    }
  } else {
    auto* keys = reinterpret_cast<std::uint64_t*>(region_a);
    order_ = reinterpret_cast<std::uint32_t*>(region_b);
    fill_keys(kr, fps_, n, keys);
    std::iota(order_, order_ + n, std::uint32_t{0});
    std::sort(order_, order_ + n, [keys](std::uint32_t a, std::uint32_t b) {
      return keys[a] < keys[b] || (keys[a] == keys[b] && a < b);
    });
    sorted_fps_ = keys;  // the keys are not needed any more
    for (std::size_t i = 0; i < n; ++i) sorted_fps_[i] = fps_[order_[i]];
  }
}

// Moves to the next group of at least two equal keys. Returns false when the search paused
// (work budget spent) or the table is exhausted (cursor at the end).
bool NearPairFinder::next_group(std::size_t& work, std::size_t budget) {
  while (cursor_ < n_) {
    if (work >= budget) return false;
    const std::size_t lo = cursor_;
    const std::uint64_t key = sorted_fps_[lo] & key_mask_;
    std::size_t hi = lo + 1;
    while (hi < n_ && (sorted_fps_[hi] & key_mask_) == key) ++hi;
    cursor_ = hi;
    work += hi - lo;
    if (hi - lo >= 2) {
      lo_ = a_ = lo;
      hi_ = hi;
      b_ = lo + 1;
      return true;
    }
  }
  return false;
}

// Compares the current group's pairs from (a_, b_) on; stops when the output is full or the
// budget spent. Compiled twice, with and without the POPCNT instruction (the x86-64 baseline
// lacks it, and a library call per comparison costs more than the comparison), the right
// one chosen once when the library is loaded.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__POPCNT__) && \
    !defined(__SANITIZE_ADDRESS__)
__attribute__((target_clones("popcnt", "default")))
#endif
std::size_t
NearPairFinder::compare_group(NearPair* out, std::size_t capacity, std::size_t& work,
                              std::size_t budget) {
  const int k = layout_.k;
  const int m = layout_.blocks;
  const int r = layout_.agree;
  std::size_t count = 0;
  while (a_ + 1 < hi_) {
    if (count == capacity || work >= budget) return count;
    const std::uint64_t fa = sorted_fps_[a_];
    std::size_t end = hi_;
    if (end - b_ > budget - work) end = b_ + (budget - work);
    std::size_t b = b_;
    for (; b < end; ++b) {
      const std::uint64_t diff = fa ^ sorted_fps_[b];
      const int d = __builtin_popcountll(diff);
      if (d > k) continue;
      // Report only from the first table (in lexicographic order) whose blocks all agree:
      // the one made of the pair's first r agreeing blocks.
      bool first = true;
      int found = 0;
      for (int blk = 0; blk < m && found < r; ++blk) {
        if ((diff & layout_.block_masks[blk]) != 0) continue;
        if (blk != combo_[found]) {
          first = false;
          break;
        }
        ++found;
      }
      if (!first) continue;
      const std::uint32_t ia = order_[a_], ib = order_[b];
      out[count++] = NearPair{std::min(ia, ib), std::max(ia, ib), d};
      if (count == capacity) {
        ++b;
        break;
      }
    }
    work += b - b_;
    b_ = b;
    if (b_ < hi_) return count;  // paused inside the row: output full or budget spent
    ++a_;
    b_ = a_ + 1;
  }
  return count;
}

std::size_t NearPairFinder::next(NearPair* out, std::size_t capacity, std::size_t work_budget) {
  if (capacity > 0 && out == nullptr) throw std::invalid_argument("null output buffer");
  std::size_t count = 0;
  std::size_t work = 0;
  while (!done() && count < capacity && work < work_budget) {
    if (!bucketed_) {
      bucket_table();
      bucketed_ = true;
      cursor_ = lo_ = hi_ = a_ = b_ = 0;
      work += n_;
      continue;
    }
    if (a_ + 1 >= hi_) {  // no group under way
      if (!next_group(work, work_budget)) {
        if (cursor_ < n_) break;  // paused
        bucketed_ = false;
        if (++table_ < table_end_) table_blocks(layout_, table_, combo_);
        continue;
      }
    }
    count += compare_group(out + count, capacity - count, work, work_budget);
  }
  return count;
}

void for_each_near_pair(const std::uint64_t* fps, std::size_t n, const PairLayout& layout,
                        const std::function<void(std::size_t, std::size_t, int)>& emit) {
  const std::size_t bytes = NearPairFinder::workspace_bytes(layout, n, 0, layout.tables);
  std::vector<std::uint64_t> workspace((bytes + 7) / 8);
  NearPairFinder finder(layout, fps, n, 0, layout.tables, workspace.data(), bytes);
  std::vector<NearPair> buffer(4096);
  while (!finder.done()) {
    const std::size_t got = finder.next(buffer.data(), buffer.size(), SIZE_MAX);
    for (std::size_t p = 0; p < got; ++p) emit(buffer[p].i, buffer[p].j, buffer[p].distance);
  }
}

}  // namespace simhash
