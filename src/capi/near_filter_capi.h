/*
 * The C ABI of simhash::NearFilter (src/core/near_filter.hpp): a growing set of
 * fingerprints that tells, with no false "no", whether a fingerprint may have a member
 * within k bits. Rules of simhash_capi.h (noexcept, a status plus a message in the
 * caller's buffer), with the departure of similar_pairs_capi.h: the filter grows with its
 * members, so it lives on the C++ heap behind an opaque handle that the caller frees with
 * simhash_near_filter_free() exactly once, also when an error unwinds it.
 */
#ifndef SIMHASH_NEAR_FILTER_CAPI_H
#define SIMHASH_NEAR_FILTER_CAPI_H

#include <stddef.h>
#include <stdint.h>

#include "capi/simhash_capi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct simhash_near_filter simhash_near_filter;

/* A new, empty filter for radius k (0..16, else SIMHASH_INVALID_ARGUMENT). */
simhash_status simhash_near_filter_create(int32_t k, simhash_near_filter **filter, char *errbuf,
                                          size_t errcap) SIMHASH_NOEXCEPT;

/* Frees a filter (NULL is ignored). */
void simhash_near_filter_free(simhash_near_filter *filter) SIMHASH_NOEXCEPT;

/*
 * Adds a member; on failure (out of memory) the filter is unchanged. SIMHASH_LIMIT_EXCEEDED
 * when the filter, with it, holds more than budget bytes (NearFilter::add_within).
 */
simhash_status simhash_near_filter_add(simhash_near_filter *filter, uint64_t fp, size_t budget,
                                       char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/* The most members a filter at distance k may be made with at once within budget bytes. */
size_t simhash_near_filter_max_members(size_t budget, int32_t k) SIMHASH_NOEXCEPT;

/*
 * Adds fps[0..n) at once (much cheaper than n adds), in k + 2 steps so that the caller can
 * check for interrupts between them: step = 0, 1, ..., k + 1 in order, each with the same
 * fps and n, and no other add between them (NearFilter::add_many_step). Until the last
 * step, or after a failure (out of memory, more than 2^31 - 1 members, a step out of
 * range: SIMHASH_INVALID_ARGUMENT), every member added before is still answered for and
 * some of fps[] may answer "maybe": a caller that needs them all frees the filter.
 */
simhash_status simhash_near_filter_add_many_step(simhash_near_filter *filter, const uint64_t *fps,
                                                 size_t n, int32_t step, char *errbuf,
                                                 size_t errcap) SIMHASH_NOEXCEPT;

/* 0 only when no member lies within k bits of fp; 1 when one may (or does). */
int simhash_near_filter_may_have(const simhash_near_filter *filter, uint64_t fp) SIMHASH_NOEXCEPT;

/* Bytes the filter holds, and its members. */
size_t simhash_near_filter_bytes(const simhash_near_filter *filter) SIMHASH_NOEXCEPT;
size_t simhash_near_filter_size(const simhash_near_filter *filter) SIMHASH_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* SIMHASH_NEAR_FILTER_CAPI_H */
