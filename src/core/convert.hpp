// Text forms of an unsigned 64-bit fingerprint: 16 hexadecimal digits and unsigned decimal.
//
// PostgreSQL stores the fingerprint as a signed bigint (two's complement: bit 63 is the
// sign bit), so about half of all fingerprints are negative there; other SimHash libraries
// print the unsigned value. These functions convert between the bits and the unsigned
// forms; the glue maps their results onto SQL errors.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/no_postgres.hpp"

namespace simhash {

// Writes the 16 lower-case hexadecimal digits of v, zero-padded (exactly 16 chars, no NUL).
inline void format_hex16(std::uint64_t v, char* out) noexcept {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (int i = 15; i >= 0; --i) {
    out[i] = kDigits[v & 0xF];
    v >>= 4;
  }
}

enum class ParseResult : std::uint8_t {
  Ok = 0,
  Invalid = 1,     // not of the expected form
  OutOfRange = 2,  // a number, but not an integer in [0, 2^64)
};

// 1 to 16 hexadecimal digits of either case, optionally after "0x" or "0X"; nothing else
// (no sign, no white space).
inline ParseResult parse_hex64(std::string_view s, std::uint64_t& out) noexcept {
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
  if (s.empty() || s.size() > 16) return ParseResult::Invalid;
  std::uint64_t v = 0;
  for (const char c : s) {
    unsigned d;
    if (c >= '0' && c <= '9') {
      d = static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      d = static_cast<unsigned>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      d = static_cast<unsigned>(c - 'A' + 10);
    } else {
      return ParseResult::Invalid;
    }
    v = (v << 4) | d;
  }
  out = v;
  return ParseResult::Ok;
}

// Writes the unsigned decimal digits of v (1 to 20 chars, no NUL); returns their number.
inline std::size_t format_decimal(std::uint64_t v, char* out) noexcept {
  char tmp[20];
  std::size_t n = 0;
  do {
    tmp[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  for (std::size_t i = 0; i < n; ++i) out[i] = tmp[n - 1 - i];
  return n;
}

// The text of a PostgreSQL numeric (as numeric_out writes it: an optional '-', digits,
// optionally '.' and digits; or NaN, Infinity, -Infinity) as an unsigned 64-bit integer:
// Ok for an integer in [0, 2^64) (trailing fractional zeros allowed, "-0" too),
// OutOfRange for any other number (negative, too large, with a fraction, NaN, infinite),
// Invalid for anything else.
inline ParseResult parse_unsigned_decimal(std::string_view s, std::uint64_t& out) noexcept {
  if (s == "NaN" || s == "Infinity" || s == "-Infinity") return ParseResult::OutOfRange;
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  std::size_t i = 0;
  std::uint64_t v = 0;
  bool overflow = false;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    const unsigned d = static_cast<unsigned>(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) overflow = true;
    v = v * 10 + d;
    ++i;
  }
  if (i == 0) return ParseResult::Invalid;
  bool fraction = false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) fraction |= s[i] != '0';
  }
  if (i != s.size()) return ParseResult::Invalid;
  if (overflow || fraction || (negative && v != 0)) return ParseResult::OutOfRange;
  out = v;
  return ParseResult::Ok;
}

}  // namespace simhash
