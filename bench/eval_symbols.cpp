// What counts as identical: should symbols that are part of a word (C++, C#, F#, .NET,
// x86_64, version numbers 1.2.3 vs 1.23) survive the normalization of the similarity
// functions? Measured on natural near duplicates, without changing the core.
//
//   eval_symbols CORPUS_DIR [--max-items N] [--samples S] [--check-sample M] [--threads T]
//
// CORPUS_DIR is written by scripts/make_corpus.sh (en/, de/, fr/, ja/, zh/: man pages and
// copyright files; never Debian package descriptions).
//
//  1. Collections: en-man (en/man-*), en-copyright (en/copyright-*), de, fr, ja, zh. Every
//     file (sorted by name) is split into paragraphs as in eval_natural.cpp (blocks of lines
//     between blank lines, joined with a space); a paragraph is kept when today's shingle set
//     has at least kMinShingles shingles. Items whose four shingle sets (today and the three
//     variants below) are all identical collapse to the first one; items identical today but
//     not under a variant stay apart, so "identical today, distinct with symbols" is
//     measured. At most --max-items (default 100000) distinct items per collection.
//  2. Today's rule: simhash::shingle_set(text), character 5-shingles of the normalized text
//     (letters and digits kept, white space, punctuation and symbols dropped).
//  3. Variants: a pre-pass over the text replaces some symbols (punctuation or symbol code
//     points: the tokenizer's separators other than white space and controls) by a
//     placeholder letter, one per symbol (U+1401.. Canadian syllabics, checked to be word
//     letters that normalize to themselves and absent from the corpus), then shingle_set of
//     the mapped text. So the kept symbol becomes one more character of the word, and the
//     core is not changed. Rules (a symbol takes the first that applies):
//       +#      a run of '+' / '#' right after a letter or digit     C++, C#, F#, g++, c++11
//       d.d     '.' between two digits                               1.2.3 vs 1.23, 3.14
//       .x      '.' after white space / start / ( [ " ' and before a letter   .NET, .bashrc
//       _       '_' between two letters or digits                    x86_64, snake_case
//       infix   any other symbol between two letters or digits       foo-bar, don't, a/b, foo.conf
//       other   any other symbol                                     "word, word." ( ) ...
//     "letter or digit" is a code point the tokenizer puts into words (class Word or Mark:
//     space-delimited scripts); Han and kana are not, so CJK punctuation between Han
//     characters is "other". Variants: plus = +# only; narrow = the four rules of the issue
//     (+#, d.d, .x, _); infix = narrow + infix; all = every symbol (close to "punctuation
//     kept").
//  4. All pairs with J >= 0.7 under each rule by an exact similarity join (eval_join.hpp),
//     checked against brute force on the first --check-sample items (default 1500) of every
//     collection and rule; the program aborts if they differ. For every pair found under
//     today's rule or a variant, both similarities are exact.
//     A self-check of golden cases (rules of sample texts; "GNU C++ 编译器" = "GNU C 编译器"
//     today and not under plus; 1.2.3 vs 1.23, x86_64, .NET under narrow) runs first.
//  5. Report per collection and variant, for t = 0.7, 0.8, 0.9: pairs under both rules,
//     only today (the variant separates them), only under the variant; pairs identical today
//     (J = 1) that the variant tells apart, and how far; which rules' words differ in the
//     pairs only today at 0.8; and samples of the differing pairs (the first --samples
//     (default 10) by a hash of the item numbers), with the symbol words only in one text
//     and the texts around their first difference, to be classified by reading.
//
// Prints a Markdown report to stdout (progress to stderr); the report depends only on the
// corpus and the options except the run time in its last line.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/mix.hpp"
#include "core/similarity.hpp"
#include "core/unicode.hpp"
#include "core/utf8.hpp"
#include "eval_common.hpp"
#include "eval_join.hpp"

namespace fs = std::filesystem;

namespace {

using eval::SimPair;

constexpr std::size_t kMinShingles = 26;  // as eval_natural.cpp: about 30 characters
constexpr double kJoin = 0.7;
constexpr std::array<double, 3> kThresholds = {0.7, 0.8, 0.9};
constexpr std::size_t kT08 = 1;
// How far a pair that crosses 0.8 lands on the other side: the other rule's J in
// [0.78, 0.8) ("at the boundary"), [0.7, 0.78), or below 0.7.
constexpr std::array<double, 2> kLand = {0.78, 0.7};
constexpr std::size_t land_bucket(double j) { return j >= kLand[0] ? 0 : j >= kLand[1] ? 1 : 2; }
// Pairs by the size of the smaller of today's two shingle sets (short texts: a symbol is a
// larger part of them): < 50, 50..149, >= 150 shingles.
constexpr std::array<std::size_t, 2> kSizes = {50, 150};
constexpr std::size_t size_bucket(std::size_t n) { return n < kSizes[0] ? 0 : n < kSizes[1] ? 1 : 2; }

// Rules, in the order they are tried; kNone: not a symbol.
enum Rule : std::uint8_t { kNone, kPlusHash, kDigitDot, kDotPrefix, kUnderscore, kInfix, kOther };
constexpr std::size_t kRules = 7;
constexpr std::array<const char*, kRules> kRuleNames = {"-", "+#", "d.d", ".x", "_", "infix", "other"};

// Variants: 0 is today's rule (no symbol kept).
constexpr std::size_t kSets = 5;
constexpr std::array<const char*, kSets> kSetNames = {"today", "plus", "narrow", "infix", "all"};
constexpr std::size_t kPlus = 1, kNarrow = 2, kInfixSet = 3;
constexpr bool keeps(std::size_t variant, Rule r) {
  switch (variant) {
    case 1: return r == kPlusHash;
    case 2: return r >= kPlusHash && r <= kUnderscore;
    case 3: return r >= kPlusHash && r <= kInfix;
    case 4: return r != kNone;
    default: return false;
  }
}

struct Config {
  fs::path corpus;
  std::size_t max_items = 100000;
  std::size_t samples = 10;
  std::size_t check_sample = 1500;
  unsigned threads = 0;
};

using eval::Clock;
using eval::seconds_since;

// ---------------------------------------------------------------------------------------
// Symbols

using simhash::unicode::CharClass;

// The code point a symbol normalizes to when that is one code point (fullwidth ＋ -> +).
char32_t canonical(char32_t c) {
  const auto info = simhash::unicode::lookup(c);
  return info.map_len == 1 ? info.map[0] : c;
}

bool is_word(char32_t c) {
  const auto cls = simhash::unicode::lookup(c).cls;
  return cls == CharClass::Word || cls == CharClass::Mark;
}

bool is_digit(char32_t c) {
  const char32_t k = canonical(c);
  return k >= '0' && k <= '9';
}

// A punctuation or symbol code point: what the tokenizer drops, less white space, controls
// and invalid bytes.
bool is_symbol(char32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0xFFFD || eval::is_space(c)) return false;
  return simhash::unicode::lookup(c).cls == CharClass::Separator;
}

