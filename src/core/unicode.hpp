// Unicode properties for the tokenizer, from tables generated out of the Unicode 15.0.0
// Character Database (tools/gen_unicode.py -> unicode_data.inc). Fixed at build time, never
// taken from the system's ICU: an OS upgrade must not change stored fingerprints.
#pragma once
#include <cstdint>

#include "core/no_postgres.hpp"

namespace simhash::unicode {

enum class CharClass : std::uint8_t {
  Separator = 0,  // ends a token and is dropped: Z*, P*, Sm, Sc, Sk, C*, unassigned
  Word = 1,       // letter or digit of a space-delimited script
  Unspaced = 2,   // letter or digit of a script written without spaces; So symbols (emoji)
  Mark = 3,       // Mn, Mc, Me: attaches to the preceding token
  Ignorable = 4,  // Default_Ignorable_Code_Point: dropped without ending a token
};

struct CodePointInfo {
  CharClass cls;         // class of this code point (before mapping)
  std::uint8_t ccc;      // canonical combining class
  std::uint8_t map_len;  // code points in the normalized mapping; 0: maps to itself
  const char32_t* map;   // the mapping (compatibility decomposition + full case folding)
};

// Properties of cp; values above 0x10FFFF are Separators.
CodePointInfo lookup(char32_t cp) noexcept;

// Two derived copies of what lookup() says about the code points of 3-byte UTF-8 (U+0800..
// U+FFFF, no surrogates), computed from the same tables at compile time, for the
// tokenizer's fast path over unspaced runs. Bit cp % 64 of bits[cp / 64] is set when cp is
//  - kSimpleUnspaced: Unspaced, maps to itself, combining class 0 (most of Han, kana, Thai);
//  - kSimpleSeparator: not Ignorable, and it and every code point it maps to is a Separator
//    (ideographic space and punctuation, fullwidth forms of ASCII punctuation...).
struct Bitmap64K {
  std::uint64_t bits[1024];
};
extern const Bitmap64K kSimpleUnspaced;
extern const Bitmap64K kSimpleSeparator;

// And the code points of 3-byte UTF-8 that map to a simple unspaced code point followed by
// one Mark, both of 3-byte UTF-8 (kana with a voicing mark: が = か + U+3099; a few
// Myanmar and Balinese letters): the unit's 6 bytes of normalized UTF-8 and the mark's
// combining class. Bit cp % 64 of bits[cp / 64] says whether cp is one; its entry is
// units[rank[cp / 64] + the number of set bits below it in that word].
struct DecomposedUnit {
  unsigned char utf8[6];
  std::uint8_t mark_ccc;
};
inline constexpr unsigned kMaxDecomposedUnits = 128;
struct DecomposedTable {
  std::uint64_t bits[1024];
  std::uint16_t rank[1024];
  DecomposedUnit units[kMaxDecomposedUnits];
};
extern const DecomposedTable kDecomposedUnspaced;

// The entry of cp (below U+10000) in kDecomposedUnspaced, or nullptr.
inline const DecomposedUnit* decomposed_unspaced(char32_t cp) noexcept {
  const std::uint64_t word = kDecomposedUnspaced.bits[cp >> 6];
  const std::uint64_t bit = std::uint64_t{1} << (cp & 63);
  if ((word & bit) == 0) return nullptr;
  return &kDecomposedUnspaced.units[kDecomposedUnspaced.rank[cp >> 6] +
                                    static_cast<unsigned>(__builtin_popcountll(word & (bit - 1)))];
}

// The code points of 2-byte UTF-8 (U+0080..U+07FF) whose normalization continues or starts a
// word in a fixed way: not Ignorable, and it maps to (or is) a Word code point of combining
// class 0 followed by Word or Mark code points, at most 8 bytes of UTF-8 in all (é = e +
// U+0301, ß = ss, Ä = a + U+0308, ж). For the tokenizer's fast path inside words: the bytes
// to append, the combining class of the last code point, and whether appending them in
// order puts marks out of canonical order by themselves. len is 0 for other code points.
struct WordAppend {
  std::uint8_t len;
  std::uint8_t last_ccc;
  bool reorder;
  unsigned char utf8[8];
};
struct WordAppendTable {
  WordAppend of[0x800 - 0x80];  // of[cp - 0x80]
};
extern const WordAppendTable kWordAppend2;

inline bool simple_unspaced(char32_t cp) noexcept {
  return cp < 0x10000 && ((kSimpleUnspaced.bits[cp >> 6] >> (cp & 63)) & 1) != 0;
}
inline bool simple_separator(char32_t cp) noexcept {
  return cp < 0x10000 && ((kSimpleSeparator.bits[cp >> 6] >> (cp & 63)) & 1) != 0;
}

inline constexpr const char* kUnicodeVersion = "15.0.0";

}  // namespace simhash::unicode
