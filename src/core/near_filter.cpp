#include "core/near_filter.hpp"

#include <limits>
#include <stdexcept>

#include "core/hamming.hpp"
#include "core/mix.hpp"

namespace simhash {

namespace {
constexpr std::size_t kFirstSlots = 64;

// Room for one more element, growing geometrically (reserve(size + 1) would copy each time).
template <class T>
void room_for_one(std::vector<T>& v) {
  if (v.size() == v.capacity()) v.reserve(v.empty() ? 64 : 2 * v.capacity());
}
}  // namespace

NearFilter::NearFilter(int k, std::size_t max_walk) : k_(k), blocks_(k + 1), max_walk_(max_walk) {
  if (k < 0 || k > 16) throw std::invalid_argument("NearFilter: k must be between 0 and 16");
  if (max_walk == 0) throw std::invalid_argument("NearFilter: max_walk must be at least 1");
  next_.resize(static_cast<std::size_t>(blocks_));
  tables_.resize(static_cast<std::size_t>(blocks_));
  for (Table& t : tables_) t.slots.assign(kFirstSlots, Slot{0, -1});
}

// Block `block` of k + 1 blocks (the first 64 i / (k + 1) bits ... ), moved down to bit 0.
std::uint64_t NearFilter::block_key(std::uint64_t fp, int block) const noexcept {
  const int low = 64 * block / blocks_;
  const int width = 64 * (block + 1) / blocks_ - low;
  const std::uint64_t mask = width >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
  return (fp >> low) & mask;
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

void NearFilter::add(std::uint64_t fp) {
  if (fps_.size() >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw std::length_error("NearFilter: more than 2^31 - 1 members");
  const auto member = static_cast<std::int32_t>(fps_.size());
  // Room first, so that a bad_alloc leaves the filter as it was.
  for (int b = 0; b < blocks_; b++) {
    Table& t = tables_[static_cast<std::size_t>(b)];
    if (2 * (t.used + 1) > t.slots.size()) grow(t);
    room_for_one(next_[static_cast<std::size_t>(b)]);
  }
  room_for_one(fps_);
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
  fps_.push_back(fp);
}

bool NearFilter::may_have_within(std::uint64_t fp) const {
  std::size_t walked = 0;
  for (int b = 0; b < blocks_; b++) {
    const Slot* s = find_slot(tables_[static_cast<std::size_t>(b)], block_key(fp, b));
    if (s == nullptr) continue;
    const std::vector<std::int32_t>& next = next_[static_cast<std::size_t>(b)];
    for (std::int32_t m = s->head; m >= 0; m = next[static_cast<std::size_t>(m)]) {
      if (hamming(fps_[static_cast<std::size_t>(m)], fp) <= k_) return true;
      if (++walked >= max_walk_) return true;
    }
  }
  return false;
}

std::size_t NearFilter::bytes() const noexcept {
  std::size_t n = fps_.capacity() * sizeof(std::uint64_t);
  for (const auto& v : next_) n += v.capacity() * sizeof(std::int32_t);
  for (const Table& t : tables_) n += t.slots.capacity() * sizeof(Slot);
  return n;
}

}  // namespace simhash
