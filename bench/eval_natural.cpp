// Calibrates simhash_similar_pairs(query, min_similarity) on natural near duplicates: which
// fingerprint recipe and which Hamming radius k let SimHash candidates plus exact
// verification find (nearly) every pair whose shingle Jaccard similarity reaches a threshold.
//
//   eval_natural CORPUS_DIR [--max-items N] [--check-sample M] [--threads T]
//
// CORPUS_DIR is written by scripts/make_corpus.sh (en/, de/, fr/, ja/, zh/). No synthetic
// edits: the near duplicates are those the documents really contain (licence paragraphs
// shared by many copyright files, option descriptions repeated across man pages, ...).
//
//  1. Collections. Every file of a language (sorted by name) is split into paragraphs:
//     blocks of lines between blank lines, the lines of a block joined with a space. A
//     paragraph is kept when it has at least kMinShingles shingles (about 30 normalized
//     characters). Collections: en (man pages and copyright files), de, fr, ja, zh, and
//     en-copyright-files, whose items are the whole copyright files of en/. Items whose
//     shingle sets are identical collapse to the first one (counted as exact duplicates, left
//     out of all pairs). A collection takes items in file order until it holds --max-items
//     (default 30000) distinct ones.
//  2. Ground truth: every pair of items whose Jaccard similarity of normalized character
//     5-shingle sets (simhash::shingle_set, the sets simhash_similarity() compares) is at
//     least kThresholds[0] = 0.5, found exactly by an all-pairs similarity join (prefix
//     filtering with tokens ordered by rarity, a size filter and a positional filter, as in
//     AllPairs (Bayardo et al. 2007) and PPJoin (Xiao et al. 2008), every candidate verified
//     with simhash::overlap). The join is checked against brute force on the first
//     --check-sample items (default 1500) of every collection; the program aborts if they
//     differ. Second label: "raw" Jaccard of character 5-grams of the raw text (code points,
//     no case folding, white space runs collapsed to one space), with its own exact join at
//     0.7.
//  3. For each candidate recipe (recipes(), fingerprints by simhash::TextFingerprinter, the
//     code behind simhash(body, tokenizer, n, weighting)) and k = 0..kMaxK: the number of
//     pairs within Hamming distance k (over all N (N - 1) / 2 pairs, exactly), and the
//     candidate recall: the share of true pairs at each threshold t within distance k. The
//     pipeline verifies candidates exactly, so on these labels its recall is the candidate
//     recall and its precision is 1. On the raw labels, for t = 0.8, the pipeline's recall of
//     raw J >= 0.8 pairs and its precision counting raw J >= 0.7 as right.
//  4. Unions (kUnionPairs) at the radii the extension's all-pairs finder supports (kUnionK,
//     k <= 16): a pair is a candidate when it is within distance k in either recipe. Exactly
//     over all pairs: the pairs of the union (each once) and the true pairs among them.
//  5. Verified thresholds kVerified: the pipeline returns the pairs among candidates(v) whose
//     normalized J >= v; its recall of raw J >= 0.8 pairs and precision counting raw J >= 0.7
//     as right, and the same with every pair verified. Exact, since every pair with raw J >=
//     0.7 is in the raw join and every returned pair (J >= v >= 0.5) in the normalized join,
//     the labelled pairs carrying both similarities.
//
// Prints a Markdown report to stdout (progress to stderr). The report depends only on the
// corpus and the options, not on the number of threads or the machine, except for the run
// time in its last line.
#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/fingerprint.hpp"
#include "eval_common.hpp"
#include "eval_join.hpp"
#include "core/hamming.hpp"
#include "core/minhash.hpp"
#include "core/similarity.hpp"
#include "core/text_options.hpp"
#include "core/utf8.hpp"

namespace fs = std::filesystem;

