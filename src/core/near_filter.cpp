#include "core/near_filter.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <stdexcept>

#include "core/hamming.hpp"
#include "core/mix.hpp"

namespace simhash {

namespace {
constexpr std::size_t kFirstSlots = 64;
// The recent tier is merged once it holds max(kMinRecent, settled / kRecentShare) members.
constexpr std::size_t kMinRecent = 1024;
constexpr std::size_t kRecentShare = 8;
// Settled members read per chain link of max_walk: they lie side by side.
constexpr std::size_t kScanPerLink = 16;
constexpr int kMaxPrefixBits = 16;

// Room for one more element, growing geometrically (reserve(size + 1) would copy each time).
template <class T>
void room_for_one(std::vector<T>& v) {
  if (v.size() == v.capacity()) v.reserve(v.empty() ? 64 : 2 * v.capacity());
}

std::uint64_t rotl(std::uint64_t x, int s) noexcept {
  return s == 0 ? x : (x << s) | (x >> (64 - s));
}

// Bits of the start table for n settled members of a block of `width` bits: about one
// member a start (at most 2^16 entries).
int prefix_bits_for(std::size_t n, int width) noexcept {
  int p = 1;
  while (p < kMaxPrefixBits && p < width && (std::size_t{1} << (p + 1)) <= n) p++;
  return p < width ? p : width;
}
}  // namespace

NearFilter::NearFilter(int k, std::size_t max_walk) : k_(k), blocks_(k + 1), max_walk_(max_walk) {
  if (k < 0 || k > 16) throw std::invalid_argument("NearFilter: k must be between 0 and 16");
  if (max_walk == 0) throw std::invalid_argument("NearFilter: max_walk must be at least 1");
  for (int b = 0; b < blocks_; b++) {
    low_.push_back(64 * b / blocks_);
    width_.push_back(64 * (b + 1) / blocks_ - 64 * b / blocks_);
  }
  settled_.resize(static_cast<std::size_t>(blocks_));
  next_.resize(static_cast<std::size_t>(blocks_));
  tables_.resize(static_cast<std::size_t>(blocks_));
  for (Table& t : tables_) t.slots.assign(kFirstSlots, Slot{0, -1});
}

// Block `block` of k + 1 blocks (the first 64 i / (k + 1) bits ... ), moved down to bit 0.
std::uint64_t NearFilter::block_key(std::uint64_t fp, int block) const noexcept {
  const int width = width_[static_cast<std::size_t>(block)];
  const std::uint64_t mask = width >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
  return (fp >> low_[static_cast<std::size_t>(block)]) & mask;
}

// fp rotated so that the bits of `block` come first (the top bits): sorting rotated
// fingerprints groups them by the block's value. Rotation keeps Hamming distances.
std::uint64_t NearFilter::rotate(std::uint64_t fp, int block) const noexcept {
  const auto b = static_cast<std::size_t>(block);
  return rotl(fp, (64 - (low_[b] + width_[b])) & 63);
}

NearFilter::Slot& NearFilter::find_slot(Table& t, std::uint64_t value) {
  const std::size_t mask = t.slots.size() - 1;
  for (std::size_t i = mix64(value) & mask;; i = (i + 1) & mask) {
    Slot& s = t.slots[i];
    if (s.head < 0 || s.value == value) return s;
  }
}

const NearFilter::Slot* NearFilter::find_slot(const Table& t, std::uint64_t value) const {
  const std::size_t mask = t.slots.size() - 1;
  for (std::size_t i = mix64(value) & mask;; i = (i + 1) & mask) {
    const Slot& s = t.slots[i];
    if (s.head < 0) return nullptr;
    if (s.value == value) return &s;
  }
}

void NearFilter::grow(Table& t) {
  std::vector<Slot> old(t.slots.size() * 2, Slot{0, -1});
  old.swap(t.slots);
  for (const Slot& s : old)
    if (s.head >= 0) find_slot(t, s.value) = s;
}

namespace {
// Sorts v by radix, 16 bits a pass (scratch: a buffer of v's size).
void radix_sort(std::vector<std::uint64_t>& v, std::vector<std::uint64_t>& scratch) {
  if (v.size() < 4096) {
    std::sort(v.begin(), v.end());
    return;
  }
  scratch.resize(v.size());
  std::vector<std::size_t> count(std::size_t{1} << 16);
  for (int shift = 0; shift < 64; shift += 16) {
    std::fill(count.begin(), count.end(), 0);
    for (std::uint64_t x : v) count[(x >> shift) & 0xFFFF]++;
    std::size_t sum = 0;
    for (std::size_t& c : count) {
      const std::size_t here = c;
      c = sum;
      sum += here;
    }
    for (std::uint64_t x : v) scratch[count[(x >> shift) & 0xFFFF]++] = x;
    v.swap(scratch);
  }
}
}  // namespace

// Moves the recent members, and more[0..n), into the settled arrays, one block at a time
// (a block's new array replaces the old one as soon as it is made, so only one block is
// held twice). Should an allocation fail half way, the blocks already done hold members
// that the others do not (the recent ones are still recent there): no answer becomes a
// false "no" for a member added before, and more[] is not counted as added.
void NearFilter::merge(const std::uint64_t* more, std::size_t n) {
  for (int b = 0; b < blocks_; b++) merge_block(b, more, n);
  end_merge(n);
}

// One block of merge(): its settled array and start table remade with the recent members
// and more[0..n) (while it is made: the old array, the new one, and two buffers of the
// members being merged).
void NearFilter::merge_block(int block, const std::uint64_t* more, std::size_t n) {
  const auto b = static_cast<std::size_t>(block);
  const Settled& st = settled_[b];
  std::vector<std::uint64_t> add;
  std::vector<std::uint64_t> scratch;
  add.reserve(recent_.size() + n);
  for (std::uint64_t fp : recent_) add.push_back(rotate(fp, block));
  for (std::size_t i = 0; i < n; i++) add.push_back(rotate(more[i], block));
  radix_sort(add, scratch);
  Settled next;
  next.rotated.reserve(st.rotated.size() + add.size());
  std::merge(st.rotated.begin(), st.rotated.end(), add.begin(), add.end(),
             std::back_inserter(next.rotated));
  const std::size_t total = next.rotated.size();
  next.prefix_bits = prefix_bits_for(total, width_[b]);
  const std::size_t values = std::size_t{1} << next.prefix_bits;
  next.start.resize(values + 1);
  std::size_t i = 0;
  for (std::size_t v = 0; v <= values; v++) {
    while (i < total && (next.rotated[i] >> (64 - next.prefix_bits)) < v) i++;
    next.start[v] = static_cast<std::uint32_t>(i);
  }
  settled_[b] = std::move(next);
}

// The end of merge(), once every block holds the recent members and more[0..n): they are
// counted as settled, and the recent tier emptied (nothing here allocates).
void NearFilter::end_merge(std::size_t n) {
  settled_size_ += recent_.size() + n;
  recent_.clear();
  for (int b = 0; b < blocks_; b++) {
    next_[static_cast<std::size_t>(b)].clear();
    Table& t = tables_[static_cast<std::size_t>(b)];
    std::fill(t.slots.begin(), t.slots.end(), Slot{0, -1});
    t.used = 0;
  }
}

void NearFilter::add_many(const std::uint64_t* fps, std::size_t n) {
  for (int step = 0; step <= blocks_; step++) add_many_step(fps, n, step);
}

void NearFilter::add_many_step(const std::uint64_t* fps, std::size_t n, int step) {
  if (step < 0 || step > blocks_)
    throw std::invalid_argument("NearFilter: add_many_step: step out of range");
  if (step == 0 && n > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()) - size())
    throw std::length_error("NearFilter: more than 2^31 - 1 members");
  if (step < blocks_)
    merge_block(step, fps, n);
  else
    end_merge(n);
}

