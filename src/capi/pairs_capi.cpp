// The C ABI of all pairs and clusters: catches everything, reports through status codes and
// caller-owned buffers; every state lives in caller memory.
#include "capi/pairs_capi.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <stdexcept>
#include <type_traits>

#include "capi/guard.hpp"
#include "core/clusters.hpp"
#include "core/near_pairs.hpp"

namespace {

using simhash::NearPairFinder;
using simhash::PairLayout;
using simhash::capi::guarded;

static_assert(std::is_trivially_copyable_v<PairLayout>, "the plan lives in caller memory");
static_assert(sizeof(PairLayout) <= sizeof(simhash_pair_plan), "simhash_pair_plan is too small");
static_assert(alignof(PairLayout) <= alignof(simhash_pair_plan),
              "simhash_pair_plan is underaligned");
static_assert(std::is_trivially_copyable_v<NearPairFinder>, "the finder lives in caller memory");
static_assert(sizeof(NearPairFinder) <= sizeof(simhash_pair_iter),
              "simhash_pair_iter is too small");
static_assert(alignof(NearPairFinder) <= alignof(simhash_pair_iter),
              "simhash_pair_iter is underaligned");
static_assert(sizeof(simhash::NearPair) == sizeof(simhash_pair) &&
                  offsetof(simhash::NearPair, j) == offsetof(simhash_pair, j) &&
                  offsetof(simhash::NearPair, distance) == offsetof(simhash_pair, distance),
              "NearPair and simhash_pair must have the same layout");
static_assert(sizeof(simhash::ClusterRep) == sizeof(simhash_cluster_rep) &&
                  offsetof(simhash::ClusterRep, fp) == offsetof(simhash_cluster_rep, fp),
              "ClusterRep and simhash_cluster_rep must have the same layout");
static_assert(simhash::kMaxPairDistance == SIMHASH_MAX_PAIR_DISTANCE, "max distance differs");
static_assert(simhash::kMaxClusterRows == SIMHASH_MAX_CLUSTER_ROWS, "max cluster rows differs");
static_assert(simhash::kNoCluster == SIMHASH_NO_CLUSTER, "no-cluster marker differs");

const PairLayout* layout_of(const simhash_pair_plan* plan) noexcept {
  return std::launder(reinterpret_cast<const PairLayout*>(plan->words));
}

NearPairFinder* finder_of(simhash_pair_iter* iter) noexcept {
  return std::launder(reinterpret_cast<NearPairFinder*>(iter->words));
}

const NearPairFinder* finder_of(const simhash_pair_iter* iter) noexcept {
  return std::launder(reinterpret_cast<const NearPairFinder*>(iter->words));
}

void require(bool ok) {
  if (!ok) throw std::invalid_argument("null argument");
}

constexpr int kIdDigitBits = 11;
constexpr std::size_t kIdDigits = std::size_t{1} << kIdDigitBits;

// Sorts v[0..n) as signed integers with an LSD radix sort, 11 bits a pass, skipping the
// digits in which all values agree; tmp has room for n values, hist for kIdDigits counts.
void radix_sort_signed(std::uint64_t* v, std::uint64_t* tmp, std::uint32_t* hist, std::size_t n) {
  constexpr std::uint64_t kSign = std::uint64_t{1} << 63;
  std::uint64_t any = 0, all = ~std::uint64_t{0};
  for (std::size_t i = 0; i < n; ++i) {
    v[i] ^= kSign;
    any |= v[i];
    all &= v[i];
  }
  const std::uint64_t varying = any ^ all;
  std::uint64_t* src = v;
  std::uint64_t* dst = tmp;
  constexpr std::uint64_t kMask = kIdDigits - 1;
  for (int shift = 0; shift < 64; shift += kIdDigitBits) {
    if (((varying >> shift) & kMask) == 0) continue;
    std::memset(hist, 0, kIdDigits * sizeof(std::uint32_t));
    for (std::size_t i = 0; i < n; ++i) ++hist[(src[i] >> shift) & kMask];
    std::uint32_t sum = 0;
    for (std::size_t d = 0; d < kIdDigits; ++d) {
      const std::uint32_t c = hist[d];
      hist[d] = sum;
      sum += c;
    }
    for (std::size_t i = 0; i < n; ++i) dst[hist[(src[i] >> shift) & kMask]++] = src[i];
    std::swap(src, dst);
  }
  if (src != v) std::memcpy(v, src, n * sizeof(std::uint64_t));
  for (std::size_t i = 0; i < n; ++i) v[i] ^= kSign;
}

}  // namespace

