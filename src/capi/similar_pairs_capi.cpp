#include "capi/similar_pairs_capi.h"

#include <cstddef>
#include <new>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "capi/guard.hpp"
#include "core/similar_pairs.hpp"

using simhash::capi::guarded;

// The handle: the engine, and the cluster rows once computed.
struct simhash_similar {
  simhash_similar(double t, int threads) : engine(t, threads) {}
  simhash::SimilarPairs engine;
  std::vector<simhash::SimilarClusterRow> cluster_rows;
  simhash_interrupt interrupt{};  // the caller's poll, which the engine's check points to
};

namespace {

static_assert(sizeof(simhash_similar_pair) == sizeof(simhash::SimilarPair) &&
                  offsetof(simhash_similar_pair, similarity) ==
                      offsetof(simhash::SimilarPair, similarity),
              "simhash_similar_pair must match simhash::SimilarPair");
static_assert(sizeof(simhash_similar_cluster_row) == sizeof(simhash::SimilarClusterRow) &&
                  offsetof(simhash_similar_cluster_row, similarity) ==
                      offsetof(simhash::SimilarClusterRow, similarity),
              "simhash_similar_cluster_row must match simhash::SimilarClusterRow");

static_assert(sizeof(simhash_similar_load) == sizeof(simhash::SimilarPairs::SetLoad) &&
                  offsetof(simhash_similar_load, dest) ==
                      offsetof(simhash::SimilarPairs::SetLoad, dest) &&
                  offsetof(simhash_similar_load, group) ==
                      offsetof(simhash::SimilarPairs::SetLoad, group),
              "simhash_similar_load must match simhash::SimilarPairs::SetLoad");

simhash_similar* checked(simhash_similar* e) {
  if (e == nullptr) throw std::invalid_argument("null engine");
  return e;
}

}  // namespace

extern "C" {

simhash_status simhash_similar_recipe_list(double min_similarity, simhash_similar_recipe* out,
                                           std::size_t cap, std::size_t* count, char* errbuf,
                                           std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (count == nullptr || (out == nullptr && cap > 0)) throw std::invalid_argument("null argument");
    const auto recipes = simhash::similar_recipes(min_similarity);
    if (recipes.size() > cap) throw std::invalid_argument("recipe buffer too small");
    for (std::size_t i = 0; i < recipes.size(); ++i) {
      out[i] = simhash_similar_recipe{recipes[i].lsh ? 1 : 0, static_cast<int32_t>(recipes[i].tokenizer),
                                      recipes[i].n, recipes[i].max_distance};
    }
    *count = recipes.size();
    return SIMHASH_OK;
  });
}

simhash_status simhash_similar_create(double min_similarity, int32_t threads,
                                      simhash_similar** engine, char* errbuf,
                                      std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (engine == nullptr) throw std::invalid_argument("null argument");
    *engine = nullptr;
    const unsigned cores = std::thread::hardware_concurrency();
    int t = threads < 1 ? 1 : threads;
    if (cores > 0 && static_cast<unsigned>(t) > cores) t = static_cast<int>(cores);
    *engine = new simhash_similar(min_similarity, t);
    return SIMHASH_OK;
  });
}

void simhash_similar_free(simhash_similar* engine) noexcept { delete engine; }

void simhash_similar_set_interrupt(simhash_similar* engine,
                                   const simhash_interrupt* interrupt) noexcept {
  if (engine == nullptr) return;
  engine->interrupt = interrupt != nullptr ? *interrupt : simhash_interrupt{};
  engine->engine.set_interrupt(simhash::capi::interrupt_check(&engine->interrupt));
}

simhash_status simhash_similar_add(simhash_similar* engine, const int64_t* ids,
                                   const char* const* texts, const std::size_t* lens,
                                   std::size_t n, char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (n > 0 && (ids == nullptr || texts == nullptr || lens == nullptr)) {
      throw std::invalid_argument("null argument");
    }
    std::vector<std::string_view> views(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (texts[i] == nullptr && lens[i] > 0) throw std::invalid_argument("null text");
      views[i] = lens[i] == 0 ? std::string_view() : std::string_view(texts[i], lens[i]);
    }
    checked(engine)->engine.add(ids, views.data(), n);
    return SIMHASH_OK;
  });
}

simhash_status simhash_similar_add_id(simhash_similar* engine, int64_t id, char* errbuf,
                                      std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    checked(engine)->engine.add_id(id);
    return SIMHASH_OK;
  });
}

std::size_t simhash_similar_memory(const simhash_similar* engine) noexcept {
  return engine == nullptr ? 0 : engine->engine.memory_bytes() +
                                     engine->cluster_rows.capacity() * sizeof(simhash::SimilarClusterRow);
}

void simhash_similar_counts(const simhash_similar* engine, uint64_t* rows, uint64_t* groups) noexcept {
  if (rows != nullptr) *rows = engine == nullptr ? 0 : engine->engine.rows();
  if (groups != nullptr) *groups = engine == nullptr ? 0 : engine->engine.groups();
}

simhash_status simhash_similar_duplicate_id(simhash_similar* engine, int32_t* found,
                                            int64_t* duplicate, char* errbuf,
                                            std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (found == nullptr || duplicate == nullptr) throw std::invalid_argument("null argument");
    const auto d = checked(engine)->engine.duplicate_id();
    *found = d.has_value();
    *duplicate = d.value_or(0);
    return SIMHASH_OK;
  });
}

