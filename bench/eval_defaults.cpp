// Chooses the default fingerprint recipe, and evaluates the fingerprint options, with data.
//
//   eval_defaults CORPUS_DIR [--docs-per-lang N] [--seed S] [--threshold J]
//                 [--truth-shingle N] [--truth-unit token|char] [--max-k K]
//                 [--candidates defaults|options] [--threads T]
//
// CORPUS_DIR holds one subdirectory of plain UTF-8 text files per language, as written by
// scripts/make_corpus.sh. For every language the program
//
//  1. loads up to N documents (files sorted by name; files with fewer than kMinTokens tokens
//     and exact duplicates of an earlier file are skipped) and derives synthetic
//     near-duplicates from each: one that changes only case, punctuation and white space
//     (including re-wrapped lines inside CJK text), and one per edit rate in kEditRates,
//     which deletes, inserts or substitutes that share of the document's edit units (words
//     between white space; single characters in CJK, Thai and similar scripts; inserted and
//     substituted units are drawn from all units of the language's documents);
//  2. computes the ground truth for every pair of texts of the language: the exact Jaccard
//     similarity of the sets of token shingles (--truth-shingle tokens, default 3) where
//     the tokens are those of the project's tokenizer without CJK bigrams, i.e. with the
//     same normalization for every candidate (--truth-unit char: shingles of the
//     characters of those tokens instead, the features of the char tokenizer); a pair is a
//     near duplicate when its similarity is at least the threshold;
//  3. computes one 64-bit fingerprint per text and candidate recipe (see candidates();
//     --candidates options evaluates the tokenizers and weightings of simhash(text, ...)
//     through the code the extension runs, with document frequencies for the IDF
//     candidates counted over all texts of the language) and, for every Hamming distance
//     limit k = 0..--max-k, counts true positives, false positives and false negatives over
//     all pairs, both strictly and leaving out "near misses" (similarity just below the
//     threshold, see kNearMiss);
//
// and prints a Markdown report to stdout. With --candidates options the report also
// compares each candidate with the classic recipe at equal precision: for every k at which
// the classic recipe calls some pair a near duplicate, its precision P and recall R, and
// the best recall the candidate reaches at any k with precision >= P. The report depends only on
// the corpus and the options, not on the number of threads or the machine; progress and timings go
// to stderr.
//
// Random numbers come from std::mt19937_64, whose output the C++ standard fixes, through our
// own distributions (the standard's distributions differ between library implementations).
#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/bit_counter.hpp"
#include "core/char_splitter.hpp"
#include "core/fingerprint.hpp"
#include "eval_common.hpp"
#include "core/hamming.hpp"
#include "core/text_options.hpp"
#include "core/tokenizer.hpp"
#include "core/unicode.hpp"
#include "core/utf8.hpp"

namespace fs = std::filesystem;

namespace {

using eval::next_code_point;
using eval::parse_uint;
using eval::read_file;
using eval::usage_error;

// ---------------------------------------------------------------------------------------
// Parameters

constexpr std::array<double, 5> kEditRates = {0.02, 0.05, 0.10, 0.20, 0.35};
// Variant 0 is the original, 1 the case/punctuation/white-space variant, 2.. the edits.
constexpr std::size_t kVariantsPerDoc = 2 + kEditRates.size();
// Largest Hamming distance limit reported (--max-k).
int g_max_k = 12;
constexpr std::size_t kMinTokens = 50;
// Pairs whose similarity is below the threshold by less than this are "near misses"; the
// tolerant metric counts them neither as right nor as wrong.
constexpr double kNearMiss = 0.1;

struct Config {
  fs::path corpus;
  std::size_t docs_per_lang = 200;
  std::uint64_t seed = 1;
  double threshold = 0.8;
  int truth_shingle = 3;
  bool truth_chars = false;  // --truth-unit char
  bool options = false;      // --candidates options
  unsigned threads = 0;      // 0: one per core
};

// ---------------------------------------------------------------------------------------
// Random numbers

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}

  // Uniform in [0, n), n >= 1, by a multiply-high (bias below n / 2^64).
  std::size_t below(std::size_t n) {
    return static_cast<std::size_t>((static_cast<unsigned __int128>(engine_()) * n) >> 64);
  }

  // True with probability p.
  bool chance(double p) { return static_cast<double>(engine_() >> 11) * 0x1.0p-53 < p; }

 private:
  std::mt19937_64 engine_;
};

// SplitMix64's finalizer: spreads a seed over all bits.
std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// ---------------------------------------------------------------------------------------
// UTF-8 and characters

void append_code_point(std::string& out, char32_t cp) {
  unsigned char bytes[4];
  const unsigned n = simhash::utf8::encode(cp, bytes);
  out.append(reinterpret_cast<const char*>(bytes), n);
}

// Simple (one to one) lower case for ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic;
// other code points are returned unchanged.
char32_t simple_lower(char32_t c) {
  if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c >= 0x100 && c <= 0x137 && c != 0x130) return c | 1;  // upper even, lower odd
  if (c >= 0x139 && c <= 0x148) return (c & 1) != 0 ? c + 1 : c;
  if (c >= 0x14A && c <= 0x177) return c | 1;
  if (c == 0x178) return 0xFF;
  if (c >= 0x179 && c <= 0x17E) return (c & 1) != 0 ? c + 1 : c;
  if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

