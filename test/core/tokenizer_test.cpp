#include "core/tokenizer.hpp"

#include <gtest/gtest.h>

#include <random>

#include "test_util.hpp"

namespace simhash {
namespace {

using test::tokenize;
using V = std::vector<std::string>;

TEST(Tokenizer, AsciiWordsAreLowercasedAndPunctuationSeparates) {
  EXPECT_EQ(tokenize("Hello, World!  foo_bar x2 3.14"),
            (V{"hello", "world", "foo", "bar", "x2", "3", "14"}));
}

TEST(Tokenizer, NothingToTokenize) {
  EXPECT_TRUE(tokenize("").empty());
  EXPECT_TRUE(tokenize(" \t\r\n ").empty());
  EXPECT_TRUE(tokenize("... --- !!! $ + =").empty());
}

TEST(Tokenizer, CaseFoldingIsFullAndLocaleIndependent) {
  // ß folds to ss; dotted capital I folds to i + combining dot above.
  EXPECT_EQ(tokenize("Stra\xc3\x9f"
                     "e STRASSE"),
            (V{"strasse", "strasse"}));
  EXPECT_EQ(tokenize("\xc4\xb0stanbul"), (V{"i\xcc\x87stanbul"}));
  EXPECT_EQ(tokenize("\xd0\x96\xd0\x98\xd0\x97\xd0\x9d\xd0\xac"),  // ЖИЗНЬ
            (V{"\xd0\xb6\xd0\xb8\xd0\xb7\xd0\xbd\xd1\x8c"}));      // жизнь
}

TEST(Tokenizer, PrecomposedAndCombiningAccentsAgree) {
  const V a = tokenize("caf\xc3\xa9");
  const V b = tokenize("cafe\xcc\x81");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, (V{"cafe\xcc\x81"}));
}

TEST(Tokenizer, CombiningMarksAreReorderedCanonically) {
  // dot below (ccc 220) before acute (ccc 230), whatever order they were typed in
  EXPECT_EQ(tokenize("a\xcc\x81\xcc\xa3"), (V{"a\xcc\xa3\xcc\x81"}));
  EXPECT_EQ(tokenize("a\xcc\xa3\xcc\x81"), (V{"a\xcc\xa3\xcc\x81"}));
}

TEST(Tokenizer, CompatibilityForms) {
  EXPECT_EQ(tokenize("\xef\xbc\xa6\xef\xbd\x89\xef\xbd\x8c\xef\xbd\x85"), (V{"file"}));  // Ｆｉｌｅ
  EXPECT_EQ(tokenize("\xef\xac\x81le"), (V{"file"}));                                    // ﬁle
  EXPECT_EQ(tokenize("\xe2\x91\xa0"), (V{"1"}));                                         // ①
}

TEST(Tokenizer, IgnorablesDoNotSplitWords) {
  EXPECT_EQ(tokenize("soft\xc2\xadhyphen"), (V{"softhyphen"}));
  EXPECT_EQ(tokenize("zero\xe2\x80\x8bwidth"), (V{"zerowidth"}));
}

TEST(Tokenizer, ChineseBecomesCharacterBigrams) {
  // 中文测试 -> 中文 文测 测试
  EXPECT_EQ(
      tokenize("\xe4\xb8\xad\xe6\x96\x87\xe6\xb5\x8b\xe8\xaf\x95"),
      (V{"\xe4\xb8\xad\xe6\x96\x87", "\xe6\x96\x87\xe6\xb5\x8b", "\xe6\xb5\x8b\xe8\xaf\x95"}));
  // a run of one character is a token by itself; Latin words interrupt runs
  EXPECT_EQ(tokenize("\xe4\xb8\xad abc\xe6\x96\x87"), (V{"\xe4\xb8\xad", "abc", "\xe6\x96\x87"}));
  EXPECT_EQ(tokenize("\xe4\xb8\xad\xe6\x96\x87", false), (V{"\xe4\xb8\xad", "\xe6\x96\x87"}));
}

TEST(Tokenizer, JapaneseVoicedKanaKeepTheirMark) {
  // が (precomposed) and か + combining voiced mark give the same unit
  const V a = tokenize("\xe3\x81\x8c\xe3\x81\x82");
  const V b = tokenize("\xe3\x81\x8b\xe3\x82\x99\xe3\x81\x82");
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, (V{"\xe3\x81\x8b\xe3\x82\x99\xe3\x81\x82"}));
  // halfwidth katakana fold to fullwidth: ｶ -> カ
  EXPECT_EQ(tokenize("\xef\xbd\xb6"), (V{"\xe3\x82\xab"}));
}

