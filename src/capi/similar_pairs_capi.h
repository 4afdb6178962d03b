/*
 * The C ABI of the verified all-pairs engine (src/core/similar_pairs.hpp), under the rules
 * of simhash_capi.h: noexcept, a status plus a message in the caller's buffer.
 *
 * One departure from "no heap memory crosses the line": the engine's state (shingle sets,
 * keys, candidates) grows with the input in ways a caller cannot size in advance, so
 * simhash_similar_create() allocates it on the C++ heap and hands back an opaque handle
 * that the caller must give to simhash_similar_free() exactly once, also when an error
 * unwinds it (the PostgreSQL glue registers the free as a reset callback of the memory
 * context the handle lives in). No function here calls back into the caller but through
 * its interrupt poll (simhash_similar_set_interrupt()): between calls the caller may check
 * for interrupts, and an error between calls leaks nothing once the handle is freed.
 */
#ifndef SIMHASH_SIMILAR_PAIRS_CAPI_H
#define SIMHASH_SIMILAR_PAIRS_CAPI_H

#include <stddef.h>
#include <stdint.h>

#include "capi/simhash_capi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct simhash_similar simhash_similar;

/* A verified pair of rows: id1 < id2. */
typedef struct simhash_similar_pair {
  int64_t id1;
  int64_t id2;
  double similarity;
} simhash_similar_pair;

/* A row of a cluster: its id, the smallest id of its component, its best similarity. */
typedef struct simhash_similar_cluster_row {
  int64_t id;
  int64_t cluster_id;
  double similarity;
} simhash_similar_cluster_row;

/* How candidates are found for a threshold (simhash::SimilarRecipe). */
typedef struct simhash_similar_recipe {
  int32_t lsh;          /* non-zero: pairs sharing a simhash_lsh key; the rest is unused */
  int32_t tokenizer;    /* SIMHASH_TOKENIZER_* of simhash(text, tokenizer, n, 'binary') */
  int32_t n;
  int32_t max_distance; /* the Hamming radius; -1 with lsh */
} simhash_similar_recipe;

/*
 * The calibration's recipes for min_similarity (the one table, src/core/similar_pairs.cpp):
 * 1 or 2 of them into out[0..cap), their number into *count. SIMHASH_INVALID_ARGUMENT
 * unless 0 < min_similarity <= 1, or when cap is too small.
 */
simhash_status simhash_similar_recipe_list(double min_similarity, simhash_similar_recipe *out,
                                           size_t cap, size_t *count, char *errbuf,
                                           size_t errcap) SIMHASH_NOEXCEPT;

/*
 * A new engine for pairs at or above min_similarity (0 < min_similarity <= 1, else
 * SIMHASH_INVALID_ARGUMENT), shingling and verifying on up to `threads` threads (at most
 * the machine's cores; the calling thread is one of them).
 */
simhash_status simhash_similar_create(double min_similarity, int32_t threads,
                                      simhash_similar **engine, char *errbuf,
                                      size_t errcap) SIMHASH_NOEXCEPT;

/* Frees an engine (NULL is ignored). */
void simhash_similar_free(simhash_similar *engine) SIMHASH_NOEXCEPT;

/*
 * The interrupt poll the engine asks while simhash_similar_add(), _next() and
 * _cluster_step() work (a copy is kept; NULL: none): a batch of rows, and one row, may hold
 * any amount of text. After SIMHASH_INTERRUPTED the engine is only to be freed.
 */
void simhash_similar_set_interrupt(simhash_similar *engine,
                                   const simhash_interrupt *interrupt) SIMHASH_NOEXCEPT;