// Upper case for a subset of the letters simple_lower maps back (used to make variants).
char32_t simple_upper(char32_t c) {
  if (c < 0x80) return c >= 'a' && c <= 'z' ? c - 32 : c;
  if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
  if (c >= 0x3B1 && c <= 0x3CB && c != 0x3C2) return c - 32;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

bool is_space(char32_t c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// Combining marks that stay with the character before them when cutting edit units.
bool is_attached_mark(char32_t c) {
  return (c >= 0x300 && c <= 0x36F) || c == 0x3099 || c == 0x309A || c == 0xE31 ||
         (c >= 0xE34 && c <= 0xE3A) || (c >= 0xE47 && c <= 0xE4E) || c == 0xEB1 ||
         (c >= 0xEB4 && c <= 0xEBC) || (c >= 0xEC8 && c <= 0xECD);
}

// Scripts written without spaces, and CJK punctuation: every character is an edit unit.
bool is_unspaced(char32_t c) {
  return (c >= 0xE00 && c <= 0xEFF) ||    // Thai, Lao
         (c >= 0x1000 && c <= 0x109F) ||  // Myanmar
         (c >= 0x1780 && c <= 0x17FF) ||  // Khmer
         (c >= 0x2E80 && c <= 0x2FDF) ||  // CJK radicals
         (c >= 0x3001 && c <= 0x33FF) ||  // CJK punctuation, kana, bopomofo, enclosed
         (c >= 0x3400 && c <= 0x4DBF) ||  // CJK extension A
         (c >= 0x4E00 && c <= 0x9FFF) ||  // CJK unified ideographs
         (c >= 0xF900 && c <= 0xFAFF) ||  // CJK compatibility ideographs
         (c >= 0xFE30 && c <= 0xFE4F) ||  // CJK compatibility forms
         (c >= 0xFF00 && c <= 0xFFEF) ||  // full and half width forms
         (c >= 0x20000 && c <= 0x3FFFF);  // CJK extensions B..
}

// ---------------------------------------------------------------------------------------
// Tokens and ground truth

struct TokenHashSink {
  std::vector<std::uint64_t>* out;
  void token(const unsigned char* bytes, std::size_t len) {
    out->push_back(simhash::hash_bytes(bytes, len));
  }
};

struct JoiningSink {
  std::string* out;
  void token(const unsigned char* bytes, std::size_t len) {
    out->append(reinterpret_cast<const char*>(bytes), len);
  }
};

// The project's tokens without CJK bigrams, as hashes.
std::vector<std::uint64_t> token_hashes(std::string_view text) {
  std::vector<std::uint64_t> out;
  TokenHashSink sink{&out};
  simhash::Tokenizer<TokenHashSink> tokenizer(simhash::TokenizerOptions{false});
  tokenizer.feed(text.data(), text.size(), sink);
  tokenizer.finish(sink);
  return out;
}

struct CharHashSink {
  std::vector<std::uint64_t>* out;
  void token(const unsigned char* bytes, std::size_t len) {
    simhash::for_each_char(bytes, len, [this](const unsigned char* c, std::size_t n) {
      out->push_back(simhash::hash_bytes(c, n));
    });
  }
};

// The characters of the project's tokens (the features of the char tokenizer), as hashes.
std::vector<std::uint64_t> char_hashes(std::string_view text) {
  std::vector<std::uint64_t> out;
  CharHashSink sink{&out};
  simhash::Tokenizer<CharHashSink> tokenizer(simhash::TokenizerOptions{false});
  tokenizer.feed(text.data(), text.size(), sink);
  tokenizer.finish(sink);
  return out;
}

// The project's tokens without CJK bigrams, glued together.
std::string joined_tokens(std::string_view text) {
  std::string out;
  JoiningSink sink{&out};
  simhash::Tokenizer<JoiningSink> tokenizer(simhash::TokenizerOptions{false});
  tokenizer.feed(text.data(), text.size(), sink);
  tokenizer.finish(sink);
  return out;
}

// Sorted set of hashes of the n-token shingles (a shorter text: one shingle of all tokens).
std::vector<std::uint64_t> shingle_set(const std::vector<std::uint64_t>& tokens, int n) {
  std::vector<std::uint64_t> out;
  if (tokens.empty()) return out;
  const std::size_t width = std::min(tokens.size(), static_cast<std::size_t>(n));
  out.reserve(tokens.size() - width + 1);
  for (std::size_t i = 0; i + width <= tokens.size(); ++i) {
    out.push_back(simhash::hash_bytes(tokens.data() + i, 8 * width));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::size_t intersection_size(const std::vector<std::uint64_t>& a,
                              const std::vector<std::uint64_t>& b) {
  const std::uint64_t* x = a.data();
  const std::uint64_t* const xe = x + a.size();
  const std::uint64_t* y = b.data();
  const std::uint64_t* const ye = y + b.size();
  std::size_t n = 0;
  while (x != xe && y != ye) {  // branch-free merge step
    const std::uint64_t u = *x;
    const std::uint64_t v = *y;
    n += u == v;
    x += u <= v;
    y += v <= u;
  }
  return n;
}

double jaccard(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) {
  if (a.empty() && b.empty()) return 1.0;
  const std::size_t inter = intersection_size(a, b);
  return static_cast<double>(inter) / static_cast<double>(a.size() + b.size() - inter);
}

// ---------------------------------------------------------------------------------------
// Edit units and synthetic near-duplicates

enum class UnitKind : std::uint8_t { Word, Unspaced };

struct Unit {
  std::string text;  // the unit as written, punctuation included
  std::string sep;   // the white space after it
  UnitKind kind;
};

struct Segmented {
  std::string lead;  // white space before the first unit
  std::vector<Unit> units;
};

// Cuts a text into edit units: maximal runs of characters that are neither white space nor
// unspaced-script characters, and single unspaced-script characters with their marks.
Segmented segment(std::string_view s) {
  Segmented out;
  auto& units = out.units;
  for (std::size_t i = 0; i < s.size();) {
    unsigned len = 0;
    const char32_t c = next_code_point(s, i, len);
    const std::string_view bytes = s.substr(i, len);
    i += len;
    if (is_space(c)) {
      (units.empty() ? out.lead : units.back().sep).append(bytes);
      continue;
    }
    const bool open = !units.empty() && units.back().sep.empty();
    if (open && is_attached_mark(c)) {
      units.back().text.append(bytes);
    } else if (is_unspaced(c)) {
      units.push_back(Unit{std::string(bytes), {}, UnitKind::Unspaced});
    } else if (open && units.back().kind == UnitKind::Word) {
      units.back().text.append(bytes);
    } else {
      units.push_back(Unit{std::string(bytes), {}, UnitKind::Word});
    }
  }
  return out;
}

// The text of a list of units; a space goes between two words that edits made adjacent.
std::string join(const std::string& lead, const std::vector<Unit>& units) {
  std::string out = lead;
  bool glued = false;  // the output ends in a word with no white space after it
  for (const Unit& u : units) {
    if (glued && u.kind == UnitKind::Word && !u.text.empty()) out += ' ';
    out += u.text;
    out += u.sep;
    if (!u.text.empty()) {
      glued = u.kind == UnitKind::Word && u.sep.empty();
    } else if (!u.sep.empty()) {
      glued = false;
    }
  }
  return out;
}

// All edit units of a language's documents, for insertions and substitutions (drawn with
// their corpus frequency).
class Pool {
 public:
  void add(const Segmented& doc) {
    for (const Unit& u : doc.units) {
      (u.kind == UnitKind::Word ? words_ : unspaced_).push_back(&u.text);
    }
  }

  // A unit of the given kind (of the other kind when the pool has none).
  Unit draw(UnitKind kind, Rng& rng) const {
    if ((kind == UnitKind::Word ? words_ : unspaced_).empty()) {
      kind = kind == UnitKind::Word ? UnitKind::Unspaced : UnitKind::Word;
    }
    const auto& from = kind == UnitKind::Word ? words_ : unspaced_;
    return Unit{*from[rng.below(from.size())], kind == UnitKind::Word ? " " : "", kind};
  }

 private:
  std::vector<const std::string*> words_;
  std::vector<const std::string*> unspaced_;
};

// Edits round(rate * units) units: each edit is a deletion, an insertion or a substitution
// with equal probability, at a uniformly random position. Deletions and substitutions hit
// distinct units; several insertions may land in the same gap.
std::string edited_variant(const Segmented& doc, double rate, const Pool& pool, Rng& rng) {
  const std::vector<Unit>& in = doc.units;
  const std::size_t n = in.size();
  enum Action : std::uint8_t { Keep, Delete, Substitute };
  std::vector<Action> action(n, Keep);
  std::vector<std::uint32_t> inserts(n + 1, 0);  // insertions before unit i (n: at the end)
  const auto edits = std::max<std::size_t>(1, static_cast<std::size_t>(std::llround(rate * n)));
  for (std::size_t e = 0; e < edits; ++e) {
    const std::size_t op = n == 0 ? 1 : rng.below(3);
    if (op == 1) {
      ++inserts[rng.below(n + 1)];
      continue;
    }
    std::size_t pos = rng.below(n);
    while (action[pos] != Keep) pos = rng.below(n);  // at most ~24% of units are taken
    action[pos] = op == 0 ? Delete : Substitute;
  }
  std::vector<Unit> out;
  out.reserve(n + edits);
  for (std::size_t i = 0; i <= n; ++i) {
    for (std::uint32_t k = 0; k < inserts[i]; ++k) {
      const UnitKind kind = i < n ? in[i].kind : n > 0 ? in[n - 1].kind : UnitKind::Word;
      out.push_back(pool.draw(kind, rng));
    }
    if (i == n) break;
    switch (action[i]) {
      case Keep:
        out.push_back(in[i]);
        break;
      case Delete:
        // Keep the white space (a line break, say) when the unit before has none.
        if (!out.empty() && out.back().sep.empty()) out.back().sep = in[i].sep;
        break;
      case Substitute: {
        Unit u = pool.draw(in[i].kind, rng);
        u.sep = in[i].sep;
        out.push_back(std::move(u));
        break;
      }
    }
  }
  return join(doc.lead, out);
}

std::string map_case(std::string_view s, bool first_only, char32_t (*f)(char32_t)) {
  std::string out;
  out.reserve(s.size());
  bool done = false;
  for (std::size_t i = 0; i < s.size();) {
    unsigned len = 0;
    const char32_t c = next_code_point(s, i, len);
    const char32_t m = done ? c : f(c);
    if (m == c || c == 0xFFFD) {
      out.append(s.substr(i, len));
    } else {
      append_code_point(out, m);
    }
    if (first_only && (simple_lower(c) != c || simple_upper(c) != c)) done = true;
    i += len;
  }
  return out;
}

bool is_edge_punct(char c) {
  // ASCII punctuation except '_', which the classic recipe counts as a word character.
  return c != '_' && std::ispunct(static_cast<unsigned char>(c)) != 0;
}

// Changes only case, punctuation and white space: upper/lower/capitalized words, ASCII
// punctuation stripped from or added to the ends of words, CJK punctuation added inside
// CJK runs, different white space, and CJK lines re-wrapped (line breaks added inside and
// removed from CJK runs).
std::string format_variant(const Segmented& doc, Rng& rng) {
  static const char* const kSpaces[] = {" ", "  ", "\n", "\t", " \n", "\n\n"};
  static const char* const kPunct[] = {",", ".", ";", ":", "!", "?", ")", "\"", "'"};
  static const char* const kCjkPunct[] = {"\xef\xbc\x8c", "\xe3\x80\x82", "\xe3\x80\x81",
                                          "\xef\xbc\x9b", "\xef\xbc\x9a"};  // ，。、；：
  std::vector<Unit> u = doc.units;
  for (std::size_t i = 0; i < u.size(); ++i) {
    Unit& x = u[i];
    const bool cjk_next =
        x.kind == UnitKind::Unspaced && i + 1 < u.size() && u[i + 1].kind == UnitKind::Unspaced;
    if (x.kind == UnitKind::Word) {
      if (rng.chance(0.15)) {
        switch (rng.below(3)) {
          case 0:
            x.text = map_case(x.text, false, simple_upper);
            break;
          case 1:
            x.text = map_case(x.text, true, simple_upper);
            break;
          default:
            x.text = map_case(x.text, false, simple_lower);
            break;
        }
      }
      if (rng.chance(0.10)) {
        std::size_t b = 0;
        std::size_t e = x.text.size();
        while (b < e && is_edge_punct(x.text[b])) ++b;
        while (e > b && is_edge_punct(x.text[e - 1])) --e;
        x.text = x.text.substr(b, e - b);
      }
      if (rng.chance(0.08)) x.text += kPunct[rng.below(std::size(kPunct))];
    } else if (cjk_next && x.sep.empty() && rng.chance(0.01)) {
      x.text += kCjkPunct[rng.below(std::size(kCjkPunct))];
    }
    if (!x.sep.empty()) {
      if (cjk_next && x.sep.find('\n') != std::string::npos && rng.chance(0.5)) {
        x.sep.clear();  // join two lines of CJK text
      } else if (rng.chance(0.15)) {
        x.sep = kSpaces[rng.below(std::size(kSpaces))];
      }
    } else if (cjk_next && rng.chance(0.03)) {
      x.sep = "\n";  // break a CJK line
    }
  }
  return join(doc.lead, u);
}

// ---------------------------------------------------------------------------------------
// Candidate recipes

// MD5 through OpenSSL's EVP interface, the digest fetched once.
class Md5 {
 public:
  Md5() : md_(EVP_MD_fetch(nullptr, "MD5", nullptr)), ctx_(EVP_MD_CTX_new()) {
    if (md_ == nullptr || ctx_ == nullptr) throw std::runtime_error("OpenSSL: no MD5");
  }
  ~Md5() {
    EVP_MD_CTX_free(ctx_);
    EVP_MD_free(md_);
  }
  Md5(const Md5&) = delete;
  Md5& operator=(const Md5&) = delete;

  // The low 64 bits of the digest read as a 128-bit big-endian integer: its last 8 bytes.
  std::uint64_t low64(std::string_view data) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_DigestInit_ex2(ctx_, md_, nullptr) != 1 ||
        EVP_DigestUpdate(ctx_, data.data(), data.size()) != 1 ||
        EVP_DigestFinal_ex(ctx_, digest, &len) != 1 || len != 16) {
      throw std::runtime_error("OpenSSL: MD5 failed");
    }
    std::uint64_t v = 0;
    for (unsigned i = 8; i < 16; ++i) v = (v << 8) | digest[i];
    return v;
  }

 private:
  EVP_MD* md_;
  EVP_MD_CTX* ctx_;
};

// Calls f on every sliding 4-character window of s (a valid UTF-8 string); a string of
// fewer than 4 characters is one window (possibly empty), as in the Python package.
template <class F>
void char4_windows(std::string_view s, F&& f) {
  std::vector<std::size_t> starts;
  starts.reserve(s.size() + 1);
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (!simhash::utf8::is_continuation(static_cast<unsigned char>(s[i]))) starts.push_back(i);
  }
  starts.push_back(s.size());
  const std::size_t chars = starts.size() - 1;
  if (chars < 4) {
    f(s);
    return;
  }
  for (std::size_t i = 0; i + 4 <= chars; ++i) f(s.substr(starts[i], starts[i + 4] - starts[i]));
}

// Python's \w on str (alphanumeric or '_'), approximated outside ASCII by the project's
// character classes: letters, digits and unspaced-script characters count; marks,
// punctuation, symbols and white space do not. A code point that the project decomposes
// takes the class of the first code point it decomposes into.
bool classic_word_char(char32_t c) {
  if (c < 0x80) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  }
  const simhash::unicode::CodePointInfo info = simhash::unicode::lookup(c);
  simhash::unicode::CharClass cls = info.cls;
  if (info.map_len != 0) cls = simhash::unicode::lookup(info.map[0]).cls;
  return cls == simhash::unicode::CharClass::Word || cls == simhash::unicode::CharClass::Unspaced;
}

