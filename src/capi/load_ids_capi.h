/*
 * The C ABI of simhash::LoadIds (src/core/load_ids.hpp): the distinct ids of a bulk load's
 * rows (a fingerprint, or a seeded digest of a text), each with its first row, for the
 * dedupe trigger's load memo. Rules of simhash_capi.h (noexcept, a status plus a message in
 * the caller's buffer); it lives on the C++ heap behind an opaque handle that the caller
 * frees with simhash_load_ids_free() exactly once.
 */
#ifndef SIMHASH_LOAD_IDS_CAPI_H
#define SIMHASH_LOAD_IDS_CAPI_H

#include <stddef.h>
#include <stdint.h>

#include "capi/simhash_capi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct simhash_load_ids simhash_load_ids;

/* Bytes that room for nrows rows takes. */
size_t simhash_load_ids_bytes(size_t nrows) SIMHASH_NOEXCEPT;

/* Empty, with room for nrows rows; seed: of the texts' digests (a secret). */
simhash_status simhash_load_ids_create(size_t nrows, uint64_t seed, simhash_load_ids **ids,
                                       char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

void simhash_load_ids_free(simhash_load_ids *ids) SIMHASH_NOEXCEPT;

/* The row number row: its fingerprint fp, or (text not NULL) its text[0..len). */
simhash_status simhash_load_ids_add(simhash_load_ids *ids, uint64_t row, uint64_t fp,
                                    const char *text, size_t len, char *errbuf,
                                    size_t errcap) SIMHASH_NOEXCEPT;

/* The distinct ids, each with its first row, in the order of those rows: how many. */
size_t simhash_load_ids_settle(simhash_load_ids *ids) SIMHASH_NOEXCEPT;

/* The i-th of them: its first row, its fingerprint; set_near: a near duplicate was found. */
uint64_t simhash_load_ids_row(const simhash_load_ids *ids, size_t i) SIMHASH_NOEXCEPT;
uint64_t simhash_load_ids_fingerprint(const simhash_load_ids *ids, size_t i) SIMHASH_NOEXCEPT;
void simhash_load_ids_set_near(simhash_load_ids *ids, size_t i) SIMHASH_NOEXCEPT;

/* Keeps the ids not set near (how many were dropped); then has() answers. */
size_t simhash_load_ids_keep_clean(simhash_load_ids *ids) SIMHASH_NOEXCEPT;

/* 1 when a row of this fingerprint, or text (not NULL), is among the ids kept. */
int simhash_load_ids_has(const simhash_load_ids *ids, uint64_t fp, const char *text,
                         size_t len) SIMHASH_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* SIMHASH_LOAD_IDS_CAPI_H */