namespace {

using eval::brute_force_join;
using eval::by_items;
using eval::run_parallel;
using eval::SimPair;
using eval::similarity_join;

using eval::next_code_point;
using eval::parse_uint;
using eval::read_file;
using eval::usage_error;
using eval::is_space;

// ---------------------------------------------------------------------------------------
// Parameters

// Jaccard thresholds of simhash_similar_pairs() evaluated; the first is the join's.
constexpr std::array<double, 5> kThresholds = {0.5, 0.6, 0.7, 0.8, 0.9};
constexpr std::size_t kT08 = 3;  // index of 0.8 in kThresholds
constexpr int kMaxK = 24;
// Shingles of a paragraph of 30 normalized characters: 30 - 5 + 1.
constexpr std::size_t kMinShingles = 26;
// Candidate recall targets of the calibration.
constexpr double kRecall = 0.97;
constexpr double kRecallHigh = 0.99;
// The raw label: thresholds for "right" (precision) and "near duplicate" (recall).
constexpr double kRawRight = 0.7;
constexpr double kRawTrue = 0.8;
// Unions of the candidate sets of two recipes (by the letter that starts the recipe's name)
// at the radii the extension's all-pairs finder supports (k <= 16).
constexpr std::array<int, 2> kUnionK = {16, 14};
constexpr std::array<std::array<char, 2>, 4> kUnionPairs = {{{'B', 'D'}, {'B', 'E'}, {'B', 'F'},
                                                            {'D', 'E'}}};
constexpr std::array<char, 4> kUnionSingles = {'B', 'D', 'E', 'F'};
// Verified thresholds v of the pipeline (pairs among the candidates with normalized J >= v)
// measured against the raw labels, and the candidates used for each v: candidates(v).
constexpr std::array<double, 7> kVerified = {0.65, 0.7, 0.75, 0.77, 0.78, 0.8, 0.85};
struct Candidates {
  char x, y;  // recipe letters; y == 0: x alone
  int k;
};
static_assert(kVerified[0] >= kThresholds[0], "returned pairs must lie in the truth set");
constexpr Candidates candidates(double v) {
  return v >= 0.8 ? Candidates{'F', 0, 14} : v >= 0.7 ? Candidates{'D', 0, 16} : Candidates{'B', 'D', 16};
}

// MinHash LSH schemes (bands, rows) evaluated; the first is the extension's (kLshBands,
// kLshRows of core/minhash.hpp).
struct LshScheme {
  int bands, rows;
};
constexpr std::array<LshScheme, 6> kLshSchemes = {
    {{simhash::kLshBands, simhash::kLshRows}, {16, 4}, {24, 6}, {30, 6}, {16, 5}, {12, 8}}};

struct Config {
  fs::path corpus;
  std::size_t max_items = 30000;
  std::size_t check_sample = 1500;
  unsigned threads = 0;  // 0: min(2, cores)
};

// ---------------------------------------------------------------------------------------
// Recipes

struct Recipe {
  std::string name;
  simhash::TextOptions options;
};

std::vector<Recipe> recipes() {
  using simhash::TokenizerKind;
  using simhash::Weighting;
  const auto make = [](const char* name, TokenizerKind t, int n, Weighting w) {
    simhash::TextOptions o;
    o.tokenizer = t;
    o.n = n;
    o.weighting = w;
    return Recipe{name, o};
  };
  return {
      Recipe{"A default (word n=3 tf)", simhash::TextOptions{}},
      make("B word n=1 binary", TokenizerKind::Word, 1, Weighting::Binary),
      make("C word n=2 binary", TokenizerKind::Word, 2, Weighting::Binary),
      make("D char n=3 binary", TokenizerKind::Char, 3, Weighting::Binary),
      make("E char n=4 binary", TokenizerKind::Char, 4, Weighting::Binary),
      make("F char n=5 binary", TokenizerKind::Char, 5, Weighting::Binary),
      make("G word n=1 tf", TokenizerKind::Word, 1, Weighting::Tf),
  };
}

// Runs a TextFingerprinter over a whole text with a buffer of the size it asks for, as the
// PostgreSQL glue does (chunks the buffer has room for). 0 for a text without features.
std::uint64_t text_fingerprint(std::string_view text, const simhash::TextOptions& o,
                               std::vector<std::uint64_t>& buffer) {
  simhash::TextFingerprinter f(o);
  std::size_t done = 0;
  while (done < text.size()) {
    const std::size_t want = std::min<std::size_t>(text.size() - done, 4096);
    if (f.feed_limit() < want) {
      // The buffer is reused across texts: grow it only when it is too small.
      const std::size_t need = f.capacity_for(want);
      if (buffer.size() < need) buffer.resize(std::max(2 * buffer.size(), need));
      f.set_buffer(buffer.data(), buffer.size());
    }
    f.feed(text.data() + done, want);
    done += want;
  }
  if (f.needs_buffer() && buffer.empty()) {
    buffer.resize(f.capacity_for(0));
    f.set_buffer(buffer.data(), buffer.size());
  }
  const auto fp = f.fingerprint();
  return fp ? *fp : 0;
}

// ---------------------------------------------------------------------------------------
// Threads

// run_parallel: eval_join.hpp.

// ---------------------------------------------------------------------------------------
// Text

using eval::Clock;
using eval::seconds_since;

using eval::paragraphs;

// The raw label's set: hashes of the windows of 5 code points of the text with every run of
// white space replaced by one space and none at either end (a text of fewer code points: one
// window of them all). Invalid UTF-8 bytes count as U+FFFD each.
std::vector<std::uint64_t> raw_set(std::string_view text) {
  std::string s;  // collapsed text, UTF-8
  std::vector<std::size_t> starts;
  bool space = false;
  for (std::size_t i = 0; i < text.size();) {
    unsigned len = 0;
    const char32_t c = next_code_point(text, i, len);
    if (is_space(c)) {
      space = true;
    } else {
      if (space && !s.empty()) {
        starts.push_back(s.size());
        s += ' ';
      }
      space = false;
      starts.push_back(s.size());
      unsigned char bytes[4];
      s.append(reinterpret_cast<const char*>(bytes), simhash::utf8::encode(c, bytes));
    }
    i += len;
  }
  starts.push_back(s.size());
  const std::size_t cps = starts.size() - 1;
  std::vector<std::uint64_t> out;
  if (cps == 0) return out;
  constexpr std::size_t w = simhash::kSimilarityShingle;
  if (cps < w) {
    out.push_back(simhash::hash_bytes(s.data(), s.size()));
    return out;
  }
  out.reserve(cps - w + 1);
  for (std::size_t i = 0; i + w <= cps; ++i) {
    out.push_back(simhash::hash_bytes(s.data() + starts[i], starts[i + w] - starts[i]));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// ---------------------------------------------------------------------------------------
// Collections

struct Collection {
  std::string name;
  std::size_t files = 0;
  std::size_t blocks = 0;       // paragraphs (or files) read
  std::size_t short_items = 0;  // fewer than kMinShingles shingles
  std::size_t duplicates = 0;   // same shingle set as an earlier item
  bool capped = false;          // stopped at --max-items
  std::vector<std::string> texts;
  std::vector<std::vector<std::uint64_t>> sets;  // shingle_set(text)
};

using eval::sorted_files;

Collection load_collection(const std::string& name, const std::vector<fs::path>& files,
                           bool whole_files, const Config& cfg, unsigned threads) {
  Collection c;
  c.name = name;
  c.files = files.size();
  std::vector<std::string> blocks;
  for (const auto& f : files) {
    std::string text = read_file(f);
    if (whole_files) {
      blocks.push_back(std::move(text));
    } else {
      for (auto& p : paragraphs(text)) blocks.push_back(std::move(p));
    }
  }
  std::vector<std::vector<std::uint64_t>> sets(blocks.size());
  run_parallel(threads, blocks.size(), [&](const auto& next) {
    for (std::size_t i; next(i);) sets[i] = simhash::shingle_set(blocks[i]);
  });
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> seen;  // set hash -> items
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    auto& set = sets[b];
    if (set.size() < kMinShingles) {
      ++c.short_items;
      ++c.blocks;
      continue;
    }
    auto& same = seen[simhash::hash_bytes(set.data(), set.size() * sizeof(std::uint64_t))];
    if (std::any_of(same.begin(), same.end(), [&](std::size_t i) { return c.sets[i] == set; })) {
      ++c.duplicates;
      ++c.blocks;
      continue;
    }
    if (c.texts.size() == cfg.max_items) {
      c.capped = true;
      break;
    }
    ++c.blocks;
    same.push_back(c.texts.size());
    c.texts.push_back(std::move(blocks[b]));
    c.sets.push_back(std::move(set));
  }
  return c;
}

// ---------------------------------------------------------------------------------------
// Exact all-pairs similarity join

// SimPair, similarity_join and brute_force_join: eval_join.hpp (shared with eval_symbols.cpp).

// ---------------------------------------------------------------------------------------
// Measurements

using DistHist = std::array<std::uint64_t, 65>;  // pairs by Hamming distance

std::uint64_t up_to(const DistHist& h, int k) {
  std::uint64_t s = 0;
  for (int d = 0; d <= k; ++d) s += h[static_cast<std::size_t>(d)];
  return s;
}

void add_to(DistHist& h, const DistHist& o) {
  for (std::size_t d = 0; d < h.size(); ++d) h[d] += o[d];
}

struct Result {
  std::string name;
  std::size_t files = 0, blocks = 0, short_items = 0, duplicates = 0, items = 0;
  std::size_t median_shingles = 0;
  std::size_t check_items = 0, check_pairs = 0;  // the truth check: sample, pairs in it
  bool capped = false;
  std::array<std::uint64_t, kThresholds.size()> true_pairs{};
  std::uint64_t raw_right = 0, raw_true = 0;  // pairs with raw J >= kRawRight, >= kRawTrue
  std::vector<DistHist> all_pairs;            // per recipe: every pair
  // Per recipe and threshold: the true pairs (J >= t).
  std::vector<std::array<DistHist, kThresholds.size()>> truth;
  // Per recipe, pairs the pipeline returns at t = 0.8 (J >= 0.8) with raw J >= kRawRight and
  // >= kRawTrue; and per recipe the raw J >= kRawTrue pairs.
  std::vector<DistHist> out_raw_right, out_raw_true;
  // Unions (kUnionPairs x kUnionK): all pairs within distance k of either recipe, and the
  // true pairs (J >= t) among them.
  using UnionCounts = std::array<std::array<std::uint64_t, kUnionK.size()>, kUnionPairs.size()>;
  UnionCounts union_all{};
  std::array<UnionCounts, kThresholds.size()> union_truth{};
  // Verified thresholds (kVerified): pairs returned (candidates(v), normalized J >= v), those
  // with raw J >= kRawRight and >= kRawTrue; and the same when every pair is verified.
  struct Returned {
    std::uint64_t returned = 0, right = 0, hit = 0;
    Returned& operator+=(const Returned& o) {
      returned += o.returned;
      right += o.right;
      hit += o.hit;
      return *this;
    }
  };
  std::array<Returned, kVerified.size()> verified{}, verified_exact{};
  // MinHash LSH (kLshSchemes): pairs sharing a band key, and the true pairs among them.
  std::array<std::uint64_t, kLshSchemes.size()> lsh_all{};
  std::array<std::array<std::uint64_t, kThresholds.size()>, kLshSchemes.size()> lsh_truth{};
  // The pipeline with the extension's keys (scheme 0) at the verified thresholds.
  std::array<Returned, kVerified.size()> verified_lsh{};

  explicit Result(std::size_t recipes = 0)
      : all_pairs(recipes), truth(recipes), out_raw_right(recipes), out_raw_true(recipes) {}

  Result& operator+=(const Result& o) {
    files += o.files;
    blocks += o.blocks;
    short_items += o.short_items;
    duplicates += o.duplicates;
    items += o.items;
    for (std::size_t t = 0; t < kThresholds.size(); ++t) true_pairs[t] += o.true_pairs[t];
    raw_right += o.raw_right;
    raw_true += o.raw_true;
    for (std::size_t r = 0; r < all_pairs.size(); ++r) {
      add_to(all_pairs[r], o.all_pairs[r]);
      for (std::size_t t = 0; t < kThresholds.size(); ++t) add_to(truth[r][t], o.truth[r][t]);
      add_to(out_raw_right[r], o.out_raw_right[r]);
      add_to(out_raw_true[r], o.out_raw_true[r]);
    }
    for (std::size_t u = 0; u < kUnionPairs.size(); ++u) {
      for (std::size_t q = 0; q < kUnionK.size(); ++q) {
        union_all[u][q] += o.union_all[u][q];
        for (std::size_t t = 0; t < kThresholds.size(); ++t) {
          union_truth[t][u][q] += o.union_truth[t][u][q];
        }
      }
    }
    for (std::size_t v = 0; v < kVerified.size(); ++v) {
      verified[v] += o.verified[v];
      verified_exact[v] += o.verified_exact[v];
      verified_lsh[v] += o.verified_lsh[v];
    }
    for (std::size_t l = 0; l < kLshSchemes.size(); ++l) {
      lsh_all[l] += o.lsh_all[l];
      for (std::size_t t = 0; t < kThresholds.size(); ++t) lsh_truth[l][t] += o.lsh_truth[l][t];
    }
    return *this;
  }

  double recall(std::size_t r, std::size_t t, int k) const {
    return true_pairs[t] == 0
               ? 1.0
               : static_cast<double>(up_to(truth[r][t], k)) / static_cast<double>(true_pairs[t]);
  }
  double union_recall(std::size_t u, std::size_t t, std::size_t q) const {
    return true_pairs[t] == 0 ? 1.0
                              : static_cast<double>(union_truth[t][u][q]) /
                                    static_cast<double>(true_pairs[t]);
  }
  double union_per_item(std::size_t u, std::size_t q) const {
    return items == 0 ? 0.0 : static_cast<double>(union_all[u][q]) / static_cast<double>(items);
  }
  double per_item(std::size_t r, int k) const {
    return items == 0 ? 0.0
                      : static_cast<double>(up_to(all_pairs[r], k)) / static_cast<double>(items);
  }
  // The smallest k <= kMaxK with candidate recall >= target, or -1.
  int k_for(std::size_t r, std::size_t t, double target) const {
    for (int k = 0; k <= kMaxK; ++k) {
      if (recall(r, t, k) >= target) return k;
    }
    return -1;
  }
};

// The band keys of every set under scheme l (empty for an empty set).
std::vector<std::vector<std::int64_t>> lsh_keys_of(const std::vector<std::vector<std::uint64_t>>& sets,
                                                   const LshScheme& l, unsigned threads) {
  std::vector<std::vector<std::int64_t>> keys(sets.size());
  run_parallel(threads, sets.size(), [&](const auto& next) {
    for (std::size_t i; next(i);) {
      if (sets[i].empty()) continue;
      keys[i] = simhash::lsh_band_keys(
          simhash::minhash_signature(sets[i].data(), sets[i].size(), l.bands * l.rows), l.bands,
          l.rows);
    }
  });
  return keys;
}

// The number of distinct pairs that share at least one band key: per band, the items
// grouped by key, every pair of a group; deduplicated across bands.
std::uint64_t lsh_pair_count(const std::vector<std::vector<std::int64_t>>& keys, int bands) {
  std::vector<std::uint64_t> pairs;
  std::vector<std::pair<std::int64_t, std::uint32_t>> byk;
  for (int b = 0; b < bands; ++b) {
    byk.clear();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (!keys[i].empty()) byk.emplace_back(keys[i][static_cast<std::size_t>(b)], i);
    }
    std::sort(byk.begin(), byk.end());
    for (std::size_t s = 0; s < byk.size();) {
      std::size_t e = s + 1;
      while (e < byk.size() && byk[e].first == byk[s].first) ++e;
      for (std::size_t x = s; x < e; ++x) {
        for (std::size_t y = x + 1; y < e; ++y) {
          pairs.push_back(static_cast<std::uint64_t>(byk[x].second) << 32 | byk[y].second);
        }
      }
      s = e;
    }
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  }
  return pairs.size();
}

bool share_key(const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
  if (a.empty() || b.empty()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == b[i]) return true;
  }
  return false;
}

