#include "core/text_options.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/char_splitter.hpp"
#include "core/fingerprint.hpp"
#include "core/mix.hpp"
#include "core/unicode.hpp"
#include "core/utf8.hpp"
#include "test_util.hpp"

namespace simhash {
namespace {

// Runs a TextFingerprinter the way the PostgreSQL glue does: chunks no larger than the
// feed limit (and no larger than max_chunk), the buffer growing when the limit gets small.
struct Result {
  std::optional<std::uint64_t> fp;
  std::uint64_t features = 0;
  std::vector<std::uint64_t> buffer;
};

Result run(std::string_view text, const TextOptions& o, std::size_t max_chunk = SIZE_MAX,
           const DfTable* df = nullptr, bool collect = false) {
  Result r;
  TextFingerprinter f(o, collect);
  if (f.needs_buffer()) {
    r.buffer.resize(f.capacity_for(1));
    f.set_buffer(r.buffer.data(), r.buffer.size());
  }
  std::size_t done = 0;
  while (done < text.size()) {
    const std::size_t want = std::min(text.size() - done, max_chunk);
    std::size_t n = std::min(want, f.feed_limit());
    if (n < want) {
      r.buffer.resize(std::max(2 * r.buffer.size(), f.capacity_for(want)));
      f.set_buffer(r.buffer.data(), r.buffer.size());
      n = want;
    }
    f.feed(text.data() + done, n);
    done += n;
  }
  r.fp = f.fingerprint(df);
  r.features = f.features();
  return r;
}

TextOptions opts(TokenizerKind t, int n = 0, Weighting w = Weighting::Tf, std::int64_t min = 1) {
  TextOptions o;
  o.tokenizer = t;
  o.n = n;
  o.weighting = w;
  o.min_features = min;
  return o;
}

TEST(TextOptions, NamesDefaultsAndErrors) {
  EXPECT_EQ(parse_tokenizer("word"), TokenizerKind::Word);
  EXPECT_EQ(parse_tokenizer("char"), TokenizerKind::Char);
  EXPECT_STREQ(tokenizer_name(TokenizerKind::Char), "char");
  EXPECT_EQ(default_n(TokenizerKind::Word), Options{}.shingle);
  EXPECT_EQ(default_n(TokenizerKind::Char), 5);
  try {
    parse_tokenizer("words");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "unknown tokenizer \"words\"; allowed values are 'word', 'char'");
  }
  EXPECT_THROW(TextFingerprinter(opts(TokenizerKind::Word, -1)), std::invalid_argument);
  EXPECT_THROW(TextFingerprinter(opts(TokenizerKind::Word, kMaxShingle + 1)),
               std::invalid_argument);
  EXPECT_THROW(TextFingerprinter(opts(TokenizerKind::Word, 3, Weighting::Tf, 0)),
               std::invalid_argument);
  try {
    validate(opts(TokenizerKind::Char, 9));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "n must be between 1 and 8 (or 0 for the tokenizer's default), got 9");
  }
  try {
    validate(opts(TokenizerKind::Char, 2, Weighting::Tf, -5));
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "min_features must be at least 1, got -5");
  }
}

TEST(TextOptions, WordTfIsTheDefaultFingerprint) {
  std::mt19937_64 rng(1);
  for (const std::string& text : test::tricky_texts()) {
    EXPECT_EQ(run(text, TextOptions{}).fp, fingerprint(text)) << text;
    for (int n = 1; n <= kMaxShingle; ++n) {
      const auto want = fingerprint(text, Options{n, false});
      ASSERT_EQ(run(text, opts(TokenizerKind::Word, n)).fp, want) << n << " " << text;
      // The collecting path (sort, count, integer weights) gives the same bits.
      ASSERT_EQ(run(text, opts(TokenizerKind::Word, n), 1 + rng() % 7, nullptr, true).fp, want)
          << n << " " << text;
    }
  }
}