// The recipe of the Python `simhash` package (Simhash(text), f=64): lower case, keep only
// word characters (so the words are glued together), sliding 4-character windows, weight =
// occurrences, hash = low 64 bits of MD5 of the window's UTF-8, bit set when its counter is
// positive. Lower case here is simple_lower (ASCII, Latin-1, Latin Extended-A, Greek,
// Cyrillic); other code points are kept as they are.
std::uint64_t classic_fingerprint(std::string_view text, Md5& md5) {
  std::string s;
  s.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    unsigned len = 0;
    const char32_t c = simple_lower(next_code_point(text, i, len));
    i += len;
    if (classic_word_char(c)) append_code_point(s, c);
  }
  // Count equal windows (Python groups them in a dict): sort them by a 64-bit XXH3 key,
  // then compare the windows of equal keys, so that a collision cannot merge two windows.
  std::vector<std::pair<std::uint64_t, std::string_view>> windows;
  char4_windows(s, [&](std::string_view w) {
    windows.emplace_back(simhash::hash_bytes(w.data(), w.size()), w);
  });
  std::sort(windows.begin(), windows.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  simhash::BitCounter counter;
  for (std::size_t i = 0; i < windows.size();) {
    std::size_t j = i + 1;
    while (j < windows.size() && windows[j].first == windows[i].first) ++j;
    const std::uint64_t h = md5.low64(windows[i].second);
    for (std::size_t k = i; k < j; ++k) {
      counter.add(windows[k].second == windows[i].second ? h : md5.low64(windows[k].second));
    }
    i = j;
  }
  return counter.fingerprint();
}