// Placeholder letters: one per ASCII symbol, the others hashed onto the rest of the pool.
struct Placeholders {
  std::vector<char32_t> pool;
  Placeholders() {
    for (char32_t c = 0x1401; c <= 0x166C; ++c) {
      const auto info = simhash::unicode::lookup(c);
      if (info.cls == CharClass::Word && info.map_len == 0 && info.ccc == 0) pool.push_back(c);
    }
    if (pool.size() < 256) throw std::runtime_error("too few placeholder letters");
  }
  char32_t of(char32_t symbol) const {
    const char32_t c = canonical(symbol);
    if (c < 128) return pool[c];
    return pool[128 + simhash::mix64(c) % (pool.size() - 128)];
  }
  bool is_placeholder(char32_t c) const { return c >= 0x1400 && c <= 0x167F; }
};

struct Decoded {
  std::vector<char32_t> cps;
  std::vector<std::uint32_t> at;  // byte offset of each code point, and the end
};

Decoded decode(std::string_view text) {
  Decoded d;
  for (std::size_t i = 0; i < text.size();) {
    unsigned len = 0;
    d.cps.push_back(eval::next_code_point(text, i, len));
    d.at.push_back(static_cast<std::uint32_t>(i));
    i += len;
  }
  d.at.push_back(static_cast<std::uint32_t>(text.size()));
  return d;
}

std::vector<Rule> rules_of(const std::vector<char32_t>& cps) {
  const std::size_t n = cps.size();
  std::vector<Rule> out(n, kNone);
  for (std::size_t i = 0; i < n; ++i) {
    if (!is_symbol(cps[i])) continue;
    const char32_t c = canonical(cps[i]);
    const bool prev_word = i > 0 && is_word(cps[i - 1]);
    const bool next_word = i + 1 < n && is_word(cps[i + 1]);
    Rule r = kOther;
    if (c == '+' || c == '#') {
      std::size_t j = i;
      while (j > 0 && (canonical(cps[j - 1]) == '+' || canonical(cps[j - 1]) == '#')) --j;
      if (j > 0 && is_word(cps[j - 1])) r = kPlusHash;
    } else if (c == '.') {
      if (i > 0 && i + 1 < n && is_digit(cps[i - 1]) && is_digit(cps[i + 1])) {
        r = kDigitDot;
      } else if (next_word && !is_digit(cps[i + 1]) &&
                 (i == 0 || eval::is_space(cps[i - 1]) || cps[i - 1] == '(' ||
                  cps[i - 1] == '[' || cps[i - 1] == '"' || cps[i - 1] == '\'')) {
        r = kDotPrefix;
      }
    } else if (c == '_' && prev_word && next_word) {
      r = kUnderscore;
    }
    if (r == kOther && prev_word && next_word) r = kInfix;
    out[i] = r;
  }
  return out;
}

// The text with the symbols a variant keeps replaced by their placeholders.
std::string mapped(std::string_view text, const Decoded& d, const std::vector<Rule>& rules,
                   std::size_t variant, const Placeholders& ph) {
  std::string out;
  out.reserve(text.size() + 16);
  for (std::size_t i = 0; i < d.cps.size(); ++i) {
    if (keeps(variant, rules[i])) {
      unsigned char bytes[4];
      out.append(reinterpret_cast<const char*>(bytes), simhash::utf8::encode(ph.of(d.cps[i]), bytes));
    } else {
      out.append(text.substr(d.at[i], d.at[i + 1] - d.at[i]));
    }
  }
  return out;
}

// A word holding kept symbols: bit r of the mask is set when it holds a symbol of rule r.
using SymbolWord = std::pair<std::uint8_t, std::string>;
constexpr std::uint8_t kept_mask(std::size_t variant) {
  std::uint8_t m = 0;
  for (std::size_t r = 1; r < kRules; ++r) {
    if (keeps(variant, static_cast<Rule>(r))) m = static_cast<std::uint8_t>(m | (1U << r));
  }
  return m;
}

