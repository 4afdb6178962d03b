// libFuzzer target: the all-pairs finder and the clusters (src/core/near_pairs.hpp,
// clusters.hpp), through the C ABI the way simhash_pairs / simhash_clusters drive it
// (src/pg/pairs.c), against a brute-force oracle.
//
// Input: byte 0: k = byte % 18 (17 is invalid); byte 1: the row count the plan is made
// for (the real count shifted left by byte % 48: other layouts; 255: 0 rows, as the glue's
// first check does); byte 2: the work budget and pair buffer of each next() call (small:
// many pauses); byte 3: bit 0 the partitioned path (each table on its own, rows split by
// the top bits of its key, as the glue does when rows spill to disk), bits 1-2 how many
// key bits, bit 3 ids from a small range (duplicates likely), bit 4 a layout of
// byte 1 % 8 + 1 agreeing blocks made with make_pair_layout instead of the plan's (core
// API); then fingerprints, at most 200: a byte below 0xC0 makes a copy of an earlier one
// with up to 5 bits flipped (their positions read next), other bytes are followed by 8
// bytes of a new fingerprint.
//
// Checks, aborting on the first violation:
//  - plan_init refuses k outside 0..16 and accepts the rest;
//  - every pair has i < j < n and its true Hamming distance, at most k; no pair comes out
//    twice; the set of pairs equals the brute-force O(n^2) set, in memory and partitioned;
//  - every finder finishes within a bounded number of next() calls;
//  - the clusters (union-find in the caller's array, label, lookup, representatives
//    collected in batches) equal the connected components of the brute-force pair graph:
//    the same rows together, singletons without a cluster, clusters numbered in the order
//    of their first row, each represented by its smallest id and that row's fingerprint;
//    core cluster_ids() agrees;
//  - simhash_find_duplicate_id finds the smallest repeated id, or none, as brute force.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "capi/pairs_capi.h"
#include "core/clusters.hpp"
#include "core/near_pairs.hpp"
#include "fuzz_util.hpp"

