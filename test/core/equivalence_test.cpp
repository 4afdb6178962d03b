// The fast fingerprint path against the simple reference (reference.hpp), for every
// instruction set path this CPU has (isa.hpp), every shingle size and both cjk_bigrams
// settings, on random byte soup, random Unicode, the
// tricky texts, chunked at random boundaries, and on real text when it is available:
//   /usr/share/doc/*/copyright (English), and SIMHASH_CORPUS=DIR (DIR/{en,de,fr,zh,ja}/, as
//   made by scripts/make_corpus.sh) for the other languages. Missing corpora are skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/fingerprint.hpp"
#include "core/isa.hpp"
#include "reference.hpp"
#include "test_util.hpp"

namespace simhash {
namespace detail {
// How GoogleTest prints the parameter.
void PrintTo(Isa isa, std::ostream* os) { *os << isa_name(isa); }
}  // namespace detail

namespace {

namespace fs = std::filesystem;

std::string hex(std::optional<std::uint64_t> v) {
  if (!v) return "none";
  std::ostringstream s;
  s << std::hex << *v;
  return s.str();
}

std::string printable(const std::string& text) {
  std::ostringstream s;
  for (unsigned char c : text.substr(0, 200)) {
    if (c >= 0x20 && c < 0x7F) {
      s << c;
    } else {
      s << "\\x" << std::hex << (c >> 4) << (c & 15) << std::dec;
    }
  }
  if (text.size() > 200) s << "... (" << text.size() << " bytes)";
  return s.str();
}

// A chunk in a heap block of exactly its size, so that AddressSanitizer reports any read
// outside it (the fast paths read 8, 16 and 64 bytes at a time near chunk edges).
class ExactCopy {
 public:
  explicit ExactCopy(std::string_view s)
      : bytes_(new char[s.size() == 0 ? 1 : s.size()]), size_(s.size()) {
    std::memcpy(bytes_.get(), s.data(), s.size());
  }
  const char* data() const { return bytes_.get(); }
  std::size_t size() const { return size_; }

