// C ABI of near-duplicate verification (similarity_capi.h) over core/similarity.hpp.
#include "capi/similarity_capi.h"

#include <algorithm>
#include <new>
#include <stdexcept>
#include <type_traits>
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

using simhash::ShingleCounter;

static_assert(std::is_trivially_copyable_v<ShingleCounter>,
              "the shingle counter must live in caller-owned memory");
static_assert(sizeof(ShingleCounter) <= sizeof(simhash_shingle_counter),
              "raise SIMHASH_SHINGLE_COUNTER_WORDS");
static_assert(alignof(ShingleCounter) <= alignof(simhash_shingle_counter),
              "simhash_shingle_counter is not aligned enough");

static ShingleCounter* counter_of(simhash_shingle_counter* c) {
  if (c == nullptr) throw std::invalid_argument("null argument");
  return std::launder(reinterpret_cast<ShingleCounter*>(c->words));
}

static const ShingleCounter* counter_of(const simhash_shingle_counter* c) {
  if (c == nullptr) throw std::invalid_argument("null argument");
  return std::launder(reinterpret_cast<const ShingleCounter*>(c->words));
}

static_assert(std::is_trivially_copyable_v<simhash::LshSketch>,
              "the LSH state lives in caller memory and must not own resources");
static_assert(sizeof(simhash::LshSketch) <= sizeof(simhash_lsh_state),
              "simhash_lsh_state is too small");
static_assert(alignof(simhash::LshSketch) <= alignof(simhash_lsh_state),
              "simhash_lsh_state is underaligned");

namespace {

simhash::LshSketch* sketch_of(simhash_lsh_state* state) noexcept {
  return std::launder(reinterpret_cast<simhash::LshSketch*>(state->words));
}

}  // namespace

extern "C" {

std::size_t simhash_shingle_counter_table_for(std::uint64_t distinct) noexcept {
  try {
    return ShingleCounter::table_size_for(distinct);
  } catch (...) {
    return 0;
  }
}

std::size_t simhash_shingle_counter_table_size(const simhash_shingle_counter* counter) noexcept {
  return counter == nullptr
             ? 0
             : std::launder(reinterpret_cast<const ShingleCounter*>(counter->words))->table_size();
}

std::size_t simhash_shingle_counter_table_before(const simhash_shingle_counter* counter,
                                                 std::size_t len) noexcept {
  return counter == nullptr ? 0
                            : std::launder(reinterpret_cast<const ShingleCounter*>(counter->words))
                                  ->table_size_before(len);
}

simhash_status simhash_shingle_counter_grow(simhash_shingle_counter* counter, std::uint64_t* table,
                                            std::size_t table_size,
                                            const simhash_interrupt* interrupt, char* errbuf,
                                            std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    simhash::Poll poll(simhash::capi::interrupt_check(interrupt));
    counter_of(counter)->grow(table, table_size, &poll);
    return SIMHASH_OK;
  });
}

simhash_status simhash_shingle_counter_begin(simhash_shingle_counter* counter, std::uint64_t cap,
                                             std::uint64_t* table, std::size_t table_size,
                                             char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (counter == nullptr) throw std::invalid_argument("null argument");
    new (counter->words) ShingleCounter(cap, table, table_size);
    return SIMHASH_OK;
  });
}

simhash_status simhash_shingle_counter_feed(simhash_shingle_counter* counter, const char* data,
                                            std::size_t len, std::uint64_t* count, char* errbuf,
                                            std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (count == nullptr || (data == nullptr && len > 0)) {
      throw std::invalid_argument("null argument");
    }
    ShingleCounter* c = counter_of(counter);
    c->feed(data, len);
    *count = c->count();
    return SIMHASH_OK;
  });
}

simhash_status simhash_shingle_counter_end(simhash_shingle_counter* counter, std::uint64_t* count,
                                           char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (count == nullptr) throw std::invalid_argument("null argument");
    ShingleCounter* c = counter_of(counter);
    c->end();
    *count = c->count();
    return SIMHASH_OK;
  });
}

simhash_status simhash_shingle_counter_set(const simhash_shingle_counter* counter,
                                           std::uint64_t* out, std::size_t out_cap, std::size_t* n,
                                           const simhash_interrupt* interrupt, char* errbuf,
                                           std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (n == nullptr) throw std::invalid_argument("null argument");
    const ShingleCounter* c = counter_of(counter);
    if (c->over()) throw std::invalid_argument("the shingle count passed its cap");
    simhash::Poll poll(simhash::capi::interrupt_check(interrupt));
    *n = c->sorted(out, out_cap, &poll);
    return SIMHASH_OK;
  });
}

simhash_status simhash_shingle_counter_common(const simhash_shingle_counter* counter,
                                              const std::uint64_t* set, std::size_t n,
                                              std::uint64_t* common, char* errbuf,
                                              std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (common == nullptr) throw std::invalid_argument("null argument");
    *common = counter_of(counter)->common(set, n);
    return SIMHASH_OK;
  });
}

simhash_status simhash_shingle_overlap(const std::uint64_t* a, std::size_t na,
                                       const std::uint64_t* b, std::size_t nb,
                                       std::uint64_t* common, const simhash_interrupt* interrupt,
                                       char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (common == nullptr) throw std::invalid_argument("null argument");
    simhash::Poll poll(simhash::capi::interrupt_check(interrupt));
    *common = simhash::overlap(a, na, b, nb, &poll).common;
    return SIMHASH_OK;
  });
}

std::uint64_t simhash_shingle_digest(const std::uint64_t* set, std::size_t n) noexcept {
  return set == nullptr ? simhash::set_digest(nullptr, 0) : simhash::set_digest(set, n);
}

std::uint64_t simhash_shingle_digest_begin(std::size_t n) noexcept {
  return simhash::set_digest_begin(n);
}

std::uint64_t simhash_shingle_digest_add(std::uint64_t state, const std::uint64_t* piece,
                                         std::size_t m) noexcept {
  return piece == nullptr ? state : simhash::set_digest_add(state, piece, m);
}

std::uint64_t simhash_shingle_digest_end(std::uint64_t state) noexcept {
  return simhash::set_digest_end(state);
}

void simhash_lsh_begin(simhash_lsh_state* state) noexcept {
  if (state != nullptr) new (state->words) simhash::LshSketch();
}

void simhash_lsh_add(simhash_lsh_state* state, const std::uint64_t* piece, std::size_t m) noexcept {
  if (state != nullptr) sketch_of(state)->add(piece, m);
}

simhash_status simhash_lsh_end(const simhash_lsh_state* state, std::int64_t* keys,
                               std::size_t keys_cap, std::size_t* nkeys, char* errbuf,
                               std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (state == nullptr || nkeys == nullptr || (keys == nullptr && keys_cap > 0)) {
      throw std::invalid_argument("null argument");
    }
    const std::vector<std::int64_t> k =
        std::launder(reinterpret_cast<const simhash::LshSketch*>(state->words))->keys();
    if (k.size() > keys_cap) throw std::invalid_argument("no room for the LSH keys");
    std::copy(k.begin(), k.end(), keys);
    *nkeys = k.size();
    return SIMHASH_OK;
  });
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
