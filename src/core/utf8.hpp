// Minimal UTF-8 helpers for the tokenizer.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/no_postgres.hpp"

namespace simhash::utf8 {

// Length of the sequence a lead byte announces: 1 for ASCII, 2..4 for a valid lead byte,
// 0 for a byte that cannot start a sequence (continuation bytes, C0, C1, F5..FF).
inline unsigned sequence_length(unsigned char lead) noexcept {
  if (lead < 0x80) return 1;
  if (lead < 0xC2) return 0;
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  if (lead < 0xF5) return 4;
  return 0;
}

inline bool is_continuation(unsigned char b) noexcept { return (b & 0xC0) == 0x80; }

// Decodes a sequence of `len` bytes whose lead and continuation bytes have been checked.
// Returns the code point, or a value above 0x10FFFF for overlong forms and surrogates.
inline char32_t decode(const unsigned char* s, unsigned len) noexcept {
  char32_t cp;
  switch (len) {
    case 1:
      return s[0];
    case 2:
      return (char32_t(s[0] & 0x1F) << 6) | (s[1] & 0x3F);
    case 3:
      cp = (char32_t(s[0] & 0x0F) << 12) | (char32_t(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
      if (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)) return 0x110000;
      return cp;
    default:
      cp = (char32_t(s[0] & 0x07) << 18) | (char32_t(s[1] & 0x3F) << 12) |
           (char32_t(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
      if (cp < 0x10000 || cp > 0x10FFFF) return 0x110000;
      return cp;
  }
}

// Writes cp (a valid scalar value) as UTF-8; returns the number of bytes written (1..4).
constexpr unsigned encode(char32_t cp, unsigned char* out) noexcept {
  if (cp < 0x80) {
    out[0] = static_cast<unsigned char>(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = static_cast<unsigned char>(0xC0 | (cp >> 6));
    out[1] = static_cast<unsigned char>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = static_cast<unsigned char>(0xE0 | (cp >> 12));
    out[1] = static_cast<unsigned char>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<unsigned char>(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = static_cast<unsigned char>(0xF0 | (cp >> 18));
  out[1] = static_cast<unsigned char>(0x80 | ((cp >> 12) & 0x3F));
  out[2] = static_cast<unsigned char>(0x80 | ((cp >> 6) & 0x3F));
  out[3] = static_cast<unsigned char>(0x80 | (cp & 0x3F));
  return 4;
}

}  // namespace simhash::utf8
