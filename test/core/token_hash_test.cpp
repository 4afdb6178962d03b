#include "core/token_hash.hpp"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace simhash {
namespace {

constexpr std::uint64_t kSeeds[] = {0, 1, 0x53494d4841534831ULL, 0xFFFFFFFFFFFFFFFFULL,
                                    0x8000000080000000ULL};

// Every length the inlined branches handle, and past them (the library fallback), on
// random bytes at every offset modulo 8 of an unaligned buffer.
TEST(TokenHash, EqualsTheLibraryForEveryLength) {
  std::mt19937_64 rng(11);
  std::vector<unsigned char> buf(400);
  for (int round = 0; round < 40; ++round) {
    for (auto& b : buf) b = static_cast<unsigned char>(rng());
    for (std::uint64_t seed : kSeeds) {
      for (std::size_t len = 0; len <= 300; ++len) {
        const unsigned char* p = buf.data() + (round % 8);
        ASSERT_EQ(detail::token_hash(p, len, seed), XXH3_64bits_withSeed(p, len, seed))
            << "len " << len << " seed " << seed;
      }
    }
  }
}

// The lower-casing variant equals hashing a lower-cased copy, for ASCII letters and digits
// of every length up to the token limit.
TEST(TokenHash, LowerHashesTheLowerCasedBytes) {
  const std::string alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::mt19937_64 rng(12);
  for (int round = 0; round < 40; ++round) {
    std::string word;
    for (int i = 0; i < 140; ++i) word += alnum[rng() % alnum.size()];
    std::string lower = word;
    for (char& c : lower) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
    for (std::uint64_t seed : kSeeds) {
      for (std::size_t len = 0; len <= detail::kShortHashMax; ++len) {
        const auto* raw = reinterpret_cast<const unsigned char*>(word.data());
        ASSERT_EQ(detail::token_hash<true>(raw, len, seed),
                  XXH3_64bits_withSeed(lower.data(), len, seed))
            << "len " << len;
      }
    }
  }
}

}  // namespace
}  // namespace simhash
