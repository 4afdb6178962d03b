// The stored form of a shingle set (core/stored_set.hpp), format 1, and its C ABI: golden
// bytes, which must never change, and every value that is not a stored set.
#include "core/stored_set.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "capi/stored_set_capi.h"

namespace simhash {
namespace {

using Bytes = std::vector<unsigned char>;

Bytes stored(const std::vector<std::uint64_t>& set) {
  Bytes out(stored_set_size(set.size()));
  write_stored_set(set.data(), set.size(), out.data());
  return out;
}

// The set in bytes, or nothing (and false) when they are not a stored set.
bool read(const Bytes& bytes, std::vector<std::uint64_t>* set) {
  std::vector<std::uint64_t> out(bytes.size() / 8 + 1, 0xdeadULL);
  std::size_t n = 99;
  if (!read_stored_set(bytes.data(), bytes.size(), out.data(), &n)) return false;
  out.resize(n);
  *set = out;
  return true;
}

Bytes hash_bytes(std::uint64_t h) {
  Bytes b;
  for (int byte = 0; byte < 8; ++byte) b.push_back(static_cast<unsigned char>(h >> (8 * byte)));
  return b;
}

Bytes concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(StoredSet, GoldenBytes) {
  EXPECT_EQ(stored({}), (Bytes{0x01}));
  EXPECT_EQ(stored({1, 0x0102030405060708ULL, 0xfedcba9876543210ULL}),
            (Bytes{0x01,                                            //
                   0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  //
                   0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  //
                   0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe}));
}

TEST(StoredSet, ReadsBackWhatWasWritten) {
  std::vector<std::uint64_t> set;
  for (std::uint64_t i = 0; i < kStoredSetMaxShingles; ++i) set.push_back(i * 0x9E3779B97F4ULL + 7);
  std::vector<std::uint64_t> back;
  ASSERT_TRUE(read(stored(set), &back));
  EXPECT_EQ(back, set);
  ASSERT_TRUE(read(Bytes{0x01}, &back));  // the empty set
  EXPECT_TRUE(back.empty());
  ASSERT_TRUE(read(concat(Bytes{0x01}, hash_bytes(~0ULL)), &back));
  EXPECT_EQ(back, (std::vector<std::uint64_t>{~0ULL}));
}

TEST(StoredSet, TooLargeASetIsNotStored) {
  EXPECT_EQ(stored_set_size(kStoredSetMaxShingles), 1 + 8 * kStoredSetMaxShingles);
  EXPECT_EQ(stored_set_size(kStoredSetMaxShingles + 1), 0u);
  EXPECT_EQ(stored_set_size(0), 1u);
}

TEST(StoredSet, AnythingElseIsNotAStoredSet) {
  std::vector<std::uint64_t> set;
  const Bytes one = hash_bytes(1);
  const Bytes two = hash_bytes(2);
  EXPECT_FALSE(read(Bytes{}, &set));      // empty
  EXPECT_FALSE(read(Bytes{0x00}, &set));  // another format
  EXPECT_FALSE(read(Bytes{0x02}, &set));
  EXPECT_FALSE(read(concat(Bytes{0x00}, one), &set));
  EXPECT_FALSE(read(concat(concat(Bytes{0x01}, two), one), &set));  // not ascending
  EXPECT_FALSE(read(concat(concat(Bytes{0x01}, one), one), &set));  // a repeat
  EXPECT_FALSE(read(Bytes{0x01, 0x01}, &set));                      // not whole hashes
  EXPECT_FALSE(read(concat(concat(Bytes{0x01}, one), Bytes{0x02}), &set));
  Bytes too_long{0x01};
  for (std::uint64_t i = 0; i <= kStoredSetMaxShingles; ++i) {
    const Bytes h = hash_bytes(i);
    too_long.insert(too_long.end(), h.begin(), h.end());
  }
  EXPECT_FALSE(stored_set_length_ok(too_long.size()));
  EXPECT_FALSE(read(too_long, &set));
  too_long.resize(too_long.size() - 8);  // kStoredSetMaxShingles ascending hashes: a set
  EXPECT_TRUE(read(too_long, &set));
  EXPECT_EQ(set.size(), kStoredSetMaxShingles);
}

TEST(StoredSet, LengthsOfAStoredSet) {
  EXPECT_FALSE(stored_set_length_ok(0));
  EXPECT_TRUE(stored_set_length_ok(1));
  for (std::size_t len = 2; len < 9; ++len) EXPECT_FALSE(stored_set_length_ok(len)) << len;
  EXPECT_TRUE(stored_set_length_ok(9));
  EXPECT_TRUE(stored_set_length_ok(1 + 8 * kStoredSetMaxShingles));
  EXPECT_FALSE(stored_set_length_ok(1 + 8 * (kStoredSetMaxShingles + 1)));
}

TEST(StoredSet, CapiSaysTheSame) {
  const std::vector<std::uint64_t> set = {3, 5, 8};
  Bytes out(simhash_stored_set_size(set.size()));
  simhash_stored_set_write(set.data(), set.size(), out.data());
  EXPECT_EQ(out, stored(set));
  std::uint64_t back[4];
  std::size_t n = 0;
  EXPECT_EQ(simhash_stored_set_read(out.data(), out.size(), back, &n), 1);
  EXPECT_EQ(std::vector<std::uint64_t>(back, back + n), set);
  out[0] = 0x02;
  EXPECT_EQ(simhash_stored_set_read(out.data(), out.size(), back, &n), 0);
  EXPECT_EQ(simhash_stored_set_length_ok(out.size()), 1);
  EXPECT_EQ(simhash_stored_set_length_ok(out.size() - 1), 0);
  EXPECT_EQ(simhash_stored_set_size(SIMHASH_STORED_SET_MAX_SHINGLES + 1), 0u);
}

}  // namespace
}  // namespace simhash