// Histograms of the Hamming distances of all pairs, one per recipe.
std::vector<DistHist> all_pair_distances(const std::vector<std::vector<std::uint64_t>>& fps,
                                         std::size_t n, unsigned threads) {
  std::vector<std::vector<DistHist>> local(threads, std::vector<DistHist>(fps.size(), DistHist{}));
  std::atomic<unsigned> worker{0};
  run_parallel(threads, n, [&](const auto& next) {
    auto& mine = local[worker.fetch_add(1)];
    std::array<DistHist, 4> h{};  // four histograms: fewer stalls on repeated distances
    for (std::size_t i; next(i);) {
      for (std::size_t r = 0; r < fps.size(); ++r) {
        for (auto& x : h) x.fill(0);
        const std::uint64_t* f = fps[r].data();
        const std::uint64_t a = f[i];
        std::size_t j = i + 1;
        for (; j + 4 <= n; j += 4) {
          ++h[0][static_cast<std::size_t>(simhash::hamming(a, f[j]))];
          ++h[1][static_cast<std::size_t>(simhash::hamming(a, f[j + 1]))];
          ++h[2][static_cast<std::size_t>(simhash::hamming(a, f[j + 2]))];
          ++h[3][static_cast<std::size_t>(simhash::hamming(a, f[j + 3]))];
        }
        for (; j < n; ++j) ++h[0][static_cast<std::size_t>(simhash::hamming(a, f[j]))];
        for (const auto& x : h) add_to(mine[r], x);
      }
    }
  });
  std::vector<DistHist> out(fps.size(), DistHist{});
  for (const auto& l : local) {
    for (std::size_t r = 0; r < fps.size(); ++r) add_to(out[r], l[r]);
  }
  return out;
}

// The recipe whose name starts with `letter`.
std::size_t recipe_index(const std::vector<Recipe>& rs, char letter) {
  for (std::size_t r = 0; r < rs.size(); ++r) {
    if (!rs[r].name.empty() && rs[r].name[0] == letter) return r;
  }
  throw std::runtime_error(std::string("no recipe ") + letter);
}

// The recipe numbers of kUnionPairs.
std::vector<std::array<std::size_t, 2>> union_recipes(const std::vector<Recipe>& rs) {
  std::vector<std::array<std::size_t, 2>> out;
  for (const auto& u : kUnionPairs) out.push_back({recipe_index(rs, u[0]), recipe_index(rs, u[1])});
  return out;
}