extern "C" {

simhash_status simhash_pair_plan_init(simhash_pair_plan* plan, std::uint64_t rows,
                                      int32_t max_distance, char* errbuf,
                                      std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    require(plan != nullptr);
    const PairLayout layout = simhash::choose_pair_layout(
        static_cast<std::size_t>(std::min<std::uint64_t>(rows, SIZE_MAX)), max_distance);
    std::memset(plan->words, 0, sizeof(plan->words));
    new (plan->words) PairLayout(layout);
    return SIMHASH_OK;
  });
}

void simhash_pair_plan_shape(const simhash_pair_plan* plan, std::uint32_t* tables, int32_t* blocks,
                             int32_t* agree) noexcept {
  const PairLayout* l = layout_of(plan);
  if (tables) *tables = l->tables;
  if (blocks) *blocks = l->blocks;
  if (agree) *agree = l->agree;
}

int32_t simhash_pair_table_key_bits(const simhash_pair_plan* plan, std::uint32_t table) noexcept {
  const PairLayout* l = layout_of(plan);
  if (table >= l->tables) return 0;
  try {
    return simhash::table_key_bits(*l, table);
  } catch (...) {
    return 0;
  }
}

simhash_status simhash_pair_table_keys(const simhash_pair_plan* plan, std::uint32_t table,
                                       const std::uint64_t* fps, std::size_t n, std::uint64_t* keys,
                                       char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    require(plan != nullptr && (n == 0 || (fps != nullptr && keys != nullptr)));
    simhash::table_keys(*layout_of(plan), table, fps, n, keys);
    return SIMHASH_OK;
  });
}

simhash_status simhash_pair_workspace_bytes(const simhash_pair_plan* plan, std::size_t rows,
                                            std::uint32_t table_begin, std::uint32_t table_end,
                                            std::size_t* bytes, char* errbuf,
                                            std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    require(plan != nullptr && bytes != nullptr);
    *bytes = NearPairFinder::workspace_bytes(*layout_of(plan), rows, table_begin, table_end);
    return SIMHASH_OK;
  });
}

simhash_status simhash_pair_iter_begin(simhash_pair_iter* iter, const simhash_pair_plan* plan,
                                       const std::uint64_t* fps, std::size_t rows,
                                       std::uint32_t table_begin, std::uint32_t table_end,
                                       void* workspace, std::size_t workspace_bytes, char* errbuf,
                                       std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    require(iter != nullptr && plan != nullptr);
    if (reinterpret_cast<std::uintptr_t>(workspace) % 8 != 0) {
      throw std::invalid_argument("workspace is not 8-byte aligned");
    }
    const NearPairFinder finder(*layout_of(plan), fps, rows, table_begin, table_end, workspace,
                                workspace_bytes);
    new (iter->words) NearPairFinder(finder);
    return SIMHASH_OK;
  });
}

simhash_status simhash_pair_iter_next(simhash_pair_iter* iter, simhash_pair* out,
                                      std::size_t capacity, std::size_t work, std::size_t* count,
                                      int32_t* finished, char* errbuf,
                                      std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    require(iter != nullptr && count != nullptr && finished != nullptr);
    *count = 0;
    NearPairFinder* f = finder_of(iter);
    *count = f->next(reinterpret_cast<simhash::NearPair*>(out), capacity, work);
    *finished = f->done() ? 1 : 0;
    return SIMHASH_OK;
  });
}

void simhash_pair_iter_progress(const simhash_pair_iter* iter, std::uint32_t* table,
                                double* fraction) noexcept {
  const NearPairFinder* f = finder_of(iter);
  if (table) *table = f->table();
  if (fraction) *fraction = f->table_fraction();
}

std::size_t simhash_duplicate_id_workspace_bytes(std::size_t n) noexcept {
  const std::size_t hist = kIdDigits * sizeof(std::uint32_t);
  return n > (SIZE_MAX - hist) / 16 ? SIZE_MAX : 16 * n + hist;
}

