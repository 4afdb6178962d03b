#include "capi/near_filter_capi.h"

#include <cstddef>
#include <new>
#include <stdexcept>

#include "capi/guard.hpp"
#include "core/near_filter.hpp"

using simhash::capi::guarded;

struct simhash_near_filter {
  explicit simhash_near_filter(int k) : filter(k) {}
  simhash::NearFilter filter;
};

extern "C" simhash_status simhash_near_filter_create(int32_t k, simhash_near_filter **filter,
                                                     char *errbuf, size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    *filter = nullptr;
    *filter = new simhash_near_filter(k);
    return SIMHASH_OK;
  });
}

extern "C" void simhash_near_filter_free(simhash_near_filter *filter) noexcept { delete filter; }

extern "C" simhash_status simhash_near_filter_add(simhash_near_filter *filter, uint64_t fp,
                                                  size_t budget, char *errbuf,
                                                  size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (!filter->filter.add_within(fp, budget))
      throw std::length_error("NearFilter: past its budget");
    return SIMHASH_OK;
  });
}

extern "C" size_t simhash_near_filter_max_members(size_t budget, int32_t k) noexcept {
  return simhash::NearFilter::max_members(budget, k);
}

extern "C" simhash_status simhash_near_filter_add_many_step(simhash_near_filter *filter,
                                                            const uint64_t *fps, size_t n,
                                                            int32_t step, char *errbuf,
                                                            size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    filter->filter.add_many_step(fps, n, step);
    return SIMHASH_OK;
  });
}

extern "C" int simhash_near_filter_may_have(const simhash_near_filter *filter,
                                            uint64_t fp) noexcept {
  return filter->filter.may_have_within(fp) ? 1 : 0;
}

extern "C" size_t simhash_near_filter_bytes(const simhash_near_filter *filter) noexcept {
  return filter->filter.bytes();
}

extern "C" size_t simhash_near_filter_size(const simhash_near_filter *filter) noexcept {
  return filter->filter.size();
}