// Per union (kUnionPairs) and radius (kUnionK): the pairs within distance k of either recipe,
// over all pairs. Each recipe's distance is computed once per pair.
Result::UnionCounts union_pair_counts(const std::vector<std::vector<std::uint64_t>>& fps,
                                      const std::vector<std::array<std::size_t, 2>>& unions,
                                      std::size_t n, unsigned threads) {
  // The distinct recipes of the unions, and each union's two places among them.
  std::vector<std::size_t> used;
  for (const auto& u : unions) used.insert(used.end(), u.begin(), u.end());
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  constexpr std::size_t kMaxUsed = 2 * kUnionPairs.size();
  std::array<std::array<std::size_t, 2>, kUnionPairs.size()> place{};
  for (std::size_t u = 0; u < unions.size(); ++u) {
    for (std::size_t s = 0; s < 2; ++s) {
      place[u][s] = static_cast<std::size_t>(
          std::lower_bound(used.begin(), used.end(), unions[u][s]) - used.begin());
    }
  }
  std::vector<Result::UnionCounts> local(threads, Result::UnionCounts{});
  std::atomic<unsigned> worker{0};
  run_parallel(threads, n, [&](const auto& next) {
    auto& mine = local[worker.fetch_add(1)];
    std::array<const std::uint64_t*, kMaxUsed> f{};
    for (std::size_t r = 0; r < used.size(); ++r) f[r] = fps[used[r]].data();
    for (std::size_t i; next(i);) {
      std::array<std::uint64_t, kMaxUsed> a{};
      for (std::size_t r = 0; r < used.size(); ++r) a[r] = f[r][i];
      Result::UnionCounts count{};
      for (std::size_t j = i + 1; j < n; ++j) {
        std::array<int, kMaxUsed> d{};
        for (std::size_t r = 0; r < used.size(); ++r) d[r] = simhash::hamming(a[r], f[r][j]);
        for (std::size_t u = 0; u < kUnionPairs.size(); ++u) {
          const int m = std::min(d[place[u][0]], d[place[u][1]]);
          for (std::size_t q = 0; q < kUnionK.size(); ++q) count[u][q] += m <= kUnionK[q] ? 1 : 0;
        }
      }
      for (std::size_t u = 0; u < kUnionPairs.size(); ++u) {
        for (std::size_t q = 0; q < kUnionK.size(); ++q) mine[u][q] += count[u][q];
      }
    }
  });
  Result::UnionCounts out{};
  for (const auto& l : local) {
    for (std::size_t u = 0; u < out.size(); ++u) {
      for (std::size_t q = 0; q < kUnionK.size(); ++q) out[u][q] += l[u][q];
    }
  }
  return out;
}

Result evaluate(const Collection& c, const std::vector<Recipe>& rs, const Config& cfg,
                unsigned threads) {
  const auto t0 = Clock::now();
  const std::size_t n = c.texts.size();
  Result res(rs.size());
  res.name = c.name;
  res.files = c.files;
  res.blocks = c.blocks;
  res.short_items = c.short_items;
  res.duplicates = c.duplicates;
  res.items = n;
  res.capped = c.capped;
  if (n > 0) {
    std::vector<std::size_t> sizes(n);
    for (std::size_t i = 0; i < n; ++i) sizes[i] = c.sets[i].size();
    std::nth_element(sizes.begin(), sizes.begin() + static_cast<long>(n / 2), sizes.end());
    res.median_shingles = sizes[n / 2];
  }

  // Ground truth, checked against brute force on a sample.
  const std::size_t m = std::min(n, cfg.check_sample);
  const std::vector<std::vector<std::uint64_t>> sample(c.sets.begin(),
                                                       c.sets.begin() + static_cast<long>(m));
  const auto brute = brute_force_join(sample, sample.size(), kThresholds[0], threads);
  if (similarity_join(sample, kThresholds[0], threads) != brute) {
    throw std::runtime_error("truth check failed for " + c.name +
                             ": the similarity join differs from brute force");
  }
  res.check_items = m;
  res.check_pairs = brute.size();
  std::fprintf(stderr, "[%s] truth check: OK (%zu items, %zu pairs, %.1f s)\n", c.name.c_str(), m,
               brute.size(), seconds_since(t0));
  const auto truth = similarity_join(c.sets, kThresholds[0], threads);
  std::fprintf(stderr, "[%s] %zu items, %zu pairs with J >= %.1f (%.1f s)\n", c.name.c_str(), n,
               truth.size(), kThresholds[0], seconds_since(t0));

  // Raw label.
  std::vector<std::vector<std::uint64_t>> raw(n);
  run_parallel(threads, n, [&](const auto& next) {
    for (std::size_t i; next(i);) raw[i] = raw_set(c.texts[i]);
  });
  const auto raw_pairs = similarity_join(raw, kRawRight, threads);
  std::fprintf(stderr, "[%s] %zu pairs with raw J >= %.1f (%.1f s)\n", c.name.c_str(),
               raw_pairs.size(), kRawRight, seconds_since(t0));

  // Fingerprints.
  std::vector<std::vector<std::uint64_t>> fps(rs.size(), std::vector<std::uint64_t>(n));
  run_parallel(threads, n, [&](const auto& next) {
    std::vector<std::uint64_t> buffer;
    for (std::size_t i; next(i);) {
      for (std::size_t r = 0; r < rs.size(); ++r) {
        fps[r][i] = text_fingerprint(c.texts[i], rs[r].options, buffer);
      }
    }
  });
  res.all_pairs = all_pair_distances(fps, n, threads);
  const auto unions = union_recipes(rs);
  res.union_all = union_pair_counts(fps, unions, n, threads);
  std::fprintf(stderr, "[%s] fingerprints and all-pair distances (%.1f s)\n", c.name.c_str(),
               seconds_since(t0));
  std::vector<std::vector<std::vector<std::int64_t>>> lsh(kLshSchemes.size());
  for (std::size_t l = 0; l < kLshSchemes.size(); ++l) {
    lsh[l] = lsh_keys_of(c.sets, kLshSchemes[l], threads);
    res.lsh_all[l] = lsh_pair_count(lsh[l], kLshSchemes[l].bands);
  }
  std::fprintf(stderr, "[%s] MinHash LSH keys and pairs (%.1f s)\n", c.name.c_str(),
               seconds_since(t0));
  struct VerifiedCandidates {
    std::size_t x, y;  // y == x: x alone
    int k;
  };
  std::array<VerifiedCandidates, kVerified.size()> vc{};
  for (std::size_t v = 0; v < kVerified.size(); ++v) {
    const Candidates cand = candidates(kVerified[v]);
    const std::size_t x = recipe_index(rs, cand.x);
    vc[v] = {x, cand.y ? recipe_index(rs, cand.y) : x, cand.k};
  }

  // Labelled pairs: the union of both joins, with both similarities.
  const auto label = [&](std::uint32_t a, std::uint32_t b, double j, double raw_j) {
    for (std::size_t t = 0; t < kThresholds.size(); ++t) {
      if (j >= kThresholds[t]) ++res.true_pairs[t];
    }
    if (raw_j >= kRawRight) ++res.raw_right;
    if (raw_j >= kRawTrue) ++res.raw_true;
    for (std::size_t r = 0; r < rs.size(); ++r) {
      const auto d = static_cast<std::size_t>(simhash::hamming(fps[r][a], fps[r][b]));
      for (std::size_t t = 0; t < kThresholds.size(); ++t) {
        if (j >= kThresholds[t]) ++res.truth[r][t][d];
      }
      if (j >= kThresholds[kT08] && raw_j >= kRawRight) ++res.out_raw_right[r][d];
      if (j >= kThresholds[kT08] && raw_j >= kRawTrue) ++res.out_raw_true[r][d];
    }
    const auto dist = [&](std::size_t r) { return simhash::hamming(fps[r][a], fps[r][b]); };
    for (std::size_t l = 0; l < kLshSchemes.size(); ++l) {
      if (!share_key(lsh[l][a], lsh[l][b])) continue;
      for (std::size_t t = 0; t < kThresholds.size(); ++t) {
        if (j >= kThresholds[t]) ++res.lsh_truth[l][t];
      }
    }
    for (std::size_t u = 0; u < unions.size(); ++u) {
      const int d = std::min(dist(unions[u][0]), dist(unions[u][1]));
      for (std::size_t q = 0; q < kUnionK.size(); ++q) {
        if (d > kUnionK[q]) continue;
        for (std::size_t t = 0; t < kThresholds.size(); ++t) {
          if (j >= kThresholds[t]) ++res.union_truth[t][u][q];
        }
      }
    }
    // The verified thresholds: every pair with normalized J >= v is in the truth set (v >=
    // kThresholds[0]), so its raw J is known exactly here.
    for (std::size_t v = 0; v < kVerified.size(); ++v) {
      if (j < kVerified[v]) continue;
      const auto count = [&](Result::Returned& x) {
        ++x.returned;
        if (raw_j >= kRawRight) ++x.right;
        if (raw_j >= kRawTrue) ++x.hit;
      };
      count(res.verified_exact[v]);
      if (std::min(dist(vc[v].x), dist(vc[v].y)) <= vc[v].k) count(res.verified[v]);
      if (share_key(lsh[0][a], lsh[0][b])) count(res.verified_lsh[v]);
    }
  };
  const auto jaccard_of = [](const std::vector<std::vector<std::uint64_t>>& s, std::uint32_t a,
                             std::uint32_t b) {
    return simhash::jaccard(simhash::overlap(s[a].data(), s[a].size(), s[b].data(), s[b].size()));
  };
  std::size_t i = 0, j = 0;
  while (i < truth.size() || j < raw_pairs.size()) {
    if (j == raw_pairs.size() || (i < truth.size() && by_items(truth[i], raw_pairs[j]))) {
      label(truth[i].a, truth[i].b, truth[i].jaccard(), jaccard_of(raw, truth[i].a, truth[i].b));
      ++i;
    } else if (i == truth.size() || by_items(raw_pairs[j], truth[i])) {
      const auto& p = raw_pairs[j];
      label(p.a, p.b, jaccard_of(c.sets, p.a, p.b), p.jaccard());
      ++j;
    } else {
      label(truth[i].a, truth[i].b, truth[i].jaccard(), raw_pairs[j].jaccard());
      ++i;
      ++j;
    }
  }
  std::fprintf(stderr, "[%s] done in %.1f s\n", c.name.c_str(), seconds_since(t0));
  return res;
}