TEST(TextOptions, CollectingPathOnRealisticText) {
  // Long enough for many repeated features and counters far from ties.
  std::string text;
  std::mt19937_64 rng(4);
  const char* words[] = {"the",    "software", "license", "free", "copy", "中",         "文",
                         "Straße", "café",     "of",      "and",  "to",   "permission", "notice"};
  for (int i = 0; i < 3000; ++i) {
    text += words[rng() % std::size(words)];
    text += rng() % 5 ? " " : ", ";
  }
  for (int n = 1; n <= 4; ++n) {
    const auto want = fingerprint(text, Options{n, false});
    EXPECT_EQ(run(text, opts(TokenizerKind::Word, n), 100, nullptr, true).fp, want);
  }
}

// Reference for the char tokenizer: the tokens glued together, decoded into code points,
// each code point with the marks after it one character, n-character shingles hashed as
// the default fingerprint hashes token shingles.
std::vector<std::uint64_t> reference_char_features(std::string_view text, int n) {
  std::string glued;
  for (const auto& t : test::tokenize(text, false)) glued += t;
  std::vector<std::string> chars;
  for (std::size_t i = 0; i < glued.size();) {
    const auto* p = reinterpret_cast<const unsigned char*>(glued.data()) + i;
    const unsigned k = utf8::sequence_length(p[0]);
    const char32_t cp = utf8::decode(p, k);
    const bool mark = unicode::lookup(cp).cls == unicode::CharClass::Mark;
    if (mark && !chars.empty()) {
      chars.back().append(glued, i, k);
    } else {
      chars.emplace_back(glued, i, k);
    }
    i += k;
  }
  std::vector<std::uint64_t> h;
  for (const auto& c : chars) h.push_back(hash_bytes(c.data(), c.size()));
  std::vector<std::uint64_t> features;
  if (h.empty()) return features;
  if (h.size() < static_cast<std::size_t>(n)) {
    features.push_back(combine(h.data(), static_cast<unsigned>(h.size())));
    return features;
  }
  for (std::size_t i = 0; i + n <= h.size(); ++i) {
    features.push_back(n == 1 ? h[i] : combine(h.data() + i, static_cast<unsigned>(n)));
  }
  return features;
}

std::uint64_t textbook(const std::vector<std::uint64_t>& features) {
  std::int64_t counter[64] = {};
  std::uint64_t sum = 0;
  for (auto f : features) {
    for (int i = 0; i < 64; ++i) counter[i] += ((f >> i) & 1) ? 1 : -1;
    sum += f;
  }
  const std::uint64_t ties = mix64(sum);
  std::uint64_t fp = 0;
  for (int i = 0; i < 64; ++i) {
    if (counter[i] > 0 || (counter[i] == 0 && ((ties >> i) & 1))) fp |= std::uint64_t{1} << i;
  }
  return fp;
}