// The project's normalized tokens glued together, 4-character windows, XXH3: the features
// of the classic recipe with the project's normalization and hash.
std::uint64_t char4_xxh3_fingerprint(std::string_view text) {
  const std::string s = joined_tokens(text);
  simhash::BitCounter counter;
  char4_windows(s,
                [&](std::string_view w) { counter.add(simhash::hash_bytes(w.data(), w.size())); });
  return counter.fingerprint();
}

struct Candidate {
  std::string name;
  enum Type { Ours, Classic, Char4Xxh3, Text } type;
  simhash::Options options;
  simhash::TextOptions text = {};  // Text: simhash(body, tokenizer, n, weighting)
  bool is_default = false;         // the recipe of simhash(text)
  bool is_classic = false;
};

// The candidates of --candidates options: the tokenizers, shingle sizes and weightings of
// simhash(body, tokenizer, n, weighting), and TF-IDF (simhash_tfidf), run through
// simhash::TextFingerprinter, the code behind the SQL functions.
std::vector<Candidate> option_candidates() {
  using simhash::TokenizerKind;
  using simhash::Weighting;
  std::vector<Candidate> out;
  auto add = [&](TokenizerKind t, int n, Weighting w) {
    simhash::TextOptions o;
    o.tokenizer = t;
    o.n = n;
    o.weighting = w;
    const bool is_default =
        t == TokenizerKind::Word && n == simhash::Options{}.shingle && w == Weighting::Tf;
    std::string name = std::string(simhash::tokenizer_name(t)) + " n=" + std::to_string(n) + " " +
                       simhash::weighting_name(w) + (is_default ? " (default)" : "");
    out.push_back(Candidate{name, Candidate::Text, {}, o, is_default});
  };
  for (int n = 1; n <= 4; ++n) {
    for (Weighting w : {Weighting::Tf, Weighting::Binary, Weighting::Log, Weighting::Idf}) {
      add(TokenizerKind::Word, n, w);
    }
  }
  for (int n = 3; n <= simhash::kMaxShingle; ++n) {
    for (Weighting w : {Weighting::Tf, Weighting::Binary, Weighting::Log, Weighting::Idf}) {
      add(TokenizerKind::Char, n, w);
    }
  }
  out.push_back(Candidate{"classic (Python simhash)", Candidate::Classic, {}, {}, false, true});
  return out;
}

std::vector<Candidate> candidates(const Config& cfg) {
  if (cfg.options) return option_candidates();
  std::vector<Candidate> out;
  const simhash::Options defaults{};
  for (int shingle = 1; shingle <= 3; ++shingle) {
    for (bool bigrams : {true, false}) {
      const bool is_default = shingle == defaults.shingle && bigrams == defaults.cjk_bigrams;
      out.push_back(Candidate{"ours shingle=" + std::to_string(shingle) + " bigrams=" +
                                  (bigrams ? "on" : "off") + (is_default ? " (default)" : ""),
                              Candidate::Ours,
                              simhash::Options{shingle, bigrams},
                              {},
                              is_default});
    }
  }
  out.push_back(Candidate{"classic (Python simhash)", Candidate::Classic, {}, {}, false, true});
  out.push_back(Candidate{"char4-xxh3", Candidate::Char4Xxh3, {}});
  return out;
}

// Runs a TextFingerprinter over a whole text with a buffer of the size it asks for. With
// `counts`, returns nothing and leaves the distinct features in `buffer` and their counts.
std::optional<std::uint64_t> text_fingerprint(std::string_view text, simhash::TextOptions o,
                                              const simhash::DfTable* df,
                                              std::vector<std::uint64_t>& buffer,
                                              std::vector<std::uint64_t>* counts = nullptr) {
  simhash::TextFingerprinter f(o, counts != nullptr);
  // As the PostgreSQL glue does it: chunks the buffer has room for, growing it as needed.
  std::size_t done = 0;
  while (done < text.size()) {
    const std::size_t want = std::min<std::size_t>(text.size() - done, 4096);
    if (f.feed_limit() < want) {
      buffer.resize(std::max(2 * buffer.size(), f.capacity_for(want)));
      f.set_buffer(buffer.data(), buffer.size());
    }
    f.feed(text.data() + done, want);
    done += want;
  }
  if (f.needs_buffer() && buffer.empty()) {  // an empty text
    buffer.resize(f.capacity_for(0));
    f.set_buffer(buffer.data(), buffer.size());
  }
  if (counts == nullptr) return f.fingerprint(df);
  counts->resize(buffer.size());
  buffer.resize(f.distinct(counts->data(), counts->size()));
  counts->resize(buffer.size());
  return std::nullopt;
}

// Document frequencies of a candidate's features over a language's texts.
struct DfData {
  std::vector<simhash::DfEntry> entries;
  std::uint64_t docs = 0;
  simhash::DfTable table() const { return {entries.data(), entries.size(), docs}; }
};

DfData document_frequencies(const Candidate& c, const std::vector<std::string>& texts) {
  std::vector<std::uint64_t> all;  // every text's distinct features
  std::uint64_t docs = 0;
  std::vector<std::uint64_t> buffer, counts;
  simhash::TextOptions o = c.text;
  o.weighting = simhash::Weighting::Tf;
  for (const auto& t : texts) {
    text_fingerprint(t, o, nullptr, buffer, &counts);
    if (buffer.empty()) continue;
    ++docs;
    all.insert(all.end(), buffer.begin(), buffer.end());
  }
  std::sort(all.begin(), all.end());
  DfData d;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i + 1;
    while (j < all.size() && all[j] == all[i]) ++j;
    d.entries.push_back({all[i], j - i});
    i = j;
  }
  d.docs = docs;
  simhash::prepare_df_table(d.entries.data(), d.entries.size(), docs);
  return d;
}

std::uint64_t fingerprint_of(const Candidate& c, std::string_view text, Md5& md5,
                             const simhash::DfTable* df) {
  switch (c.type) {
    case Candidate::Text: {
      std::vector<std::uint64_t> buffer;
      const auto fp = text_fingerprint(text, c.text, df, buffer);
      return fp ? *fp : 0;
    }
    case Candidate::Ours: {
      const auto fp = simhash::fingerprint(text, c.options);
      return fp ? *fp : 0;  // every text here has tokens
    }
    case Candidate::Classic:
      return classic_fingerprint(text, md5);
    case Candidate::Char4Xxh3:
      return char4_xxh3_fingerprint(text);
  }
  return 0;
}

// ---------------------------------------------------------------------------------------
// Threads

unsigned thread_count(const Config& cfg) {
  if (cfg.threads != 0) return cfg.threads;
  return std::max(1U, std::thread::hardware_concurrency());
}