// The words (between white space) holding a symbol of a rule other than kOther, trimmed of
// kOther symbols at either end, ASCII lower-cased, with the mask of their rules.
std::vector<SymbolWord> symbol_words(std::string_view text, const Decoded& d,
                                     const std::vector<Rule>& rules) {
  std::vector<SymbolWord> out;
  const std::size_t n = d.cps.size();
  for (std::size_t i = 0; i < n;) {
    if (eval::is_space(d.cps[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < n && !eval::is_space(d.cps[j])) ++j;
    std::size_t b = i, e = j;
    while (b < e && rules[b] == kOther) ++b;
    while (e > b && rules[e - 1] == kOther) --e;
    std::uint8_t mask = 0;
    for (std::size_t k = b; k < e; ++k) {
      if (rules[k] != kNone && rules[k] != kOther) mask = static_cast<std::uint8_t>(mask | (1U << rules[k]));
    }
    if (mask != 0) {
      std::string w(text.substr(d.at[b], d.at[e] - d.at[b]));
      for (char& ch : w) {
        if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch + 32);
      }
      out.emplace_back(mask, std::move(w));
    }
    i = j;
  }
  std::sort(out.begin(), out.end());
  return out;
}

// ---------------------------------------------------------------------------------------
// Collections

using eval::paragraphs;
using eval::sorted_files;

struct Item {
  std::string text;
  std::array<std::vector<std::uint64_t>, kSets> sets;
  std::vector<SymbolWord> words;
  std::array<bool, kRules> has_rule{};  // holds a symbol of the rule
};

struct Collection {
  std::string name;
  std::size_t files = 0, blocks = 0, short_items = 0, duplicates = 0;
  std::size_t placeholders_in_text = 0;  // code points of the placeholder block in the input
  bool capped = false;
  std::vector<Item> items;
};

Collection load(const std::string& name, const std::vector<fs::path>& files, const Config& cfg,
                unsigned threads, const Placeholders& ph) {
  Collection c;
  c.name = name;
  c.files = files.size();
  std::vector<std::string> blocks;
  for (const auto& f : files) {
    for (auto& p : paragraphs(eval::read_file(f))) blocks.push_back(std::move(p));
  }
  std::vector<Item> items(blocks.size());
  std::vector<std::size_t> foreign(blocks.size(), 0);
  eval::run_parallel(threads, blocks.size(), [&](const auto& next) {
    for (std::size_t i; next(i);) {
      Item& it = items[i];
      it.text = std::move(blocks[i]);
      it.sets[0] = simhash::shingle_set(it.text);
      if (it.sets[0].size() < kMinShingles) continue;
      const Decoded d = decode(it.text);
      for (const char32_t cp : d.cps) foreign[i] += ph.is_placeholder(cp) ? 1 : 0;
      const std::vector<Rule> rules = rules_of(d.cps);
      for (const Rule r : rules) it.has_rule[r] = true;
      for (std::size_t v = 1; v < kSets; ++v) {
        it.sets[v] = simhash::shingle_set(mapped(it.text, d, rules, v, ph));
      }
      it.words = symbol_words(it.text, d, rules);
    }
  });
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> seen;
  for (std::size_t b = 0; b < items.size(); ++b) {
    Item& it = items[b];
    ++c.blocks;
    c.placeholders_in_text += foreign[b];
    if (it.sets[0].size() < kMinShingles) {
      ++c.short_items;
      continue;
    }
    std::uint64_t key = 0;
    for (const auto& s : it.sets) key = simhash::mix64(key ^ simhash::set_digest(s.data(), s.size()));
    auto& same = seen[key];
    if (std::any_of(same.begin(), same.end(),
                    [&](std::size_t i) { return c.items[i].sets == it.sets; })) {
      ++c.duplicates;
      continue;
    }
    if (c.items.size() == cfg.max_items) {
      c.capped = true;
      --c.blocks;
      break;
    }
    same.push_back(c.items.size());
    c.items.push_back(std::move(it));
  }
  return c;
}

// ---------------------------------------------------------------------------------------
// Comparison

struct Both {
  std::uint32_t a, b;
  double today, variant;
  bool identical_today;
};

// Per collection and variant.
struct Compared {
  std::array<std::uint64_t, kThresholds.size()> both{}, today_only{}, variant_only{};
  std::uint64_t identical_today = 0;                  // pairs with J = 1 today
  std::uint64_t split = 0;                            // ... and J < 1 under the variant
  std::array<std::uint64_t, kThresholds.size()> split_below{};  // ... and J < t
  std::uint64_t identical_variant = 0;                // J = 1 under the variant
  // Pairs only today at 0.8, by the rule whose symbol words differ between the two texts
  // (a pair may count for several); kNone: no symbol word differs (the symbols sit at other
  // places or repeat).
  std::array<std::uint64_t, kRules> only_today_by_rule{};
  std::vector<Both> only_today, only_variant, splits;  // at 0.8; splits: J = 1 today, < 1
  // Pairs only today (only under the variant) at 0.8 by land_bucket of the variant's
  // (today's) J.
  std::array<std::uint64_t, 3> only_today_land{}, only_variant_land{};
  // Pairs at J >= 0.8 under today's rule or the variant, by size_bucket: under both, only
  // today, only the variant.
  std::array<std::array<std::uint64_t, 3>, 3> by_size{};
};

double jaccard_of(const std::vector<std::uint64_t>& x, const std::vector<std::uint64_t>& y) {
  return simhash::jaccard(simhash::overlap(x.data(), x.size(), y.data(), y.size()));
}

// The symbol words (of rules the variant keeps) of x not in y, as a multiset difference.
std::vector<SymbolWord> words_only_in(const Item& x, const Item& y, std::size_t variant) {
  std::vector<SymbolWord> wx, wy, out;
  const std::uint8_t kept = kept_mask(variant);
  for (const auto& w : x.words) {
    if ((w.first & kept) != 0) wx.push_back(w);
  }
  for (const auto& w : y.words) {
    if ((w.first & kept) != 0) wy.push_back(w);
  }
  std::set_difference(wx.begin(), wx.end(), wy.begin(), wy.end(), std::back_inserter(out));
  return out;
}

Compared compare(const Collection& c, const std::vector<SimPair>& today,
                 const std::vector<SimPair>& var, std::size_t v) {
  Compared r;
  std::size_t i = 0, j = 0;
  const auto take = [&](std::uint32_t a, std::uint32_t b, double jt, double jv, bool ident) {
    for (std::size_t t = 0; t < kThresholds.size(); ++t) {
      const bool in_t = jt >= kThresholds[t], in_v = jv >= kThresholds[t];
      r.both[t] += in_t && in_v;
      r.today_only[t] += in_t && !in_v;
      r.variant_only[t] += in_v && !in_t;
    }
    const Both p{a, b, jt, jv, ident};
    if (ident) {
      ++r.identical_today;
      if (jv < 1.0) {
        ++r.split;
        r.splits.push_back(p);
        for (std::size_t t = 0; t < kThresholds.size(); ++t) r.split_below[t] += jv < kThresholds[t];
      }
    }
    if (jv >= 1.0) ++r.identical_variant;
    const double t8 = kThresholds[kT08];
    if (jt >= t8 || jv >= t8) {
      const std::size_t sb = size_bucket(std::min(c.items[a].sets[0].size(), c.items[b].sets[0].size()));
      ++r.by_size[sb][jt >= t8 && jv >= t8 ? 0 : jt >= t8 ? 1 : 2];
    }
    if (jt >= t8 && jv < t8) {
      r.only_today.push_back(p);
      ++r.only_today_land[land_bucket(jv)];
      const Item& x = c.items[a];
      const Item& y = c.items[b];
      const auto dx = words_only_in(x, y, v), dy = words_only_in(y, x, v);
      std::array<bool, kRules> differs{};
      const std::uint8_t kept = kept_mask(v);
      for (const auto* ds : {&dx, &dy}) {
        for (const auto& w : *ds) {
          for (std::size_t k = 1; k < kRules; ++k) differs[k] = differs[k] || ((w.first & kept) >> k & 1U);
        }
      }
      bool any = false;
      for (std::size_t k = 1; k < kRules; ++k) {
        if (differs[k]) {
          ++r.only_today_by_rule[k];
          any = true;
        }
      }
      if (!any) ++r.only_today_by_rule[kNone];
    }
    if (jv >= t8 && jt < t8) {
      r.only_variant.push_back(p);
      ++r.only_variant_land[land_bucket(jt)];
    }
  };
  while (i < today.size() || j < var.size()) {
    const bool use_i = j == var.size() || (i < today.size() && eval::by_items(today[i], var[j]));
    const bool use_j = i == today.size() || (j < var.size() && eval::by_items(var[j], today[i]));
    if (!use_i && !use_j) {  // the same pair in both
      take(today[i].a, today[i].b, today[i].jaccard(), var[j].jaccard(),
           today[i].common == today[i].united);
      ++i;
      ++j;
    } else if (use_i) {
      const SimPair& p = today[i++];
      take(p.a, p.b, p.jaccard(), jaccard_of(c.items[p.a].sets[v], c.items[p.b].sets[v]),
           p.common == p.united);
    } else {
      const SimPair& p = var[j++];
      const auto& x = c.items[p.a].sets[0];
      const auto& y = c.items[p.b].sets[0];
      const auto o = simhash::overlap(x.data(), x.size(), y.data(), y.size());
      take(p.a, p.b, simhash::jaccard(o), p.jaccard(), o.common == o.left + o.right - o.common);
    }
  }
  return r;
}

// ---------------------------------------------------------------------------------------
// Report

struct Result {
  const Collection* c;
  std::array<std::size_t, kSets> join_pairs{};
  std::array<std::size_t, kRules> items_with_rule{};
  std::array<std::size_t, kSets> items_changed{};  // set differs from today's
  std::array<Compared, kSets> by_variant;          // [0] unused
};

std::string pct(std::uint64_t part, std::uint64_t whole) {
  if (whole == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

// Up to `width` bytes of text from byte `from` (moved back to a code point start), one line.
std::string excerpt(const std::string& text, std::size_t from, std::size_t width) {
  from = std::min(from, text.size());
  while (from > 0 && simhash::utf8::is_continuation(static_cast<unsigned char>(text[from]))) --from;
  std::size_t to = std::min(text.size(), from + width);
  while (to < text.size() && simhash::utf8::is_continuation(static_cast<unsigned char>(text[to]))) ++to;
  std::string out = (from > 0 ? "…" : "") + text.substr(from, to - from) + (to < text.size() ? "…" : "");
  for (char& ch : out) {
    if (ch == '\t' || ch == '\r' || ch == '`') ch = ' ';
  }
  return out;
}

std::string join_words(const std::vector<SymbolWord>& ws, std::size_t max) {
  std::string out;
  for (std::size_t i = 0; i < ws.size() && i < max; ++i) {
    std::string rules;
    for (std::size_t k = 1; k < kRules; ++k) {
      if ((ws[i].first >> k) & 1U) rules += (rules.empty() ? "" : " ") + std::string(kRuleNames[k]);
    }
    out += (i ? " " : "") + ws[i].second + " [" + rules + "]";
  }
  if (ws.size() > max) out += " …(" + std::to_string(ws.size() - max) + " more)";
  return out.empty() ? "(none)" : out;
}

void print_samples(const char* title, const Collection& c, std::vector<Both> pairs, std::size_t v,
                   std::size_t max) {
  if (pairs.empty() || max == 0) return;
  std::sort(pairs.begin(), pairs.end(), [](const Both& x, const Both& y) {
    const auto hx = simhash::mix64((std::uint64_t{x.a} << 32) | x.b);
    const auto hy = simhash::mix64((std::uint64_t{y.a} << 32) | y.b);
    return hx < hy;
  });
  std::printf("%s (%zu of %zu):\n\n```text\n", title, std::min(max, pairs.size()), pairs.size());
  for (std::size_t k = 0; k < pairs.size() && k < max; ++k) {
    const Both& p = pairs[k];
    const Item& x = c.items[p.a];
    const Item& y = c.items[p.b];
    std::printf("(%zu) J today %.3f, %s %.3f\n", k + 1, p.today, kSetNames[v], p.variant);
    std::printf("    only in A: %s\n    only in B: %s\n", join_words(words_only_in(x, y, v), 8).c_str(),
                join_words(words_only_in(y, x, v), 8).c_str());
    std::size_t d = 0;
    while (d < x.text.size() && d < y.text.size() && x.text[d] == y.text[d]) ++d;
    const std::size_t from = d > 90 ? d - 90 : 0;
    std::printf("    A: %s\n    B: %s\n", excerpt(x.text, from, 260).c_str(),
                excerpt(y.text, from, 260).c_str());
  }
  std::printf("```\n\n");
}

Result evaluate(const Collection& c, const Config& cfg, unsigned threads) {
  Result r;
  r.c = &c;
  std::array<std::vector<std::vector<std::uint64_t>>, kSets> sets;
  for (const Item& it : c.items) {
    for (std::size_t s = 0; s < kSets; ++s) sets[s].push_back(it.sets[s]);
    for (std::size_t k = 0; k < kRules; ++k) r.items_with_rule[k] += it.has_rule[k];
    for (std::size_t s = 1; s < kSets; ++s) {
      // A kept symbol adds a character: the set changes exactly when one is kept.
      r.items_changed[s] += it.sets[s] != it.sets[0];
    }
  }
  std::array<std::vector<SimPair>, kSets> joins;
  for (std::size_t s = 0; s < kSets; ++s) {
    joins[s] = eval::similarity_join(sets[s], kJoin, threads);
    r.join_pairs[s] = joins[s].size();
    const std::size_t n = std::min(cfg.check_sample, sets[s].size());
    std::vector<SimPair> head;
    for (const auto& p : joins[s]) {
      if (p.b < n) head.push_back(p);
    }
    if (head != eval::brute_force_join(sets[s], n, kJoin, threads)) {
      throw std::runtime_error("similarity join differs from brute force in " + c.name + " (" +
                               kSetNames[s] + ")");
    }
  }
  for (std::size_t v = 1; v < kSets; ++v) r.by_variant[v] = compare(c, joins[0], joins[v], v);
  return r;
}

void print_report(const std::vector<Collection>& cols, const std::vector<Result>& results,
                  const Config& cfg, const std::string& command, double seconds, unsigned threads,
                  std::size_t pool) {
  std::printf("# What counts as identical: symbols inside words\n\n");
  std::printf(
      "Generated by `bench/eval_symbols.cpp` (method in its header comment). Items are paragraphs "
      "of man pages (en, de, fr, ja, zh) and of copyright files (en-copyright) with at least %zu "
      "normalized character 5-shingles; items identical under today's rule and all variants are "
      "counted once. J: Jaccard similarity of character 5-shingle sets. **today**: "
      "`simhash::shingle_set` as the extension computes it (punctuation and symbols dropped). "
      "Variants keep some symbols as letters of their word (a pre-pass maps each kept symbol to "
      "a placeholder letter; the core is unchanged):\n\n"
      "- **plus** — only `+`/`#` after a letter or digit (C++, C#, F#, g++, GPL-2+);\n"
      "- **narrow** — the symbols of the issue: `+`/`#` after a letter or digit (C++, C#, F#, "
      "g++), `.` between digits (1.2.3 vs 1.23), `.` starting a word (.NET, .bashrc), `_` inside "
      "a word (x86_64);\n"
      "- **infix** — narrow plus any symbol between two letters or digits (foo-bar, don't, "
      "a/b, foo.conf, www.gnu.org);\n"
      "- **all** — every punctuation and symbol character kept (close to the independent "
      "labelling with punctuation kept).\n\n"
      "\"Letters or digits\" are those of space-delimited scripts; Han and kana are not, so "
      "CJK punctuation between Han characters is kept only by **all**. Every pair at J >= %.1f "
      "under each rule is found by an exact similarity join, checked against brute force on the "
      "first %zu items of every collection and rule (all OK). Placeholder letters: %zu, none "
      "of them in the corpus (checked).\n\n",
      kMinShingles, kJoin, cfg.check_sample, pool);

  std::printf("## Collections\n\n");
  std::printf(
      "| collection | files | paragraphs | too short | duplicates removed | items | items with "
      "+# | d.d | .x | _ | infix | other |");
  for (std::size_t s = 1; s < kSets; ++s) std::printf(" %s%s |", s == 1 ? "set changed: " : "", kSetNames[s]);
  for (std::size_t s = 0; s < kSets; ++s) std::printf(" %s%s |", s == 0 ? "pairs J >= 0.7: " : "", kSetNames[s]);
  std::printf("\n|---|---|---|---|---|---|---|---|---|---|---|---|");
  for (std::size_t s = 1; s < 2 * kSets; ++s) std::printf("---|");
  std::printf("\n");
  for (const auto& r : results) {
    const auto& c = *r.c;
    const std::size_t n = c.items.size();
    std::printf("| %s | %zu | %zu | %zu | %zu | %zu%s |", c.name.c_str(), c.files, c.blocks,
                c.short_items, c.duplicates, n, c.capped ? " (capped)" : "");
    for (std::size_t k = 1; k < kRules; ++k) std::printf(" %s |", pct(r.items_with_rule[k], n).c_str());
    for (std::size_t s = 1; s < kSets; ++s) std::printf(" %s |", pct(r.items_changed[s], n).c_str());
    for (std::size_t s = 0; s < kSets; ++s) std::printf(" %zu |", r.join_pairs[s]);
    std::printf("\n");
  }
  std::printf(
      "\n\"items with +#\" etc.: share of the items holding at least one symbol of that rule; "
      "\"set changed\": share whose shingle set under the variant differs from today's.\n\n");

  std::printf("## Pairs: today's rule against each variant\n\n");
  std::printf(
      "Per threshold t: pairs at J >= t under both rules, **only today** (the variant puts "
      "them below t: today's rule merges what the symbols tell apart), and **only variant** "
      "(the variant lifts them to t). Share: of today's pairs at t.\n\n");
  for (std::size_t v = 1; v < kSets; ++v) {
    std::printf("### %s\n\n| collection |", kSetNames[v]);
    for (const double t : kThresholds) std::printf(" t=%.1f both | only today | only %s |", t, kSetNames[v]);
    std::printf("\n|---|");
    for (std::size_t t = 0; t < kThresholds.size(); ++t) std::printf("---|---|---|");
    std::printf("\n");
    std::array<std::uint64_t, kThresholds.size()> tb{}, tt{}, tv{};
    for (const auto& r : results) {
      const Compared& m = r.by_variant[v];
      std::printf("| %s |", r.c->name.c_str());
      for (std::size_t t = 0; t < kThresholds.size(); ++t) {
        const std::uint64_t today = m.both[t] + m.today_only[t];
        std::printf(" %llu | %llu (%s) | %llu (%s) |", static_cast<unsigned long long>(m.both[t]),
                    static_cast<unsigned long long>(m.today_only[t]), pct(m.today_only[t], today).c_str(),
                    static_cast<unsigned long long>(m.variant_only[t]),
                    pct(m.variant_only[t], today).c_str());
        tb[t] += m.both[t];
        tt[t] += m.today_only[t];
        tv[t] += m.variant_only[t];
      }
      std::printf("\n");
    }
    std::printf("| all |");
    for (std::size_t t = 0; t < kThresholds.size(); ++t) {
      std::printf(" %llu | %llu (%s) | %llu (%s) |", static_cast<unsigned long long>(tb[t]),
                  static_cast<unsigned long long>(tt[t]), pct(tt[t], tb[t] + tt[t]).c_str(),
                  static_cast<unsigned long long>(tv[t]), pct(tv[t], tb[t] + tt[t]).c_str());
    }
    std::printf("\n\n");
  }

  std::printf("## Identical today, distinct with symbols\n\n");
  std::printf(
      "Pairs whose shingle sets are identical today (J = 1: `simhash_jaccard` says 1.000 and the "
      "dedupe trigger rejects one as a copy of the other at any threshold), how many of them "
      "the variant tells apart (J < 1), and how many it puts below 0.9 / 0.8 / 0.7. Pairs "
      "identical today differ only in what today's rule drops (symbols, white space, case).\n\n");
  std::printf("| collection | identical today |");
  for (std::size_t v = 1; v < kSets; ++v) {
    std::printf(" %s: J < 1 | < 0.9 | < 0.8 | < 0.7 |", kSetNames[v]);
  }
  std::printf("\n|---|---|");
  for (std::size_t v = 1; v < kSets; ++v) std::printf("---|---|---|---|");
  std::printf("\n");
  for (const auto& r : results) {
    std::printf("| %s | %llu |", r.c->name.c_str(),
                static_cast<unsigned long long>(r.by_variant[1].identical_today));
    for (std::size_t v = 1; v < kSets; ++v) {
      const Compared& m = r.by_variant[v];
      std::printf(" %llu | %llu | %llu | %llu |", static_cast<unsigned long long>(m.split),
                  static_cast<unsigned long long>(m.split_below[2]),
                  static_cast<unsigned long long>(m.split_below[1]),
                  static_cast<unsigned long long>(m.split_below[0]));
    }
    std::printf("\n");
  }

  std::printf("\n## Which symbols separate the pairs (only today, t = 0.8)\n\n");
  std::printf(
      "Pairs at J >= 0.8 today and below 0.8 under the variant, by the rule whose symbol words "
      "(white-space words holding a symbol the variant keeps) differ between the two texts; a "
      "pair counts once for each rule of the differing words. \"none\": the same symbol words in both texts (the pair falls "
      "because the kept symbols enlarge both sets while the differing text stays the same, "
      "or sit in words that differ anyway).\n\n");
  for (std::size_t v = 1; v < kSets; ++v) {
    std::printf("### %s\n\n| collection | pairs |", kSetNames[v]);
    for (std::size_t k = 1; k < kRules; ++k) {
      if (keeps(v, static_cast<Rule>(k))) std::printf(" %s |", kRuleNames[k]);
    }
    std::printf(" none |\n|---|---|");
    for (std::size_t k = 1; k < kRules; ++k) {
      if (keeps(v, static_cast<Rule>(k))) std::printf("---|");
    }
    std::printf("---|\n");
    for (const auto& r : results) {
      const Compared& m = r.by_variant[v];
      std::printf("| %s | %zu |", r.c->name.c_str(), m.only_today.size());
      for (std::size_t k = 1; k < kRules; ++k) {
        if (keeps(v, static_cast<Rule>(k))) {
          std::printf(" %llu |", static_cast<unsigned long long>(m.only_today_by_rule[k]));
        }
      }
      std::printf(" %llu |\n", static_cast<unsigned long long>(m.only_today_by_rule[kNone]));
    }
    std::printf("\n");
  }

  std::printf("## How far the pairs that cross 0.8 move\n\n");
  std::printf(
      "A pair at J >= 0.8 under one rule only, by the other rule's J: in [%.2f, 0.8) (at the "
      "boundary: a small shift of a pair that differs in its letters anyway), in [%.2f, %.2f), "
      "or below %.2f (the symbols decide).\n\n",
      kLand[0], kLand[1], kLand[0], kLand[1]);
  std::printf("| collection |");
  for (std::size_t v = 1; v < kSets; ++v) {
    std::printf(" only today, %s J >= %.2f | %.2f-%.2f | < %.2f | only %s, today J >= %.2f | "
                "%.2f-%.2f | < %.2f |",
                kSetNames[v], kLand[0], kLand[1], kLand[0], kLand[1], kSetNames[v], kLand[0],
                kLand[1], kLand[0], kLand[1]);
  }
  std::printf("\n|---|");
  for (std::size_t v = 1; v < kSets; ++v) std::printf("---|---|---|---|---|---|");
  std::printf("\n");
  std::array<std::array<std::uint64_t, 6>, kSets> land_total{};
  for (const auto& r : results) {
    std::printf("| %s |", r.c->name.c_str());
    for (std::size_t v = 1; v < kSets; ++v) {
      const Compared& m = r.by_variant[v];
      for (std::size_t b = 0; b < 3; ++b) {
        land_total[v][b] += m.only_today_land[b];
        land_total[v][3 + b] += m.only_variant_land[b];
      }
      for (const auto x : m.only_today_land) std::printf(" %llu |", static_cast<unsigned long long>(x));
      for (const auto x : m.only_variant_land) std::printf(" %llu |", static_cast<unsigned long long>(x));
    }
    std::printf("\n");
  }
  std::printf("| all |");
  for (std::size_t v = 1; v < kSets; ++v) {
    for (const auto x : land_total[v]) std::printf(" %llu |", static_cast<unsigned long long>(x));
  }
  std::printf("\n\n");

  std::printf("## Short texts\n\n");
  std::printf(
      "Pairs at J >= 0.8 under today's rule or the variant, all collections together, by the "
      "size of the smaller text (today's shingles, about its normalized characters): under "
      "both rules, only today, only under the variant. A kept symbol weighs more in a short "
      "text (catalog one-liners, titles).\n\n| variant | smaller text |  both | only today | only variant |\n|---|---|---|---|---|\n");
  for (std::size_t v = 1; v < kSets; ++v) {
    for (std::size_t sb = 0; sb < 3; ++sb) {
      std::array<std::uint64_t, 3> sum{};
      for (const auto& r : results) {
        for (std::size_t k = 0; k < 3; ++k) sum[k] += r.by_variant[v].by_size[sb][k];
      }
      const std::uint64_t today = sum[0] + sum[1];
      std::printf("| %s | %s |  %llu | %llu (%s) | %llu (%s) |\n", kSetNames[v],
                  sb == 0 ? "< 50 shingles" : sb == 1 ? "50-149" : ">= 150",
                  static_cast<unsigned long long>(sum[0]), static_cast<unsigned long long>(sum[1]),
                  pct(sum[1], today).c_str(), static_cast<unsigned long long>(sum[2]),
                  pct(sum[2], today).c_str());
    }
  }
  std::printf("\n");

  std::printf("## Samples\n\n");
  std::printf(
      "The first pairs by a hash of their item numbers (a fixed, arbitrary order). \"only in "
      "A/B\": symbol words (rule in brackets) of one text missing from the other; then both "
      "texts from a little before their first differing byte.\n\n");
  for (const auto& r : results) {
    std::printf("### %s\n\n", r.c->name.c_str());
    const auto& n = r.by_variant[kNarrow];
    const auto& pl = r.by_variant[kPlus];
    std::vector<Both> far;
    for (const Both& p : pl.only_today) {
      if (p.variant < kLand[0]) far.push_back(p);
    }
    print_samples("plus: J >= 0.8 only today, plus J < 0.78", *r.c, far, kPlus, 3 * cfg.samples);
    print_samples("narrow: identical today, distinct under narrow", *r.c, n.splits, kNarrow,
                  cfg.samples);
    print_samples("narrow: J >= 0.8 only today", *r.c, n.only_today, kNarrow, cfg.samples);
    far.clear();
    for (const Both& p : n.only_today) {
      if (p.variant < kLand[0]) far.push_back(p);
    }
    print_samples("narrow: J >= 0.8 only today, narrow J < 0.78 (all of them up to 3 x --samples)",
                  *r.c, far, kNarrow, 3 * cfg.samples);
    far.clear();
    for (const Both& p : n.only_variant) {
      if (p.today < kLand[0]) far.push_back(p);
    }
    print_samples("narrow: J >= 0.8 only under narrow, today J < 0.78", *r.c, far, kNarrow,
                  cfg.samples);
    print_samples("narrow: J >= 0.8 only under narrow", *r.c, n.only_variant, kNarrow,
                  cfg.samples / 2);
    print_samples("infix: J >= 0.8 only today", *r.c, r.by_variant[kInfixSet].only_today,
                  kInfixSet, cfg.samples / 2);
  }
  (void)cols;
  std::printf("## Run\n\n```sh\n%s > bench/results/eval_symbols.md\n```\n\n", command.c_str());
  std::printf("Wall time %.0f s on %u threads (the only line that depends on the machine).\n", seconds,
              threads);
}

// The shingle set of a text under a rule (0: today's).
std::vector<std::uint64_t> set_under(std::string_view text, std::size_t variant,
                                     const Placeholders& ph) {
  if (variant == 0) return simhash::shingle_set(text);
  const Decoded d = decode(text);
  return simhash::shingle_set(mapped(text, d, rules_of(d.cps), variant, ph));
}

// Golden cases of the pre-pass; throws when one fails, so a broken rule cannot report.
void self_check(const Placeholders& ph) {
  const auto fail = [](const std::string& what) { throw std::logic_error("self-check: " + what); };
  // Rules of each symbol of a text, as a string of rule numbers ('-' for no symbol).
  const auto rule_string = [](std::string_view text) {
    std::string out;
    for (const Rule r : rules_of(decode(text).cps)) out += r == kNone ? '-' : static_cast<char>('0' + r);
    return out;
  };
  struct Case {
    const char* text;
    const char* rules;
  };
  const Case cases[] = {
      {"C++ C# x86_64", "-11--1----4--"},
      {"1.2.3 .NET a.b", "-2-2--3-----5-"},
      {"a + b, c. #d", "--6--6--6-6-"},
      {"(.bashrc) _x", "63------6-6-"},
      {"ＧＮＵ Ｃ＋＋", "-----11"},
  };
  // One character per code point: 1 +#, 2 d.d, 3 .x, 4 _, 5 infix, 6 other.
  for (const auto& c : cases) {
    if (rule_string(c.text) != c.rules) {
      fail(std::string("rules of '") + c.text + "': " + rule_string(c.text) + ", want " + c.rules);
    }
  }
  const auto same = [&](const char* a, const char* b, std::size_t v) {
    return set_under(a, v, ph) == set_under(b, v, ph);
  };
  // The issue's example: identical today, distinct once '+' is part of the word.
  if (!same("GNU C++ 编译器套件", "GNU C 编译器套件", 0)) fail("today C++ = C");
  if (same("GNU C++ 编译器套件", "GNU C 编译器套件", kPlus)) fail("plus C++ != C");
  if (!same("version 1.2.3 of x86_64", "version 1.23 of x86 64", 0)) fail("today 1.2.3 = 1.23");
  if (same("version 1.2.3 of x", "version 1.23 of x", kNarrow)) fail("narrow 1.2.3 != 1.23");
  if (same("built for x86_64 now", "built for x86 64 now", kNarrow)) fail("narrow x86_64 != x86 64");
  if (same("the .NET runtime", "the NET runtime", kNarrow)) fail("narrow .NET != NET");
  if (!same("version 1.2.3 of x", "version 1.23 of x", kPlus)) fail("plus keeps no dot");
  // Punctuation outside words stays dropped in narrow; infix keeps foo-bar; all keeps ", ".
  if (!same("The end. Next, a + b (c)", "the end next a b c", kNarrow)) fail("narrow drops punctuation");
  if (same("foo-bar baz", "foo bar baz", kInfixSet)) fail("infix foo-bar != foo bar");
  if (!same("foo-bar baz", "foo bar baz", kNarrow)) fail("narrow foo-bar = foo bar");
  if (same("one, two three", "one two three", kSets - 1)) fail("all keeps ','");
  // Different symbols get different placeholders, the same symbol the same one.
  if (same("C++ compiler", "C## compiler", kPlus)) fail("plus ++ != ##");
  if (!same("Ｃ＋＋ compiler", "C++ compiler", kPlus)) fail("fullwidth ＋ = +");
}

Config parse_args(int argc, char** argv) {
  Config cfg;
  cfg.corpus = eval::parse_command_line(argc, argv, [&](const std::string& a, const auto& value) {
    if (a == "--max-items") {
      cfg.max_items = eval::parse_uint(a, value(), 2, 1000000);
    } else if (a == "--samples") {
      cfg.samples = eval::parse_uint(a, value(), 0, 1000);
    } else if (a == "--check-sample") {
      cfg.check_sample = eval::parse_uint(a, value(), 2, 100000);
    } else if (a == "--threads") {
      cfg.threads = static_cast<unsigned>(eval::parse_uint(a, value(), 1, 256));
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
  usage_exit("eval_symbols",
             "CORPUS_DIR [--max-items N] [--samples S] "
             "[--check-sample M] [--threads T]",
             msg);
}

}  // namespace eval

int main(int argc, char** argv) {
  try {
    const Config cfg = parse_args(argc, argv);
    const unsigned threads =
        cfg.threads != 0 ? cfg.threads : std::clamp(std::thread::hardware_concurrency(), 1U, 2U);
    const std::string command = eval::command_line(argc, argv);
    const auto start = Clock::now();
    const Placeholders ph;
    self_check(ph);
    struct Source {
      std::string name;
      fs::path dir;
      std::string prefix;
    };
    const std::vector<Source> sources = {
        {"en-man", cfg.corpus / "en", "man-"}, {"en-copyright", cfg.corpus / "en", "copyright-"},
        {"de", cfg.corpus / "de", ""},         {"fr", cfg.corpus / "fr", ""},
        {"ja", cfg.corpus / "ja", ""},         {"zh", cfg.corpus / "zh", ""}};
    std::vector<Collection> cols;
    cols.reserve(sources.size());
    std::vector<Result> results;
    for (const auto& s : sources) {
      cols.push_back(load(s.name, sorted_files(s.dir, s.prefix), cfg, threads, ph));
      const Collection& c = cols.back();
      if (c.placeholders_in_text != 0) {
        throw std::runtime_error(c.name + ": the corpus holds placeholder letters (U+1400..U+167F)");
      }
      std::fprintf(stderr, "[%s] %zu files, %zu items (%.1f s)\n", c.name.c_str(), c.files,
                   c.items.size(), seconds_since(start));
      if (c.items.size() < 2) continue;
      results.push_back(evaluate(c, cfg, threads));
      std::fprintf(stderr, "[%s] compared (%.1f s)\n", c.name.c_str(), seconds_since(start));
    }
    if (results.empty()) eval::usage_error("no collection with 2 items or more");
    print_report(cols, results, cfg, command, seconds_since(start), threads, ph.pool.size());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "eval_symbols: %s\n", e.what());
    return 1;
  }
}
