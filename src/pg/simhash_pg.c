/*
 * PostgreSQL glue: SQL-callable functions over the C ABI (src/capi/simhash_capi.h).
 *
 * Written in C so that no PostgreSQL error (a longjmp) can ever skip a C++ destructor: the
 * C++ core is only reached through noexcept C functions that return a status, and errors
 * are raised here, after those calls have returned.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/tuplestore.h"

#include "pg/simhash_pg.h"

PG_MODULE_MAGIC;

int			simhash_max_threads = 4;
double		simhash_similarity_threshold = 0.8;

void		_PG_init(void);

/* The extension's settings. */
void
_PG_init(void)
{
	DefineCustomIntVariable("simhash.max_threads",
							"Threads one call of simhash_similar_pairs or simhash_similar_clusters may use.",
							"The calling backend counts as one; a call also uses at most 1 + max_parallel_workers_per_gather "
							"and at most the machine's cores. Only superusers may change it.",
							&simhash_max_threads, 4, 1, 64, PGC_SUSET, 0, NULL, NULL, NULL);
	DefineCustomRealVariable("simhash.similarity_threshold",
							 "Threshold of the similarity operator %~ (simhash_jaccard of two texts).",
							 "body %~ q is true when simhash_jaccard(body, q) >= this value. A GIN index with "
							 "simhash_ops serves thresholds from 0.7 on through its LSH keys; below 0.7 it reads "
							 "the whole index (the answer stays exact).",
							 &simhash_similarity_threshold, 0.8, 0.0, 1.0, PGC_USERSET, 0,
							 NULL, NULL, NULL);
#if PG_VERSION_NUM >= 150000
	MarkGUCPrefixReserved("simhash");
#else
	EmitWarningsOnPlaceholders("simhash");
#endif
}

#if PG_VERSION_NUM < 150001 || defined(SIMHASH_FORCE_FALLBACKS)
/*
 * What InitMaterializedSRF(fcinfo, 0) does from PostgreSQL 15.1 on (compat.h): checks that
 * the caller accepts a materialized result, and sets an empty tuplestore and the function's
 * result descriptor, both made in the query's memory, in fcinfo->resultinfo.
 */
void
simhash_init_materialized_srf(FunctionCallInfo fcinfo)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	TupleDesc	tupdesc;
	MemoryContext old;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-valued function called in context that cannot accept a set")));
	if (!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("materialize mode required, but it is not allowed in this context")));
	old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = tuplestore_begin_heap((rsinfo->allowedModes & SFRM_Materialize_Random) != 0,
											  false, work_mem);
	rsinfo->setDesc = tupdesc;
	MemoryContextSwitchTo(old);
}
#endif

/*
 * What ProcessInterrupts() would act on now: a terminate, or a cancel not held off. (Read
 * only: the flags stay set for CHECK_FOR_INTERRUPTS() to act on.)
 */
static int
interrupt_pending(void *arg)
{
	return InterruptPending && InterruptHoldoffCount == 0 && CritSectionCount == 0 &&
		(ProcDiePending || (QueryCancelPending && QueryCancelHoldoffCount == 0));
}

const simhash_interrupt simhash_pg_interrupt = {interrupt_pending, NULL};

void
simhash_raise_status(simhash_status status, const char *message)
{
	if (status == SIMHASH_INTERRUPTED)
	{
		/* the cancel (statement timeout, pg_cancel_backend) or terminate the poll saw */
		CHECK_FOR_INTERRUPTS();
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("canceling statement due to user request")));
	}
	if (status == SIMHASH_INVALID_ARGUMENT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash: %s", message)));
	if (status == SIMHASH_OUT_OF_MEMORY)
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("simhash: out of memory")));
	if (status == SIMHASH_LIMIT_EXCEEDED)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("simhash: %s", message)));
	ereport(ERROR,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg("simhash: internal error: %s", message)));
}

/*
 * Fingerprints UTF-8 text in chunks; returns false when the text has no token.
 * CHECK_FOR_INTERRUPTS runs between chunks, outside any C++ frame, so statement_timeout
 * and cancel requests stop long inputs.
 */
static bool
fingerprint_utf8(const char *data, size_t len, const simhash_options *options, uint64 *result)
{
	simhash_state state;
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	simhash_status status;
	size_t		done = 0;

	status = simhash_begin(&state, options, errbuf, sizeof(errbuf));
	if (status != SIMHASH_OK)
		simhash_raise_status(status, errbuf);
	while (done < len)
	{
		size_t		n = Min(len - done, (size_t) SIMHASH_CHUNK_BYTES);

		status = simhash_feed(&state, data + done, n, errbuf, sizeof(errbuf));
		if (status != SIMHASH_OK)
			simhash_raise_status(status, errbuf);
		done += n;
		CHECK_FOR_INTERRUPTS();
	}
	status = simhash_end(&state, result, errbuf, sizeof(errbuf));
	if (status == SIMHASH_NO_FEATURES)
		return false;
	if (status != SIMHASH_OK)
		simhash_raise_status(status, errbuf);
	return true;
}

/*
 * Converts from the database encoding to UTF-8 when they differ, so the same text gives
 * the same fingerprint in every database. Under SQL_ASCII the bytes are taken as UTF-8
 * (invalid sequences separate tokens).
 */
const char *
simhash_bytes_utf8(const char *data, int n, size_t *len)
{
	int			encoding = GetDatabaseEncoding();

	if (encoding != PG_UTF8 && encoding != PG_SQL_ASCII)
	{
		const char *utf8 = pg_server_to_any(data, n, PG_UTF8);

		if (utf8 != data)
			n = strlen(utf8);
		data = utf8;
	}
	*len = (size_t) n;
	return data;
}

const char *
simhash_text_utf8(text *t, size_t *len)
{
	return simhash_bytes_utf8(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), len);
}

bool
simhash_fingerprint_text(text *t, const simhash_options *options, uint64 *result)
{
	size_t		len;
	const char *data = simhash_text_utf8(t, &len);

	return fingerprint_utf8(data, len, options, result);
}

PG_FUNCTION_INFO_V1(simhash_text);

/* simhash(text) -> bigint: the default fingerprint, NULL when the text has no token. */
Datum
simhash_text(PG_FUNCTION_ARGS)
{
	text	   *t = PG_GETARG_TEXT_PP(0);
	simhash_options options;
	uint64		fp;

	simhash_default_options(&options);
	if (!simhash_fingerprint_text(t, &options, &fp))
		PG_RETURN_NULL();
	/* The unsigned fingerprint's bits, reinterpreted as a two's complement bigint. */
	PG_RETURN_INT64((int64) fp);
}

PG_FUNCTION_INFO_V1(simhash_hamming_int8);

/* hamming(bigint, bigint) -> integer: number of differing bits, 0..64. */
Datum
simhash_hamming_int8(PG_FUNCTION_ARGS)
{
	uint64		a = (uint64) PG_GETARG_INT64(0);
	uint64		b = (uint64) PG_GETARG_INT64(1);

	PG_RETURN_INT32(simhash_hamming(a, b));
}
