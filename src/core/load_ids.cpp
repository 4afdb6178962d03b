#include "core/load_ids.hpp"

#include <algorithm>
#include <stdexcept>
#include <tuple>

// xxHash as static inline functions, as in token_hash.hpp: no symbol of its own.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace simhash {

LoadIds::LoadIds(std::size_t capacity, std::uint64_t seed) : capacity_(capacity), seed_(seed) {
  entries_.reserve(capacity);
}

std::size_t LoadIds::bytes_for(std::size_t rows) noexcept { return rows * sizeof(Entry); }

LoadIds::Entry LoadIds::id_of(std::uint64_t fp, const char* text, std::size_t len) const noexcept {
  if (text == nullptr) return Entry{0, fp, 0, false};
  const XXH128_hash_t h = XXH3_128bits_withSeed(text, len, seed_);
  return Entry{h.high64, h.low64, 0, false};
}

bool LoadIds::id_less(const Entry& a, const Entry& b) noexcept {
  return std::tie(a.high, a.low) < std::tie(b.high, b.low);
}

void LoadIds::add(std::uint64_t row, std::uint64_t fp, const char* text, std::size_t len) {
  if (entries_.size() == capacity_) throw std::length_error("LoadIds: more rows than its capacity");
  Entry e = id_of(fp, text, len);
  e.row = row;
  entries_.push_back(e);
}

void LoadIds::settle() noexcept {
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.high, a.low, a.row) < std::tie(b.high, b.low, b.row);
  });
  const auto same = [](const Entry& a, const Entry& b) { return !id_less(a, b) && !id_less(b, a); };
  entries_.erase(std::unique(entries_.begin(), entries_.end(), same), entries_.end());
  std::sort(entries_.begin(), entries_.end(),
            [](const Entry& a, const Entry& b) { return a.row < b.row; });
}

std::size_t LoadIds::keep_clean() noexcept {
  const std::size_t before = entries_.size();
  entries_.erase(std::remove_if(entries_.begin(), entries_.end(), [](const Entry& e) { return e.near; }),
                 entries_.end());
  std::sort(entries_.begin(), entries_.end(), id_less);
  return before - entries_.size();
}

bool LoadIds::has(std::uint64_t fp, const char* text, std::size_t len) const noexcept {
  return std::binary_search(entries_.begin(), entries_.end(), id_of(fp, text, len), id_less);
}

}  // namespace simhash
