// XXH3-64 with seed of a short token (0..128 bytes), inlined into the tokenizer's hot path.
//
// The value is exactly XXH3_64bits_withSeed(bytes, len, seed) of libxxhash: the token hash is
// part of the fingerprint format. This file implements only the short-input branches of
// XXH3 (len <= 128), written from the algorithm's specification, and calls the library for
// anything longer. A test compares both for every length from 0 to 300 on random bytes.
//
// `Lower = true` hashes the bytes with 0x20 OR-ed into every byte, without copying them:
// for ASCII letters and digits that is exactly the lower-case token, so the tokenizer can
// hash an ASCII word straight out of the input text.
//
// Private to the core's .cpp files: it pulls in xxhash.h with XXH_INLINE_ALL, so no
// xxHash symbol leaves our objects (another library in the same process cannot clash).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/no_postgres.hpp"

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace simhash::detail {

namespace xxh3 {

inline constexpr std::uint64_t kPrime64_1 = 0x9E3779B185EBCA87ULL;
inline constexpr std::uint64_t kPrime64_2 = 0xC2B2AE3D27D4EB4FULL;
inline constexpr std::uint64_t kPrime64_3 = 0x165667B19E3779F9ULL;
inline constexpr std::uint64_t kPrimeMx1 = 0x165667919E3779F9ULL;
inline constexpr std::uint64_t kPrimeMx2 = 0x9FB21C651E98DF25ULL;

inline std::uint64_t le64(const unsigned char* p) noexcept {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}
inline std::uint32_t le32(const unsigned char* p) noexcept {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  return v;
}

// Reads of the input, with the lower-casing OR when asked.
template <bool Lower>
inline std::uint64_t in64(const unsigned char* p) noexcept {
  return Lower ? le64(p) | 0x2020202020202020ULL : le64(p);
}
template <bool Lower>
inline std::uint32_t in32(const unsigned char* p) noexcept {
  return Lower ? le32(p) | 0x20202020U : le32(p);
}
template <bool Lower>
inline std::uint32_t in8(const unsigned char* p) noexcept {
  return Lower ? (*p | 0x20U) : *p;
}

// The default secret of XXH3 (the library's, so that it cannot drift from it).
inline std::uint64_t secret64(std::size_t offset) noexcept { return le64(XXH3_kSecret + offset); }
inline std::uint32_t secret32(std::size_t offset) noexcept { return le32(XXH3_kSecret + offset); }

inline std::uint64_t mul128_fold64(std::uint64_t a, std::uint64_t b) noexcept {
#if defined(__SIZEOF_INT128__)
  const unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
  return static_cast<std::uint64_t>(p) ^ static_cast<std::uint64_t>(p >> 64);
#else
  // Schoolbook 64x64 -> 128 from 32-bit halves.
  const std::uint64_t lo_lo = (a & 0xFFFFFFFFU) * (b & 0xFFFFFFFFU);
  const std::uint64_t hi_lo = (a >> 32) * (b & 0xFFFFFFFFU);
  const std::uint64_t lo_hi = (a & 0xFFFFFFFFU) * (b >> 32);
  const std::uint64_t hi_hi = (a >> 32) * (b >> 32);
  const std::uint64_t cross = (lo_lo >> 32) + (hi_lo & 0xFFFFFFFFU) + lo_hi;
  const std::uint64_t upper = (hi_lo >> 32) + (cross >> 32) + hi_hi;
  const std::uint64_t lower = (cross << 32) | (lo_lo & 0xFFFFFFFFU);
  return lower ^ upper;
#endif
}

inline std::uint64_t rotl64(std::uint64_t x, unsigned r) noexcept {
  return (x << r) | (x >> (64 - r));
}

inline std::uint64_t xxh64_avalanche(std::uint64_t h) noexcept {
  h ^= h >> 33;
  h *= kPrime64_2;
  h ^= h >> 29;
  h *= kPrime64_3;
  h ^= h >> 32;
  return h;
}

inline std::uint64_t avalanche(std::uint64_t h) noexcept {
  h ^= h >> 37;
  h *= kPrimeMx1;
  h ^= h >> 32;
  return h;
}

inline std::uint64_t rrmxmx(std::uint64_t h, std::uint64_t len) noexcept {
  h ^= rotl64(h, 49) ^ rotl64(h, 24);
  h *= kPrimeMx2;
  h ^= (h >> 35) + len;
  h *= kPrimeMx2;
  h ^= h >> 28;
  return h;
}

template <bool Lower>
inline std::uint64_t mix16(const unsigned char* p, std::size_t secret_offset,
                           std::uint64_t seed) noexcept {
  return mul128_fold64(in64<Lower>(p) ^ (secret64(secret_offset) + seed),
                       in64<Lower>(p + 8) ^ (secret64(secret_offset + 8) - seed));
}

// 1..3 bytes.
template <bool Lower>
inline std::uint64_t len1to3(const unsigned char* p, std::size_t len, std::uint64_t seed) noexcept {
  const std::uint32_t combined = (in8<Lower>(p) << 16) | (in8<Lower>(p + (len >> 1)) << 24) |
                                 in8<Lower>(p + len - 1) | static_cast<std::uint32_t>(len << 8);
  const std::uint64_t bitflip = (secret32(0) ^ secret32(4)) + seed;
  return xxh64_avalanche(std::uint64_t{combined} ^ bitflip);
}

// 4..8 bytes.
template <bool Lower>
inline std::uint64_t len4to8(const unsigned char* p, std::size_t len, std::uint64_t seed) noexcept {
  seed ^= std::uint64_t{__builtin_bswap32(static_cast<std::uint32_t>(seed))} << 32;
  const std::uint64_t first = in32<Lower>(p);
  const std::uint64_t last = in32<Lower>(p + len - 4);
  const std::uint64_t bitflip = (secret64(8) ^ secret64(16)) - seed;
  return rrmxmx((last + (first << 32)) ^ bitflip, len);
}

// 9..16 bytes.
template <bool Lower>
inline std::uint64_t len9to16(const unsigned char* p, std::size_t len,
                              std::uint64_t seed) noexcept {
  const std::uint64_t bitflip1 = (secret64(24) ^ secret64(32)) + seed;
  const std::uint64_t bitflip2 = (secret64(40) ^ secret64(48)) - seed;
  const std::uint64_t lo = in64<Lower>(p) ^ bitflip1;
  const std::uint64_t hi = in64<Lower>(p + len - 8) ^ bitflip2;
  return avalanche(len + __builtin_bswap64(lo) + hi + mul128_fold64(lo, hi));
}

// 17..128 bytes.
template <bool Lower>
inline std::uint64_t len17to128(const unsigned char* p, std::size_t len,
                                std::uint64_t seed) noexcept {
  std::uint64_t acc = len * kPrime64_1;
  if (len > 32) {
    if (len > 64) {
      if (len > 96) {
        acc += mix16<Lower>(p + 48, 96, seed);
        acc += mix16<Lower>(p + len - 64, 112, seed);
      }
      acc += mix16<Lower>(p + 32, 64, seed);
      acc += mix16<Lower>(p + len - 48, 80, seed);
    }
    acc += mix16<Lower>(p + 16, 32, seed);
    acc += mix16<Lower>(p + len - 32, 48, seed);
  }
  acc += mix16<Lower>(p, 0, seed);
  acc += mix16<Lower>(p + len - 16, 16, seed);
  return avalanche(acc);
}

}  // namespace xxh3

inline constexpr std::size_t kShortHashMax = 128;

// XXH3_64bits_withSeed(p, len, seed) (of the lower-cased bytes when Lower). Reads exactly
// the bytes [p, p + len). With Lower, len must be at most kShortHashMax.
template <bool Lower = false>
inline std::uint64_t token_hash(const unsigned char* p, std::size_t len,
                                std::uint64_t seed) noexcept {
  if (len <= 16) {
    if (len > 8) return xxh3::len9to16<Lower>(p, len, seed);
    if (len >= 4) return xxh3::len4to8<Lower>(p, len, seed);
    if (len > 0) return xxh3::len1to3<Lower>(p, len, seed);
    return xxh3::xxh64_avalanche(seed ^ (xxh3::secret64(56) ^ xxh3::secret64(64)));
  }
  if (Lower || len <= kShortHashMax) return xxh3::len17to128<Lower>(p, len, seed);
  return XXH3_64bits_withSeed(p, len, seed);
}

}  // namespace simhash::detail
