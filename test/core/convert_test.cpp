#include "core/convert.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

namespace simhash {
namespace {

std::string hex(std::uint64_t v) {
  char out[16];
  format_hex16(v, out);
  return std::string(out, 16);
}

std::string dec(std::uint64_t v) {
  char out[20];
  return std::string(out, format_decimal(v, out));
}

TEST(Convert, HexIsSixteenZeroPaddedDigits) {
  EXPECT_EQ(hex(0), "0000000000000000");
  EXPECT_EQ(hex(1), "0000000000000001");
  EXPECT_EQ(hex(0x1426fdb77a909a7dULL), "1426fdb77a909a7d");
  EXPECT_EQ(hex(UINT64_MAX), "ffffffffffffffff");
  EXPECT_EQ(hex(0x8000000000000000ULL), "8000000000000000");
}

TEST(Convert, ParseHex) {
  std::uint64_t v = 0;
  EXPECT_EQ(parse_hex64("1426fdb77a909a7d", v), ParseResult::Ok);
  EXPECT_EQ(v, 0x1426fdb77a909a7dULL);
  EXPECT_EQ(parse_hex64("0X1426FDB77A909A7D", v), ParseResult::Ok);
  EXPECT_EQ(v, 0x1426fdb77a909a7dULL);
  EXPECT_EQ(parse_hex64("f", v), ParseResult::Ok);  // to_hex() drops leading zeros
  EXPECT_EQ(v, 15u);
  EXPECT_EQ(parse_hex64("ffffffffffffffff", v), ParseResult::Ok);
  EXPECT_EQ(v, UINT64_MAX);
  v = 7;
  for (const char* bad : {"", "0x", "12345678901234567", "0x12345678901234567", "12g4", " 12",
                          "12 ", "-1", "+1", "0x-1", "x12"}) {
    EXPECT_EQ(parse_hex64(bad, v), ParseResult::Invalid) << bad;
  }
  EXPECT_EQ(v, 7u);  // untouched on failure
}

TEST(Convert, HexRoundTrip) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 10000; ++i) {
    const std::uint64_t x = rng() >> (rng() % 64);
    std::uint64_t y = 0;
    ASSERT_EQ(parse_hex64(hex(x), y), ParseResult::Ok);
    ASSERT_EQ(x, y);
  }
}

TEST(Convert, Decimal) {
  EXPECT_EQ(dec(0), "0");
  EXPECT_EQ(dec(1452126894350703229ULL), "1452126894350703229");
  EXPECT_EQ(dec(UINT64_MAX), "18446744073709551615");
  std::uint64_t v = 0;
  EXPECT_EQ(parse_unsigned_decimal("18446744073709551615", v), ParseResult::Ok);
  EXPECT_EQ(v, UINT64_MAX);
  EXPECT_EQ(parse_unsigned_decimal("42.000", v), ParseResult::Ok);
  EXPECT_EQ(v, 42u);
  EXPECT_EQ(parse_unsigned_decimal("-0", v), ParseResult::Ok);
  EXPECT_EQ(v, 0u);
  EXPECT_EQ(parse_unsigned_decimal("007", v), ParseResult::Ok);
  EXPECT_EQ(v, 7u);
  v = 9;
  for (const char* out : {"18446744073709551616", "99999999999999999999999", "-1", "1.5", "NaN",
                          "Infinity", "-Infinity", "0.0001"}) {
    EXPECT_EQ(parse_unsigned_decimal(out, v), ParseResult::OutOfRange) << out;
  }
  for (const char* bad : {"", "-", ".", ".5", "1e5", "12a", " 1", "1 ", "0x10", "1.2.3"}) {
    EXPECT_EQ(parse_unsigned_decimal(bad, v), ParseResult::Invalid) << bad;
  }
  EXPECT_EQ(v, 9u);
  std::mt19937_64 rng(2);
  for (int i = 0; i < 10000; ++i) {
    const std::uint64_t x = rng() >> (rng() % 64);
    std::uint64_t y = 0;
    ASSERT_EQ(parse_unsigned_decimal(dec(x), y), ParseResult::Ok);
    ASSERT_EQ(x, y);
  }
}

}  // namespace
}  // namespace simhash
