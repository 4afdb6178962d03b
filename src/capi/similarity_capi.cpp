// C ABI of near-duplicate verification (similarity_capi.h) over core/similarity.hpp.
#include "capi/similarity_capi.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "capi/guard.hpp"
#include "core/minhash.hpp"
#include "core/similarity.hpp"

using simhash::capi::guarded;

static_assert(SIMHASH_SIMILARITY_SHINGLE == simhash::kSimilarityShingle,
              "keep the C and C++ shingle sizes equal");

static_assert(SIMHASH_LSH_BANDS == simhash::kLshBands && SIMHASH_LSH_ROWS == simhash::kLshRows,
              "keep the C and C++ LSH schemes equal");
static_assert(SIMHASH_LSH_MIN_SIMILARITY == simhash::kLshMinSimilarity,
              "keep the C and C++ LSH thresholds equal");

extern "C" {

simhash_status simhash_shingle_overlap(const std::uint64_t* a, std::size_t na,
                                       const std::uint64_t* b, std::size_t nb,
                                       std::uint64_t* common, char* errbuf,
                                       std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (common == nullptr) throw std::invalid_argument("null argument");
    *common = simhash::overlap(a, na, b, nb).common;
    return SIMHASH_OK;
  });
}

std::uint64_t simhash_shingle_digest(const std::uint64_t* set, std::size_t n) noexcept {
  return set == nullptr ? simhash::set_digest(nullptr, 0) : simhash::set_digest(set, n);
}

simhash_status simhash_lsh_keys(const std::uint64_t* set, std::size_t n, std::int64_t* keys,
                                std::size_t keys_cap, std::size_t* nkeys, char* errbuf,
                                std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (nkeys == nullptr || (keys == nullptr && keys_cap > 0)) {
      throw std::invalid_argument("null argument");
    }
    const std::vector<std::int64_t> k = simhash::lsh_keys(set, n);
    if (k.size() > keys_cap) throw std::invalid_argument("no room for the LSH keys");
    std::copy(k.begin(), k.end(), keys);
    *nkeys = k.size();
    return SIMHASH_OK;
  });
}

}  // extern "C"