// ---------------------------------------------------------------------------------------
// Report

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string per_item_str(double v) {
  return v < 0.01 ? fmt("%.4f", v) : v < 10 ? fmt("%.3f", v) : fmt("%.1f", v);
}

std::string threshold_str(std::size_t t) { return fmt("%.1f", kThresholds[t]); }

// One cell: "k (candidates per item)" at the smallest k with recall >= target; "> 24".
std::string k_cell(const Result& r, std::size_t recipe, std::size_t t, double target) {
  const int k = r.k_for(recipe, t, target);
  if (k < 0) return "> " + std::to_string(kMaxK);
  return std::to_string(k) + " (" + per_item_str(r.per_item(recipe, k)) + ")";
}

void print_calibration(const Result& r, const std::vector<Recipe>& rs) {
  std::printf("### %s\n\n", r.name.c_str());
  std::printf("%zu items; true pairs", r.items);
  for (std::size_t t = 0; t < kThresholds.size(); ++t) {
    std::printf("%s J >= %s: %llu", t ? "," : "", threshold_str(t).c_str(),
                static_cast<unsigned long long>(r.true_pairs[t]));
  }
  std::printf(".\n\n| recipe |");
  for (std::size_t t = 0; t < kThresholds.size(); ++t) {
    std::printf(" t = %s: R >= %.2f | R >= %.2f |", threshold_str(t).c_str(), kRecall, kRecallHigh);
  }
  std::printf("\n|---|");
  for (std::size_t t = 0; t < kThresholds.size(); ++t) std::printf("---|---|");
  std::printf("\n");
  // The recipe with the fewest candidates per item at recall >= kRecall, per threshold.
  std::array<std::size_t, kThresholds.size()> best{};
  for (std::size_t t = 0; t < kThresholds.size(); ++t) {
    double least = -1;
    best[t] = rs.size();
    for (std::size_t x = 0; x < rs.size(); ++x) {
      const int k = r.k_for(x, t, kRecall);
      if (k < 0) continue;
      const double v = r.per_item(x, k);
      if (least < 0 || v < least) {
        least = v;
        best[t] = x;
      }
    }
  }
  for (std::size_t x = 0; x < rs.size(); ++x) {
    std::printf("| %s |", rs[x].name.c_str());
    for (std::size_t t = 0; t < kThresholds.size(); ++t) {
      const std::string cell = k_cell(r, x, t, kRecall);
      if (best[t] == x) {
        std::printf(" **%s** |", cell.c_str());
      } else {
        std::printf(" %s |", cell.c_str());
      }
      std::printf(" %s |", k_cell(r, x, t, kRecallHigh).c_str());
    }
    std::printf("\n");
  }
  std::printf("\n");
}

// The smallest k at which candidate recall >= target in every collection with true pairs
// at t, or -1.
int k_everywhere(const std::vector<Result>& results, std::size_t recipe, std::size_t t,
                 double target) {
  int k = 0;
  for (const auto& r : results) {
    if (r.true_pairs[t] == 0) continue;
    const int kr = r.k_for(recipe, t, target);
    if (kr < 0) return -1;
    k = std::max(k, kr);
  }
  return k;
}

// The options of the union section: single recipes (y == x) and unions, each at a k of
// kUnionK; u: the union's number in kUnionPairs (unused for single recipes).
struct UnionOption {
  std::size_t x, y, u, q;
  bool single() const { return x == y; }
};

std::vector<UnionOption> union_options(const std::vector<Recipe>& rs) {
  std::vector<UnionOption> out;
  const auto unions = union_recipes(rs);
  for (std::size_t q = 0; q < kUnionK.size(); ++q) {
    for (const char l : kUnionSingles) {
      const std::size_t x = recipe_index(rs, l);
      out.push_back({x, x, 0, q});
    }
    for (std::size_t u = 0; u < unions.size(); ++u) out.push_back({unions[u][0], unions[u][1], u, q});
  }
  return out;
}

double option_recall(const Result& r, const UnionOption& o, std::size_t t) {
  return o.single() ? r.recall(o.x, t, kUnionK[o.q]) : r.union_recall(o.u, t, o.q);
}

double option_per_item(const Result& r, const UnionOption& o) {
  return o.single() ? r.per_item(o.x, kUnionK[o.q]) : r.union_per_item(o.u, o.q);
}

// The lowest candidate recall of a collection with true pairs at t.
double option_min_recall(const std::vector<Result>& results, const UnionOption& o, std::size_t t) {
  double m = 1.0;
  for (const auto& r : results) {
    if (r.true_pairs[t] > 0) m = std::min(m, option_recall(r, o, t));
  }
  return m;
}