TEST(CharSplitter, Characters) {
  auto split = [](const std::string& token) {
    std::vector<std::string> out;
    for_each_char(reinterpret_cast<const unsigned char*>(token.data()), token.size(),
                  [&](const unsigned char* b, std::size_t n) {
                    out.emplace_back(reinterpret_cast<const char*>(b), n);
                  });
    return out;
  };
  EXPECT_EQ(split("abc"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split(""), (std::vector<std::string>{}));
  // e + combining acute is one character; so is a Devanagari letter with its vowel sign
  EXPECT_EQ(split("cafe\xcc\x81x"), (std::vector<std::string>{"c", "a", "f", "e\xcc\x81", "x"}));
  EXPECT_EQ(split("\xe0\xa4\x95\xe0\xa4\xbf\xe0\xa4\xa4"),  // कित
            (std::vector<std::string>{"\xe0\xa4\x95\xe0\xa4\xbf", "\xe0\xa4\xa4"}));
  EXPECT_EQ(split("\xe4\xb8\xad\xe6\x96\x87"),
            (std::vector<std::string>{"\xe4\xb8\xad", "\xe6\x96\x87"}));
  // a token that starts with marks (a long word cut inside them)
  EXPECT_EQ(split("\xcc\x81\xcc\x81z"), (std::vector<std::string>{"\xcc\x81\xcc\x81", "z"}));
}

TEST(TextOptions, CharTokenizerMatchesTheReference) {
  std::mt19937_64 rng(2);
  auto texts = test::tricky_texts();
  texts.push_back("The quick brown fox, Straße und Ｆｉｌｅ; 中文测试 日本語のテキスト ไทย");
  for (const std::string& text : texts) {
    for (int n = 1; n <= 6; ++n) {
      const auto features = reference_char_features(text, n);
      const auto want = features.empty() ? std::nullopt : std::optional(textbook(features));
      const Result whole = run(text, opts(TokenizerKind::Char, n));
      ASSERT_EQ(whole.fp, want) << n << " " << text;
      ASSERT_EQ(whole.features, features.size());
      // the streaming path (unit adds) and the collecting one (sort, count) agree
      const Result collected = run(text, opts(TokenizerKind::Char, n), 5, nullptr, true);
      ASSERT_EQ(collected.fp, want) << n << " " << text;
      ASSERT_EQ(collected.features, features.size());
      for (int round = 0; round < 5; ++round) {
        ASSERT_EQ(run(text, opts(TokenizerKind::Char, n), 1 + rng() % 9).fp, want) << text;
      }
    }
  }
}

TEST(TextOptions, CharIgnoresSpacesAndPunctuationButNotOrder) {
  const TextOptions o = opts(TokenizerKind::Char);
  EXPECT_EQ(run("hello world", o).fp, run("Hello-World!", o).fp);
  EXPECT_EQ(run("hello world", o).fp, run("helloworld", o).fp);
  EXPECT_NE(run("hello world", o).fp, run("world hello", o).fp);
  // Chinese: character 5-grams
  EXPECT_EQ(run("中文文本没", o).features, 1u);
  EXPECT_EQ(run("中文文本没有空格", o).features, 4u);
  EXPECT_FALSE(run("?! ...", o).fp.has_value());
}

TEST(TextOptions, WeightingsMatchTheReference) {
  for (const std::string& text : test::tricky_texts()) {
    for (TokenizerKind t : {TokenizerKind::Word, TokenizerKind::Char}) {
      for (Weighting w : {Weighting::Binary, Weighting::Log}) {
        const TextOptions o = opts(t, 2, w);
        std::vector<std::uint64_t> f;
        if (t == TokenizerKind::Char) {
          f = reference_char_features(text, 2);
        } else {
          // word bigrams through the collecting path's own shingler are checked against
          // the default fingerprint above; here: its features, then the weighting
          TextFingerprinter tf(opts(t, 2), true);
          std::vector<std::uint64_t> buf(tf.capacity_for(text.size()));
          tf.set_buffer(buf.data(), buf.size());
          tf.feed(text.data(), text.size());
          std::vector<std::uint64_t> counts(buf.size());
          const std::size_t d = tf.distinct(counts.data(), counts.size());
          for (std::size_t i = 0; i < d; ++i) f.insert(f.end(), counts[i], buf[i]);
        }
        auto copy = f;
        const auto want = weighted_fingerprint(copy.data(), copy.size(), w);
        EXPECT_EQ(run(text, o, 3).fp, want) << weighting_name(w) << " " << text;
      }
    }
  }
}

TEST(TextOptions, MinFeatures) {
  const std::string text = "one two three four five";  // 3 word trigrams
  for (Weighting w : {Weighting::Tf, Weighting::Binary}) {
    EXPECT_TRUE(run(text, opts(TokenizerKind::Word, 3, w, 3)).fp.has_value());
    EXPECT_FALSE(run(text, opts(TokenizerKind::Word, 3, w, 4)).fp.has_value());
    EXPECT_EQ(run(text, opts(TokenizerKind::Word, 3, w, 3)).features, 3u);
  }
  // a text shorter than n has one feature
  EXPECT_TRUE(run("hello", opts(TokenizerKind::Word, 3, Weighting::Tf, 1)).fp.has_value());
  EXPECT_FALSE(run("hello", opts(TokenizerKind::Word, 3, Weighting::Tf, 2)).fp.has_value());
  EXPECT_FALSE(run("", opts(TokenizerKind::Word)).fp.has_value());
}

TEST(TextOptions, IdfWeighting) {
  const std::string text = "common common common words and one rare word";
  const TextOptions o = opts(TokenizerKind::Word, 1, Weighting::Idf);
  // Without statistics (empty table) IDF is plain term frequency.
  const DfTable empty{nullptr, 0, 0};
  EXPECT_EQ(run(text, o, SIZE_MAX, &empty).fp, run(text, opts(TokenizerKind::Word, 1)).fp);
  // "common" in every document: it no longer dominates.
  std::vector<DfEntry> t = {{hash_bytes("common", 6), 1000}};
  prepare_df_table(t.data(), t.size(), 1000);
  const DfTable df{t.data(), t.size(), 1000};
  EXPECT_NE(run(text, o, SIZE_MAX, &df).fp, run(text, o, SIZE_MAX, &empty).fp);
  EXPECT_THROW(run(text, o), std::invalid_argument);  // no table
}

TEST(TextOptions, DistinctFeatures) {
  TextFingerprinter f(opts(TokenizerKind::Word, 1), true);
  std::vector<std::uint64_t> buf(f.capacity_for(100));
  f.set_buffer(buf.data(), buf.size());
  const std::string text = "b a b c b a";
  f.feed(text.data(), text.size());
  std::vector<std::uint64_t> counts(f.size());  // 5: the last word is still pending
  EXPECT_THROW(f.distinct(counts.data(), counts.size()), std::invalid_argument);
  counts.resize(buf.size());
  ASSERT_EQ(f.distinct(counts.data(), counts.size()), 3u);
  EXPECT_EQ(f.features(), 6u);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> got,
      want = {{hash_bytes("a", 1), 2}, {hash_bytes("b", 1), 3}, {hash_bytes("c", 1), 1}};
  for (int i = 0; i < 3; ++i) got.emplace_back(buf[i], counts[i]);
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
}

TEST(TextOptions, ReadyMadeTokens) {
  // Normalized tokens given one by one shingle like the text they come from.
  for (int n = 1; n <= 4; ++n) {
    TextFingerprinter f(opts(TokenizerKind::Word, n), true);
    std::vector<std::uint64_t> buf(16);
    f.set_buffer(buf.data(), buf.size());
    for (const char* t : {"quick", "brown", "fox", "jumps"}) {
      f.token(reinterpret_cast<const unsigned char*>(t), std::strlen(t));
    }
    EXPECT_EQ(f.fingerprint(), fingerprint("Quick brown FOX jumps!", Options{n, false}));
  }
  TextFingerprinter fast(TextOptions{});
  EXPECT_THROW(fast.token(reinterpret_cast<const unsigned char*>("x"), 1), std::logic_error);
  TextFingerprinter small(opts(TokenizerKind::Word, 1), true);
  std::vector<std::uint64_t> buf(2);
  small.set_buffer(buf.data(), buf.size());
  EXPECT_THROW(small.token(reinterpret_cast<const unsigned char*>("x"), 1), std::logic_error);
}

TEST(TextOptions, FeedingBeyondTheLimitIsRefused) {
  TextFingerprinter f(opts(TokenizerKind::Char, 0, Weighting::Binary), false);
  EXPECT_EQ(f.feed_limit(), 0u);  // no buffer yet
  std::vector<std::uint64_t> buf(f.capacity_for(10));
  f.set_buffer(buf.data(), buf.size());
  EXPECT_EQ(f.feed_limit(), 10u);
  EXPECT_EQ(buf.size(), 2 * kFeatureSlack + 10 * kMaxFeaturesPerByte);
  EXPECT_THROW(f.feed("01234567890", 11), std::logic_error);
  EXPECT_NO_THROW(f.feed("01234 6789", 10));
  EXPECT_EQ(f.size(), 1u);  // the first word's 5-gram; the second word is pending
  EXPECT_THROW(f.set_buffer(buf.data(), 0), std::logic_error);  // smaller than its contents
  EXPECT_EQ(TextFingerprinter(TextOptions{}).feed_limit(), SIZE_MAX);
  EXPECT_EQ(TextFingerprinter(opts(TokenizerKind::Char)).feed_limit(), SIZE_MAX);  // streams
  EXPECT_FALSE(TextFingerprinter(opts(TokenizerKind::Char)).needs_buffer());
  EXPECT_TRUE(TextFingerprinter(opts(TokenizerKind::Char), true).needs_buffer());
}

TEST(TextOptions, FeatureBoundHolds) {
  // The bound behind feed_limit(): no code point normalizes to more than
  // kMaxFeaturesPerByte code points.
  unsigned longest = 0;
  for (char32_t cp = 0; cp <= 0x10FFFF; ++cp)
    longest = std::max<unsigned>(longest, unicode::lookup(cp).map_len);
  EXPECT_LE(longest, kMaxFeaturesPerByte);
  EXPECT_EQ(longest, 18u);  // U+FDFA
  // Texts that expand the most, fed at exactly the limit with an exactly sized buffer: the
  // collector never overflows (it would make fingerprint() throw).
  std::string worst;
  for (int i = 0; i < 200; ++i) worst += "\xef\xb7\xba";  // U+FDFA, 18 code points, 4 words
  std::string fractions;
  for (int i = 0; i < 300; ++i) fractions += "\xe3\x8f\xbf\xe2\x85\xaf\xc2\xbd";  // ㏿ Ⅿ ½
  std::string long_words(5000, 'x');
  for (int i = 0; i < 100; ++i) long_words += " \xe4\xb8\xad" + std::string(127, 'y');
  for (const std::string* text : {&worst, &fractions, &long_words}) {
    for (TokenizerKind t : {TokenizerKind::Word, TokenizerKind::Char}) {
      for (int n : {1, 3}) {
        TextFingerprinter f(opts(t, n, Weighting::Binary));
        std::vector<std::uint64_t> buf;
        std::size_t done = 0;
        std::mt19937_64 rng(n);
        while (done < text->size()) {
          const std::size_t want = std::min<std::size_t>(text->size() - done, 1 + rng() % 40);
          if (f.feed_limit() < want) {
            std::vector<std::uint64_t> bigger(f.capacity_for(want));
            std::copy(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(f.size()),
                      bigger.begin());
            buf.swap(bigger);
            f.set_buffer(buf.data(), buf.size());  // exactly the capacity asked for
          }
          f.feed(text->data() + done, want);
          done += want;
        }
        EXPECT_NO_THROW(f.fingerprint()) << tokenizer_name(t) << n;
      }
    }
  }
}

TEST(TextOptions, GoldenValues) {
  // Fingerprints with options are an on-disk format too.
  const std::string fox = "The quick brown fox jumps over the lazy dog";
  const std::string zh = "自由软件基金会发布了新版本的通用公共许可证";
  struct G {
    const std::string* text;
    TextOptions o;
    std::uint64_t fp;
  } golden[] = {
      {&fox, opts(TokenizerKind::Word), 0x1426fdb77a909a7dULL},  // = simhash(text)
      {&fox, opts(TokenizerKind::Word, 1), 0x45599b4fe8cb2453ULL},
      {&fox, opts(TokenizerKind::Char), 0x9714cb1b86828a03ULL},
      {&fox, opts(TokenizerKind::Char, 4), 0x01dcae1b8e5c2c70ULL},
      {&fox, opts(TokenizerKind::Word, 2, Weighting::Binary), 0xb0d5207cb4858449ULL},
      {&fox, opts(TokenizerKind::Word, 1, Weighting::Log), 0x45599b4fe8cb2453ULL},
      {&zh, opts(TokenizerKind::Word), 0xf22db5253e12063eULL},
      {&zh, opts(TokenizerKind::Char), 0xb89e9e784a33b27dULL},
      {&zh, opts(TokenizerKind::Char, 2, Weighting::Log), 0x78c27371833e7b34ULL},
  };
  for (const G& g : golden) {
    const auto fp = run(*g.text, g.o).fp;
    ASSERT_TRUE(fp.has_value());
    EXPECT_EQ(*fp, g.fp) << tokenizer_name(g.o.tokenizer) << " n=" << g.o.n << " "
                         << weighting_name(g.o.weighting) << " " << *g.text << "\nactual: 0x"
                         << std::hex << *fp;
  }
}

}  // namespace
}  // namespace simhash
