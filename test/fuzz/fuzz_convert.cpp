// libFuzzer target: the parsing that lives in the core and the C ABI: fingerprints in hex
// and in unsigned decimal (src/core/convert.hpp, behind simhash_from_hex and
// simhash_from_numeric) and option names (simhash_parse_tokenizer, _weighting, behind
// every SQL function with a tokenizer or weighting argument).
//
// Input: byte 0 the error buffer's size (0..63, a heap buffer of exactly that size), the
// rest the string (any bytes, NULs included), and its first 8 bytes also a value to print.
//
// Checks, aborting on the first violation:
//  - simhash_parse_hex agrees with a plain reference (optional 0x/0X, then 1..16 hex
//    digits of either case, nothing else) on the status and the value;
//  - simhash_parse_decimal agrees with a reference on the status (NaN and +-Infinity out of
//    range; [+-]digits[.digits]; negative, fractional or >= 2^64 values out of range; the
//    rest invalid) and the value;
//  - printing any value in hex or decimal and parsing it back gives the value, and the
//    decimal digits are those of printf("%llu");
//  - option names: only 'word'/'char' and 'tf'/'binary'/'log' (plus 'idf' where allowed)
//    are accepted, with the right code; anything else gives SIMHASH_INVALID_ARGUMENT and a
//    NUL-terminated message within the buffer (ASan sees a write past it).
#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "capi/text_options_capi.h"
#include "fuzz_util.hpp"

namespace {

using simhash::fuzz::Input;

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

simhash_parse_result reference_hex(std::string_view s, std::uint64_t* v) {
  if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s = s.substr(2);
  if (s.empty() || s.size() > 16) return SIMHASH_PARSE_INVALID;
  std::uint64_t x = 0;
  for (char c : s) {
    const int d = hex_digit(c);
    if (d < 0) return SIMHASH_PARSE_INVALID;
    x = x * 16 + static_cast<unsigned>(d);
  }
  *v = x;
  return SIMHASH_PARSE_OK;
}

bool digits(std::string_view s) {
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

simhash_parse_result reference_decimal(std::string_view s, std::uint64_t* v) {
  if (s == "NaN" || s == "Infinity" || s == "-Infinity") return SIMHASH_PARSE_OUT_OF_RANGE;
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s = s.substr(1);
  }
  const std::size_t dot = s.find('.');
  const std::string_view whole = s.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? "" : s.substr(dot + 1);
  if (whole.empty() || !digits(whole) || !digits(frac)) return SIMHASH_PARSE_INVALID;
  // Compare the integer part with 2^64 - 1 as strings of digits.
  std::string_view w = whole;
  while (w.size() > 1 && w[0] == '0') w = w.substr(1);
  const std::string_view max = "18446744073709551615";
  const bool too_big = w.size() > max.size() || (w.size() == max.size() && w > max);
  const bool fraction = frac.find_first_not_of('0') != std::string_view::npos;
  if (too_big || fraction || (negative && w != "0")) return SIMHASH_PARSE_OUT_OF_RANGE;
  std::uint64_t x = 0;
  for (char c : w) x = x * 10 + static_cast<unsigned>(c - '0');
  *v = x;
  return SIMHASH_PARSE_OK;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  simhash::fuzz::ErrBuf err(in.byte() % 64);
  const std::string_view s = in.rest();

  std::uint64_t got = 0, want = 0;
  simhash_parse_result r = simhash_parse_hex(s.data(), s.size(), &got);
  FUZZ_CHECK(r == reference_hex(s, &want));
  if (r == SIMHASH_PARSE_OK) FUZZ_CHECK(got == want);

  got = want = 0;
  r = simhash_parse_decimal(s.data(), s.size(), &got);
  FUZZ_CHECK(r == reference_decimal(s, &want));
  if (r == SIMHASH_PARSE_OK) FUZZ_CHECK(got == want);

  // Round trips of a value taken from the input.
  std::uint64_t value = 0;
  std::memcpy(&value, s.data(), std::min<std::size_t>(8, s.size()));
  char hex[16];
  simhash_format_hex(value, hex);
  for (char c : hex) FUZZ_CHECK((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  FUZZ_CHECK(simhash_parse_hex(hex, 16, &got) == SIMHASH_PARSE_OK && got == value);
  char dec[20];
  const std::size_t n = simhash_format_decimal(value, dec);
  char printed[32];
  const int m = std::snprintf(printed, sizeof printed, "%" PRIu64, value);
  FUZZ_CHECK(n == static_cast<std::size_t>(m) && std::memcmp(dec, printed, n) == 0);
  FUZZ_CHECK(simhash_parse_decimal(dec, n, &got) == SIMHASH_PARSE_OK && got == value);

  // Option names.
  std::int32_t code = -1;
  simhash_status st = simhash_parse_tokenizer(s.data(), s.size(), &code, err.data(), err.cap());
  if (s == "word" || s == "char") {
    FUZZ_CHECK(st == SIMHASH_OK && code == (s == "word" ? SIMHASH_TOKENIZER_WORD
                                                         : SIMHASH_TOKENIZER_CHAR));
  } else {
    FUZZ_CHECK(st == SIMHASH_INVALID_ARGUMENT);
    err.check_terminated();
  }
  for (int allow_idf = 0; allow_idf < 2; ++allow_idf) {
    code = -1;
    st = simhash_parse_weighting(s.data(), s.size(), allow_idf, &code, err.data(), err.cap());
    int want_code = -1;
    if (s == "tf") want_code = SIMHASH_WEIGHTING_TF;
    if (s == "binary") want_code = SIMHASH_WEIGHTING_BINARY;
    if (s == "log") want_code = SIMHASH_WEIGHTING_LOG;
    if (s == "idf" && allow_idf) want_code = SIMHASH_WEIGHTING_IDF;
    if (want_code >= 0) {
      FUZZ_CHECK(st == SIMHASH_OK && code == want_code);
    } else {
      FUZZ_CHECK(st == SIMHASH_INVALID_ARGUMENT);
      err.check_terminated();
    }
  }
  return 0;
}
