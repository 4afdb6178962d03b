/*
 * Shingle sets of texts and their Jaccard similarity, for the glue (src/pg/similarity.c):
 * what simhash_jaccard() computes, reusable by the dedupe trigger.
 */
#ifndef SIMHASH_PG_SIMILARITY_H
#define SIMHASH_PG_SIMILARITY_H

#include "postgres.h"

/* A shingle set: ascending, distinct hashes (palloc'd when made from a text). */
typedef struct SimhashShingleSet
{
	const uint64 *data;
	size_t		size;
} SimhashShingleSet;

/* The shingle set of a text (5 normalized characters a shingle). Cancellable. */
extern SimhashShingleSet simhash_text_shingles(text *body);

/* |A ∩ B| / |A ∪ B|; false (undefined) when both sets are empty. */
extern bool simhash_shingle_jaccard(SimhashShingleSet a, SimhashShingleSet b, double *result);

#endif							/* SIMHASH_PG_SIMILARITY_H */
