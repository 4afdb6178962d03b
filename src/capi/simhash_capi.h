/*
 * The C ABI between the C++ core and the PostgreSQL glue.
 *
 * Rules on both sides of this line:
 *  - every function is noexcept: no C++ exception ever leaves it; failures come back as a
 *    status code plus a message written into a buffer the caller owns (always
 *    NUL-terminated when errcap > 0, truncated to fit);
 *  - no heap memory crosses it: the caller owns every buffer and every state object;
 *  - nothing here calls back into PostgreSQL, so no PostgreSQL longjmp can cross C++ frames.
 *    The one call back is the caller's interrupt poll (simhash_interrupt), which must not
 *    longjmp either.
 */
#ifndef SIMHASH_CAPI_H
#define SIMHASH_CAPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define SIMHASH_NOEXCEPT noexcept
extern "C" {
#else
#define SIMHASH_NOEXCEPT
#endif

/* Bits of a fingerprint: the largest Hamming distance. */
#define SIMHASH_FINGERPRINT_BITS 64

typedef enum simhash_status {
  SIMHASH_OK = 0,
  SIMHASH_NO_FEATURES = 1,      /* the text has no token: there is no fingerprint (SQL NULL) */
  SIMHASH_INVALID_ARGUMENT = 2, /* a caller's mistake: SQLSTATE 22023 */
  SIMHASH_INTERNAL_ERROR = 3,   /* a bug: SQLSTATE XX000 */
  SIMHASH_OUT_OF_MEMORY = 4,    /* std::bad_alloc: SQLSTATE 53200 */
  SIMHASH_LIMIT_EXCEEDED = 5,   /* std::length_error, a documented limit: SQLSTATE 54000 */
  SIMHASH_INTERRUPTED = 6       /* the caller's interrupt poll said stop: the caller's cancel */
} simhash_status;

/*
 * An interrupt poll, passed to the calls that can run long whatever their input (shingling
 * a text of any length, sorting a large set): check(arg) returns non-zero to stop. It is
 * called on the calling thread only, about every 64 kB of text or 64 K values (a few hundred
 * microseconds apart), and must return quickly: no longjmp, no C++ exception, nothing that
 * can raise an error. When it says stop, the call returns SIMHASH_INTERRUPTED (the caller
 * then raises its cancel), and the state it was working on is only to be freed. A NULL poll
 * or check never stops.
 */
typedef struct simhash_interrupt {
  int (*check)(void *arg);
  void *arg;
} simhash_interrupt;

typedef struct simhash_options {
  int32_t shingle;     /* tokens per feature */
  int32_t cjk_bigrams; /* non-zero: neighbouring characters of unspaced scripts pair up */
} simhash_options;

/* Room for the core's streaming state; aligned for any scalar. */
#define SIMHASH_STATE_WORDS 1024
typedef struct simhash_state {
  uint64_t words[SIMHASH_STATE_WORDS];
} simhash_state;

/* The defaults of simhash(text). */
void simhash_default_options(simhash_options *options) SIMHASH_NOEXCEPT;

/* Starts a fingerprint of a text in *state. */
simhash_status simhash_begin(simhash_state *state, const simhash_options *options, char *errbuf,
                             size_t errcap) SIMHASH_NOEXCEPT;

/* Feeds the next chunk of UTF-8 text; chunks may be cut anywhere. */
simhash_status simhash_feed(simhash_state *state, const char *data, size_t len, char *errbuf,
                            size_t errcap) SIMHASH_NOEXCEPT;

/* Ends the text: SIMHASH_OK with *fingerprint set, or SIMHASH_NO_FEATURES. */
simhash_status simhash_end(simhash_state *state, uint64_t *fingerprint, char *errbuf,
                           size_t errcap) SIMHASH_NOEXCEPT;

/* Number of differing bits of two fingerprints (0..64). */
int32_t simhash_hamming(uint64_t a, uint64_t b) SIMHASH_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* SIMHASH_CAPI_H */
