// The C ABI: catches everything, reports through status codes and caller-owned buffers.
#include "capi/simhash_capi.h"

#include <new>
#include <stdexcept>
#include <type_traits>

#include "capi/guard.hpp"
#include "core/fingerprint.hpp"
#include "core/hamming.hpp"

namespace {

using simhash::Fingerprinter;
using simhash::capi::guarded;

static_assert(SIMHASH_FINGERPRINT_BITS == 8 * sizeof(std::uint64_t), "a fingerprint is 64 bits");
static_assert(std::is_trivially_copyable_v<Fingerprinter>,
              "the state lives in caller memory and must not own resources");
static_assert(sizeof(Fingerprinter) <= sizeof(simhash_state), "simhash_state is too small");
static_assert(alignof(Fingerprinter) <= alignof(simhash_state), "simhash_state is underaligned");

Fingerprinter* state_of(simhash_state* state) noexcept {
  return std::launder(reinterpret_cast<Fingerprinter*>(state->words));
}

}  // namespace

extern "C" {

void simhash_default_options(simhash_options* options) noexcept {
  const simhash::Options defaults;
  options->shingle = defaults.shingle;
  options->cjk_bigrams = defaults.cjk_bigrams ? 1 : 0;
}

simhash_status simhash_begin(simhash_state* state, const simhash_options* options, char* errbuf,
                             std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (state == nullptr || options == nullptr) throw std::invalid_argument("null argument");
    simhash::Options o;
    o.shingle = options->shingle;
    o.cjk_bigrams = options->cjk_bigrams != 0;
    new (state->words) Fingerprinter(o);
    return SIMHASH_OK;
  });
}

simhash_status simhash_feed(simhash_state* state, const char* data, std::size_t len, char* errbuf,
                            std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (state == nullptr || (data == nullptr && len != 0))
      throw std::invalid_argument("null argument");
    if (len != 0) state_of(state)->feed(data, len);
    return SIMHASH_OK;
  });
}

simhash_status simhash_end(simhash_state* state, std::uint64_t* fingerprint, char* errbuf,
                           std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (state == nullptr || fingerprint == nullptr) throw std::invalid_argument("null argument");
    const auto fp = state_of(state)->finish();
    if (!fp) return SIMHASH_NO_FEATURES;
    *fingerprint = *fp;
    return SIMHASH_OK;
  });
}

int32_t simhash_hamming(std::uint64_t a, std::uint64_t b) noexcept {
  return simhash::hamming(a, b);
}

}  // extern "C"
