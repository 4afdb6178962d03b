// C ABI of near-duplicate verification (similarity_capi.h) over core/similarity.hpp.
#include "capi/similarity_capi.h"

#include <stdexcept>

#include "capi/guard.hpp"
#include "core/similarity.hpp"

using simhash::capi::guarded;

static_assert(SIMHASH_SIMILARITY_SHINGLE == simhash::kSimilarityShingle,
              "keep the C and C++ shingle sizes equal");

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

}  // extern "C"
