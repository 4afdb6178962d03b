/*
 * The C ABI of simhash::SetIndex (src/core/set_index.hpp): the shingle sets of a table in
 * memory, found by their LSH band keys, for the dedupe trigger's table index. Rules of
 * simhash_capi.h (noexcept, a status plus a message in the caller's buffer); like the near
 * filter, it lives on the C++ heap behind an opaque handle that the caller frees with
 * simhash_set_index_free() exactly once, also when an error unwinds it. After a failed
 * add (out of memory), the index is only to be freed.
 */
#ifndef SIMHASH_SET_INDEX_CAPI_H
#define SIMHASH_SET_INDEX_CAPI_H

#include <stddef.h>
#include <stdint.h>

#include "capi/simhash_capi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct simhash_set_index simhash_set_index;

/* A query's answer. */
typedef enum simhash_set_answer
{
	SIMHASH_SET_NONE = 0,		/* no row at or above the threshold */
	SIMHASH_SET_FOUND = 1,		/* *tag, *original, *similarity say which */
	SIMHASH_SET_UNKNOWN = 2		/* a row added without its set might decide: ask the table */
} simhash_set_answer;

/* The size of a row added without knowing it (simhash_set_index_add). */
#define SIMHASH_SET_UNKNOWN_SIZE ((size_t) -1)

simhash_status simhash_set_index_create(simhash_set_index **index, char *errbuf,
                                        size_t errcap) SIMHASH_NOEXCEPT;

void simhash_set_index_free(simhash_set_index *index) SIMHASH_NOEXCEPT;

/*
 * Adds a row: its SIMHASH_LSH_BANDS band keys, its shingle set set[0..n) (ascending,
 * distinct) or NULL (not held: n its size, or SIMHASH_SET_UNKNOWN_SIZE), its tag, and
 * whether it is an original (policy link). The set is held only while the index's bytes
 * stay within three quarters of budget with it; SIMHASH_LIMIT_EXCEEDED, nothing added, when
 * they could pass budget while it is added (SetIndex::try_add).
 */
simhash_status simhash_set_index_add(simhash_set_index *index, const int64_t *keys,
                                     const uint64_t *set, size_t n, int64_t tag, int original,
                                     size_t budget, char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/*
 * The rows sharing a key (in its band) with keys[0..SIMHASH_LSH_BANDS) at least threshold
 * similar to set[0..n): best = 0, any of them; best = 1, the one policy link picks
 * (originals first, then the most similar, then the smallest tag).
 */
simhash_set_answer simhash_set_index_find(simhash_set_index *index, const int64_t *keys,
                                          const uint64_t *set, size_t n, double threshold,
                                          int best, int64_t *tag, int *original,
                                          double *similarity) SIMHASH_NOEXCEPT;

/* Bytes held, rows added, and rows held with their sets. */
size_t simhash_set_index_bytes(const simhash_set_index *index) SIMHASH_NOEXCEPT;
size_t simhash_set_index_rows(const simhash_set_index *index) SIMHASH_NOEXCEPT;
size_t simhash_set_index_held(const simhash_set_index *index) SIMHASH_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* SIMHASH_SET_INDEX_CAPI_H */
