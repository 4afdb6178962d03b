#include "core/unicode.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/utf8.hpp"

namespace simhash::unicode {
namespace {

std::u32string mapped(char32_t cp) {
  const CodePointInfo i = lookup(cp);
  if (i.map_len == 0) return std::u32string(1, cp);
  return std::u32string(i.map, i.map_len);
}

TEST(Unicode, CaseFoldingAndCompatibilityMappings) {
  EXPECT_EQ(mapped(U'A'), U"a");
  EXPECT_EQ(mapped(0x00DF), U"ss");            // ß
  EXPECT_EQ(mapped(0x00E9), U"e\u0301");       // é -> e + combining acute
  EXPECT_EQ(mapped(0xFF26), U"f");             // fullwidth F
  EXPECT_EQ(mapped(0xFB01), U"fi");            // ligature
  EXPECT_EQ(mapped(0x2460), U"1");             // circled digit one
  EXPECT_EQ(mapped(0xFF76), U"\u30AB");        // halfwidth katakana KA
  EXPECT_EQ(mapped(0x304C), U"\u304B\u3099");  // が
  EXPECT_EQ(mapped(0x03C2), U"\u03C3");        // final sigma
  EXPECT_EQ(mapped(0x0130), U"i\u0307");       // I with dot above
  EXPECT_EQ(mapped(0x0416), U"\u0436");        // Ж -> ж
  EXPECT_EQ(mapped(0xD55C), U"\uD55C");        // Hangul syllables stay composed
}

TEST(Unicode, Classes) {
  EXPECT_EQ(lookup(0xFF26).cls, CharClass::Word);
  EXPECT_EQ(lookup(0x4E2D).cls, CharClass::Unspaced);  // 中
  EXPECT_EQ(lookup(0x0E01).cls, CharClass::Unspaced);  // Thai KO KAI
  EXPECT_EQ(lookup(0x0E34).cls, CharClass::Mark);      // Thai vowel sign
  EXPECT_EQ(lookup(0x3005).cls, CharClass::Unspaced);  // 々
  EXPECT_EQ(lookup(0x30FC).cls, CharClass::Unspaced);  // ー (Common, scx Hira Kana)
  EXPECT_EQ(lookup(0xFF76).cls, CharClass::Unspaced);
  EXPECT_EQ(lookup(0xD55C).cls, CharClass::Word);       // Hangul uses spaces
  EXPECT_EQ(lookup(0x1F600).cls, CharClass::Unspaced);  // 😀 (So, emoji)
  EXPECT_EQ(lookup(0x2764).cls, CharClass::Unspaced);   // ❤ (So, Extended_Pictographic)
  EXPECT_EQ(lookup(0x1F1EF).cls, CharClass::Unspaced);  // regional indicator J (flags)
  EXPECT_EQ(lookup(0x2500).cls, CharClass::Separator);  // ─ box drawing (So, not emoji)
  EXPECT_EQ(lookup(0x2192).cls, CharClass::Separator);  // → (Sm)
  EXPECT_EQ(lookup(0x25A0).cls, CharClass::Separator);  // ■ (So, not emoji)
  EXPECT_EQ(lookup(0x3099).cls, CharClass::Mark);
  EXPECT_EQ(lookup(0x3099).ccc, 8);
  EXPECT_EQ(lookup(0x0301).ccc, 230);
  EXPECT_EQ(lookup(0x0323).ccc, 220);
  for (char32_t cp : {0x00AD, 0x200D, 0x200B, 0xFE0F}) {
    EXPECT_EQ(lookup(cp).cls, CharClass::Ignorable) << std::hex << cp;
    EXPECT_EQ(lookup(cp).map_len, 0);
  }
  for (char32_t cp : {0x00A0, 0x3000, 0x005F, 0xE000, 0x10FFFF, 0x110000, 0xD800, 0x20AC}) {
    EXPECT_EQ(lookup(cp).cls, CharClass::Separator) << std::hex << cp;
  }
}

TEST(Unicode, AsciiRule) {
  for (char32_t c = 0; c < 128; ++c) {
    const bool upper = c >= 'A' && c <= 'Z';
    const bool word = upper || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    EXPECT_EQ(lookup(c).cls, word ? CharClass::Word : CharClass::Separator) << c;
    EXPECT_EQ(mapped(c), std::u32string(1, upper ? c + 32 : c)) << c;
  }
}

TEST(Unicode, FastPathBitmapsAgreeWithLookup) {
  unsigned unspaced = 0, separators = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF + 1; ++cp) {
    const CodePointInfo i = lookup(cp);
    const bool three_bytes = cp >= 0x800 && cp < 0x10000 && !(cp >= 0xD800 && cp <= 0xDFFF);
    const bool simple = three_bytes && i.cls == CharClass::Unspaced && i.map_len == 0 && i.ccc == 0;
    ASSERT_EQ(simple_unspaced(cp), simple) << std::hex << cp;
    unspaced += simple;
    bool separator = three_bytes && i.cls != CharClass::Ignorable;
    if (i.map_len == 0) {
      separator = separator && i.cls == CharClass::Separator;
    } else {
      for (unsigned k = 0; k < i.map_len; ++k) {
        separator = separator && lookup(i.map[k]).cls == CharClass::Separator;
      }
    }
    ASSERT_EQ(simple_separator(cp), separator) << std::hex << cp;
    separators += separator;
  }
  EXPECT_GT(unspaced, 20000u);  // Han alone has more
  EXPECT_GT(separators, 1000u);
  EXPECT_TRUE(simple_unspaced(0x4E2D));    // 中
  EXPECT_TRUE(simple_unspaced(0x3042));    // あ
  EXPECT_FALSE(simple_unspaced(0x304C));   // が maps to か + U+3099
  EXPECT_FALSE(simple_unspaced(0x3001));   // 、 is punctuation
  EXPECT_TRUE(simple_separator(0x3001));   // 、
  EXPECT_TRUE(simple_separator(0x3000));   // ideographic space
  EXPECT_TRUE(simple_separator(0xFF08));   // （ maps to (
  EXPECT_FALSE(simple_separator(0xFF21));  // Ａ maps to a
  EXPECT_FALSE(simple_separator(0x200B));  // zero width space is ignorable
}

TEST(Unicode, DecomposedUnitTableAgreesWithLookup) {
  auto encode = [](char32_t cp) {
    unsigned char b[4];
    return std::string(reinterpret_cast<const char*>(b), utf8::encode(cp, b));
  };
  unsigned count = 0;
  for (char32_t cp = 0; cp < 0x10000; ++cp) {
    const CodePointInfo i = lookup(cp);
    const bool three_bytes = cp >= 0x800 && !(cp >= 0xD800 && cp <= 0xDFFF);
    const bool expected = three_bytes && i.cls != CharClass::Ignorable && i.map_len == 2 &&
                          simple_unspaced(i.map[0]) && i.map[1] >= 0x800 && i.map[1] < 0x10000 &&
                          lookup(i.map[1]).cls == CharClass::Mark;
    const DecomposedUnit* d = decomposed_unspaced(cp);
    ASSERT_EQ(d != nullptr, expected) << std::hex << cp;
    if (d == nullptr) continue;
    ++count;
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(d->utf8), 6),
              encode(i.map[0]) + encode(i.map[1]))
        << std::hex << cp;
    EXPECT_EQ(d->mark_ccc, lookup(i.map[1]).ccc) << std::hex << cp;
  }
  EXPECT_EQ(count, 65u);
  EXPECT_NE(decomposed_unspaced(0x304C), nullptr);  // が
  EXPECT_EQ(decomposed_unspaced(0x304B), nullptr);  // か is simple
}

