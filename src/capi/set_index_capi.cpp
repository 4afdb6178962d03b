#include "capi/set_index_capi.h"

#include <cstddef>
#include <new>
#include <stdexcept>

#include "capi/guard.hpp"
#include "capi/similarity_capi.h"
#include "core/minhash.hpp"
#include "core/set_index.hpp"

using simhash::capi::guarded;

static_assert(SIMHASH_LSH_BANDS == simhash::kLshBands, "band count");
static_assert(SIMHASH_SET_UNKNOWN_SIZE == simhash::SetIndex::kUnknownSize, "unknown size");

struct simhash_set_index {
  simhash::SetIndex index;
};

extern "C" simhash_status simhash_set_index_create(simhash_set_index **index, char *errbuf,
                                                   size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    *index = nullptr;
    *index = new simhash_set_index();
    return SIMHASH_OK;
  });
}

extern "C" void simhash_set_index_free(simhash_set_index *index) noexcept { delete index; }

extern "C" simhash_status simhash_set_index_add(simhash_set_index *index, const int64_t *keys,
                                                const uint64_t *set, size_t n, int64_t tag,
                                                int original, size_t budget,
                                                char *errbuf, size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (!index->index.try_add(keys, set, n, tag, original != 0, budget))
      throw std::length_error("SetIndex: past its budget");
    return SIMHASH_OK;
  });
}

extern "C" simhash_set_answer simhash_set_index_find(simhash_set_index *index,
                                                     const int64_t *keys, const uint64_t *set,
                                                     size_t n, double threshold, int best,
                                                     int64_t *tag, int *original,
                                                     double *similarity) noexcept {
  simhash::SetIndex::Hit hit;
  const auto answer = best ? index->index.best(keys, set, n, threshold, &hit)
                           : index->index.any(keys, set, n, threshold, &hit);
  *tag = hit.tag;
  *original = hit.original ? 1 : 0;
  *similarity = hit.similarity;
  switch (answer) {
    case simhash::SetIndex::Answer::kFound:
      return SIMHASH_SET_FOUND;
    case simhash::SetIndex::Answer::kUnknown:
      return SIMHASH_SET_UNKNOWN;
    default:
      return SIMHASH_SET_NONE;
  }
}

extern "C" size_t simhash_set_index_bytes(const simhash_set_index *index) noexcept {
  return index->index.bytes();
}

extern "C" size_t simhash_set_index_rows(const simhash_set_index *index) noexcept {
  return index->index.rows();
}

extern "C" size_t simhash_set_index_held(const simhash_set_index *index) noexcept {
  return index->index.held();
}
