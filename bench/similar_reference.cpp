// The in-memory reference of simhash_similar_pairs / simhash_similar_clusters: the same job
// (every text shingled once, identical sets grouped, MinHash LSH candidates or the
// fingerprint recipes, exact verification) by the same core engine, on a file, with no
// PostgreSQL in between. bench/bench_similar_pg.sh prints the extension's time as a ratio
// to this program's, measured in the same run.
//
// Usage: similar_reference FILE MIN_SIMILARITY [--threads N] [--clusters] [--rounds N]
//                          [--pairs OUT]
//   FILE  rows "id<TAB>text" in PostgreSQL's COPY text format (backslash escapes), as
//         \copy (SELECT id, body FROM docs) TO FILE writes them
//   OUT   also write the pairs of the last round there, "id1<TAB>id2<TAB>similarity"
//         (%.6f), in the engine's order (sort them to compare two builds)
// Prints one line: rows, MB, pairs (or cluster rows), the median time of --rounds runs
// (reading the file is not timed), the engine's peak memory, the candidates it verified.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/similar_pairs.hpp"

#include "copy_text.hpp"

namespace {

using simhash_bench::unescape;

[[noreturn]] void usage() {
  std::cerr << "usage: similar_reference FILE MIN_SIMILARITY [--threads N] [--clusters] [--rounds N]"
               " [--pairs OUT]\n";
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) usage();
  const std::string path = argv[1];
  const double t = std::strtod(argv[2], nullptr);
  int threads = 1;
  int rounds = 1;
  bool clusters = false;
  std::string pairs_path;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--pairs" && i + 1 < argc) {
      pairs_path = argv[++i];
    } else if (a == "--clusters") {
      clusters = true;
    } else {
      usage();
    }
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::cerr << "similar_reference: cannot read " << path << "\n";
    return 1;
  }
  std::vector<std::int64_t> ids;
  std::vector<std::string> texts;
  std::string line;
  std::string field;
  std::size_t bytes = 0;
  while (std::getline(in, line)) {
    const std::size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    if (!unescape(std::string_view(line).substr(tab + 1), field)) continue;
    ids.push_back(std::strtoll(line.c_str(), nullptr, 10));
    bytes += field.size();
    texts.push_back(field);
  }
  std::vector<std::string_view> views(texts.begin(), texts.end());

  std::vector<double> seconds;
  std::size_t results = 0;
  std::size_t peak = 0;
  std::uint64_t verified = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    simhash::SimilarPairs engine(t, threads);
    // In batches, as the extension hands them over.
    constexpr std::size_t kBatch = 2000;
    for (std::size_t at = 0; at < ids.size(); at += kBatch) {
      const std::size_t n = std::min(kBatch, ids.size() - at);
      engine.add(ids.data() + at, views.data() + at, n);
      peak = std::max(peak, engine.memory_bytes());
    }
    if (engine.duplicate_id()) {
      std::cerr << "similar_reference: duplicate id\n";
      return 1;
    }
    results = 0;
    if (clusters) {
      while (!engine.cluster_step(20000)) peak = std::max(peak, engine.memory_bytes());
      results = engine.cluster_rows().size();
    } else {
      std::vector<simhash::SimilarPair> buf(4096);
      std::FILE* out = nullptr;
      if (!pairs_path.empty() && r + 1 == rounds) {
        out = std::fopen(pairs_path.c_str(), "w");
        if (out == nullptr) {
          std::cerr << "similar_reference: cannot write " << pairs_path << "\n";
          return 1;
        }
      }
      for (;;) {
        // the work per call of the extension (VERIFY_WORK in src/pg/similar_pairs.c): the
        // verification of a call is what the threads share
        const std::size_t got = engine.next(buf.data(), buf.size(), std::size_t{1} << 22);
        for (std::size_t k = 0; out != nullptr && k < got; ++k) {
          std::fprintf(out, "%lld\t%lld\t%.6f\n", static_cast<long long>(buf[k].id1),
                       static_cast<long long>(buf[k].id2), buf[k].similarity);
        }
        results += got;
        peak = std::max(peak, engine.memory_bytes());
        if (got == 0 && engine.done()) break;
      }
      if (out != nullptr) std::fclose(out);
    }
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    verified = engine.verified();
  }
  std::sort(seconds.begin(), seconds.end());
  std::printf("rows %zu, %.1f MB, %s %zu, threads %d, %.3f s (median of %d), peak engine memory %.0f MB, "
              "candidates verified %llu\n",
              ids.size(), bytes / 1e6, clusters ? "cluster rows" : "pairs", results, threads,
              seconds[seconds.size() / 2], rounds, peak / 1e6, static_cast<unsigned long long>(verified));
  return 0;
}