TEST(Unicode, WordAppendTableAgreesWithLookup) {
  auto encode = [](char32_t cp) {
    unsigned char b[4];
    return std::string(reinterpret_cast<const char*>(b), utf8::encode(cp, b));
  };
  unsigned count = 0;
  for (char32_t cp = 0x80; cp < 0x800; ++cp) {
    const CodePointInfo i = lookup(cp);
    std::u32string seq = i.map_len == 0 ? std::u32string(1, cp) : std::u32string(i.map, i.map_len);
    bool eligible = i.cls != CharClass::Ignorable && lookup(seq[0]).cls == CharClass::Word &&
                    lookup(seq[0]).ccc == 0;
    std::string bytes;
    std::uint8_t last = 0;
    bool reorder = false;
    for (char32_t c : seq) {
      const CodePointInfo ci = lookup(c);
      eligible = eligible && (ci.cls == CharClass::Word || ci.cls == CharClass::Mark);
      bytes += encode(c);
      if (ci.ccc != 0 && last > ci.ccc) reorder = true;
      last = ci.ccc;
    }
    eligible = eligible && bytes.size() <= 8;
    const WordAppend& a = kWordAppend2.of[cp - 0x80];
    ASSERT_EQ(a.len != 0, eligible) << std::hex << cp;
    if (!eligible) continue;
    ++count;
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(a.utf8), a.len), bytes) << std::hex << cp;
    EXPECT_EQ(a.last_ccc, last) << std::hex << cp;
    EXPECT_EQ(a.reorder, reorder) << std::hex << cp;
  }
  EXPECT_GT(count, 1000u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(kWordAppend2.of[0xE9 - 0x80].utf8), 3),
            "e\xcc\x81");                           // é
  EXPECT_EQ(kWordAppend2.of[0x301 - 0x80].len, 0);  // a combining mark: depends on the state
}

TEST(Unicode, MappingsAreFixpoints) {
  unsigned longest = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    const CodePointInfo i = lookup(cp);
    if (i.map_len == 0) continue;
    EXPECT_NE(i.cls, CharClass::Ignorable);
    longest = std::max<unsigned>(longest, i.map_len);
    for (unsigned k = 0; k < i.map_len; ++k) {
      const CodePointInfo o = lookup(i.map[k]);
      ASSERT_EQ(o.map_len, 0) << std::hex << cp;
      ASSERT_NE(o.cls, CharClass::Ignorable) << std::hex << cp;
    }
  }
  EXPECT_EQ(longest, 18u);  // U+FDFA ARABIC LIGATURE SALLALLAHOU ALAYHE WASALLAM
}

}  // namespace
}  // namespace simhash::unicode
