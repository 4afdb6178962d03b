/*
 * The C ABI of fingerprint options, weights, document frequencies and conversions
 * (src/core/text_options.hpp, weighted.hpp, convert.hpp). Same rules as simhash_capi.h:
 * noexcept, status plus a message in the caller's buffer, no heap memory crossing, state in
 * caller-owned structs. Where the core collects features, it writes them into a buffer the
 * caller allocates (palloc) and may grow between calls.
 */
#ifndef SIMHASH_TEXT_OPTIONS_CAPI_H
#define SIMHASH_TEXT_OPTIONS_CAPI_H

#include <stddef.h>
#include <stdint.h>

#include "capi/simhash_capi.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { SIMHASH_TOKENIZER_WORD = 0, SIMHASH_TOKENIZER_CHAR = 1 };

enum {
  SIMHASH_WEIGHTING_TF = 0,
  SIMHASH_WEIGHTING_BINARY = 1,
  SIMHASH_WEIGHTING_LOG = 2,
  SIMHASH_WEIGHTING_IDF = 3
};

typedef struct simhash_text_options {
  int32_t tokenizer;    /* SIMHASH_TOKENIZER_* */
  int32_t n;            /* tokens per feature, 1..8; 0: the tokenizer's default */
  int32_t weighting;    /* SIMHASH_WEIGHTING_* */
  int32_t min_features; /* fewer features: SIMHASH_NO_FEATURES */
} simhash_text_options;

