#include "capi/load_ids_capi.h"

#include <cstddef>
#include <new>

#include "capi/guard.hpp"
#include "core/load_ids.hpp"

using simhash::capi::guarded;

struct simhash_load_ids {
  simhash_load_ids(std::size_t nrows, std::uint64_t seed) : ids(nrows, seed) {}
  simhash::LoadIds ids;
};

extern "C" size_t simhash_load_ids_bytes(size_t nrows) noexcept {
  return simhash::LoadIds::bytes_for(nrows);
}

extern "C" simhash_status simhash_load_ids_create(size_t nrows, uint64_t seed,
                                                  simhash_load_ids **ids, char *errbuf,
                                                  size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    *ids = nullptr;
    *ids = new simhash_load_ids(nrows, seed);
    return SIMHASH_OK;
  });
}

extern "C" void simhash_load_ids_free(simhash_load_ids *ids) noexcept { delete ids; }

extern "C" simhash_status simhash_load_ids_add(simhash_load_ids *ids, uint64_t row, uint64_t fp,
                                               const char *text, size_t len, char *errbuf,
                                               size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    ids->ids.add(row, fp, text, len);
    return SIMHASH_OK;
  });
}

extern "C" size_t simhash_load_ids_settle(simhash_load_ids *ids) noexcept {
  ids->ids.settle();
  return ids->ids.size();
}

extern "C" uint64_t simhash_load_ids_row(const simhash_load_ids *ids, size_t i) noexcept {
  return ids->ids.row(i);
}

extern "C" uint64_t simhash_load_ids_fingerprint(const simhash_load_ids *ids, size_t i) noexcept {
  return ids->ids.fingerprint(i);
}

extern "C" void simhash_load_ids_set_near(simhash_load_ids *ids, size_t i) noexcept {
  ids->ids.set_near(i);
}

extern "C" size_t simhash_load_ids_keep_clean(simhash_load_ids *ids) noexcept {
  return ids->ids.keep_clean();
}

extern "C" int simhash_load_ids_has(const simhash_load_ids *ids, uint64_t fp, const char *text,
                                    size_t len) noexcept {
  return ids->ids.has(fp, text, len) ? 1 : 0;
}
