// SipHash-2-4 (Aumasson & Bernstein 2012), a keyed 64-bit hash: without the 128-bit key its
// outputs cannot be predicted or inverted, even by someone who chooses the inputs. Written
// from the paper's specification; the paper's test vector is in test/core/locks_test.cpp.
// Used to key the dedupe trigger's lock keys, which every role can read in pg_locks.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/no_postgres.hpp"

namespace simhash {

namespace detail {
constexpr std::uint64_t rotl64(std::uint64_t x, int b) noexcept { return (x << b) | (x >> (64 - b)); }
inline void sip_round(std::uint64_t& v0, std::uint64_t& v1, std::uint64_t& v2, std::uint64_t& v3) noexcept {
  v0 += v1;
  v1 = rotl64(v1, 13);
  v1 ^= v0;
  v0 = rotl64(v0, 32);
  v2 += v3;
  v3 = rotl64(v3, 16);
  v3 ^= v2;
  v0 += v3;
  v3 = rotl64(v3, 21);
  v3 ^= v0;
  v2 += v1;
  v1 = rotl64(v1, 17);
  v1 ^= v2;
  v2 = rotl64(v2, 32);
}
}  // namespace detail

// SipHash-2-4 of len bytes with the key (k0, k1): k0 is the key's first 8 bytes read as a
// little-endian number, k1 the last 8.
inline std::uint64_t siphash24(std::uint64_t k0, std::uint64_t k1, const unsigned char* data,
                               std::size_t len) noexcept {
  std::uint64_t v0 = k0 ^ 0x736f6d6570736575ULL;
  std::uint64_t v1 = k1 ^ 0x646f72616e646f6dULL;
  std::uint64_t v2 = k0 ^ 0x6c7967656e657261ULL;
  std::uint64_t v3 = k1 ^ 0x7465646279746573ULL;
  const std::size_t whole = len - len % 8;
  for (std::size_t i = 0; i < whole; i += 8) {
    std::uint64_t m = 0;
    for (int b = 7; b >= 0; --b) m = (m << 8) | data[i + static_cast<std::size_t>(b)];
    v3 ^= m;
    detail::sip_round(v0, v1, v2, v3);
    detail::sip_round(v0, v1, v2, v3);
    v0 ^= m;
  }
  std::uint64_t last = static_cast<std::uint64_t>(len & 0xff) << 56;
  for (std::size_t b = 0; b < len % 8; ++b) last |= static_cast<std::uint64_t>(data[whole + b]) << (8 * b);
  v3 ^= last;
  detail::sip_round(v0, v1, v2, v3);
  detail::sip_round(v0, v1, v2, v3);
  v0 ^= last;
  v2 ^= 0xff;
  for (int r = 0; r < 4; ++r) detail::sip_round(v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}

// A lock key keyed for one table: SipHash-2-4 of (key, table) as 8 little-endian bytes,
// folded to 32 bits. Equal keys of one table stay equal; nothing else can be read from it.
inline std::uint32_t keyed_lock_key(std::uint32_t key, std::uint32_t table, std::uint64_t k0,
                                    std::uint64_t k1) noexcept {
  unsigned char bytes[8];
  for (int b = 0; b < 4; ++b) {
    bytes[b] = static_cast<unsigned char>(key >> (8 * b));
    bytes[4 + b] = static_cast<unsigned char>(table >> (8 * b));
  }
  const std::uint64_t h = siphash24(k0, k1, bytes, sizeof(bytes));
  return static_cast<std::uint32_t>(h ^ (h >> 32));
}

}  // namespace simhash