simhash_status simhash_similar_next(simhash_similar* engine, simhash_similar_pair* out,
                                    std::size_t capacity, std::size_t work, std::size_t* count,
                                    int32_t* finished, char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (count == nullptr || finished == nullptr) throw std::invalid_argument("null argument");
    auto& e = checked(engine)->engine;
    *count = e.next(reinterpret_cast<simhash::SimilarPair*>(out), capacity, work);
    *finished = *count == 0 && e.done();
    return SIMHASH_OK;
  });
}

simhash_status simhash_similar_cluster_step(simhash_similar* engine, std::size_t work,
                                            int32_t* finished, uint64_t* rows, char* errbuf,
                                            std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (finished == nullptr || rows == nullptr) throw std::invalid_argument("null argument");
    simhash_similar* h = checked(engine);
    *finished = h->engine.cluster_step(work);
    if (*finished) h->cluster_rows = h->engine.cluster_rows();
    *rows = h->cluster_rows.size();
    return SIMHASH_OK;
  });
}

simhash_status simhash_similar_cluster_rows(const simhash_similar* engine, uint64_t first,
                                            simhash_similar_cluster_row* out,
                                            std::size_t capacity, std::size_t* count,
                                            char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (engine == nullptr || count == nullptr || (out == nullptr && capacity > 0)) {
      throw std::invalid_argument("null argument");
    }
    const auto& rows = engine->cluster_rows;
    std::size_t n = 0;
    for (uint64_t i = first; i < rows.size() && n < capacity; ++i, ++n) {
      out[n] = simhash_similar_cluster_row{rows[i].id, rows[i].cluster_id, rows[i].similarity};
    }
    *count = n;
    return SIMHASH_OK;
  });
}

simhash_status simhash_similar_go_external(simhash_similar* engine, std::size_t record_budget,
                                           char* errbuf, std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    auto& e = checked(engine)->engine;
    e.set_record_budget(record_budget);
    e.go_external();
    return SIMHASH_OK;
  });
}

simhash_status simhash_similar_export_records(simhash_similar* engine, unsigned char* buf,
                                              std::size_t cap, std::size_t* written, char* errbuf,
                                              std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (written == nullptr) throw std::invalid_argument("null argument");
    *written = checked(engine)->engine.export_records(buf, cap);
    return SIMHASH_OK;
  });
}

simhash_status simhash_similar_export_keys(simhash_similar* engine, int32_t band, int64_t* buf,
                                           std::size_t cap, std::size_t* written, char* errbuf,
                                           std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (written == nullptr) throw std::invalid_argument("null argument");
    *written = checked(engine)->engine.export_keys(band, buf, cap);
    return SIMHASH_OK;
  });
}

simhash_status simhash_similar_export_done(simhash_similar* engine, char* errbuf,
                                           std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    checked(engine)->engine.export_done();
    return SIMHASH_OK;
  });
}

void simhash_similar_external_state(const simhash_similar* engine, int32_t* external,
                                    uint64_t* record_bytes, int32_t* bands) noexcept {
  if (external != nullptr) *external = engine != nullptr && engine->engine.external();
  if (record_bytes != nullptr) *record_bytes = engine == nullptr ? 0 : engine->engine.record_bytes();
  if (bands != nullptr) *bands = engine == nullptr ? 0 : engine->engine.lsh_bands();
}

void simhash_similar_need(const simhash_similar* engine, int32_t* need, int32_t* band) noexcept {
  if (need != nullptr) *need = engine == nullptr ? 0 : static_cast<int32_t>(engine->engine.need());
  if (band != nullptr) *band = engine == nullptr ? 0 : engine->engine.need_band();
}

simhash_status simhash_similar_provide_band_keys(simhash_similar* engine, const int64_t* keys,
                                                 std::size_t n, char* errbuf,
                                                 std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    if (keys == nullptr && n > 0) throw std::invalid_argument("null argument");
    checked(engine)->engine.provide_band_keys(keys, n);
    return SIMHASH_OK;
  });
}

void simhash_similar_loads(const simhash_similar* engine, const simhash_similar_load** loads,
                           std::size_t* n) noexcept {
  if (engine == nullptr) {
    if (loads != nullptr) *loads = nullptr;
    if (n != nullptr) *n = 0;
    return;
  }
  const auto& l = engine->engine.sets_needed();
  if (loads != nullptr) *loads = reinterpret_cast<const simhash_similar_load*>(l.data());
  if (n != nullptr) *n = l.size();
}

simhash_status simhash_similar_sets_loaded(simhash_similar* engine, char* errbuf,
                                           std::size_t errcap) noexcept {
  return guarded(errbuf, errcap, [&] {
    checked(engine)->engine.sets_loaded();
    return SIMHASH_OK;
  });
}

void simhash_similar_progress(const simhash_similar* engine, int32_t* stage, int32_t* stages,
                              uint64_t* verified) noexcept {
  if (stage != nullptr) *stage = engine == nullptr ? 0 : engine->engine.stage();
  if (stages != nullptr) *stages = engine == nullptr ? 0 : engine->engine.stages();
  if (verified != nullptr) *verified = engine == nullptr ? 0 : engine->engine.verified();
}

}  // extern "C"