/* Options from their SQL names; SIMHASH_INVALID_ARGUMENT names the allowed values. */
simhash_status simhash_parse_tokenizer(const char *name, size_t len, int32_t *tokenizer,
                                       char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;
/* 'tf', 'binary', 'log'; also 'idf' when allow_idf is non-zero. */
simhash_status simhash_parse_weighting(const char *name, size_t len, int32_t allow_idf,
                                       int32_t *weighting, char *errbuf,
                                       size_t errcap) SIMHASH_NOEXCEPT;

/* Room for the streaming state of a fingerprint with options. */
#define SIMHASH_TEXT_STATE_WORDS 1024
typedef struct simhash_text_state {
  uint64_t words[SIMHASH_TEXT_STATE_WORDS];
} simhash_text_state;

/*
 * Starts a fingerprint of a text with options. collect non-zero: keep the features for
 * simhash_text_distinct() (otherwise the default options need no buffer).
 */
simhash_status simhash_text_begin(simhash_text_state *state, const simhash_text_options *options,
                                  int32_t collect, char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/*
 * The feature buffer. simhash_text_feed_limit() is how many bytes may be fed now (SIZE_MAX
 * when no buffer is needed); simhash_text_capacity_for(bytes) is the capacity that lets
 * `bytes` more bytes in; simhash_text_set_buffer() hands over a (larger) buffer holding
 * the simhash_text_size() features collected so far.
 */
size_t simhash_text_feed_limit(const simhash_text_state *state) SIMHASH_NOEXCEPT;
size_t simhash_text_capacity_for(const simhash_text_state *state, size_t bytes) SIMHASH_NOEXCEPT;
size_t simhash_text_size(const simhash_text_state *state) SIMHASH_NOEXCEPT;
simhash_status simhash_text_set_buffer(simhash_text_state *state, uint64_t *buffer, size_t capacity,
                                       char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/* Feeds the next chunk of UTF-8 text (at most the feed limit). */
simhash_status simhash_text_feed(simhash_text_state *state, const char *data, size_t len,
                                 char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/* Adds one ready-made UTF-8 token, hashed as it is; needs room for len + 2 features. */
simhash_status simhash_text_token(simhash_text_state *state, const char *data, size_t len,
                                  char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/*
 * Document frequencies: a feature (the bits of SQL's bigint) and the number of documents
 * it occurs in (SQL's bigint df, which must be >= 1).
 */
typedef struct simhash_df_entry {
  uint64_t feature;
  uint64_t df;
} simhash_df_entry;

/*
 * Sorts entries in place and checks them (every feature once, 1 <= df <= docs);
 * SIMHASH_INVALID_ARGUMENT says what is wrong.
 */
simhash_status simhash_df_prepare(simhash_df_entry *entries, size_t size, int64_t docs,
                                  char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/*
 * Ends the text: SIMHASH_OK with *fingerprint set, or SIMHASH_NO_FEATURES when it has fewer
 * features than min_features. The IDF weighting reads df (prepared entries), which must
 * stay valid during the call; the others ignore it (may be NULL).
 */
simhash_status simhash_text_end(simhash_text_state *state, const simhash_df_entry *df,
                                size_t df_size, int64_t docs, uint64_t *fingerprint,
                                uint64_t *features, char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/*
 * Ends the text of a collecting state and leaves its distinct features, ascending as
 * unsigned values, in the first *distinct entries of the buffer, with their numbers of
 * occurrences in counts (room for as many entries as the buffer has; counts NULL with
 * counts_cap 0: no numbers). Sorts first unless simhash_text_sort() has finished.
 */
simhash_status simhash_text_distinct(simhash_text_state *state, uint64_t *counts, size_t counts_cap,
                                     size_t *distinct, char *errbuf,
                                     size_t errcap) SIMHASH_NOEXCEPT;

/*
 * Ends the text of a collecting state and leaves its features, unsorted, repeats included,
 * in the first *size entries of the buffer (for an order-blind consumer: the LSH keys).
 */
simhash_status simhash_text_collected(simhash_text_state *state, size_t *size, char *errbuf,
                                      size_t errcap) SIMHASH_NOEXCEPT;

/*
 * Forgets the features collected so far (after an order-blind consumer took the
 * simhash_text_size() of them at the start of the buffer); the next feed starts the buffer
 * again. Before the end of the text only.
 */
simhash_status simhash_text_drain(simhash_text_state *state, char *errbuf,
                                  size_t errcap) SIMHASH_NOEXCEPT;

/* Room for a sort in slices (simhash::SlicedSort, src/core/weighted.hpp). */
#define SIMHASH_SORT_STATE_WORDS 2400
typedef struct simhash_sort_state {
  uint64_t words[SIMHASH_SORT_STATE_WORDS];
} simhash_sort_state;

/*
 * Ends the text of a collecting state and sorts its features for about `work` units (a
 * feature counted or moved is one; ~10 ns each on 64 million features): *finished = 1
 * once they are sorted, after which simhash_text_end() and simhash_text_distinct() do not
 * sort them again. Call it until finished with the same sort state (the first call starts
 * it; it needs no initialization), and check for interrupts between calls: a text of tens
 * of millions of features takes seconds to sort. The feature buffer must not move meanwhile.
 */
simhash_status simhash_text_sort(simhash_text_state *state, simhash_sort_state *sort, size_t work,
                                 int32_t *finished, char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/* Caller-supplied features with weights. */
#define SIMHASH_FEATURES_STATE_WORDS 80
typedef struct simhash_features_state {
  uint64_t words[SIMHASH_FEATURES_STATE_WORDS];
} simhash_features_state;

/*
 * Checks weights (finite, >= 0; SIMHASH_INVALID_ARGUMENT names the 1-based position of the
 * first bad one) and returns the largest in *max_weight.
 */
simhash_status simhash_weights_check(const double *weights, size_t n, double *max_weight,
                                     char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;
simhash_status simhash_features_begin(simhash_features_state *state, double max_weight,
                                      char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;
/* One feature, hashed as given (UTF-8 bytes), with its weight (0: left out). */
simhash_status simhash_features_add(simhash_features_state *state, const char *data, size_t len,
                                    double weight, char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;
/* SIMHASH_OK with *fingerprint, or SIMHASH_NO_FEATURES below min_features. */
simhash_status simhash_features_end(simhash_features_state *state, int32_t min_features,
                                    uint64_t *fingerprint, char *errbuf,
                                    size_t errcap) SIMHASH_NOEXCEPT;

/* Conversions. */
typedef enum simhash_parse_result {
  SIMHASH_PARSE_OK = 0,
  SIMHASH_PARSE_INVALID = 1,     /* not of the expected form: SQLSTATE 22P02 */
  SIMHASH_PARSE_OUT_OF_RANGE = 2 /* a number but not an integer in [0, 2^64): 22003 */
} simhash_parse_result;

/* Writes 16 lower-case hex digits (zero-padded, no NUL). */
void simhash_format_hex(uint64_t value, char *out16) SIMHASH_NOEXCEPT;
/* 1 to 16 hex digits, optionally after 0x. */
simhash_parse_result simhash_parse_hex(const char *s, size_t len, uint64_t *value) SIMHASH_NOEXCEPT;
/* Writes the unsigned decimal digits (1 to 20, no NUL); returns their number. */
size_t simhash_format_decimal(uint64_t value, char *out20) SIMHASH_NOEXCEPT;
/* A numeric's text (numeric_out) as an integer in [0, 2^64). */
simhash_parse_result simhash_parse_decimal(const char *s, size_t len,
                                           uint64_t *value) SIMHASH_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* SIMHASH_TEXT_OPTIONS_CAPI_H */
