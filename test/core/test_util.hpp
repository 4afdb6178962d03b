// Helpers shared by the core unit tests.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/tokenizer.hpp"

namespace simhash::test {

struct CollectingSink {
  std::vector<std::string> tokens;
  void token(const unsigned char* bytes, std::size_t len) {
    tokens.emplace_back(reinterpret_cast<const char*>(bytes), len);
  }
};

inline std::vector<std::string> tokenize(std::string_view text, bool bigrams = true) {
  CollectingSink sink;
  Tokenizer<CollectingSink> t(TokenizerOptions{bigrams});
  t.feed(text.data(), text.size(), sink);
  t.finish(sink);
  return sink.tokens;
}

// Splits text at random byte positions (including inside UTF-8 sequences).
inline std::vector<std::string_view> random_chunks(std::string_view text, std::mt19937_64& rng,
                                                   std::size_t max_chunk) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t n = std::min(text.size() - pos, 1 + rng() % max_chunk);
    out.push_back(text.substr(pos, n));
    pos += n;
  }
  return out;
}

// Pieces of valid and broken UTF-8 that random "byte soup" texts are built from: ASCII,
// separators, accented letters and combining marks, CJK, voiced kana, emoji, a variation
// selector, a soft hyphen, stray and truncated sequences, a surrogate, an overlong and an
// out-of-range encoding, a ligature, a Thai vowel sign and a long ASCII run.
inline std::vector<std::string> utf8_soup_pieces() {
  // clang-format off
  return {"a", "Z", "9", " ", ",", "\n", "\xc3\xa9", "\xcc\x81", "\xe4\xb8\xad",
          "\xe3\x82\x99", "\xf0\x9f\x98\x80", "\xef\xb8\x8f", "\xc2\xad", "\xff", "\x80",
          "\xe4", "\xe4\xb8", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80", "\xef\xac\x81",
          "\xe0\xb8\xb4", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij"};
  // clang-format on
}

// Texts that exercise every path of the tokenizer.
inline std::vector<std::string> tricky_texts() {
  return {
      "",
      "   \t\n  ",
      "Hello, World! hello world",
      "Stra\xc3\x9f"
      "e STRASSE stra\xc3\x9f"
      "e",                                                                // ß
      "caf\xc3\xa9 cafe\xcc\x81",                                         // precomposed / combining
      "\xef\xbc\xa6\xef\xbd\x89\xef\xbd\x8c\xef\xbd\x85 \xef\xac\x81le",  // fullwidth, ligature
      "\xe4\xb8\xad\xe6\x96\x87\xe6\xb5\x8b\xe8\xaf\x95 and English \xe4\xb8\xad",  // 中文测试 … 中
      "\xe3\x81\x8c\xe3\x81\x8b\xe3\x82\x99 \xe3\x83\x86\xe3\x82\xb9\xe3\x83\x88\xe3\x83\xbc",
      "\xe0\xb8\xaa\xe0\xb8\xa7\xe0\xb8\xb1\xe0\xb8\xaa\xe0\xb8\x94\xe0\xb8\xb5",      // Thai
      "\xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd ok \xe2\x9d\xa4\xef\xb8\x8f",  // emoji
      "soft\xc2\xadhyphen zero\xe2\x80\x8bwidth",
      "a\xcc\xa3\xcc\x81 a\xcc\x81\xcc\xa3",  // marks out of canonical order
      "bad \xff\xfe utf8 \xe4\xb8 trunc \xed\xa0\x80 surrogate \xc0\xaf overlong \xf4\x90\x80\x80",
      "\xe4\xb8",  // truncated at the very end
      std::string(300, 'x') + " long",
      // ASCII words of every length around the 16-byte vector and the 128-byte cut, mixed
      // case, next to non-ASCII letters that continue a word
      [] {
        std::string t;
        for (int n = 1; n <= 140; ++n) {
          for (int i = 0; i < n; ++i)
            t += static_cast<char>((i % 3 == 0 ? 'A' : 'a') + (n + i) % 26);
          t += n % 5 == 0 ? "\xc3\xa9" : n % 7 == 0 ? "9," : " ";
        }
        return t;
      }(),
      "x" + std::string(200, '\xcc') + "end",
  };
}

}  // namespace simhash::test
