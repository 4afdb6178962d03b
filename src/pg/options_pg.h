/*
 * Shared declarations of the glue of fingerprint options (options.c, tsvector.c, idf.c,
 * features.c): UTF-8 conversion and running a simhash_text_state (src/capi/text_options_capi.h)
 * over a text with a palloc'd, growing feature buffer and interrupt checks.
 */
#ifndef SIMHASH_OPTIONS_PG_H
#define SIMHASH_OPTIONS_PG_H

#include "postgres.h"

#include "capi/text_options_capi.h"
#include "pg/simhash_pg.h"

/*
 * A feature buffer in CurrentMemoryContext. It grows (repalloc_huge) when the core's feed
 * limit gets small; at any time it holds at most the features collected so far plus the
 * room for the next chunk (18 features per byte in the worst case, see
 * core/text_options.hpp) and a small slack.
 */
typedef struct SimhashFeatureBuffer
{
	uint64	   *data;
	size_t		capacity;
} SimhashFeatureBuffer;


/* Tokenizer and weighting codes from SQL text arguments (22023 naming the allowed values). */
extern int32 simhash_tokenizer_arg(text *name);
extern int32 simhash_weighting_arg(text *name);

/* Starts *state with the options (22023 for invalid ones). */
extern void simhash_pg_text_begin(simhash_text_state *state, const simhash_text_options *options,
							   bool collect, SimhashFeatureBuffer *buffer);

/* Feeds UTF-8 text in bounded chunks, growing the buffer, with interrupt checks. */
extern void simhash_pg_text_feed(simhash_text_state *state, SimhashFeatureBuffer *buffer,
								  const char *data, size_t len);

/*
 * Makes room in the buffer for the end of the text plus `features` more features: call it
 * with 0 before simhash_text_distinct() (simhash_pg_text_end() does it), and with len + 2 before
 * adding a ready-made token of len bytes.
 */
extern void simhash_text_reserve(simhash_text_state *state, SimhashFeatureBuffer *buffer,
								 size_t features);

/*
 * Ends the text and frees the buffer: true with *fingerprint set, false when it has fewer
 * features than min_features. df/df_size/docs are the document frequencies of the IDF
 * weighting (NULL/0/0 otherwise).
 */
extern bool simhash_pg_text_end(simhash_text_state *state, SimhashFeatureBuffer *buffer,
								const simhash_df_entry *df, size_t df_size, int64 docs,
								uint64 *fingerprint);

/*
 * The fingerprint of a text (any database encoding) with the options: true with
 * *fingerprint set, false below min_features features. Cancellable.
 */
extern bool simhash_text_fingerprint(text *body, const simhash_text_options *options,
									 uint64 *fingerprint);

/*
 * The distinct features of a text with the options (a collecting run), ascending as
 * unsigned values, into *features (palloc'd) and, unless counts is NULL, their numbers of
 * occurrences into *counts (palloc'd); returns how many there are. Cancellable.
 */
extern size_t simhash_distinct_features(text *body, const simhash_text_options *options,
										uint64 **features, uint64 **counts);

#endif							/* SIMHASH_OPTIONS_PG_H */