void print_unions(const std::vector<Recipe>& rs, const std::vector<Result>& results,
                  const Result& pooled) {
  const auto options = union_options(rs);
  const auto label = [&](const UnionOption& o) {
    return o.single() ? rs[o.x].name : std::string(1, kUnionPairs[o.u][0]) + " + " +
                                           std::string(1, kUnionPairs[o.u][1]) + " (union)";
  };
  std::printf("\n## Unions of two recipes at k <= %d\n\n", kUnionK[0]);
  std::printf(
      "The extension's all-pairs finder supports Hamming radii k <= %d only. A union takes "
      "as candidates the pairs within distance k of either recipe (each recipe's own "
      "fingerprints, both at the same k); its candidates per item count each pair of the "
      "union once (pairs within k of both recipes are not counted twice), exactly over all "
      "pairs. Candidate recall: share of the pairs with J >= t among the candidates; \"min "
      "R\": the lowest recall of a collection (collections without true pairs at t left out). "
      "Single recipes at the same k for comparison. Bold: min R >= %.2f.\n\n",
      kUnionK[0], kRecall);
  std::printf("| candidates | k | candidates per item (pooled) |");
  for (std::size_t t = 0; t < kThresholds.size(); ++t) {
    std::printf(" t = %s: min R | pooled R |", threshold_str(t).c_str());
  }
  std::printf("\n|---|---|---|");
  for (std::size_t t = 0; t < kThresholds.size(); ++t) std::printf("---|---|");
  std::printf("\n");
  for (const auto& o : options) {
    std::printf("| %s | %d | %s |", label(o).c_str(), kUnionK[o.q],
                per_item_str(option_per_item(pooled, o)).c_str());
    for (std::size_t t = 0; t < kThresholds.size(); ++t) {
      const double m = option_min_recall(results, o, t);
      const char* b = m >= kRecall ? "**" : "";
      std::printf(" %s%.3f%s | %.4f |", b, m, b, option_recall(pooled, o, t));
    }
    std::printf("\n");
  }
  std::printf(
      "\nPer threshold, the option of this section (k = 14 or 16) with the fewest candidates "
      "per item (pooled) among those with min R >= %.2f:\n\n| t | candidates | k | candidates per item (pooled) | min R | "
      "pooled R |\n|---|---|---|---|---|---|\n",
      kRecall);
  for (std::size_t t = 0; t < kThresholds.size(); ++t) {
    const UnionOption* best = nullptr;
    for (const auto& o : options) {
      if (option_min_recall(results, o, t) < kRecall) continue;
      if (best == nullptr || option_per_item(pooled, o) < option_per_item(pooled, *best)) {
        best = &o;
      }
    }
    if (best == nullptr) {
      std::printf("| %s | none | | | | |\n", threshold_str(t).c_str());
      continue;
    }
    std::printf("| %s | %s | %d | %s | %.3f | %.4f |\n", threshold_str(t).c_str(),
                label(*best).c_str(), kUnionK[best->q],
                per_item_str(option_per_item(pooled, *best)).c_str(),
                option_min_recall(results, *best, t), option_recall(pooled, *best, t));
  }
  for (std::size_t t = 0; t < kThresholds.size(); ++t) {
    std::printf("\n### t = %s: candidate recall per collection\n\n| candidates | k |",
                threshold_str(t).c_str());
    for (const auto& r : results) std::printf(" %s |", r.name.c_str());
    std::printf(" min R | pooled R | candidates per item (pooled) |\n|---|---|");
    for (std::size_t c = 0; c < results.size() + 3; ++c) std::printf("---|");
    std::printf("\n");
    for (const auto& o : options) {
      std::printf("| %s | %d |", label(o).c_str(), kUnionK[o.q]);
      for (const auto& r : results) std::printf(" %.3f |", option_recall(r, o, t));
      const double m = option_min_recall(results, o, t);
      const char* b = m >= kRecall ? "**" : "";
      std::printf(" %s%.3f%s | %.4f | %s |\n", b, m, b, option_recall(pooled, o, t),
                  per_item_str(option_per_item(pooled, o)).c_str());
    }
  }
}

bool same_candidates(const Candidates& a, const Candidates& b) {
  return a.x == b.x && a.y == b.y && a.k == b.k;
}

std::string candidates_str(const Candidates& c) {
  return (c.y ? std::string(1, c.x) + " + " + c.y + " (union)" : std::string(1, c.x)) +
         " at k = " + std::to_string(c.k);
}

// "F at k = 14 for v = 0.80, 0.85; ...": the candidates of each run of kVerified.
std::string candidates_description() {
  std::string s;
  for (std::size_t v = 0; v < kVerified.size();) {
    const Candidates c = candidates(kVerified[v]);
    s += (s.empty() ? "" : "; ") + candidates_str(c) + " for v = " + fmt("%.2f", kVerified[v]);
    for (++v; v < kVerified.size() && same_candidates(candidates(kVerified[v]), c); ++v) {
      s += ", " + fmt("%.2f", kVerified[v]);
    }
  }
  return s;
}

// Two cells against the raw label: recall R of the raw J >= kRawTrue pairs (hit of
// r.raw_true), and precision P of the pairs returned (right of returned; in brackets, hit).
void print_raw_cells(const Result& r, std::uint64_t returned, std::uint64_t right,
                     std::uint64_t hit) {
  const std::string rec =
      r.raw_true ? fmt("%.3f", static_cast<double>(hit) / static_cast<double>(r.raw_true)) : "-";
  const std::string prec =
      returned ? fmt("%.3f", static_cast<double>(right) / static_cast<double>(returned)) + " (" +
                     fmt("%.3f", static_cast<double>(hit) / static_cast<double>(returned)) + ")"
               : "-";
  std::printf(" %s | %s |", rec.c_str(), prec.c_str());
}

void print_verified(const std::vector<Result>& results, const Result& pooled) {
  std::printf("\n## Verified threshold against the raw labels\n\n");
  std::printf(
      "The pipeline returns the candidate pairs whose normalized J >= v (the verified "
      "threshold). Candidates: %s. Against the raw label (5-code-point windows of the raw "
      "text, case kept, white space runs collapsed): recall R = share of all pairs with raw "
      "J >= %.1f that are returned; precision P = share of the returned pairs with raw J >= "
      "%.1f (in brackets: with raw J >= %.1f). The counts are exact: every pair with raw J >= "
      "%.1f comes from the exact raw join (the recall denominator), and every returned pair "
      "has normalized J >= v >= %.2f, so it is in the exact normalized join at %.1f, and its "
      "raw J is computed directly. \"exact\": every pair verified (no SimHash limit), the "
      "ceiling at that v. \"returned\": pairs returned, pooled.\n\n",
      candidates_description().c_str(),
      kRawTrue, kRawRight, kRawTrue, kRawRight, kVerified[0], kThresholds[0]);
  std::printf("| v | candidates |");
  for (const auto& r : results) std::printf(" %s R | P |", r.name.c_str());
  std::printf(" pooled R | P | returned (pooled) |\n|---|---|");
  for (std::size_t c = 0; c <= results.size(); ++c) std::printf("---|---|");
  std::printf("---|\n");
  const auto cells = [](const Result& r, const Result::Returned& x) {
    print_raw_cells(r, x.returned, x.right, x.hit);
  };
  for (std::size_t v = 0; v < kVerified.size(); ++v) {
    for (const int how : {0, 1, 2}) {  // SimHash candidates, LSH keys, every pair
      const Candidates c = candidates(kVerified[v]);
      const std::string what =
          how == 2   ? "exact"
          : how == 1 ? "LSH keys"
                     : (c.y ? std::string(1, c.x) + " + " + c.y : std::string(1, c.x)) + " k=" +
                           std::to_string(c.k);
      const auto pick = [&](const Result& r) -> const Result::Returned& {
        return how == 2 ? r.verified_exact[v] : how == 1 ? r.verified_lsh[v] : r.verified[v];
      };
      std::printf("| %.2f | %s |", kVerified[v], what.c_str());
      for (const auto& r : results) cells(r, pick(r));
      const auto& p = pick(pooled);
      cells(pooled, p);
      std::printf(" %llu |\n", static_cast<unsigned long long>(p.returned));
    }
  }
}

