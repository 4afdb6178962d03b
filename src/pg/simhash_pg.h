/*
 * Shared declarations of the PostgreSQL glue (the C files in src/pg). Each feature has its own file;
 * they all reach the C++ core only through the C ABI (src/capi), and raise PostgreSQL
 * errors only after a C ABI call has returned.
 */
#ifndef SIMHASH_PG_H
#define SIMHASH_PG_H

#include "postgres.h"

#include "pg/compat.h"

#include "capi/simhash_capi.h"

/* Text is fed to the core in chunks of this size, with an interrupt check between them. */
#define SIMHASH_CHUNK_BYTES (1024 * 1024)

/* Room for a C ABI error message. */
#define SIMHASH_ERRBUF_SIZE 256

/*
 * Raises the PostgreSQL error matching a failed C ABI call: SIMHASH_INVALID_ARGUMENT
 * becomes SQLSTATE 22023 (invalid_parameter_value), SIMHASH_OUT_OF_MEMORY 53200,
 * SIMHASH_LIMIT_EXCEEDED 54000, SIMHASH_INTERRUPTED the pending cancel or terminate itself
 * (CHECK_FOR_INTERRUPTS(); 57014 if that returns), anything else XX000 (internal_error).
 */
SIMHASH_NORETURN extern void simhash_raise_status(simhash_status status, const char *message);

/*
 * The bytes of a text value in UTF-8 (converted from the database encoding when that is
 * neither UTF-8 nor SQL_ASCII, whose bytes are taken as UTF-8), and their number.
 */
extern const char *simhash_text_utf8(text *t, size_t *len);

/* The same for n bytes in the database encoding (a lexeme, say). */
extern const char *simhash_bytes_utf8(const char *data, int n, size_t *len);

/*
 * The interrupt poll the glue passes to the C ABI calls that can run long whatever their
 * input (the core asks it every 64 kB of text or 64 K values, on the calling thread): it
 * says stop when CHECK_FOR_INTERRUPTS() would cancel the query or end the backend, reading
 * only the flags the signal handlers set (it never longjmps). The call then returns
 * SIMHASH_INTERRUPTED, which simhash_raise_status() turns into that cancel, outside any C++
 * frame.
 */
extern const simhash_interrupt simhash_pg_interrupt;

/* Raises the error of a failed C ABI call; does nothing for SIMHASH_OK. */
static inline void
simhash_check_status(simhash_status status, const char *errbuf)
{
	if (status != SIMHASH_OK)
		simhash_raise_status(status, errbuf);
}

/*
 * Fingerprint of a text value (any database encoding) with the given options; false when
 * the text has no feature (SQL NULL). Cancellable between 1 MB chunks.
 */
extern bool simhash_fingerprint_text(text *t, const simhash_options *options, uint64 *result);

/* simhash.max_threads: threads one call of the verified all-pairs functions may use. */
extern int	simhash_max_threads;

/*
 * simhash.similarity_threshold: the threshold of the operator %~ (src/pg/similarity_ops.c).
 * Functions that read it are STABLE.
 */
extern double simhash_similarity_threshold;

/* The one strategy of the GIN operator class simhash_ops: %~. */
#define SIMHASH_SIMILAR_STRATEGY 1

#endif							/* SIMHASH_PG_H */