TEST(Tokenizer, EmojiAreUnitsAndVariationSelectorsVanish) {
  EXPECT_EQ(tokenize("ok \xe2\x9d\xa4\xef\xb8\x8f"), (V{"ok", "\xe2\x9d\xa4"}));
}

TEST(Tokenizer, InvalidUtf8SeparatesTokens) {
  EXPECT_EQ(tokenize("ab\xff"
                     "cd"),
            (V{"ab", "cd"}));
  EXPECT_EQ(tokenize("ab\xe4\xb8"
                     "cd"),
            (V{"ab", "cd"}));  // truncated sequence
  EXPECT_EQ(tokenize("ab\xed\xa0\x80"
                     "cd"),
            (V{"ab", "cd"}));  // surrogate
  EXPECT_EQ(tokenize("ab\xc0\xaf"
                     "cd"),
            (V{"ab", "cd"}));                    // overlong
  EXPECT_EQ(tokenize("ab\xe4\xb8"), (V{"ab"}));  // truncated at the end
}

TEST(Tokenizer, LongWordsAreCut) {
  const V t = tokenize(std::string(300, 'x'));
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].size(), kMaxTokenBytes);
  EXPECT_EQ(t[1].size(), kMaxTokenBytes);
  EXPECT_EQ(t[2].size(), 300 - 2 * kMaxTokenBytes);
}

TEST(Tokenizer, ChunkingAnywhereGivesTheSameTokens) {
  std::mt19937_64 rng(42);
  for (const std::string& text : test::tricky_texts()) {
    const V whole = tokenize(text);
    for (int round = 0; round < 50; ++round) {
      test::CollectingSink sink;
      Tokenizer<test::CollectingSink> t(TokenizerOptions{true});
      for (auto chunk : test::random_chunks(text, rng, 1 + round % 7)) {
        t.feed(chunk.data(), chunk.size(), sink);
      }
      t.finish(sink);
      ASSERT_EQ(sink.tokens, whole) << "text: " << text;
    }
  }
}

}  // namespace
}  // namespace simhash

namespace simhash {
namespace {

// Random byte soup built from pieces of valid and broken UTF-8: the tokenizer must never
// read or write out of bounds (the ASan build runs this too), every token must be valid
// UTF-8 within the size limit, and chunking must not change the tokens.
TEST(Tokenizer, RandomBytesAreSafeAndChunkingInvariant) {
  const std::vector<std::string> pieces = test::utf8_soup_pieces();
  std::mt19937_64 rng(99);
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    const std::size_t n = rng() % 120;
    for (std::size_t i = 0; i < n; ++i) {
      if (rng() % 8 == 0) {
        text += static_cast<char>(rng() & 0xFF);
      } else {
        text += pieces[rng() % pieces.size()];
      }
    }
    const std::vector<std::string> whole = test::tokenize(text);
    for (const std::string& t : whole) {
      ASSERT_FALSE(t.empty());
      ASSERT_LE(t.size(), 2 * kMaxUnitBytes);
      std::size_t i = 0;
      while (i < t.size()) {
        const unsigned k = utf8::sequence_length(static_cast<unsigned char>(t[i]));
        ASSERT_NE(k, 0u);
        ASSERT_LE(i + k, t.size());
        const char32_t cp = utf8::decode(reinterpret_cast<const unsigned char*>(t.data() + i), k);
        if (k > 1) {
          ASSERT_LE(cp, 0x10FFFFu);
        }
        i += k;
      }
    }
    test::CollectingSink sink;
    Tokenizer<test::CollectingSink> tok(TokenizerOptions{true});
    for (auto chunk : test::random_chunks(text, rng, 1 + round % 23)) {
      tok.feed(chunk.data(), chunk.size(), sink);
    }
    tok.finish(sink);
    ASSERT_EQ(sink.tokens, whole) << round;
  }
}

}  // namespace
}  // namespace simhash