// Runs body(worker, next) on `threads` threads; next() hands out 0, 1, 2, ... until n.
void run_parallel(
    unsigned threads, std::size_t n,
    const std::function<void(unsigned, const std::function<bool(std::size_t&)>&)>& body) {
  std::atomic<std::size_t> counter{0};
  const std::function<bool(std::size_t&)> next = [&](std::size_t& i) {
    i = counter.fetch_add(1, std::memory_order_relaxed);
    return i < n;
  };
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(threads);
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      try {
        body(t, next);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  }
  for (auto& th : pool) th.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// ---------------------------------------------------------------------------------------
// Results

// Pairs by Hamming distance (0..64): near duplicates, near misses (similarity in
// [threshold - kNearMiss, threshold)) and the rest.
struct Histogram {
  std::array<std::uint64_t, 65> pos{};
  std::array<std::uint64_t, 65> near{};
  std::array<std::uint64_t, 65> neg{};

  Histogram& operator+=(const Histogram& o) {
    for (std::size_t d = 0; d < 65; ++d) {
      pos[d] += o.pos[d];
      near[d] += o.near[d];
      neg[d] += o.neg[d];
    }
    return *this;
  }
};

// Strict: every pair below the threshold is a negative. Tolerant: near misses are left out.
enum class Metric { Strict, Tolerant };

struct Confusion {
  std::uint64_t tp = 0, fp = 0, fn = 0;
  bool has_precision() const { return tp + fp > 0; }
  double precision() const { return has_precision() ? double(tp) / double(tp + fp) : 0.0; }
  double recall() const { return tp + fn > 0 ? double(tp) / double(tp + fn) : 0.0; }
  double f1() const {
    const double p = precision(), r = recall();
    return p + r > 0 ? 2 * p * r / (p + r) : 0.0;
  }
};

Confusion at_k(const Histogram& h, int k, Metric m = Metric::Strict) {
  Confusion c;
  for (int d = 0; d <= 64; ++d) {
    if (d <= k) {
      c.tp += h.pos[d];
      c.fp += h.neg[d] + (m == Metric::Strict ? h.near[d] : 0);
    } else {
      c.fn += h.pos[d];
    }
  }
  return c;
}

// The largest k (0..g_max_k) with precision >= target, or -1.
int largest_k(const Histogram& h, double target, Metric m = Metric::Strict) {
  int best = -1;
  for (int k = 0; k <= g_max_k; ++k) {
    const Confusion c = at_k(h, k, m);
    if (c.has_precision() && c.precision() >= target) best = k;
  }
  return best;
}

struct LanguageResult {
  std::string lang;
  std::size_t files = 0, docs = 0, skipped_short = 0, skipped_duplicate = 0;
  std::size_t texts = 0;
  std::uint64_t pairs = 0, positives = 0, positives_same_source = 0, near_misses = 0;
  std::uint64_t digest = 0;
  std::uint64_t tokens = 0;
  // Mean Jaccard similarity of each variant to its original.
  std::array<double, kVariantsPerDoc> mean_jaccard{};
  // Per candidate: median Hamming distance of each variant to its original.
  std::vector<std::array<int, kVariantsPerDoc>> median_distance;
  std::vector<Histogram> hist;  // per candidate
};

using eval::Clock;
using eval::seconds_since;


std::string variant_name(std::size_t v) {
  if (v == 0) return "original";
  if (v == 1) return "format";
  char buf[32];
  std::snprintf(buf, sizeof buf, "edit %g%%", kEditRates[v - 2] * 100);
  return buf;
}

LanguageResult evaluate_language(const Config& cfg, const std::string& lang,
                                 const std::vector<Candidate>& cands) {
  const auto t0 = Clock::now();
  LanguageResult r;
  r.lang = lang;

  // 1. Documents.
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(cfg.corpus / lang)) {
    if (e.is_regular_file()) paths.push_back(e.path());
  }
  std::sort(paths.begin(), paths.end(), [](const fs::path& a, const fs::path& b) {
    return a.filename().string() < b.filename().string();
  });
  r.files = paths.size();
  std::vector<std::string> docs;
  std::unordered_set<std::string> seen;
  std::uint64_t digest = mix64(0);
  for (const auto& p : paths) {
    if (docs.size() >= cfg.docs_per_lang) break;
    std::string text = read_file(p);
    if (token_hashes(text).size() < kMinTokens) {
      ++r.skipped_short;
      continue;
    }
    if (!seen.insert(text).second) {
      ++r.skipped_duplicate;
      continue;
    }
    const std::string name = p.filename().string();
    digest = mix64(digest ^ simhash::hash_bytes(name.data(), name.size()));
    digest = mix64(digest ^ simhash::hash_bytes(text.data(), text.size()));
    docs.push_back(std::move(text));
  }
  seen.clear();
  r.docs = docs.size();
  r.digest = digest;

  // Variants; text t belongs to document t / kVariantsPerDoc and is its variant
  // t % kVariantsPerDoc.
  std::vector<Segmented> segmented;
  segmented.reserve(docs.size());
  Pool pool;
  for (const auto& d : docs) {
    segmented.push_back(segment(d));
    pool.add(segmented.back());
  }
  Rng rng(mix64(cfg.seed ^ simhash::hash_bytes(lang.data(), lang.size())));
  std::vector<std::string> texts;
  texts.reserve(docs.size() * kVariantsPerDoc);
  for (std::size_t i = 0; i < docs.size(); ++i) {
    texts.push_back(docs[i]);
    texts.push_back(format_variant(segmented[i], rng));
    for (double rate : kEditRates) texts.push_back(edited_variant(segmented[i], rate, pool, rng));
  }
  docs.clear();
  segmented.clear();
  const std::size_t n = texts.size();
  r.texts = n;
  r.pairs = static_cast<std::uint64_t>(n) * (n - 1) / 2;
  std::fprintf(stderr, "[%s] %zu documents, %zu texts (%.1f s)\n", lang.c_str(), r.docs, n,
               seconds_since(t0));

  // 2. Document frequencies (IDF candidates), shingle sets and fingerprints.
  const auto t1 = Clock::now();
  const unsigned threads = thread_count(cfg);
  const std::size_t nc = cands.size();
  std::vector<DfData> dfs(nc);
  run_parallel(threads, nc, [&](unsigned, const std::function<bool(std::size_t&)>& next) {
    std::size_t c;
    while (next(c)) {
      if (cands[c].type == Candidate::Text && cands[c].text.weighting == simhash::Weighting::Idf) {
        dfs[c] = document_frequencies(cands[c], texts);
      }
    }
  });
  std::vector<std::vector<std::uint64_t>> shingles(n);
  std::vector<std::uint64_t> fps(n * nc);
  std::vector<std::uint64_t> token_counts(n);
  // Work item t * (nc + 1) + c: fingerprint c of text t, or (c == nc) its shingle set.
  std::vector<std::atomic<std::uint64_t>> cpu_ns(nc + 1);
  run_parallel(threads, n * (nc + 1), [&](unsigned, const std::function<bool(std::size_t&)>& next) {
    Md5 md5;
    std::size_t item;
    while (next(item)) {
      const std::size_t t = item / (nc + 1);
      const std::size_t c = item % (nc + 1);
      const auto start = Clock::now();
      if (c == nc) {
        const auto tokens = token_hashes(texts[t]);
        token_counts[t] = tokens.size();
        shingles[t] =
            shingle_set(cfg.truth_chars ? char_hashes(texts[t]) : tokens, cfg.truth_shingle);
      } else {
        const simhash::DfTable table = dfs[c].table();
        fps[t * nc + c] = fingerprint_of(cands[c], texts[t], md5, &table);
      }
      cpu_ns[c] += static_cast<std::uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
    }
  });
  std::size_t bytes = 0;
  for (const auto& t : texts) bytes += t.size();
  for (std::size_t c = 0; c <= nc; ++c) {
    const double sec = static_cast<double>(cpu_ns[c].load()) * 1e-9;
    std::fprintf(stderr, "[%s]   %-36s %6.2f s CPU, %7.1f MB/s\n", lang.c_str(),
                 c == nc ? "ground truth shingles" : cands[c].name.c_str(), sec,
                 sec > 0 ? static_cast<double>(bytes) / sec / 1e6 : 0.0);
  }
  for (std::size_t t = 0; t < n; t += kVariantsPerDoc) r.tokens += token_counts[t];
  std::fprintf(stderr, "[%s] shingles and fingerprints (%.1f s)\n", lang.c_str(),
               seconds_since(t1));

  // Variants against their originals.
  r.median_distance.assign(nc, {});
  for (std::size_t v = 1; v < kVariantsPerDoc; ++v) {
    double sum = 0;
    std::vector<std::vector<int>> dist(nc);
    for (std::size_t t = v; t < n; t += kVariantsPerDoc) {
      const std::size_t o = t - v;
      sum += jaccard(shingles[o], shingles[t]);
      for (std::size_t c = 0; c < nc; ++c) {
        dist[c].push_back(simhash::hamming(fps[o * nc + c], fps[t * nc + c]));
      }
    }
    r.mean_jaccard[v] = r.docs > 0 ? sum / static_cast<double>(r.docs) : 0.0;
    for (std::size_t c = 0; c < nc; ++c) {
      auto& d = dist[c];
      if (d.empty()) continue;
      std::nth_element(d.begin(), d.begin() + static_cast<std::ptrdiff_t>((d.size() - 1) / 2),
                       d.end());
      r.median_distance[c][v] = d[(d.size() - 1) / 2];
    }
  }

  // 3. All pairs. Jaccard(A, B) <= min(|A|, |B|) / max(|A|, |B|), so pairs whose sizes
  // differ too much are clear negatives without a merge.
  const auto t2 = Clock::now();
  struct Partial {
    std::vector<Histogram> hist;
    std::uint64_t positives = 0, positives_same_source = 0, near_misses = 0;
  };
  std::vector<Partial> partial(threads);
  const double thr = cfg.threshold;
  const double low = std::max(0.0, thr - kNearMiss);
  run_parallel(threads, n, [&](unsigned w, const std::function<bool(std::size_t&)>& next) {
    Partial& p = partial[w];
    p.hist.assign(nc, Histogram{});
    std::size_t i;
    while (next(i)) {
      const auto& a = shingles[i];
      const std::uint64_t* fa = &fps[i * nc];
      for (std::size_t j = i + 1; j < n; ++j) {
        const auto& b = shingles[j];
        const double small = static_cast<double>(std::min(a.size(), b.size()));
        const double large = static_cast<double>(std::max(a.size(), b.size()));
        double sim = 0.0;
        if (large == 0 || small >= low * large) sim = jaccard(a, b);
        const std::uint64_t* fb = &fps[j * nc];
        std::array<std::uint64_t, 65> Histogram::*bucket = &Histogram::neg;
        if (sim >= thr) {
          bucket = &Histogram::pos;
          ++p.positives;
          if (i / kVariantsPerDoc == j / kVariantsPerDoc) ++p.positives_same_source;
        } else if (sim >= low) {
          bucket = &Histogram::near;
          ++p.near_misses;
        }
        for (std::size_t c = 0; c < nc; ++c) ++(p.hist[c].*bucket)[simhash::hamming(fa[c], fb[c])];
      }
    }
  });
  r.hist.assign(nc, Histogram{});
  for (const auto& p : partial) {
    r.positives += p.positives;
    r.positives_same_source += p.positives_same_source;
    r.near_misses += p.near_misses;
    for (std::size_t c = 0; c < nc; ++c) r.hist[c] += p.hist[c];
  }
  std::fprintf(stderr, "[%s] %llu pairs, %llu near duplicates (%.1f s); language total %.1f s\n",
               lang.c_str(), static_cast<unsigned long long>(r.pairs),
               static_cast<unsigned long long>(r.positives), seconds_since(t2), seconds_since(t0));
  return r;
}