void NearFilter::add(std::uint64_t fp) {
  if (size() >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw std::length_error("NearFilter: more than 2^31 - 1 members");
  if (recent_.size() >= std::max(kMinRecent, settled_size_ / kRecentShare)) merge(nullptr, 0);
  const auto member = static_cast<std::int32_t>(recent_.size());
  // Room first, so that a bad_alloc leaves the filter as it was.
  for (int b = 0; b < blocks_; b++) {
    Table& t = tables_[static_cast<std::size_t>(b)];
    if (2 * (t.used + 1) > t.slots.size()) grow(t);
    room_for_one(next_[static_cast<std::size_t>(b)]);
  }
  room_for_one(recent_);
  for (int b = 0; b < blocks_; b++) {
    Table& t = tables_[static_cast<std::size_t>(b)];
    Slot& s = find_slot(t, block_key(fp, b));
    if (s.head < 0) {
      s.value = block_key(fp, b);
      t.used++;
    }
    next_[static_cast<std::size_t>(b)].push_back(s.head);
    s.head = member;
  }
  recent_.push_back(fp);
}

bool NearFilter::add_within(std::uint64_t fp, std::size_t budget) {
  add(fp);
  return size() % 1024 != 0 || bytes() <= budget;
}

std::size_t NearFilter::max_members(std::size_t budget, int k) noexcept {
  const std::size_t fixed = static_cast<std::size_t>(k + 1) * 65537 * 4 + 65536 * 8;
  if (budget <= fixed) return 0;
  const std::size_t most = (budget - fixed) / (8 * static_cast<std::size_t>(k + 4));
  return std::min(most, static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()));
}

