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

/* A candidate fingerprint, simhash(body, tokenizer, n, 'binary'), and its Hamming radius. */
typedef struct SimhashRecipe
{
	int32		tokenizer;		/* SIMHASH_TOKENIZER_* */
	int32		n;
	int32		max_distance;
} SimhashRecipe;

/*
 * The candidate recipes for a similarity threshold t, 0 < t <= 1 (22023 otherwise): the one
 * calibration table, used by simhash_similar_recipes() and so by the SQL functions, and by
 * the dedupe trigger. Returns how many (1 or 2) and points *recipes at them.
 */
extern int	simhash_similar_recipes_for(double t, const SimhashRecipe **recipes);

#endif							/* SIMHASH_PG_SIMILARITY_H */