// ---------------------------------------------------------------------------------------
// Report

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

void print_grid(const std::vector<Candidate>& cands, const std::vector<Histogram>& hist) {
  std::printf("| candidate |");
  for (int k = 0; k <= g_max_k; ++k) std::printf(" k=%d |", k);
  std::printf("\n|---|");
  for (int k = 0; k <= g_max_k; ++k) std::printf("---|");
  std::printf("\n");
  for (std::size_t c = 0; c < cands.size(); ++c) {
    std::printf("| %s |", cands[c].name.c_str());
    for (int k = 0; k <= g_max_k; ++k) {
      const Confusion m = at_k(hist[c], k);
      std::printf(" %s/%s |", m.has_precision() ? fmt("%.2f", m.precision()).c_str() : "-",
                  fmt("%.2f", m.recall()).c_str());
    }
    std::printf("\n");
  }
}

struct Criterion {
  double target;  // minimum precision
  Metric metric;
};

// Recall at the largest k with precision >= the criterion's target, as "R (k=K)" or "none";
// also returns the recall (-1 for none).
std::pair<std::string, double> recall_cell(const Histogram& h, Criterion cr) {
  const int k = largest_k(h, cr.target, cr.metric);
  if (k < 0) return {"none", -1.0};
  const double r = at_k(h, k, cr.metric).recall();
  return {fmt("%.3f", r) + " (k=" + std::to_string(k) + ")", r};
}

// A table: rows = candidates, one column per histogram set, cell = recall_cell; the best
// recall of each column (as printed) in bold.
void print_recall_table(const std::vector<Candidate>& cands,
                        const std::vector<std::string>& headers,
                        const std::vector<const std::vector<Histogram>*>& columns,
                        const std::vector<Criterion>& criteria) {
  std::printf("| candidate |");
  for (const auto& h : headers) std::printf(" %s |", h.c_str());
  std::printf("\n|---|");
  for (std::size_t i = 0; i < headers.size(); ++i) std::printf("---|");
  std::printf("\n");
  std::vector<std::string> top(columns.size(), "");
  for (std::size_t col = 0; col < columns.size(); ++col) {
    double best = -1;
    for (const auto& h : *columns[col]) best = std::max(best, recall_cell(h, criteria[col]).second);
    if (best >= 0) top[col] = fmt("%.3f", best);
  }
  for (std::size_t c = 0; c < cands.size(); ++c) {
    std::printf("| %s |", cands[c].name.c_str());
    for (std::size_t col = 0; col < columns.size(); ++col) {
      const auto cell = recall_cell((*columns[col])[c], criteria[col]);
      const bool bold = cell.second >= 0 && fmt("%.3f", cell.second) == top[col];
      std::printf(bold ? " **%s** |" : " %s |", cell.first.c_str());
    }
    std::printf("\n");
  }
}

// One language (or all together): recall at precision >= 0.95 and 0.90, strict and
// tolerant, and the best F1.
void print_summary(const std::vector<Candidate>& cands, const std::vector<Histogram>& hist) {
  const std::vector<Criterion> criteria = {{0.95, Metric::Strict},
                                           {0.90, Metric::Strict},
                                           {0.95, Metric::Tolerant},
                                           {0.90, Metric::Tolerant}};
  print_recall_table(
      cands,
      {"R at P >= 0.95", "R at P >= 0.90", "R at P >= 0.95, tolerant", "R at P >= 0.90, tolerant"},
      {&hist, &hist, &hist, &hist}, criteria);
  std::printf("\nBest F1 (strict) and its k:");
  for (std::size_t c = 0; c < cands.size(); ++c) {
    int kf = 0;
    for (int k = 1; k <= g_max_k; ++k) {
      if (at_k(hist[c], k).f1() > at_k(hist[c], kf).f1()) kf = k;
    }
    std::printf("%s %s %s (k=%d)", c ? ";" : "", cands[c].name.c_str(),
                fmt("%.3f", at_k(hist[c], kf).f1()).c_str(), kf);
  }
  std::printf(".\n");
}

// Rows: candidates; columns: languages and all together.
void print_cross_summary(const std::vector<Candidate>& cands,
                         const std::vector<LanguageResult>& results,
                         const std::vector<Histogram>& all, Criterion cr) {
  std::vector<std::string> headers;
  std::vector<const std::vector<Histogram>*> columns;
  for (const auto& r : results) {
    headers.push_back(r.lang);
    columns.push_back(&r.hist);
  }
  headers.push_back("all");
  columns.push_back(&all);
  print_recall_table(cands, headers, columns, std::vector<Criterion>(columns.size(), cr));
}

// Recall at equal precision against a baseline: for every k at which the baseline calls
// some pair a near duplicate (its precision is defined), the baseline's precision and
// recall, and the best recall the candidate reaches at any k whose precision is at least
// as high (best_k = -1: no such k).
struct Level {
  int k;
  double precision, recall;
  int best_k;
  double best_recall;
  bool win() const { return best_k >= 0 && best_recall > recall; }
};

