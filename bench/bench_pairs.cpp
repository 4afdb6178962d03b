// All near-duplicate pairs and clusters in the core: n random fingerprints plus 10% planted
// near duplicates at 1..3 bits, for k = 3, 6, 8; prints the layout chosen, pairs found and
// seconds, with a brute-force pass over a sample as the baseline measured in the same run.
//
//   build/bench_pairs [n (default 1000000)] [k,k,... (default 3,6,8)]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/clusters.hpp"
#include "core/hamming.hpp"
#include "core/near_pairs.hpp"

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1000000;
  std::mt19937_64 rng(2026);
  std::vector<std::uint64_t> fps(n);
  for (auto& f : fps) f = rng();
  for (std::size_t i = 0; i < n / 10; ++i) {
    std::uint64_t f = fps[rng() % n];
    const int bits = 1 + static_cast<int>(rng() % 3);
    for (int b = 0; b < bits; ++b) f ^= std::uint64_t{1} << (rng() % 64);
    fps[rng() % n] = f;
  }
  std::vector<std::int64_t> ids(n);
  for (std::size_t i = 0; i < n; ++i) ids[i] = static_cast<std::int64_t>(i);

  // Baseline: brute force over the first 20000 fingerprints, extrapolated to n^2.
  const std::size_t sample = std::min<std::size_t>(n, 20000);
  auto t0 = std::chrono::steady_clock::now();
  std::size_t close = 0;
  for (std::size_t i = 0; i < sample; ++i)
    for (std::size_t j = i + 1; j < sample; ++j) close += simhash::hamming(fps[i], fps[j]) <= 3;
  const double brute = seconds_since(t0) * (double(n) * n) / (double(sample) * sample);
  std::printf("n = %zu; brute force all pairs (extrapolated from %zu): %.1f s\n", n, sample, brute);
  std::printf("| k | blocks | agree | tables | pairs | pairs s | clusters s | vs brute force |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  std::vector<int> ks;
  std::stringstream list(argc > 2 ? argv[2] : "3,6,8");
  for (std::string item; std::getline(list, item, ',');) ks.push_back(std::stoi(item));
  for (int k : ks) {
    const simhash::PairLayout layout = simhash::choose_pair_layout(n, k);
    t0 = std::chrono::steady_clock::now();
    std::size_t pairs = 0;
    simhash::for_each_near_pair(fps.data(), n, layout,
                                [&](std::size_t, std::size_t, int) { ++pairs; });
    const double t_pairs = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    const auto clusters = simhash::cluster_ids(ids.data(), fps.data(), n, layout);
    const double t_clusters = seconds_since(t0);
    std::printf("| %d | %d | %d | %zu | %zu | %.2f | %.2f | %.0fx |\n", k, layout.blocks,
                layout.agree, std::size_t{layout.tables}, pairs, t_pairs, t_clusters,
                brute / t_pairs);
    std::fflush(stdout);
    (void)clusters;
  }
  return close == 0xFFFFFFFF;
}
