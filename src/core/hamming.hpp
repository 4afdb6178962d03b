// Hamming distance between two 64-bit fingerprints.
#pragma once
#include <cstdint>

#include "core/no_postgres.hpp"

namespace simhash {

// Number of bit positions in which a and b differ (0..64).
inline int hamming(std::uint64_t a, std::uint64_t b) noexcept {
  return __builtin_popcountll(a ^ b);
}

}  // namespace simhash