// The baseline's k runs over 0..g_max_k; the candidate's over 0..cand_max_k: with
// cand_max_k = 64 the candidate's whole curve, since recipes spread the same pairs over
// different distances (the classic recipe compresses them into small k).
std::vector<Level> equal_precision(const Histogram& baseline, const Histogram& cand,
                                   int cand_max_k) {
  std::vector<Level> out;
  for (int k = 0; k <= g_max_k; ++k) {
    const Confusion b = at_k(baseline, k);
    if (!b.has_precision()) continue;
    Level l{k, b.precision(), b.recall(), -1, -1.0};
    for (int j = 0; j <= cand_max_k; ++j) {
      const Confusion c = at_k(cand, j);
      if (c.has_precision() && c.precision() >= l.precision && c.recall() > l.best_recall) {
        l.best_k = j;
        l.best_recall = c.recall();
      }
    }
    out.push_back(l);
  }
  return out;
}

std::size_t classic_index(const std::vector<Candidate>& cands) {
  for (std::size_t c = 0; c < cands.size(); ++c) {
    if (cands[c].is_classic) return c;
  }
  throw std::logic_error("no classic candidate");
}

// Rows: candidates; columns: languages and all together; cell: at how many of the classic
// recipe's precision levels the candidate has the higher recall, and the mean recall gain.
void print_equal_precision_summary(const std::vector<Candidate>& cands,
                                   const std::vector<LanguageResult>& results,
                                   const std::vector<Histogram>& all, int cand_max_k) {
  const std::size_t base = classic_index(cands);
  std::printf(
      "Recall at equal precision against the classic recipe, the candidate's k in 0..%d: "
      "\"w/n, +g\" = at w of the n values of k (0..%d) at which the classic recipe has a "
      "precision, the candidate reaches a higher recall at a precision at least as high, with "
      "a mean recall gain of g (a level where the candidate never reaches that precision "
      "counts as a loss with gain -R). **Bold**: higher recall at every level.\n\n"
      "| candidate |",
      cand_max_k, g_max_k);
  std::vector<const std::vector<Histogram>*> columns;
  for (const auto& r : results) {
    std::printf(" %s |", r.lang.c_str());
    columns.push_back(&r.hist);
  }
  columns.push_back(&all);
  std::printf(" all |\n|---|");
  for (std::size_t i = 0; i < columns.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (std::size_t c = 0; c < cands.size(); ++c) {
    if (c == base) continue;
    std::printf("| %s |", cands[c].name.c_str());
    for (const auto* col : columns) {
      const auto levels = equal_precision((*col)[base], (*col)[c], cand_max_k);
      std::size_t wins = 0;
      double gain = 0;
      for (const Level& l : levels) {
        wins += l.win() ? 1 : 0;
        gain += (l.best_k >= 0 ? l.best_recall : 0.0) - l.recall;
      }
      if (!levels.empty()) gain /= static_cast<double>(levels.size());
      const bool all_won = !levels.empty() && wins == levels.size();
      std::printf(all_won ? " **%zu/%zu, %+.3f** |" : " %zu/%zu, %+.3f |", wins, levels.size(),
                  gain);
    }
    std::printf("\n");
  }
  std::printf("\n");
}

// One language: the default against the classic recipe, level by level.
void print_equal_precision_detail(const std::vector<Candidate>& cands,
                                  const std::vector<Histogram>& hist) {
  const std::size_t base = classic_index(cands);
  for (std::size_t c = 0; c < cands.size(); ++c) {
    if (!cands[c].is_default) continue;
    std::printf(
        "Recall at equal precision, %s against %s (default's k in 0..64; in the last column "
        "only k in 0..%d):\n\n| classic k | classic P | classic R | default: best R at P >= "
        "classic P | at k | default P there | higher recall | with k <= %d |\n"
        "|---|---|---|---|---|---|---|---|\n",
        cands[c].name.c_str(), cands[base].name.c_str(), g_max_k, g_max_k);
    const auto limited = equal_precision(hist[base], hist[c], g_max_k);
    const auto full = equal_precision(hist[base], hist[c], 64);
    for (std::size_t i = 0; i < full.size(); ++i) {
      const Level& l = full[i];
      const Level& m = limited[i];
      const std::string within = m.best_k < 0 ? "**no** (none)"
                                              : (m.win() ? "yes" : "**no**") + std::string(" (") +
                                                    fmt("%.3f", m.best_recall) +
                                                    ", k=" + std::to_string(m.best_k) + ")";
      if (l.best_k < 0) {
        std::printf("| %d | %.3f | %.3f | none | - | - | **no** | %s |\n", l.k, l.precision,
                    l.recall, within.c_str());
        continue;
      }
      std::printf("| %d | %.3f | %.3f | %.3f | %d | %.3f | %s | %s |\n", l.k, l.precision, l.recall,
                  l.best_recall, l.best_k, at_k(hist[c], l.best_k).precision(),
                  l.win() ? "yes" : "**no**", within.c_str());
    }
    std::printf("\n");
  }
}

void print_report(const Config& cfg, const std::string& command,
                  const std::vector<Candidate>& cands, const std::vector<LanguageResult>& results) {
  std::vector<Histogram> all(cands.size());
  for (const auto& r : results) {
    for (std::size_t c = 0; c < cands.size(); ++c) all[c] += r.hist[c];
  }

  std::printf("    $ %s\n\n", command.c_str());
  std::printf(cfg.options ? "# Fingerprint options against exact ground truth\n\n"
                          : "# Choosing the default fingerprint recipe\n\n");
  std::printf(
      "Generated by `bench/eval_defaults.cpp`. A pair of texts is a **near duplicate** when "
      "the Jaccard similarity of the sets of %d-%s shingles of the project's tokens "
      "(Unicode-normalized, CJK characters as single tokens, i.e. `cjk_bigrams=false`%s) is at "
      "least **%g**. A candidate recipe calls a pair a near duplicate when the Hamming "
      "distance of the two 64-bit fingerprints is at most k. P = precision, R = recall, over "
      "all pairs of texts within one language.\n\n",
      cfg.truth_shingle, cfg.truth_chars ? "character" : "token",
      cfg.truth_chars ? "; here split into characters, white space and punctuation dropped" : "",
      cfg.threshold);
  std::printf(
      "Parameters: documents per language <= %zu (files sorted by name; fewer than %zu "
      "tokens or exact duplicates skipped), seed %llu, threshold %g, truth shingle %d, "
      "k = 0..%d.\n\n",
      cfg.docs_per_lang, kMinTokens, static_cast<unsigned long long>(cfg.seed), cfg.threshold,
      cfg.truth_shingle, g_max_k);
  std::printf(
      "Texts: every document, one variant that changes only case, punctuation and white "
      "space (\"format\"; also re-wraps CJK lines and adds CJK punctuation inside CJK runs), "
      "and one variant per edit rate (");
  for (std::size_t i = 0; i < kEditRates.size(); ++i) {
    std::printf("%s%g%%", i ? ", " : "", kEditRates[i] * 100);
  }
  std::printf(
      ") of the document's edit units (words between white space; single characters in CJK "
      "and Thai text), each edit a deletion, an insertion or a substitution with a unit drawn "
      "from the language's documents.\n\n");
  if (cfg.options) {
    std::printf(
        "Candidates: `word n=N W` and `char n=N W` = `simhash(body, 'word' or 'char', n => N, "
        "weighting => 'W')` as the extension computes it (`simhash::TextFingerprinter`); "
        "`idf` = `simhash_tfidf()` with document frequencies counted over all texts of the "
        "language (originals and variants); `word n=3 tf` is `simhash(text)`. `classic` = "
        "the recipe of the Python `simhash` package (see below).\n\n");
  }
  std::printf(
      "%s: `ours` = `simhash::fingerprint` with the given shingle size and "
      "`cjk_bigrams`; `classic` = the recipe of the Python `simhash` package (lower case, "
      "keep word characters only, sliding 4-character windows, MD5 low 64 bits, weight = "
      "count; lower case here covers ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic, "
      "and a non-ASCII character counts as a word character when the project's tables class "
      "it as a letter, digit or CJK/Thai character); `char4-xxh3` = the project's normalized "
      "tokens glued together, sliding 4-character windows, XXH3.\n\n",
      cfg.options ? "Baselines of the default report" : "Candidates");

  std::printf(
      "Metrics: **strict** counts every pair below the threshold as a negative; **tolerant** "
      "leaves out near misses, pairs with similarity in [%g, %g), which are neither right nor "
      "wrong. \"R at P >= x\" is the recall at the largest k (0..%d) whose precision is at "
      "least x (\"none\": no such k); in the column \"all\" the pairs of all languages are "
      "counted together, with one k. The best recall of a column is in bold.\n\n",
      std::max(0.0, cfg.threshold - kNearMiss), cfg.threshold, g_max_k);
  std::printf("## Summary\n\n");
  if (cfg.options) {
    print_equal_precision_summary(cands, results, all, 64);
    print_equal_precision_summary(cands, results, all, g_max_k);
  }
  const Criterion summaries[] = {
      {0.95, Metric::Strict}, {0.90, Metric::Strict}, {0.95, Metric::Tolerant}};
  for (const Criterion& cr : summaries) {
    std::printf("Recall at precision >= %.2f (%s):\n\n", cr.target,
                cr.metric == Metric::Strict ? "strict" : "tolerant");
    print_cross_summary(cands, results, all, cr);
    std::printf("\n");
  }

  for (const auto& r : results) {
    std::printf("## %s\n\n", r.lang.c_str());
    std::printf(
        "%zu files; %zu documents used (%zu skipped as shorter than %zu tokens, %zu as exact "
        "duplicates; %llu tokens; digest %016llx); %zu texts; %llu pairs; %llu near-duplicate "
        "pairs (%llu between texts of the same source document, %llu between different "
        "documents); %llu near misses.\n\n",
        r.files, r.docs, r.skipped_short, kMinTokens, r.skipped_duplicate,
        static_cast<unsigned long long>(r.tokens), static_cast<unsigned long long>(r.digest),
        r.texts, static_cast<unsigned long long>(r.pairs),
        static_cast<unsigned long long>(r.positives),
        static_cast<unsigned long long>(r.positives_same_source),
        static_cast<unsigned long long>(r.positives - r.positives_same_source),
        static_cast<unsigned long long>(r.near_misses));
    std::printf(
        "Variants against their original: mean Jaccard similarity, and the median "
        "Hamming distance per candidate.\n\n| |");
    for (std::size_t v = 1; v < kVariantsPerDoc; ++v) std::printf(" %s |", variant_name(v).c_str());
    std::printf("\n|---|");
    for (std::size_t v = 1; v < kVariantsPerDoc; ++v) std::printf("---|");
    std::printf("\n| mean Jaccard |");
    for (std::size_t v = 1; v < kVariantsPerDoc; ++v) {
      std::printf(" %s |", fmt("%.3f", r.mean_jaccard[v]).c_str());
    }
    std::printf("\n");
    for (std::size_t c = 0; c < cands.size(); ++c) {
      std::printf("| %s |", cands[c].name.c_str());
      for (std::size_t v = 1; v < kVariantsPerDoc; ++v)
        std::printf(" %d |", r.median_distance[c][v]);
      std::printf("\n");
    }
    std::printf("\nPrecision/recall by k (strict):\n\n");
    print_grid(cands, r.hist);
    std::printf("\n");
    print_summary(cands, r.hist);
    std::printf("\n");
    if (cfg.options) print_equal_precision_detail(cands, r.hist);
  }

  std::uint64_t texts = 0, pairs = 0, positives = 0;
  for (const auto& r : results) {
    texts += r.texts;
    pairs += r.pairs;
    positives += r.positives;
  }
  std::printf("## All languages together\n\n");
  std::printf("%llu texts, %llu pairs (within languages), %llu near-duplicate pairs.\n\n",
              static_cast<unsigned long long>(texts), static_cast<unsigned long long>(pairs),
              static_cast<unsigned long long>(positives));
  print_grid(cands, all);
  std::printf("\n");
  print_summary(cands, all);
  if (cfg.options) {
    std::printf("\n");
    print_equal_precision_detail(cands, all);
  }
}

// ---------------------------------------------------------------------------------------
// Command line

Config parse_args(int argc, char** argv) {
  Config cfg;
  cfg.corpus = eval::parse_command_line(argc, argv, [&](const std::string& a, const auto& value) {
    if (a == "--docs-per-lang") {
      cfg.docs_per_lang = parse_uint(a, value(), 1, 1000000);
    } else if (a == "--seed") {
      cfg.seed = parse_uint(a, value(), 0, UINT64_MAX);
    } else if (a == "--threshold") {
      const std::string s = value();
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (s.empty() || *end != '\0' || !(v > 0.0 && v <= 1.0)) {
        usage_error("--threshold needs a number in (0, 1], got '" + s + "'");
      }
      cfg.threshold = v;
    } else if (a == "--truth-shingle") {
      cfg.truth_shingle = static_cast<int>(parse_uint(a, value(), 1, 8));
    } else if (a == "--truth-unit") {
      const std::string v = value();
      if (v != "token" && v != "char") usage_error("--truth-unit is 'token' or 'char'");
      cfg.truth_chars = v == "char";
    } else if (a == "--max-k") {
      g_max_k = static_cast<int>(parse_uint(a, value(), 0, 64));
    } else if (a == "--candidates") {
      const std::string v = value();
      if (v != "defaults" && v != "options") usage_error("--candidates is 'defaults' or 'options'");
      cfg.options = v == "options";
    } else if (a == "--threads") {
      cfg.threads = static_cast<unsigned>(parse_uint(a, value(), 1, 256));
    } else {
      return false;
    }
    return true;
  });
  return cfg;
}

}  // namespace

