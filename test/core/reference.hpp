// A deliberately simple, slow implementation of the fingerprint, written from its
// definition (README "What simhash(text) computes", fingerprint.hpp, tokenizer.hpp) and
// sharing no code with the fast path except the frozen Unicode tables (unicode::lookup):
//
//   bytes --decode--> code points --normalize--> classified code points --> tokens
//         --XXH3 (the library)--> token hashes --shingles of n--> feature hashes
//         --64 signed integer counters--> sign, ties from mix64(sum of feature hashes)
//
// Whole strings, std::string tokens, no streaming, no tricks. The fast path must agree with
// it on every input.
#pragma once

#define XXH_INLINE_ALL  // the library, compiled into this test (the project links no libxxhash)
#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/unicode.hpp"

namespace simhash::reference {

inline constexpr std::uint64_t kSeed = 0x53494d4841534831ULL;
inline constexpr std::size_t kMaxTokenBytes = 128;
inline constexpr std::size_t kMaxUnitBytes = 64;

// A code point, or kBreak for bytes that are not valid UTF-8 (they separate tokens).
inline constexpr char32_t kBreak = 0xFFFFFFFF;

// UTF-8 bytes -> code points, one kBreak per byte that cannot start a valid sequence (and
// per broken sequence's lead byte; its stray continuation bytes then break on their own).
inline std::vector<char32_t> decode(std::string_view text) {
  std::vector<char32_t> out;
  std::size_t i = 0;
  while (i < text.size()) {
    const unsigned char b = static_cast<unsigned char>(text[i]);
    std::size_t n;
    char32_t cp;
    if (b < 0x80) {
      n = 1, cp = b;
    } else if (b >= 0xC2 && b <= 0xDF) {
      n = 2, cp = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
      n = 3, cp = b & 0x0F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      n = 4, cp = b & 0x07;
    } else {
      out.push_back(kBreak);  // continuation byte, C0, C1, F5..FF
      ++i;
      continue;
    }
    bool complete = i + n <= text.size();
    for (std::size_t k = 1; complete && k < n; ++k) {
      const unsigned char c = static_cast<unsigned char>(text[i + k]);
      if ((c & 0xC0) != 0x80) complete = false;
      cp = (cp << 6) | (c & 0x3F);
    }
    if (!complete) {
      out.push_back(kBreak);
      ++i;
      continue;
    }
    const bool overlong = (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
    const bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
    out.push_back(overlong || surrogate || cp > 0x10FFFF ? kBreak : cp);
    i += n;
  }
  return out;
}

inline std::string encode(char32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

// A token under construction: its code points with their combining classes.
struct Piece {
  std::vector<char32_t> cps;
  std::vector<std::uint8_t> ccc;
  std::size_t bytes = 0;

  bool empty() const { return cps.empty(); }
  void add(char32_t cp, std::uint8_t c) {
    cps.push_back(cp);
    ccc.push_back(c);
    bytes += encode(cp).size();
  }
  // UTF-8 with each run of combining marks stably sorted by combining class.
  std::string canonical() const {
    std::vector<std::size_t> idx(cps.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    std::size_t i = 0;
    while (i < idx.size()) {
      if (ccc[i] == 0) {
        ++i;
        continue;
      }
      std::size_t j = i;
      while (j < idx.size() && ccc[j] != 0) ++j;
      std::stable_sort(idx.begin() + static_cast<std::ptrdiff_t>(i),
                       idx.begin() + static_cast<std::ptrdiff_t>(j),
                       [&](std::size_t a, std::size_t b) { return ccc[a] < ccc[b]; });
      i = j;
    }
    std::string s;
    for (std::size_t k : idx) s += encode(cps[k]);
    return s;
  }
};

// Tokens of a text, following the rules stated in tokenizer.hpp.
inline std::vector<std::string> tokens(std::string_view text, bool bigrams) {
  std::vector<std::string> out;
  Piece word;                    // the open word of a spaced script
  Piece unit;                    // the open unit (character + marks) of an unspaced run
  std::vector<std::string> run;  // the completed units of the current unspaced run

  auto end_word = [&] {
    if (!word.empty()) out.push_back(word.canonical());
    word = Piece{};
  };
  auto complete_unit = [&] {
    if (unit.empty()) return;
    run.push_back(unit.canonical());
    if (!bigrams) {
      out.push_back(run.back());
    } else if (run.size() >= 2) {
      out.push_back(run[run.size() - 2] + run.back());
    }
    unit = Piece{};
  };
  auto end_run = [&] {
    complete_unit();
    if (bigrams && run.size() == 1) out.push_back(run[0]);
    run.clear();
  };

  for (char32_t in : decode(text)) {
    if (in == kBreak) {
      end_word();
      end_run();
      continue;
    }
    const unicode::CodePointInfo info = unicode::lookup(in);
    if (info.cls == unicode::CharClass::Ignorable) continue;
    std::vector<char32_t> mapped;
    if (info.map_len == 0) {
      mapped.push_back(in);
    } else {
      mapped.assign(info.map, info.map + info.map_len);
    }
    for (char32_t cp : mapped) {
      const unicode::CodePointInfo c = unicode::lookup(cp);
      const std::size_t n = encode(cp).size();
      switch (c.cls) {
        case unicode::CharClass::Word:
          end_run();
          if (word.bytes + n > kMaxTokenBytes) end_word();
          word.add(cp, c.ccc);
          break;
        case unicode::CharClass::Unspaced:
          end_word();
          complete_unit();
          unit.add(cp, c.ccc);
          break;
        case unicode::CharClass::Mark:
          if (!word.empty()) {
            if (word.bytes + n > kMaxTokenBytes) end_word();
            word.add(cp, c.ccc);  // after a cut, the mark starts the next piece
          } else if (!unit.empty() && unit.bytes + n <= kMaxUnitBytes) {
            unit.add(cp, c.ccc);
          }
          break;
        case unicode::CharClass::Ignorable:
          break;
        case unicode::CharClass::Separator:
          end_word();
          end_run();
          break;
      }
    }
  }
  end_word();
  end_run();
  return out;
}

inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDULL;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ULL;
  x ^= x >> 33;
  return x;
}

inline std::uint64_t combine(const std::vector<std::uint64_t>& hashes, std::size_t from,
                             std::size_t n) {
  std::uint64_t acc = kSeed;
  for (std::size_t i = from; i < from + n; ++i) {
    acc = (acc ^ hashes[i]) * 0x9E3779B97F4A7C15ULL;
    acc ^= acc >> 32;
  }
  return mix64(acc);
}

// Feature hashes of a token sequence: the token hash itself for n = 1, otherwise combine()
// of every n consecutive token hashes, or of all of them when there are fewer than n.
inline std::vector<std::uint64_t> features(const std::vector<std::string>& toks, std::size_t n) {
  std::vector<std::uint64_t> h;
  for (const std::string& t : toks) h.push_back(XXH3_64bits_withSeed(t.data(), t.size(), kSeed));
  std::vector<std::uint64_t> f;
  if (n == 1) return h;
  if (!h.empty() && h.size() < n) f.push_back(combine(h, 0, h.size()));
  for (std::size_t i = 0; i + n <= h.size(); ++i) f.push_back(combine(h, i, n));
  return f;
}

// Sign of 64 signed counters (+1 for a 1 bit, -1 for a 0 bit); a counter of exactly 0
// takes the bit of mix64(wrapping sum of all feature hashes).
inline std::optional<std::uint64_t> fingerprint_of_features(const std::vector<std::uint64_t>& f) {
  if (f.empty()) return std::nullopt;
  std::int64_t v[64] = {};
  std::uint64_t sum = 0;
  for (std::uint64_t h : f) {
    sum += h;
    for (int i = 0; i < 64; ++i) v[i] += ((h >> i) & 1) ? 1 : -1;
  }
  const std::uint64_t ties = mix64(sum);
  std::uint64_t fp = 0;
  for (int i = 0; i < 64; ++i) {
    if (v[i] > 0 || (v[i] == 0 && ((ties >> i) & 1))) fp |= std::uint64_t{1} << i;
  }
  return fp;
}

inline std::optional<std::uint64_t> fingerprint(std::string_view text, std::size_t shingle,
                                                bool bigrams) {
  return fingerprint_of_features(features(tokens(text, bigrams), shingle));
}

}  // namespace simhash::reference
