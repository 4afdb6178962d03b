// C ABI of near-duplicate search (search_capi.h) over core/blocks.hpp.
#include "capi/search_capi.h"

#include <stdexcept>
#include <vector>

#include "capi/guard.hpp"
#include "core/blocks.hpp"
#include "core/locks.hpp"
#include "core/siphash.hpp"

using simhash::capi::guarded;

static_assert(SIMHASH_MAX_BLOCKS == simhash::kMaxBlocks, "keep the C and C++ limits equal");
static_assert(SIMHASH_MAX_LOCK_KEYS == simhash::kMaxLockKeys, "keep the C and C++ limits equal");
static_assert(SIMHASH_MAX_LOCK_DISTANCE == simhash::kMaxLockDistance,
              "keep the C and C++ limits equal");

namespace {

simhash::LockSecret lock_secret(const simhash_lock_secret& s) {
  return simhash::LockSecret{s.table, s.k0, s.k1};
}

}  // namespace

extern "C" {

simhash_status simhash_block_value(std::uint64_t fp, std::int32_t blocks, std::int32_t block,
                                   std::uint32_t* value, char* errbuf,
                                   std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (value == nullptr) throw std::invalid_argument("null argument");
    simhash::check_block(blocks, block);
    *value = simhash::block_value(fp, blocks, block);
    return SIMHASH_OK;
  });
}

simhash_status simhash_block_probe_count(std::int32_t blocks, std::int32_t block,
                                         std::int32_t radius, std::uint64_t* count, char* errbuf,
                                         std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (count == nullptr) throw std::invalid_argument("null argument");
    simhash::check_block(blocks, block);
    *count = simhash::probe_count(simhash::block_width(blocks, block), radius);
    return SIMHASH_OK;
  });
}

simhash_status simhash_block_probes(std::uint64_t q, std::int32_t blocks, std::int32_t block,
                                    std::int32_t radius, std::uint32_t* out, std::size_t cap,
                                    std::size_t* count, char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (count == nullptr || (out == nullptr && cap != 0)) {
      throw std::invalid_argument("null argument");
    }
    simhash::check_block(blocks, block);
    const std::vector<std::uint32_t> values = simhash::probe_values(
        simhash::block_value(q, blocks, block), simhash::block_width(blocks, block), radius, cap);
    *count = values.size();
    std::copy(values.begin(), values.end(), out);
    return SIMHASH_OK;
  });
}

simhash_status simhash_plan_probes(std::int32_t blocks, std::uint32_t present_mask, std::int32_t k,
                                   double rows, double candidate_cost, simhash_probe_plan* plan,
                                   char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (plan == nullptr) throw std::invalid_argument("null argument");
    simhash::check_block(blocks, 0);
    std::vector<bool> present(static_cast<std::size_t>(blocks));
    for (int i = 0; i < blocks; ++i)
      present[static_cast<std::size_t>(i)] = (present_mask >> i) & 1U;
    if (!(candidate_cost >= 0)) throw std::invalid_argument("candidate cost must be >= 0");
    simhash::ProbeCosts costs;
    costs.candidate = candidate_cost;
    const simhash::ProbePlan p = simhash::plan_probes(blocks, present, k, rows, costs);
    for (int i = 0; i < SIMHASH_MAX_BLOCKS; ++i) {
      plan->radius[i] = i < blocks ? p.radius[static_cast<std::size_t>(i)] : -1;
    }
    plan->probes = p.probes;
    plan->candidates = p.candidates;
    plan->cost = p.cost;
    plan->feasible = p.feasible ? 1 : 0;
    return SIMHASH_OK;
  });
}

simhash_status simhash_choose_blocks(std::int32_t max_distance, double rows, std::int32_t* blocks,
                                     char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (blocks == nullptr) throw std::invalid_argument("null argument");
    *blocks = simhash::choose_blocks(max_distance, rows);
    return SIMHASH_OK;
  });
}

simhash_status simhash_lock_keys(std::uint64_t fp, std::int32_t k, std::uint32_t* out,
                                 std::size_t cap, std::size_t* count, char* errbuf,
                                 std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (count == nullptr || (out == nullptr && cap != 0)) {
      throw std::invalid_argument("null argument");
    }
    const std::vector<std::uint32_t> keys = simhash::lock_keys(fp, k);
    if (keys.size() > cap) throw std::invalid_argument("lock key buffer too small");
    std::copy(keys.begin(), keys.end(), out);
    *count = keys.size();
    return SIMHASH_OK;
  });
}

simhash_status simhash_lock_key_bound(std::int32_t k, std::uint64_t* bound, char* errbuf,
                                      std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (bound == nullptr) throw std::invalid_argument("null argument");
    *bound = simhash::lock_key_bound(k);
    return SIMHASH_OK;
  });
}

simhash_status simhash_row_lock_keys(std::uint64_t fp, std::int32_t k,
                                     const simhash_lock_secret* secret, std::uint32_t* out,
                                     std::size_t cap, std::size_t* count, char* errbuf,
                                     std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (secret == nullptr || count == nullptr || (out == nullptr && cap != 0)) {
      throw std::invalid_argument("null argument");
    }
    const std::vector<std::uint32_t> keys = simhash::row_lock_keys(fp, k, lock_secret(*secret));
    if (keys.size() > cap) throw std::invalid_argument("lock key buffer too small");
    std::copy(keys.begin(), keys.end(), out);
    *count = keys.size();
    return SIMHASH_OK;
  });
}

std::size_t simhash_lsh_row_lock_keys(const std::int64_t* lsh, std::size_t n,
                                      const simhash_lock_secret* secret,
                                      std::uint32_t* out) noexcept {
  if (lsh == nullptr || secret == nullptr || out == nullptr) return 0;
  return simhash::lsh_row_lock_keys(lsh, n, lock_secret(*secret), out);
}

std::size_t simhash_sort_distinct_keys(std::uint32_t* keys, std::size_t n) noexcept {
  return keys == nullptr ? 0 : simhash::sort_distinct(keys, n);
}

void simhash_key_lock_keys(std::uint32_t* keys, std::size_t n, std::uint32_t table,
                           std::uint64_t k0, std::uint64_t k1) noexcept {
  if (keys == nullptr) return;
  for (std::size_t i = 0; i < n; ++i) keys[i] = simhash::keyed_lock_key(keys[i], table, k0, k1);
}

}  // extern "C"