void print_lsh(const std::vector<Result>& results, const Result& pooled) {
  std::printf("\n## MinHash LSH candidates\n\n");
  std::printf(
      "Candidates: the pairs that share at least one band key (`simhash_lsh`, "
      "core/minhash.hpp: a MinHash signature of b r values by one permutation hashing with "
      "optimal densification, b bands of r values). The first scheme is the extension's. "
      "Candidate recall at t per collection (lowest over the collections with true pairs, then "
      "pooled) and candidate pairs per item (pooled), exactly over all pairs. The textbook "
      "estimate 1 - (1 - t^r)^b is given beside the measured lowest.\n\n");
  std::printf("| bands x rows | candidates per item |");
  for (std::size_t t = 0; t < kThresholds.size(); ++t) {
    std::printf(" t = %.1f lowest | estimate | pooled |", kThresholds[t]);
  }
  std::printf("\n|---|---|");
  for (std::size_t t = 0; t < kThresholds.size(); ++t) std::printf("---|---|---|");
  std::printf("\n");
  for (std::size_t l = 0; l < kLshSchemes.size(); ++l) {
    std::printf("| %d x %d | %s |", kLshSchemes[l].bands, kLshSchemes[l].rows,
                per_item_str(pooled.items ? static_cast<double>(pooled.lsh_all[l]) /
                                                static_cast<double>(pooled.items)
                                          : 0.0)
                    .c_str());
    for (std::size_t t = 0; t < kThresholds.size(); ++t) {
      double lowest = 1.0;
      for (const auto& r : results) {
        if (r.true_pairs[t] == 0) continue;
        lowest = std::min(lowest, static_cast<double>(r.lsh_truth[l][t]) /
                                      static_cast<double>(r.true_pairs[t]));
      }
      const double estimate =
          1.0 - std::pow(1.0 - std::pow(kThresholds[t], kLshSchemes[l].rows), kLshSchemes[l].bands);
      const double all = pooled.true_pairs[t] ? static_cast<double>(pooled.lsh_truth[l][t]) /
                                                    static_cast<double>(pooled.true_pairs[t])
                                              : 1.0;
      std::printf(" %.4f | %.4f | %.4f |", lowest, estimate, all);
    }
    std::printf("\n");
  }
  std::printf("\nPer collection, the extension's scheme (%d x %d): candidate recall at t = 0.7 / "
              "0.8 / 0.9 and candidates per item.\n\n| collection | items | R 0.7 | R 0.8 | R 0.9 "
              "| per item |\n|---|---|---|---|---|---|\n",
              kLshSchemes[0].bands, kLshSchemes[0].rows);
  for (const auto& r : results) {
    const auto rec = [&](std::size_t t) {
      return r.true_pairs[t] ? fmt("%.4f", static_cast<double>(r.lsh_truth[0][t]) /
                                               static_cast<double>(r.true_pairs[t]))
                             : std::string("-");
    };
    std::printf("| %s | %zu | %s | %s | %s | %s |\n", r.name.c_str(), r.items, rec(2).c_str(),
                rec(3).c_str(), rec(4).c_str(),
                per_item_str(r.items ? static_cast<double>(r.lsh_all[0]) /
                                           static_cast<double>(r.items)
                                     : 0.0)
                    .c_str());
  }
}

