// What the engine's LSH banding buys: on a file of rows, the candidates and the verified
// pairs of the engine's keys (simhash_lsh: kLshBands bands of kLshRows MinHash values)
// against another banding of the same one-permutation MinHash (BANDS x ROWS bins, by
// default 30 x 8), both after the size filter the engine applies before a merge. Pairs are
// counted between distinct shingle sets (groups) and as rows (a pair of groups stands for
// every pair of their members; pairs inside a group need no candidate and are left out).
//
// Usage: eval_banding FILE MIN_SIMILARITY [BANDS ROWS]
//   FILE  rows "id<TAB>text" in PostgreSQL's COPY text format (as similar_reference reads)
// Prints, for each banding, the candidates verified, the pairs found, and the pairs the
// other banding found and this one missed.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/minhash.hpp"
#include "core/similarity.hpp"

#include "copy_text.hpp"

namespace {

using simhash_bench::unescape;

// The candidate pairs (a < b, as a << 32 | b) of groups sharing a key of some band, those
// whose sizes allow t; keys[g * bands + band].
std::vector<std::uint64_t> candidates(const std::vector<std::int64_t>& keys, int bands,
                                      const std::vector<std::vector<std::uint64_t>>& sets,
                                      double t) {
  const std::size_t g = sets.size();
  std::vector<std::uint64_t> out;
  std::vector<std::pair<std::int64_t, std::uint32_t>> e(g);
  for (int b = 0; b < bands; ++b) {
    for (std::size_t s = 0; s < g; ++s) e[s] = {keys[s * bands + b], static_cast<std::uint32_t>(s)};
    std::sort(e.begin(), e.end());
    for (std::size_t i = 0; i < g;) {
      std::size_t j = i + 1;
      while (j < g && e[j].first == e[i].first) ++j;
      for (std::size_t x = i; x < j; ++x) {
        for (std::size_t y = x + 1; y < j; ++y) {
          const std::uint32_t p = std::min(e[x].second, e[y].second);
          const std::uint32_t q = std::max(e[x].second, e[y].second);
          if (simhash::jaccard_bound(sets[p].size(), sets[q].size()) < t) continue;
          out.push_back(std::uint64_t{p} << 32 | q);
        }
      }
      i = j;
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 5) {
    std::cerr << "usage: eval_banding FILE MIN_SIMILARITY [BANDS ROWS]\n";
    return 2;
  }
  const double t = std::strtod(argv[2], nullptr);
  const int bands = argc == 5 ? std::atoi(argv[3]) : 30;
  const int rows = argc == 5 ? std::atoi(argv[4]) : 8;
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::cerr << "eval_banding: cannot read " << argv[1] << "\n";
    return 1;
  }
  // Distinct shingle sets and how many rows each stands for.
  std::vector<std::vector<std::uint64_t>> sets;
  std::vector<std::uint64_t> members;
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> by_digest;
  std::string line;
  std::string text;
  std::size_t nrows = 0;
  while (std::getline(in, line)) {
    const std::size_t tab = line.find('\t');
    if (tab == std::string::npos || !unescape(std::string_view(line).substr(tab + 1), text)) continue;
    std::vector<std::uint64_t> s = simhash::shingle_set(text);
    if (s.empty()) continue;
    ++nrows;
    auto& same = by_digest[simhash::set_digest(s.data(), s.size())];
    bool found = false;
    for (const std::uint32_t g : same) {
      if (sets[g] == s) {
        ++members[g];
        found = true;
        break;
      }
    }
    if (!found) {
      same.push_back(static_cast<std::uint32_t>(sets.size()));
      sets.push_back(std::move(s));
      members.push_back(1);
    }
  }
  const std::size_t g = sets.size();
  std::vector<std::int64_t> keys_engine(g * simhash::kLshBands);
  std::vector<std::int64_t> keys_other(g * static_cast<std::size_t>(bands));
  for (std::size_t s = 0; s < g; ++s) {
    const auto k = simhash::lsh_keys(sets[s].data(), sets[s].size());
    std::copy(k.begin(), k.end(), keys_engine.begin() + static_cast<std::ptrdiff_t>(s * simhash::kLshBands));
    const auto sig = simhash::minhash_signature(sets[s].data(), sets[s].size(), bands * rows);
    const auto o = simhash::lsh_band_keys(sig, bands, rows);
    std::copy(o.begin(), o.end(), keys_other.begin() + static_cast<std::ptrdiff_t>(s * bands));
  }
  struct Result {
    std::vector<std::uint64_t> cands;
    std::vector<std::uint64_t> found;
  };
  auto verify = [&](std::vector<std::uint64_t> cands) {
    Result r{std::move(cands), {}};
    for (const std::uint64_t c : r.cands) {
      const auto& a = sets[c >> 32];
      const auto& b = sets[c & 0xFFFFFFFFU];
      const std::uint64_t need = simhash::common_needed(a.size(), b.size(), t);
      if (need > std::min(a.size(), b.size())) continue;
      const std::uint64_t common = simhash::common_at_least(a.data(), a.size(), b.data(), b.size(), need);
      if (common >= need && simhash::jaccard_of(common, a.size(), b.size()) >= t) r.found.push_back(c);
    }
    return r;
  };
  const Result engine = verify(candidates(keys_engine, simhash::kLshBands, sets, t));
  const Result other = verify(candidates(keys_other, bands, sets, t));
  auto row_pairs = [&](const std::vector<std::uint64_t>& pairs) {
    std::uint64_t n = 0;
    for (const std::uint64_t c : pairs) n += members[c >> 32] * members[c & 0xFFFFFFFFU];
    return n;
  };
  auto missed = [](const std::vector<std::uint64_t>& want, const std::vector<std::uint64_t>& got) {
    std::vector<std::uint64_t> m;
    std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(m));
    return m;
  };
  const auto engine_missed = missed(other.found, engine.found);
  const auto other_missed = missed(engine.found, other.found);
  std::uint64_t within = 0;
  for (const std::uint64_t m : members) within += m * (m - 1) / 2;
  std::printf("rows %zu, distinct sets %zu, row pairs inside groups %llu, min_similarity %.2f\n",
              nrows, g, static_cast<unsigned long long>(within), t);
  auto print = [&](const char* name, const Result& r, const std::vector<std::uint64_t>& miss) {
    std::printf("%-8s candidates %zu, set pairs found %zu (row pairs %llu), missed of the other's: %zu set pairs (%llu row pairs)\n",
                name, r.cands.size(), r.found.size(), static_cast<unsigned long long>(row_pairs(r.found)),
                miss.size(), static_cast<unsigned long long>(row_pairs(miss)));
  };
  char other_name[32];
  std::snprintf(other_name, sizeof other_name, "%dx%d", bands, rows);
  char engine_name[32];
  std::snprintf(engine_name, sizeof engine_name, "%dx%d", simhash::kLshBands, simhash::kLshRows);
  print(engine_name, engine, engine_missed);
  print(other_name, other, other_missed);
  return 0;
}