// The settled members of block `block` in rotated[from, to) that share the block with q
// (fp rotated for the block): true at one within k, or once `scanned` reaches the bound.
bool NearFilter::settled_may_have(std::uint64_t q, int block, std::size_t from, std::size_t to,
                                  std::size_t& scanned) const {
  const Settled& st = settled_[static_cast<std::size_t>(block)];
  const int width = width_[static_cast<std::size_t>(block)];
  auto it = st.rotated.begin() + static_cast<std::ptrdiff_t>(from);
  auto end = st.rotated.begin() + static_cast<std::ptrdiff_t>(to);
  if (st.prefix_bits < width) {
    // Several values of the block share the prefix: the run of q's own value.
    const std::uint64_t first = q >> (64 - width) << (64 - width);
    it = std::lower_bound(it, end, first);
  }
  const std::size_t bound = kScanPerLink * max_walk_;
  for (; it != end && (*it ^ q) >> (64 - width) == 0; ++it) {
    if (hamming(*it, q) <= k_) return true;
    if (++scanned >= bound) return true;
  }
  return false;
}

// The k + 1 blocks' lookups are independent: each step is done for every block before the
// next (start table, then settled run, then recent chain), with the memory of the next step
// fetched ahead, so that their cache misses overlap instead of following one another.
bool NearFilter::may_have_within(std::uint64_t fp) const {
  constexpr int kMaxBlocks = 17;
  std::uint64_t q[kMaxBlocks];
  std::size_t from[kMaxBlocks];
  std::size_t to[kMaxBlocks];
  for (int b = 0; b < blocks_; b++) {
    const Settled& st = settled_[static_cast<std::size_t>(b)];
    q[b] = rotate(fp, b);
    if (!st.start.empty()) __builtin_prefetch(&st.start[q[b] >> (64 - st.prefix_bits)]);
    const Table& t = tables_[static_cast<std::size_t>(b)];
    __builtin_prefetch(&t.slots[mix64(block_key(fp, b)) & (t.slots.size() - 1)]);
  }
  for (int b = 0; b < blocks_; b++) {
    const Settled& st = settled_[static_cast<std::size_t>(b)];
    from[b] = to[b] = 0;
    if (st.start.empty()) continue;
    const std::uint64_t top = q[b] >> (64 - st.prefix_bits);
    from[b] = st.start[top];
    to[b] = st.start[top + 1];
    if (from[b] < to[b]) __builtin_prefetch(&st.rotated[from[b]]);
  }
  std::size_t scanned = 0;
  for (int b = 0; b < blocks_; b++)
    if (from[b] < to[b] && settled_may_have(q[b], b, from[b], to[b], scanned)) return true;
  std::size_t walked = 0;
  for (int b = 0; b < blocks_; b++) {
    const Slot* s = find_slot(tables_[static_cast<std::size_t>(b)], block_key(fp, b));
    if (s == nullptr) continue;
    const std::vector<std::int32_t>& next = next_[static_cast<std::size_t>(b)];
    for (std::int32_t m = s->head; m >= 0; m = next[static_cast<std::size_t>(m)]) {
      if (hamming(recent_[static_cast<std::size_t>(m)], fp) <= k_) return true;
      if (++walked >= max_walk_) return true;
    }
  }
  return false;
}

std::size_t NearFilter::bytes() const noexcept {
  std::size_t n = recent_.capacity() * sizeof(std::uint64_t);
  for (const auto& v : next_) n += v.capacity() * sizeof(std::int32_t);
  for (const Table& t : tables_) n += t.slots.capacity() * sizeof(Slot);
  for (const Settled& st : settled_)
    n += st.rotated.capacity() * sizeof(std::uint64_t) + st.start.capacity() * sizeof(std::uint32_t);
  return n;
}

}  // namespace simhash