namespace eval {

void usage_error(const std::string& msg) {
  usage_exit("eval_defaults",
             "CORPUS_DIR [--docs-per-lang N] "
             "[--seed S] [--threshold J] [--truth-shingle N] [--truth-unit token|char] "
             "[--max-k K] [--candidates defaults|options] [--threads T]",
             msg);
}

}  // namespace eval

int main(int argc, char** argv) {
  try {
    const Config cfg = parse_args(argc, argv);
    const std::string command = eval::command_line(argc, argv);

    std::vector<std::string> langs;
    for (const auto& e : fs::directory_iterator(cfg.corpus)) {
      if (e.is_directory()) langs.push_back(e.path().filename().string());
    }
    std::sort(langs.begin(), langs.end());
    if (langs.empty()) usage_error(cfg.corpus.string() + " has no language subdirectories");

    const auto start = Clock::now();
    const std::vector<Candidate> cands = candidates(cfg);
    std::vector<LanguageResult> results;
    for (const auto& lang : langs) {
      LanguageResult r = evaluate_language(cfg, lang, cands);
      if (r.docs < 2) {
        std::fprintf(stderr, "[%s] fewer than 2 usable documents: left out\n", lang.c_str());
        continue;
      }
      results.push_back(std::move(r));
    }
    print_report(cfg, command, cands, results);
    std::fprintf(stderr, "total %.1f s on %u threads\n", seconds_since(start), thread_count(cfg));
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "eval_defaults: %s\n", e.what());
    return 1;
  }
}
