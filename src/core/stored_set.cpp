#include "core/stored_set.hpp"

namespace simhash {

std::size_t stored_set_size(std::size_t n) noexcept {
  return n > kStoredSetMaxShingles ? 0 : 1 + 8 * n;
}

bool stored_set_length_ok(std::size_t len) noexcept {
  return len >= 1 && (len - 1) % 8 == 0 && (len - 1) / 8 <= kStoredSetMaxShingles;
}

void write_stored_set(const std::uint64_t* set, std::size_t n, unsigned char* out) noexcept {
  *out++ = kStoredSetFormat;
  for (std::size_t i = 0; i < n; ++i) {
    for (int byte = 0; byte < 8; ++byte) *out++ = static_cast<unsigned char>(set[i] >> (8 * byte));
  }
}

bool read_stored_set(const unsigned char* bytes, std::size_t len, std::uint64_t* out,
                     std::size_t* n) noexcept {
  if (!stored_set_length_ok(len) || bytes[0] != kStoredSetFormat) return false;
  const std::size_t count = (len - 1) / 8;
  const unsigned char* p = bytes + 1;
  for (std::size_t i = 0; i < count; ++i, p += 8) {
    std::uint64_t h = 0;
    for (int byte = 7; byte >= 0; --byte) h = (h << 8) | p[byte];
    if (i > 0 && h <= out[i - 1]) return false;
    out[i] = h;
  }
  *n = count;
  return true;
}

}  // namespace simhash