void print_report(const Config& cfg, const std::string& command, const std::vector<Recipe>& rs,
                  const std::vector<Result>& results, const Result& pooled, double seconds,
                  unsigned threads) {
  std::printf("# Natural near duplicates: SimHash candidates and exact verification\n\n");
  std::printf(
      "Generated by `bench/eval_natural.cpp` (method in its header comment). Items are "
      "paragraphs (blocks between blank lines) of man pages and copyright files with at "
      "least %zu normalized character 5-shingles, and whole copyright files "
      "(en-copyright-files); items with identical shingle sets are counted once. A pair is "
      "a near duplicate at threshold t when the Jaccard similarity J of the items' "
      "normalized character 5-shingle sets (`simhash::shingle_set`) is >= t; all such pairs "
      "(J >= %.1f) are found exactly by a similarity join, checked against brute force on "
      "the first %zu items of each collection (truth check: OK for every collection). No "
      "synthetic edits. \"Candidates per item\" is the number of pairs within Hamming "
      "distance k divided by the number of items (each pair counted once), over all pairs "
      "of the collection.\n\n",
      kMinShingles, kThresholds[0], cfg.check_sample);

  std::printf("## Collections\n\n");
  std::printf(
      "| collection | files | items read | too short | exact duplicates removed | items | "
      "median shingles | capped at %zu |",
      cfg.max_items);
  for (std::size_t t = 0; t < kThresholds.size(); ++t) {
    std::printf(" J >= %s |", threshold_str(t).c_str());
  }
  std::printf(" raw J >= %.1f | raw J >= %.1f |\n|---|---|---|---|---|---|---|---|", kRawRight,
              kRawTrue);
  for (std::size_t t = 0; t < kThresholds.size(); ++t) std::printf("---|");
  std::printf("---|---|\n");
  const auto row = [&](const Result& r, bool pooled_row) {
    std::printf("| %s | %zu | %zu | %zu | %zu | %zu | %s | %s |", r.name.c_str(), r.files, r.blocks,
                r.short_items, r.duplicates, r.items,
                pooled_row ? "" : std::to_string(r.median_shingles).c_str(),
                pooled_row ? "" : (r.capped ? "yes" : "no"));
    for (std::size_t t = 0; t < kThresholds.size(); ++t) {
      std::printf(" %llu |", static_cast<unsigned long long>(r.true_pairs[t]));
    }
    std::printf(" %llu | %llu |\n", static_cast<unsigned long long>(r.raw_right),
                static_cast<unsigned long long>(r.raw_true));
  };
  for (const auto& r : results) row(r, false);
  row(pooled, true);
  std::printf(
      "\n\"items read\": paragraphs (files for en-copyright-files) taken in file order before "
      "the cap; \"too short\": fewer than %zu shingles. The columns J >= t count true pairs "
      "(exact duplicates excluded); raw J: Jaccard of 5-code-point windows of the raw text "
      "(case kept, white space runs collapsed). Pooled counts add the collections "
      "(en-copyright-files repeats the copyright text of en as whole files).\n\n",
      kMinShingles);
  std::printf("Truth check (similarity join = brute force on the first items):");
  for (std::size_t i = 0; i < results.size(); ++i) {
    std::printf("%s %s OK (%zu items, %zu pairs)", i ? "," : "", results[i].name.c_str(),
                results[i].check_items, results[i].check_pairs);
  }
  std::printf(".\n\n");

  std::printf("## Recipes\n\n");
  for (const auto& r : rs) {
    std::printf("- %s: `simhash(body, '%s', %d, '%s')`\n", r.name.c_str(),
                simhash::tokenizer_name(r.options.tokenizer),
                r.options.n == 0 ? simhash::default_n(r.options.tokenizer) : r.options.n,
                simhash::weighting_name(r.options.weighting));
  }

  std::printf("\n## Calibration\n\n");
  std::printf(
      "Per threshold t and recipe: the smallest k (0..%d) at which candidate recall (share "
      "of the pairs with J >= t within Hamming distance k) reaches %.2f, and %.2f, with the "
      "candidates per item at that k in brackets; \"> %d\": not reached. Bold: the fewest "
      "candidates per item at recall >= %.2f. After exact verification the pipeline's "
      "recall is the candidate recall and its precision is 1 on these labels.\n\n",
      kMaxK, kRecall, kRecallHigh, kMaxK, kRecall);
  for (const auto& r : results) print_calibration(r, rs);
  print_calibration(pooled, rs);

  std::printf("## Recommended recipe and k per threshold\n\n");
  std::printf(
      "For each recipe, the smallest k with candidate recall >= %.2f in every collection "
      "(the largest of the per-collection k), the lowest recall of a collection at that k, "
      "and candidates per item at that k per collection and pooled. Bold: the fewest "
      "candidates per item pooled.\n\n",
      kRecall);
  std::vector<std::pair<std::size_t, int>> choice(kThresholds.size(), {rs.size(), -1});
  for (std::size_t t = 0; t < kThresholds.size(); ++t) {
    std::printf("### t = %s\n\n| recipe | k | min recall |", threshold_str(t).c_str());
    for (const auto& r : results) std::printf(" %s |", r.name.c_str());
    std::printf(" pooled |\n|---|---|---|");
    for (std::size_t c = 0; c <= results.size(); ++c) std::printf("---|");
    std::printf("\n");
    double least = -1;
    for (std::size_t x = 0; x < rs.size(); ++x) {
      const int k = k_everywhere(results, x, t, kRecall);
      if (k >= 0 && (least < 0 || pooled.per_item(x, k) < least)) {
        least = pooled.per_item(x, k);
        choice[t] = {x, k};
      }
    }
    for (std::size_t x = 0; x < rs.size(); ++x) {
      const int k = k_everywhere(results, x, t, kRecall);
      const bool bold = choice[t].first == x;
      const char* b = bold ? "**" : "";
      if (k < 0) {
        std::printf("| %s | > %d | |", rs[x].name.c_str(), kMaxK);
        for (std::size_t c = 0; c <= results.size(); ++c) std::printf(" |");
        std::printf("\n");
        continue;
      }
      double min_recall = 1.0;
      for (const auto& r : results) {
        if (r.true_pairs[t] > 0) min_recall = std::min(min_recall, r.recall(x, t, k));
      }
      std::printf("| %s%s%s | %s%d%s | %.3f |", b, rs[x].name.c_str(), b, b, k, b, min_recall);
      for (const auto& r : results) std::printf(" %s |", per_item_str(r.per_item(x, k)).c_str());
      std::printf(" %s%s%s |\n", b, per_item_str(pooled.per_item(x, k)).c_str(), b);
    }
    std::printf("\n");
  }
  std::printf("Summary (recall >= %.2f in every collection, fewest candidates pooled):\n\n",
              kRecall);
  std::printf("| t | recipe | k | candidates per item (pooled) | pooled recall |\n");
  std::printf("|---|---|---|---|---|\n");
  for (std::size_t t = 0; t < kThresholds.size(); ++t) {
    const auto [x, k] = choice[t];
    if (k < 0) {
      std::printf("| %s | none within k <= %d | | | |\n", threshold_str(t).c_str(), kMaxK);
      continue;
    }
    std::printf("| %s | %s | %d | %s | %.4f |\n", threshold_str(t).c_str(), rs[x].name.c_str(), k,
                per_item_str(pooled.per_item(x, k)).c_str(), pooled.recall(x, t, k));
  }

  std::printf("\n## Pooled candidate recall by k\n\n");
  std::printf("Candidates per item, all collections pooled:\n\n| recipe |");
  for (int k = 0; k <= kMaxK; k += 2) std::printf(" k=%d |", k);
  std::printf("\n|---|");
  for (int k = 0; k <= kMaxK; k += 2) std::printf("---|");
  std::printf("\n");
  for (std::size_t x = 0; x < rs.size(); ++x) {
    std::printf("| %s |", rs[x].name.c_str());
    for (int k = 0; k <= kMaxK; k += 2) {
      std::printf(" %s |", per_item_str(pooled.per_item(x, k)).c_str());
    }
    std::printf("\n");
  }
  for (std::size_t t = 0; t < kThresholds.size(); ++t) {
    std::printf("\nCandidate recall of the pairs with J >= %s, pooled:\n\n| recipe |",
                threshold_str(t).c_str());
    for (int k = 0; k <= kMaxK; k += 2) std::printf(" k=%d |", k);
    std::printf("\n|---|");
    for (int k = 0; k <= kMaxK; k += 2) std::printf("---|");
    std::printf("\n");
    for (std::size_t x = 0; x < rs.size(); ++x) {
      std::printf("| %s |", rs[x].name.c_str());
      for (int k = 0; k <= kMaxK; k += 2) std::printf(" %.4f |", pooled.recall(x, t, k));
      std::printf("\n");
    }
  }

  std::printf("\n## Raw labels (t = %.1f, verified threshold %.1f)\n\n", kThresholds[kT08],
              kThresholds[kT08]);
  std::printf(
      "The pipeline returns the pairs within distance k whose normalized J >= %.1f. Against "
      "the raw label (5-code-point windows of the raw text, case kept, white space runs "
      "collapsed; all pairs with raw J >= %.1f found by an exact join): recall R = share of "
      "the raw J >= %.1f pairs returned; precision P = share of the returned pairs with raw "
      "J >= %.1f (in brackets: with raw J >= %.1f). Each recipe at its k for t = %.1f above "
      "(recall >= %.2f in every collection); \"exact\": verification of every pair (no "
      "SimHash limit), the ceiling of any recipe.\n\n",
      kThresholds[kT08], kRawRight, kRawTrue, kRawRight, kRawTrue, kThresholds[kT08], kRecall);
  std::printf("| recipe | k |");
  for (const auto& r : results) std::printf(" %s R | P |", r.name.c_str());
  std::printf(" pooled R | P |\n|---|---|");
  for (std::size_t c = 0; c <= results.size(); ++c) std::printf("---|---|");
  std::printf("\n");
  const auto raw_cells = [&](const Result& r, std::size_t x, int k) {
    const std::uint64_t returned = up_to(r.truth[x][kT08], k);
    const std::uint64_t right = up_to(r.out_raw_right[x], k);
    const std::uint64_t hit = up_to(r.out_raw_true[x], k);
    print_raw_cells(r, returned, right, hit);
  };
  for (std::size_t x = 0; x <= rs.size(); ++x) {
    const bool exact = x == rs.size();
    const std::size_t recipe = exact ? 0 : x;
    const int k = exact ? 64 : k_everywhere(results, x, kT08, kRecall);
    if (k < 0) continue;
    std::printf("| %s | %s |", exact ? "exact" : rs[x].name.c_str(),
                exact ? "any" : std::to_string(k).c_str());
    for (const auto& r : results) raw_cells(r, recipe, k);
    raw_cells(pooled, recipe, k);
    std::printf("\n");
  }

  print_unions(rs, results, pooled);
  print_verified(results, pooled);
  print_lsh(results, pooled);

  std::printf("\n## Run\n\n```sh\n%s > bench/results/eval_natural.md\n```\n\n", command.c_str());
  std::printf("Wall time %.0f s on %u threads (the only line that depends on the machine).\n",
              seconds, threads);
}

// ---------------------------------------------------------------------------------------
// Main

Config parse_args(int argc, char** argv) {
  Config cfg;
  cfg.corpus = eval::parse_command_line(argc, argv, [&](const std::string& a, const auto& value) {
    if (a == "--max-items") {
      cfg.max_items = parse_uint(a, value(), 2, 1000000);
    } else if (a == "--check-sample") {
      cfg.check_sample = parse_uint(a, value(), 2, 100000);
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
  usage_exit("eval_natural",
             "CORPUS_DIR [--max-items N] "
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
    const std::vector<Recipe> rs = recipes();
    struct Source {
      std::string name;
      std::vector<fs::path> files;
      bool whole_files;
    };
    std::vector<Source> sources;
    for (const char* lang : {"en", "de", "fr", "ja", "zh"}) {
      sources.push_back({lang, sorted_files(cfg.corpus / lang, ""), false});
    }
    sources.push_back({"en-copyright-files", sorted_files(cfg.corpus / "en", "copyright-"), true});

    std::vector<Result> results;
    Result pooled(rs.size());
    pooled.name = "pooled";
    for (const auto& s : sources) {
      const Collection c = load_collection(s.name, s.files, s.whole_files, cfg, threads);
      std::fprintf(stderr, "[%s] %zu files, %zu items (%.1f s)\n", s.name.c_str(), c.files,
                   c.texts.size(), seconds_since(start));
      if (c.texts.size() < 2) {
        std::fprintf(stderr, "[%s] fewer than 2 items: left out\n", s.name.c_str());
        continue;
      }
      results.push_back(evaluate(c, rs, cfg, threads));
      pooled += results.back();
    }
    if (results.empty()) usage_error("no collection with 2 items or more");
    std::fprintf(stderr, "truth check: OK\n");
    print_report(cfg, command, rs, results, pooled, seconds_since(start), threads);
    std::fprintf(stderr, "total %.1f s on %u threads\n", seconds_since(start), threads);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "eval_natural: %s\n", e.what());
    return 1;
  }
}
