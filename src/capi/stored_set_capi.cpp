// The C ABI of the stored form of a shingle set (src/core/stored_set.hpp).
#include "capi/stored_set_capi.h"

#include "core/stored_set.hpp"

static_assert(SIMHASH_STORED_SET_MAX_SHINGLES == simhash::kStoredSetMaxShingles,
              "keep the C and C++ limits equal");

extern "C" {

size_t simhash_stored_set_size(size_t n) noexcept { return simhash::stored_set_size(n); }

int simhash_stored_set_length_ok(size_t len) noexcept {
  return simhash::stored_set_length_ok(len) ? 1 : 0;
}

void simhash_stored_set_write(const uint64_t* set, size_t n, unsigned char* out) noexcept {
  simhash::write_stored_set(set, n, out);
}

int simhash_stored_set_read(const unsigned char* bytes, size_t len, uint64_t* out,
                            size_t* n) noexcept {
  return simhash::read_stored_set(bytes, len, out, n) ? 1 : 0;
}

}  // extern "C"