simhash_status simhash_find_duplicate_id(const int64_t* ids, std::size_t n, void* workspace,
                                         std::size_t workspace_bytes, int32_t* found,
                                         int64_t* duplicate, char* errbuf,
                                         std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    require(found != nullptr && duplicate != nullptr && (n == 0 || ids != nullptr));
    *found = 0;
    *duplicate = 0;
    if (n < 2) return SIMHASH_OK;
    if (workspace_bytes < simhash_duplicate_id_workspace_bytes(n) || workspace == nullptr ||
        reinterpret_cast<std::uintptr_t>(workspace) % 8 != 0) {
      throw std::invalid_argument("workspace too small or misaligned");
    }
    auto* space = static_cast<std::uint64_t*>(workspace);
    const auto [lo, hi] = std::minmax_element(ids, ids + n);
    const std::uint64_t range =
        static_cast<std::uint64_t>(*hi) - static_cast<std::uint64_t>(*lo);  // mod 2^64
    if (range / 64 < 2 * n) {
      // Dense ids (an identity column): a bitmap of range + 1 bits, one pass.
      const std::size_t words = static_cast<std::size_t>(range / 64) + 1;
      std::memset(space, 0, words * sizeof(std::uint64_t));
      bool any = false;
      std::int64_t smallest = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t off =
            static_cast<std::uint64_t>(ids[i]) - static_cast<std::uint64_t>(*lo);
        const std::uint64_t bit = std::uint64_t{1} << (off % 64);
        if (space[off / 64] & bit) {
          if (!any || ids[i] < smallest) smallest = ids[i];
          any = true;
        }
        space[off / 64] |= bit;
      }
      if (any) {
        *found = 1;
        *duplicate = smallest;
      }
      return SIMHASH_OK;
    }
    // Sparse ids: sort a copy, then look at neighbours.
    for (std::size_t i = 0; i < n; ++i) space[i] = static_cast<std::uint64_t>(ids[i]);
    radix_sort_signed(space, space + n, reinterpret_cast<std::uint32_t*>(space + 2 * n), n);
    for (std::size_t i = 1; i < n; ++i) {
      if (space[i] == space[i - 1]) {
        *found = 1;
        *duplicate = static_cast<std::int64_t>(space[i]);
        break;
      }
    }
    return SIMHASH_OK;
  });
}

simhash_status simhash_clusters_init(std::uint32_t* parent, std::size_t n, char* errbuf,
                                     std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    require(n == 0 || parent != nullptr);
    simhash::union_find_init(parent, n);
    return SIMHASH_OK;
  });
}

simhash_status simhash_clusters_unite(std::uint32_t* parent, std::size_t n,
                                      const simhash_pair* pairs, std::size_t count,
                                      const std::uint64_t* row_of, char* errbuf,
                                      std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    require(count == 0 || (parent != nullptr && pairs != nullptr));
    for (std::size_t p = 0; p < count; ++p) {
      const std::uint64_t a = row_of ? row_of[pairs[p].i] : pairs[p].i;
      const std::uint64_t b = row_of ? row_of[pairs[p].j] : pairs[p].j;
      if (a >= n || b >= n) throw std::invalid_argument("pair row out of range");
      simhash::union_find_unite(parent, static_cast<std::uint32_t>(a),
                                static_cast<std::uint32_t>(b));
    }
    return SIMHASH_OK;
  });
}

simhash_status simhash_clusters_label(std::uint32_t* parent, std::size_t n, std::size_t* clusters,
                                      char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    require(clusters != nullptr && (n == 0 || parent != nullptr));
    *clusters = simhash::label_clusters(parent, n);
    return SIMHASH_OK;
  });
}

simhash_status simhash_clusters_lookup(const std::uint32_t* labels, std::size_t n,
                                       std::size_t first, std::size_t count,
                                       std::uint32_t* cluster_out, char* errbuf,
                                       std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    require(count == 0 || (labels != nullptr && cluster_out != nullptr));
    if (first > n || count > n - first) throw std::invalid_argument("rows out of range");
    for (std::size_t r = 0; r < count; ++r) cluster_out[r] = simhash::cluster_of(labels, first + r);
    return SIMHASH_OK;
  });
}

simhash_status simhash_clusters_collect(const std::uint32_t* labels, std::size_t n,
                                        std::size_t first, const int64_t* ids,
                                        const std::uint64_t* fps, std::size_t count,
                                        simhash_cluster_rep* reps, std::size_t clusters,
                                        char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    require((clusters == 0 || reps != nullptr) &&
            (count == 0 || (labels != nullptr && ids != nullptr && fps != nullptr)));
    if (first > n || count > n - first) throw std::invalid_argument("rows out of range");
    auto* r = reinterpret_cast<simhash::ClusterRep*>(reps);
    if (first == 0) simhash::reset_cluster_reps(r, clusters);
    for (std::size_t i = 0; i < count; ++i) {
      const std::uint32_t c = simhash::cluster_of(labels, first + i);
      if (c != simhash::kNoCluster && c >= clusters) {
        throw std::invalid_argument("cluster number out of range");
      }
    }
    simhash::collect_cluster_reps(labels, first, ids, fps, count, r);
    return SIMHASH_OK;
  });
}

}  // extern "C"