/* Adds n rows: ids[i] and the UTF-8 text texts[i] of lens[i] bytes (read during the call). */
simhash_status simhash_similar_add(simhash_similar *engine, const int64_t *ids,
                                   const char *const *texts, const size_t *lens, size_t n,
                                   char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/* A row left out before shingling (a NULL text): its id counts for the duplicate check. */
simhash_status simhash_similar_add_id(simhash_similar *engine, int64_t id, char *errbuf,
                                      size_t errcap) SIMHASH_NOEXCEPT;

/* Bytes the engine holds now; rows with a character, and distinct shingle sets. */
size_t simhash_similar_memory(const simhash_similar *engine) SIMHASH_NOEXCEPT;
void simhash_similar_counts(const simhash_similar *engine, uint64_t *rows,
                            uint64_t *groups) SIMHASH_NOEXCEPT;

/* After the last add: *found = 1 and *duplicate = the smallest id added twice, or 0. */
simhash_status simhash_similar_duplicate_id(simhash_similar *engine, int32_t *found,
                                            int64_t *duplicate, char *errbuf,
                                            size_t errcap) SIMHASH_NOEXCEPT;

/*
 * Up to `capacity` pairs into out (*count), verifying about `work` candidates at most;
 * *finished = 1 once every pair has been written. Each pair once, in no particular order.
 */
simhash_status simhash_similar_next(simhash_similar *engine, simhash_similar_pair *out,
                                    size_t capacity, size_t work, size_t *count,
                                    int32_t *finished, char *errbuf,
                                    size_t errcap) SIMHASH_NOEXCEPT;

/*
 * Clusters instead of pairs: call simhash_similar_cluster_step() (about `work` candidates
 * a call) until *finished = 1; it then holds *rows cluster rows, which
 * simhash_similar_cluster_rows() copies out from `first`, ordered by cluster_id, then id.
 */
simhash_status simhash_similar_cluster_step(simhash_similar *engine, size_t work,
                                            int32_t *finished, uint64_t *rows, char *errbuf,
                                            size_t errcap) SIMHASH_NOEXCEPT;
simhash_status simhash_similar_cluster_rows(const simhash_similar *engine, uint64_t first,
                                            simhash_similar_cluster_row *out, size_t capacity,
                                            size_t *count, char *errbuf,
                                            size_t errcap) SIMHASH_NOEXCEPT;

/*
 * External mode (simhash::SimilarPairs, "External mode"): the shingle sets and LSH keys in
 * the caller's temporary files, for inputs whose sets outgrow its memory.
 *
 * simhash_similar_go_external() switches (while adding; every set so far included), with
 * `record_budget` bytes of records loaded for one batch of candidates at most (a batch
 * always holds one candidate's two). After each add, the caller drains the new records
 * with simhash_similar_export_records() (whole 8-byte words: cap a multiple of 8) into the
 * end of its record file, each band's new keys with simhash_similar_export_keys() into the
 * end of that band's file, then calls simhash_similar_export_done().
 *
 * During simhash_similar_next() / _cluster_step(), simhash_similar_need() says what the
 * engine waits for: SIMHASH_SIMILAR_NEED_BAND_KEYS (read band *band's file from its start,
 * handing its keys over with simhash_similar_provide_band_keys() until the need changes) or
 * SIMHASH_SIMILAR_NEED_SETS (read each of simhash_similar_loads()' ranges of the record file
 * into its dest, then call simhash_similar_sets_loaded()).
 */
#define SIMHASH_SIMILAR_NEED_NONE 0
#define SIMHASH_SIMILAR_NEED_BAND_KEYS 1
#define SIMHASH_SIMILAR_NEED_SETS 2

typedef struct simhash_similar_load {
  uint64_t offset; /* in the record file */
  uint64_t bytes;
  void *dest;
  uint32_t group;
} simhash_similar_load;

simhash_status simhash_similar_go_external(simhash_similar *engine, size_t record_budget,
                                           char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;
simhash_status simhash_similar_export_records(simhash_similar *engine, unsigned char *buf,
                                              size_t cap, size_t *written, char *errbuf,
                                              size_t errcap) SIMHASH_NOEXCEPT;
/* Band keys of the groups added since the last export_done: *written values. */
simhash_status simhash_similar_export_keys(simhash_similar *engine, int32_t band, int64_t *buf,
                                           size_t cap, size_t *written, char *errbuf,
                                           size_t errcap) SIMHASH_NOEXCEPT;
simhash_status simhash_similar_export_done(simhash_similar *engine, char *errbuf,
                                           size_t errcap) SIMHASH_NOEXCEPT;
/* 0 in memory, 1 external; the record file's size so far; LSH bands (0 below 0.7). */
void simhash_similar_external_state(const simhash_similar *engine, int32_t *external,
                                    uint64_t *record_bytes, int32_t *bands) SIMHASH_NOEXCEPT;
void simhash_similar_need(const simhash_similar *engine, int32_t *need,
                          int32_t *band) SIMHASH_NOEXCEPT;
simhash_status simhash_similar_provide_band_keys(simhash_similar *engine, const int64_t *keys,
                                                 size_t n, char *errbuf,
                                                 size_t errcap) SIMHASH_NOEXCEPT;
/* The ranges to read (ascending offsets), valid until simhash_similar_sets_loaded(). */
void simhash_similar_loads(const simhash_similar *engine, const simhash_similar_load **loads,
                           size_t *n) SIMHASH_NOEXCEPT;
simhash_status simhash_similar_sets_loaded(simhash_similar *engine, char *errbuf,
                                           size_t errcap) SIMHASH_NOEXCEPT;

/* Progress: the candidate stage (a band) being walked, of how many; candidates verified. */
void simhash_similar_progress(const simhash_similar *engine, int32_t *stage, int32_t *stages,
                              uint64_t *verified) SIMHASH_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* SIMHASH_SIMILAR_PAIRS_CAPI_H */