namespace {

using simhash::fuzz::Input;
using simhash::fuzz::Rng;
using Pair = std::tuple<std::uint32_t, std::uint32_t, int>;

int hamming(std::uint64_t a, std::uint64_t b) { return __builtin_popcountll(a ^ b); }

// An 8-byte aligned heap block of exactly `bytes` bytes (rounded up to 8).
struct Workspace {
  explicit Workspace(std::size_t bytes) : words((bytes + 7) / 8), data(new std::uint64_t[words ? words : 1]) {}
  std::size_t words;
  std::unique_ptr<std::uint64_t[]> data;
};

// Runs a finder (C ABI) over fps[0..n) and tables [t0, t1) to the end; adds its pairs,
// mapped through row_of, to out. Aborts on a bad or repeated pair.
void drain(const simhash_pair_plan& plan, const std::vector<std::uint64_t>& fps,
           const std::vector<std::uint32_t>& row_of, std::uint32_t t0, std::uint32_t t1,
           std::size_t work, std::size_t capacity, std::set<Pair>& out,
           std::vector<simhash_pair>& all) {
  char err[256];
  const std::size_t n = fps.size();
  std::size_t bytes = 0;
  FUZZ_CHECK(simhash_pair_workspace_bytes(&plan, n, t0, t1, &bytes, err, sizeof err) == SIMHASH_OK);
  FUZZ_CHECK(bytes <= 24 * n + 8);
  Workspace ws(bytes);
  simhash_pair_iter iter;
  FUZZ_CHECK(simhash_pair_iter_begin(&iter, &plan, fps.data(), n, t0, t1, ws.data.get(), bytes, err,
                                     sizeof err) == SIMHASH_OK);
  std::vector<simhash_pair> buf(capacity);
  const std::size_t limit = 4 * std::size_t{t1 - t0 + 1} * (n * n + n + 2) + 100;
  int32_t finished = 0;
  for (std::size_t calls = 0; !finished; ++calls) {
    FUZZ_CHECK(calls < limit);
    std::size_t count = 99;
    FUZZ_CHECK(simhash_pair_iter_next(&iter, buf.data(), capacity, work, &count, &finished, err,
                                      sizeof err) == SIMHASH_OK);
    FUZZ_CHECK(count <= capacity);
    for (std::size_t p = 0; p < count; ++p) {
      const simhash_pair& q = buf[p];
      FUZZ_CHECK(q.i < q.j && q.j < n);
      FUZZ_CHECK(q.distance == hamming(fps[q.i], fps[q.j]));
      const Pair global{row_of[q.i], row_of[q.j], q.distance};
      FUZZ_CHECK(out.insert(global).second);
      all.push_back(q);
    }
    std::uint32_t table = 0;
    double fraction = -1;
    simhash_pair_iter_progress(&iter, &table, &fraction);
    FUZZ_CHECK(fraction >= 0 && fraction <= 1);
  }
}

// The same with the core API and a layout of our own.
void drain_core(const simhash::PairLayout& layout, const std::vector<std::uint64_t>& fps,
                std::size_t work, std::size_t capacity, std::set<Pair>& out) {
  const std::size_t n = fps.size();
  const std::size_t bytes = simhash::NearPairFinder::workspace_bytes(layout, n, 0, layout.tables);
  Workspace ws(bytes);
  simhash::NearPairFinder finder(layout, fps.data(), n, 0, layout.tables, ws.data.get(), bytes);
  std::vector<simhash::NearPair> buf(capacity);
  const std::size_t limit = 4 * std::size_t{layout.tables + 1} * (n * n + n + 2) + 100;
  for (std::size_t calls = 0; !finder.done(); ++calls) {
    FUZZ_CHECK(calls < limit);
    const std::size_t got = finder.next(buf.data(), capacity, work);
    for (std::size_t p = 0; p < got; ++p) {
      const simhash::NearPair& q = buf[p];
      FUZZ_CHECK(q.i < q.j && q.j < n && q.distance == hamming(fps[q.i], fps[q.j]));
      FUZZ_CHECK(out.insert(Pair{q.i, q.j, q.distance}).second);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  const int k = in.byte() % 18;
  const std::uint8_t b1 = in.byte();
  const std::uint8_t b2 = in.byte();
  const std::uint8_t mode = in.byte();
  const std::size_t work = 1 + (b2 & 15) * (b2 & 15) * 3;
  const std::size_t capacity = 1 + (b2 >> 4);

  std::vector<std::uint64_t> fps;
  while (!in.empty() && fps.size() < 200) {
    const std::uint8_t sel = in.byte();
    if (sel < 0xC0 && !fps.empty()) {
      std::uint64_t fp = fps[sel % fps.size()];
      for (int f = 0; f < sel % 6; ++f) fp ^= std::uint64_t{1} << (in.byte() & 63);
      fps.push_back(fp);
    } else {
      fps.push_back(in.u64());
    }
  }
  const std::size_t n = fps.size();

  // The oracle.
  std::set<Pair> want;
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t j = i + 1; j < n; ++j) {
      const int d = hamming(fps[i], fps[j]);
      if (d <= k) want.insert(Pair{i, j, d});
    }
  }

  char err[256];
  simhash_pair_plan plan;
  const std::uint64_t claimed =
      b1 == 255 ? 0 : std::min<std::uint64_t>(std::uint64_t{n} << (b1 % 48), std::uint64_t{1} << 40);
  const simhash_status planned = simhash_pair_plan_init(&plan, claimed, k, err, sizeof err);
  if (k > 16) {
    FUZZ_CHECK(planned == SIMHASH_INVALID_ARGUMENT);
    return 0;
  }
  FUZZ_CHECK(planned == SIMHASH_OK);
  std::uint32_t tables = 0;
  int32_t blocks = 0, agree = 0;
  simhash_pair_plan_shape(&plan, &tables, &blocks, &agree);
  FUZZ_CHECK(tables >= 1 && blocks == k + agree && agree >= 1);
  // Plans for billions of rows have thousands of tables: valid, and the finder's code is
  // the same for each table, but they would make each run a hundred times slower.
  if (tables > 300) return 0;

  if (mode & 16) {  // a layout of our own choosing, through the core API
    simhash::PairLayout layout;
    try {
      layout = simhash::make_pair_layout(k, 1 + b1 % 8);
    } catch (const std::invalid_argument&) {
      return 0;  // too many tables: refused, as documented
    }
    if (layout.tables > 300) return 0;  // valid, but too slow for one run (as above)
    std::set<Pair> got;
    drain_core(layout, fps, work, capacity, got);
    FUZZ_CHECK(got == want);
    return 0;
  }

  std::vector<std::uint32_t> identity(n);
  for (std::uint32_t i = 0; i < n; ++i) identity[i] = i;
  std::set<Pair> got;
  std::vector<simhash_pair> pairs_local;  // as the finders give them
  std::vector<std::vector<std::uint32_t>> part_rows;  // each batch's local -> global rows
  std::vector<std::size_t> batch_of;  // which part each pair came from
  if ((mode & 1) == 0) {
    drain(plan, fps, identity, 0, tables, work, capacity, got, pairs_local);
    part_rows.push_back(identity);
    batch_of.assign(pairs_local.size(), 0);
  } else {
    for (std::uint32_t t = 0; t < tables; ++t) {
      const int width = simhash_pair_table_key_bits(&plan, t);
      FUZZ_CHECK(width > 0 && width <= 64);
      std::vector<std::uint64_t> keys(n);
      FUZZ_CHECK(simhash_pair_table_keys(&plan, t, fps.data(), n, keys.data(), err, sizeof err) ==
                 SIMHASH_OK);
      const int bits = std::min(width, 1 + ((mode >> 1) & 3));
      std::map<std::uint64_t, std::vector<std::uint32_t>> parts;
      for (std::uint32_t i = 0; i < n; ++i) {
        FUZZ_CHECK(width == 64 || keys[i] >> width == 0);
        parts[keys[i] >> (width - bits)].push_back(i);
      }
      for (const auto& [key, rows] : parts) {
        std::vector<std::uint64_t> part_fps;
        for (std::uint32_t r : rows) part_fps.push_back(fps[r]);
        drain(plan, part_fps, rows, t, t + 1, work, capacity, got, pairs_local);
        part_rows.push_back(rows);
        batch_of.resize(pairs_local.size(), part_rows.size() - 1);
      }
    }
  }
  FUZZ_CHECK(got == want);

  // Ids: distinct, or from a small range where they repeat.
  Rng rng(size ^ (std::uint64_t{mode} << 32));
  std::vector<std::int64_t> ids(n);
  for (std::size_t i = 0; i < n; ++i) {
    ids[i] = (mode & 8) ? static_cast<std::int64_t>(rng.below(2 * n + 1)) - static_cast<std::int64_t>(n)
                        : static_cast<std::int64_t>(rng.next());
  }
  {
    std::map<std::int64_t, int> seen;
    bool dup = false;
    std::int64_t smallest = 0;
    for (std::int64_t id : ids) {
      if (++seen[id] == 2 && (!dup || id < smallest)) {
        smallest = id;
        dup = true;
      }
    }
    const std::size_t bytes = simhash_duplicate_id_workspace_bytes(n);
    Workspace ws(bytes);
    int32_t found = -1;
    int64_t duplicate = 0;
    FUZZ_CHECK(simhash_find_duplicate_id(ids.data(), n, ws.data.get(), bytes, &found, &duplicate, err,
                                         sizeof err) == SIMHASH_OK);
    FUZZ_CHECK(found == (dup ? 1 : 0));
    if (dup) FUZZ_CHECK(duplicate == smallest);
    if (dup) return 0;  // the glue refuses repeated ids before clustering
  }

  // Clusters through the C ABI: unite the finders' own pairs (mapped back for parts).
  std::vector<std::uint32_t> parent(n);
  FUZZ_CHECK(simhash_clusters_init(parent.data(), n, err, sizeof err) == SIMHASH_OK);
  // Each part's pairs in one call, with its rows as row_of (as the glue unites a batch).
  for (std::size_t p = 0; p < pairs_local.size();) {
    std::size_t q = p;
    while (q < pairs_local.size() && batch_of[q] == batch_of[p]) ++q;
    const std::vector<std::uint32_t>& rows = part_rows[batch_of[p]];
    const std::vector<std::uint64_t> row_of(rows.begin(), rows.end());
    FUZZ_CHECK(simhash_clusters_unite(parent.data(), n, &pairs_local[p], q - p,
                                      (mode & 1) ? row_of.data() : nullptr, err, sizeof err) ==
               SIMHASH_OK);
    p = q;
  }
  std::size_t clusters = 0;
  FUZZ_CHECK(simhash_clusters_label(parent.data(), n, &clusters, err, sizeof err) == SIMHASH_OK);
  std::vector<std::uint32_t> of(n);
  FUZZ_CHECK(simhash_clusters_lookup(parent.data(), n, 0, n, of.data(), err, sizeof err) == SIMHASH_OK);
  std::vector<simhash_cluster_rep> reps(clusters);
  std::size_t first = 0;
  do {  // in batches of 1..7 rows; the first call (first = 0) resets the representatives
    const std::size_t count = std::min(n - first, 1 + rng.below(7));
    FUZZ_CHECK(simhash_clusters_collect(parent.data(), n, first, ids.data() + first,
                                        fps.data() + first, count, reps.data(), clusters, err,
                                        sizeof err) == SIMHASH_OK);
    first += count;
  } while (first < n);

  // The oracle: connected components by a plain flood fill over the brute-force pairs.
  std::vector<std::vector<std::uint32_t>> adj(n);
  for (const Pair& p : want) {
    adj[std::get<0>(p)].push_back(std::get<1>(p));
    adj[std::get<1>(p)].push_back(std::get<0>(p));
  }
  std::vector<int> comp(n, -1);
  int components = 0;
  std::vector<int> comp_cluster;  // component -> cluster number (or -1 for a singleton)
  for (std::uint32_t s = 0; s < n; ++s) {
    if (comp[s] >= 0) continue;
    std::vector<std::uint32_t> stack{s};
    comp[s] = components;
    std::size_t members = 0;
    while (!stack.empty()) {
      const std::uint32_t x = stack.back();
      stack.pop_back();
      ++members;
      for (std::uint32_t y : adj[x]) {
        if (comp[y] < 0) {
          comp[y] = components;
          stack.push_back(y);
        }
      }
    }
    comp_cluster.push_back(members >= 2 ? 0 : -1);
    ++components;
  }
  int next_cluster = 0;
  for (int c = 0; c < components; ++c) {
    if (comp_cluster[c] == 0) comp_cluster[c] = next_cluster++;
  }
  FUZZ_CHECK(clusters == static_cast<std::size_t>(next_cluster));
  std::vector<std::int64_t> min_id(clusters, INT64_MAX);
  std::vector<std::uint64_t> min_fp(clusters, 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    const int c = comp_cluster[comp[i]];
    FUZZ_CHECK(c < 0 ? of[i] == SIMHASH_NO_CLUSTER : of[i] == static_cast<std::uint32_t>(c));
    if (c >= 0 && ids[i] < min_id[c]) {
      min_id[c] = ids[i];
      min_fp[c] = fps[i];
    }
  }
  for (std::size_t c = 0; c < clusters; ++c) FUZZ_CHECK(reps[c].id == min_id[c] && reps[c].fp == min_fp[c]);

  // The core's one-call version.
  simhash::PairLayout layout;
  static_assert(sizeof layout <= sizeof plan.words, "plan words");
  std::memcpy(&layout, plan.words, sizeof layout);
  const std::vector<std::int64_t> named = simhash::cluster_ids(ids.data(), fps.data(), n, layout);
  for (std::uint32_t i = 0; i < n; ++i) {
    const int c = comp_cluster[comp[i]];
    FUZZ_CHECK(named[i] == (c < 0 ? ids[i] : min_id[c]));
  }
  return 0;
}