 private:
  std::unique_ptr<char[]> bytes_;
  std::size_t size_;
};

// Tokens of the production tokenizer fed in chunks (of at most max_chunk bytes, or whole
// when 0), through the generic token() interface.
std::vector<std::string> fast_tokens(const std::string& text, bool bigrams, std::mt19937_64& rng,
                                     std::size_t max_chunk) {
  test::CollectingSink sink;
  Tokenizer<test::CollectingSink> t(TokenizerOptions{bigrams});
  if (max_chunk == 0) {
    const ExactCopy whole(text);
    t.feed(whole.data(), whole.size(), sink);
  } else {
    for (auto chunk : test::random_chunks(text, rng, max_chunk)) {
      const ExactCopy c(chunk);
      t.feed(c.data(), c.size(), sink);
    }
  }
  t.finish(sink);
  return sink.tokens;
}

std::optional<std::uint64_t> fast_fingerprint(const std::string& text, const Options& o,
                                              std::mt19937_64& rng, std::size_t max_chunk) {
  Fingerprinter f(o);
  if (max_chunk == 0) {
    const ExactCopy whole(text);
    f.feed(whole.data(), whole.size());
  } else {
    for (auto chunk : test::random_chunks(text, rng, max_chunk)) {
      const ExactCopy c(chunk);
      f.feed(c.data(), c.size());
    }
  }
  return f.finish();
}

// Checks one text: tokens (whole and chunked) and fingerprints for every option, whole and
// chunked at random boundaries of at most max_chunk bytes.
void check_text(const std::string& text, std::mt19937_64& rng, std::size_t max_chunk,
                int max_shingle = kMaxShingle) {
  for (bool bigrams : {false, true}) {
    const std::vector<std::string> ref_tokens = reference::tokens(text, bigrams);
    ASSERT_EQ(fast_tokens(text, bigrams, rng, 0), ref_tokens)
        << "bigrams " << bigrams << " text " << printable(text);
    ASSERT_EQ(fast_tokens(text, bigrams, rng, max_chunk), ref_tokens)
        << "bigrams " << bigrams << " chunked, text " << printable(text);
    for (int shingle = 1; shingle <= max_shingle; ++shingle) {
      const auto expected = reference::fingerprint_of_features(
          reference::features(ref_tokens, static_cast<std::size_t>(shingle)));
      const Options o{shingle, bigrams};
      ASSERT_EQ(hex(fast_fingerprint(text, o, rng, 0)), hex(expected))
          << "shingle " << shingle << " bigrams " << bigrams << " text " << printable(text);
      ASSERT_EQ(hex(fast_fingerprint(text, o, rng, max_chunk)), hex(expected))
          << "shingle " << shingle << " bigrams " << bigrams << " chunked, text "
          << printable(text);
    }
  }
}

// Every test below runs once per instruction set path; paths this CPU lacks are skipped.
class Equivalence : public ::testing::TestWithParam<detail::Isa> {
 protected:
  void SetUp() override {
    if (static_cast<int>(GetParam()) > static_cast<int>(detail::best_isa())) {
      GTEST_SKIP() << "this CPU has no " << detail::isa_name(GetParam());
    }
    detail::limit_isa(GetParam());
    ASSERT_EQ(detail::active_isa(), GetParam());
  }
  void TearDown() override { detail::limit_isa(detail::Isa::kAvx512); }
};

INSTANTIATE_TEST_SUITE_P(Isa, Equivalence,
                         ::testing::Values(detail::Isa::kPortable, detail::Isa::kAvx2,
                                           detail::Isa::kAvx512),
                         [](const ::testing::TestParamInfo<detail::Isa>& info) {
                           return std::string(detail::isa_name(info.param));
                         });

TEST(EquivalenceReference, AgreesWithTheGoldenValues) {
  // The reference itself is pinned to the frozen format.
  struct Golden {
    const char* text;
    std::uint64_t fp;
  };
  const Golden golden[] = {
#include "golden_values.inc"
  };
  for (const Golden& g : golden)
    EXPECT_EQ(hex(reference::fingerprint(g.text, 3, false)), hex(g.fp));
}

TEST_P(Equivalence, TrickyTexts) {
  std::mt19937_64 rng(1);
  for (const std::string& text : test::tricky_texts()) {
    for (std::size_t max_chunk : {1, 2, 3, 7, 17, 64}) check_text(text, rng, max_chunk);
  }
}

// ASCII words of every length around the hash's 4/8/16-byte branches, the 64-byte scan
// blocks and the 128-byte cut, between every kind of neighbour: separators, non-ASCII
// letters, marks, CJK, invalid bytes, the start and end of the text.
TEST_P(Equivalence, AsciiWordsOfEveryLengthAndNeighbour) {
  const std::vector<std::string> neighbours = {"",
                                               " ",
                                               ",",
                                               "\n",
                                               "\xc3\xa9",
                                               "\xcc\x81",
                                               "\xe4\xb8\xad",
                                               "\xff",
                                               "\xc2\xad",
                                               "\xe3\x82\x99",
                                               "\xf0\x9f\x98\x80",
                                               "\xe4\xb8"};
  std::mt19937_64 rng(2);
  const std::string alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::vector<std::size_t> lengths;
  for (std::size_t len = 1; len <= 34; ++len) lengths.push_back(len);
  for (std::size_t len : {63, 64, 65, 96, 97, 127, 128, 129, 255, 256, 257, 300})
    lengths.push_back(len);
  for (std::size_t len : lengths) {
    std::string word;
    for (std::size_t i = 0; i < len; ++i) word += alnum[rng() % alnum.size()];
    for (const std::string& before : neighbours) {
      for (const std::string& after : neighbours) {
        check_text(before + word + after + " x " + word, rng, 1 + rng() % 40, 3);
      }
    }
  }
}

// Every kind of unit and neighbour the unspaced fast path tells apart, in every order of
// three: simple units (中, か), decomposed ones (が, ぱ, a Myanmar vowel), separators (、,
// ideographic space), marks of combining class 0, 1, 7, 8, 220 and 230 (which may attach to
// an open unit and reorder it), ignorables, ASCII, a Latin letter, invalid bytes.
TEST_P(Equivalence, UnspacedRunsNextToMarks) {
  const std::vector<std::string> pieces = {"\xe4\xb8\xad",  // 中 U+4E2D
                                           "\xe3\x81\x8b",  // か U+304B
                                           "\xe3\x81\x8c",  // が U+304C = か + U+3099 (ccc 8)
                                           "\xe3\x81\xb1",  // ぱ U+3071 = は + U+309A (ccc 8)
                                           "\xe1\x80\xa6",  // U+1026 = U+1025 + U+102E (ccc 0)
                                           "\xe3\x80\x81",  // 、 U+3001
                                           "\xe3\x80\x80",  // U+3000 ideographic space
                                           "\xe3\x82\x99",  // U+3099 voiced mark, ccc 8
                                           "\xcc\xb4",      // U+0334 overlay, ccc 1
                                           "\xe0\xa4\xbc",  // U+093C nukta, ccc 7
                                           "\xcc\xa3",      // U+0323 dot below, ccc 220
                                           "\xcc\x81",      // U+0301 acute, ccc 230
                                           "\xe0\xa4\xbe",  // U+093E vowel sign, Mc, ccc 0
                                           "\xe2\x80\x8d",  // U+200D zero width joiner, ignorable
                                           "a",
                                           " ",
                                           "\xc3\xa9",
                                           "\xff"};
  std::mt19937_64 rng(8);
  for (const std::string& a : pieces) {
    for (const std::string& b : pieces) {
      for (const std::string& c : pieces) {
        check_text(a + b + c, rng, 2, 3);
        check_text("\xe4\xb8\xad\xe3\x81\x8b" + a + b + c + "\xe4\xb8\xad", rng, 5, 2);
      }
    }
  }
}

TEST_P(Equivalence, RandomByteSoup) {
  std::vector<std::string> pieces = test::utf8_soup_pieces();
  // Words that take the ASCII fast paths, a voiced kana as base + mark, a halfwidth kana.
  for (const char* more :
       {"the ", "Quick ", "brown-fox, ", "\xe3\x81\x8b\xe3\x82\x99", "\xef\xbd\xb6"})
    pieces.emplace_back(more);
  std::mt19937_64 rng(3);
  for (int round = 0; round < 1500; ++round) {
    std::string text;
    const std::size_t n = rng() % 200;
    for (std::size_t i = 0; i < n; ++i) {
      if (rng() % 6 == 0) {
        text += static_cast<char>(rng() & 0xFF);
      } else {
        text += pieces[rng() % pieces.size()];
      }
    }
    check_text(text, rng, 1 + round % 37);
  }
}

// Long texts in the shapes of real ones (pages of ASCII words, Japanese and Chinese runs,
// accented Latin, mixed scripts, stray invalid bytes), so that whole 64-byte blocks of each
// kind take the block paths, next to each other and to the ends of chunks of every size.
TEST_P(Equivalence, LongTextsOfEveryScript) {
  const std::vector<std::string> words = {
      "the",
      "Quick",
      "brown",
      "fox",
      "a",
      "I",
      "extraordinarily",
      "0x7f",
      "ABCDEFGHIJKLMNOPQ",
      "caf\xc3\xa9",
      "Stra\xc3\x9f\x65",
      "\xc3\x9c\x62ung",
      "na\xc3\xafve",
      "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",              // 日本語
      "\xe3\x81\x8c\xe3\x81\x8b\xe3\x83\x97",              // がかプ
      "\xe4\xb8\xad\xe6\x96\x87\xe3\x80\x82",              // 中文。
      "\xef\xbc\xa6\xef\xbd\x89\xef\xbd\x8c\xef\xbd\x85",  // Ｆｉｌｅ
      "\xf0\x9f\x98\x80",
      "\xcc\x81",
      "\xff",
      "\xe4\xb8",
      "\xc2\xad"};
  const std::vector<std::string> separators = {" ",          " ", " ", "  ",           "\n", ", ",
                                               ".\n       ", "-", "(", "\xe3\x80\x81", ""};
  std::mt19937_64 rng(11);
  for (int round = 0; round < 300; ++round) {
    // A few words make up most of each text, as in any one language.
    std::vector<std::string> vocabulary;
    for (std::size_t n = 1 + rng() % 6; n > 0; --n)
      vocabulary.push_back(words[rng() % words.size()]);
    for (std::size_t n = rng() % 20; n > 0; --n) {
      std::string w;
      for (std::size_t len = 1 + rng() % (rng() % 4 == 0 ? 140 : 12); len > 0; --len)
        w += static_cast<char>((rng() % 2 ? 'a' : 'A') + rng() % 26);
      vocabulary.push_back(w);
    }
    std::string text;
    const std::size_t target = round % 10 == 0 ? 20000 : rng() % 3000;
    while (text.size() < target) {
      text += vocabulary[rng() % vocabulary.size()];
      text += separators[rng() % separators.size()];
    }
    const std::size_t max_chunk =
        std::vector<std::size_t>{7, 63, 64, 65, 200, 1000, 4096}[rng() % 7];
    check_text(text, rng, max_chunk, 3);
  }
}

// Long runs of CJK characters (the stretches of simple units the unspaced fast path hashes
// 8 at a time), cut by every kind of neighbour: voiced kana (base + mark), a mark after a
// unit, ideographic punctuation, ASCII, invalid and truncated sequences; in chunks of
// every size, so that stretches also end at chunk boundaries and in the middle of a
// character.
TEST_P(Equivalence, LongCjkRuns) {
  const std::vector<std::string> breaks = {"\xe3\x81\x8c",  // が
                                           "\xe3\x82\x99",  // U+3099 voiced mark
                                           "\xe3\x80\x81",  // 、
                                           "\xe3\x80\x80",  // ideographic space
                                           " ",
                                           "a1 ",
                                           "\xff",
                                           "\xe4\xb8",
                                           "\xcc\x81",
                                           "\xc3\xa9",
                                           "\xf0\x9f\x98\x80",
                                           "\n   "};
  std::mt19937_64 rng(12);
  for (int round = 0; round < 400; ++round) {
    std::string text;
    const std::size_t target = round % 20 == 0 ? 30000 : rng() % 2000;
    while (text.size() < target) {
      for (std::size_t n = rng() % (rng() % 3 == 0 ? 100 : 12); n > 0; --n) {
        // Han (simple units) and hiragana without voicing (simple units too)
        const char32_t cp = rng() % 4 == 0 ? 0x3042 + rng() % 8 : 0x4E00 + rng() % 3000;
        text += reference::encode(cp);
      }
      text += breaks[rng() % breaks.size()];
    }
    const std::size_t max_chunk = std::vector<std::size_t>{2, 23, 24, 25, 64, 384, 4096}[rng() % 7];
    check_text(text, rng, max_chunk, 3);
  }
}

// Random code points from every range the tokenizer treats differently, valid UTF-8.
TEST_P(Equivalence, RandomUnicode) {
  struct Range {
    char32_t lo, hi;
  };
  const std::vector<Range> ranges = {
      {0x20, 0x7E},       {0x00, 0x1F},       {0x80, 0x24F},      {0x300, 0x36F},
      {0x370, 0x52F},     {0x590, 0x6FF},     {0x900, 0xDFF},     {0xE00, 0xEFF},
      {0x1000, 0x109F},   {0x1100, 0x11FF},   {0x1AB0, 0x1DFF},   {0x1E00, 0x1FFF},
      {0x2000, 0x2BFF},   {0x3000, 0x30FF},   {0x3100, 0x33FF},   {0x4E00, 0x9FFF},
      {0xA000, 0xABFF},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFB00, 0xFDFF},
      {0xFE00, 0xFE0F},   {0xFE20, 0xFFEF},   {0x1D400, 0x1D7FF}, {0x1F000, 0x1FAFF},
      {0x20000, 0x2FFFF}, {0xE0000, 0xE01EF}, {0x0, 0x10FFFF}};
  std::mt19937_64 rng(4);
  for (int round = 0; round < 1500; ++round) {
    std::string text;
    const std::size_t n = rng() % 150;
    for (std::size_t i = 0; i < n; ++i) {
      const Range& r = ranges[rng() % ranges.size()];
      char32_t cp = r.lo + static_cast<char32_t>(rng() % (r.hi - r.lo + 1));
      if (cp >= 0xD800 && cp <= 0xDFFF) cp = 'x';
      text += reference::encode(cp);
    }
    check_text(text, rng, 1 + round % 53);
  }
}

// The stages benchmarks time (run_stage) compute what the reference says they do.
TEST_P(Equivalence, StagesAgreeWithTheReference) {
  std::vector<std::string> texts = test::tricky_texts();
  std::mt19937_64 rng(7);
  const std::string_view alphabet = "the Quick brown fox \xe4\xb8\xad\xe6\x96\x87 caf\xc3\xa9 x";
  for (int i = 0; i < 200; ++i) {
    std::string t;
    for (std::size_t n = rng() % 400; n > 0; --n) t += alphabet[rng() % alphabet.size()];
    texts.push_back(t);
  }
  for (const std::string& text : texts) {
    for (int shingle = 1; shingle <= 3; ++shingle) {
      const Options o{shingle, false};
      const std::vector<std::string> tokens = reference::tokens(text, false);
      std::uint64_t lengths = 0, hashes = 0, features = 0;
      for (const std::string& t : tokens) {
        lengths += t.size();
        hashes ^= XXH3_64bits_withSeed(t.data(), t.size(), reference::kSeed);
      }
      for (std::uint64_t f : reference::features(tokens, static_cast<std::size_t>(shingle))) {
        features ^= f;
      }
      const ExactCopy c(text);
      using detail::Stage;
      EXPECT_EQ(detail::run_stage(Stage::kTokenize, o, c.data(), c.size()), lengths);
      EXPECT_EQ(detail::run_stage(Stage::kHash, o, c.data(), c.size()), hashes);
      EXPECT_EQ(detail::run_stage(Stage::kShingle, o, c.data(), c.size()), features);
      EXPECT_EQ(detail::run_stage(Stage::kCount, o, c.data(), c.size()),
                reference::fingerprint(text, static_cast<std::size_t>(shingle), false).value_or(0));
    }
  }
}

std::string read_file(const fs::path& p, std::size_t max_bytes) {
  std::ifstream in(p, std::ios::binary);
  std::string s(max_bytes, '\0');
  in.read(s.data(), static_cast<std::streamsize>(max_bytes));
  s.resize(static_cast<std::size_t>(in.gcount()));
  return s;
}

// Up to max_files files of a directory (sorted), or the copyright files of /usr/share/doc.
std::vector<fs::path> sample_files(const fs::path& dir, std::size_t max_files, bool copyright) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const fs::path p = copyright ? e.path() / "copyright" : e.path();
    if (fs::is_regular_file(p, ec)) files.push_back(p);
  }
  std::sort(files.begin(), files.end());
  if (files.size() > max_files) {
    // an even spread over the sorted list
    std::vector<fs::path> spread;
    for (std::size_t i = 0; i < max_files; ++i)
      spread.push_back(files[i * files.size() / max_files]);
    files = spread;
  }
  return files;
}

