/*
 * Shingle sets of texts and their Jaccard similarity, for the glue (src/pg/similarity.c):
 * what simhash_jaccard() computes, reusable by the dedupe trigger.
 */
#ifndef SIMHASH_PG_SIMILARITY_H
#define SIMHASH_PG_SIMILARITY_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"

/* A shingle set: ascending, distinct hashes (palloc'd when made from a text). */
typedef struct SimhashShingleSet
{
	const uint64 *data;
	size_t		size;
} SimhashShingleSet;

/* The shingle set of a text (5 normalized characters a shingle). Cancellable. */
extern SimhashShingleSet simhash_text_shingles(text *body);
/* The shingle set of a function's text argument; its detoasted copy freed at once. */
extern SimhashShingleSet simhash_shingles_of_arg(FunctionCallInfo fcinfo, int argno);

/* |A ∩ B| / |A ∪ B|; false (undefined) when both sets are empty. */
extern bool simhash_shingle_jaccard(SimhashShingleSet a, SimhashShingleSet b, double *result);

/* verify.c: whether a stored text reaches a threshold with a set, at a bounded cost */
extern uint64 simhash_shingle_cap(uint64 na, double t);
extern bool simhash_text_reaches(Datum d, const text *a_body, SimhashShingleSet a, double t,
								 double *similarity, SimhashShingleSet *set_out);

/*
 * The MinHash LSH keys of a shingle set (SIMHASH_LSH_BANDS of them, none for an empty set)
 * into keys; returns their number.
 */
extern int	simhash_shingle_lsh_keys(SimhashShingleSet set, int64 *keys);
/* the same keys from a text, its shingles not sorted */
extern int	simhash_text_lsh_keys(text *body, int64 *keys);

/* values[0..n) as a bigint[] (empty for none): LSH keys, shingle sets. */
extern ArrayType *simhash_int8_array(const int64 *values, int n);

/*
 * How candidate pairs are found: pairs sharing a simhash_lsh key (lsh), or pairs within a
 * Hamming radius of the fingerprint simhash(body, tokenizer, n, 'binary').
 */
typedef struct SimhashRecipe
{
	bool		lsh;			/* keys of char 5-shingles; the rest is unused */
	int32		tokenizer;		/* SIMHASH_TOKENIZER_* */
	int32		n;
	int32		max_distance;
} SimhashRecipe;

/* Raises 22023 unless 0 < t <= 1: the thresholds of the verified all-pairs functions. */
extern void simhash_check_min_similarity(double t);

/* At most this many recipes for one threshold. */
#define SIMHASH_MAX_RECIPES 2

/*
 * The candidate recipes for a similarity threshold t, 0 < t <= 1 (22023 otherwise), from
 * the core's calibration table (the one the verified all-pairs engine uses): 1 or 2 of
 * them into recipes[0..SIMHASH_MAX_RECIPES); returns how many.
 */
extern int	simhash_similar_recipes_for(double t, SimhashRecipe *recipes);


/*
 * The verified all-pairs engine (src/core/similar_pairs.hpp) as simhash_similar_pairs()
 * runs it (similar_pairs.c: in memory within work_mem, then in temporary files), for
 * other callers: rows added one at a time, then every pair drained.
 */
#include "capi/similar_pairs_capi.h"

typedef struct SimilarRun SimilarRun;

/*
 * A run for pairs at or above t (22023 unless 0 < t <= 1) holding up to limit bytes of
 * shingle sets in memory (then temporary files: the setting limit_name says so); fname
 * names it in messages.
 */
extern SimilarRun *similar_run_begin(const char *fname, double t, Size limit,
									 const char *limit_name);
/* A row: a unique id and its text (read during the call). */
extern void similar_run_add(SimilarRun *run, int64 id, text *t);
/* After the last row. */
extern void similar_run_added(SimilarRun *run);
/* Up to cap pairs into out (*count); true once every pair has been handed out. */
extern bool similar_run_next(SimilarRun *run, simhash_similar_pair *out, size_t cap,
							 size_t *count);
/* Frees the run (its files, its memory). */
extern void similar_run_end(SimilarRun *run);

#endif							/* SIMHASH_PG_SIMILARITY_H */
