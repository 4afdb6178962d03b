// A 64-bit mixing function (the MurmurHash3 finalizer): every input bit affects every
// output bit with probability about one half.
#pragma once
#include <cstdint>

#include "core/no_postgres.hpp"

namespace simhash {

inline std::uint64_t mix64(std::uint64_t x) noexcept {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDULL;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ULL;
  x ^= x >> 33;
  return x;
}

}  // namespace simhash