void check_files(const std::vector<fs::path>& files, std::mt19937_64& rng) {
  for (const fs::path& p : files) {
    SCOPED_TRACE(p.string());
    const std::string text = read_file(p, 256 * 1024);
    check_text(text, rng, 1 + rng() % 5000);
  }
}

TEST_P(Equivalence, RealEnglishText) {
  std::mt19937_64 rng(5);
  const auto files = sample_files("/usr/share/doc", 60, true);
  if (files.empty()) GTEST_SKIP() << "no /usr/share/doc/*/copyright files";
  check_files(files, rng);
}

TEST_P(Equivalence, RealCorpusInEveryLanguage) {
  const char* dir = std::getenv("SIMHASH_CORPUS");
  if (dir == nullptr || !fs::is_directory(dir)) {
    GTEST_SKIP() << "set SIMHASH_CORPUS to a corpus from scripts/make_corpus.sh to run this";
  }
  std::mt19937_64 rng(6);
  std::size_t languages = 0;
  for (const auto& lang : fs::directory_iterator(dir)) {
    if (!lang.is_directory()) continue;
    SCOPED_TRACE(lang.path().string());
    check_files(sample_files(lang.path(), 25, false), rng);
    ++languages;
  }
  EXPECT_GT(languages, 0u);
}

}  // namespace
}  // namespace simhash
