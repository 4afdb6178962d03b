/*
 * simhash_similar_pairs(query, min_similarity) and simhash_similar_clusters(query,
 * min_similarity): every pair of the (id, body) rows of a query whose shingle sets have a
 * Jaccard similarity of at least min_similarity, and the connected components of those
 * pairs. The work is the C++ engine's (src/core/similar_pairs.hpp) through the C ABI of
 * src/capi/similar_pairs_capi.h; this file feeds it and drains it.
 *
 *  1. The query runs once, through an SPI cursor read a batch at a time. The rows' types
 *     are checked; rows with a NULL body are skipped, a NULL id is an error. Each batch of
 *     texts goes to the engine, which shingles them on its threads (1 +
 *     max_parallel_workers_per_gather, at most the machine's cores) and keeps one shingle
 *     set per distinct text.
 *  2. Ids must be unique (checked by the engine once every row is in).
 *  3. The engine finds candidates (MinHash LSH band runs, or the fingerprint recipes below
 *     0.7) and verifies them exactly, about VERIFY_WORK candidates a call; pairs go
 *     straight into the result (a tuplestore, which spills per work_mem itself), clusters
 *     through the engine's union-find.
 *
 * Memory: the engine holds the shingle sets of the distinct texts (8 bytes a shingle, about
 * 8 bytes a character of text) and 160 bytes of keys a distinct text. When that outgrows
 * work_mem, the engine is freed, the rest of the rows are read, and the disk-based path
 * (simhash_similar_pairs_disk: the same answers, through temporary tables, about 6 times
 * slower, measured at 64,000 rows) goes on, after a NOTICE, from every row read: each row
 * is also kept as it is read (a tuplestore: 1 MB in memory, the rest in a temporary file),
 * so the query runs once and is never parsed again. Raise work_mem to keep large inputs in
 * memory. In a read-only transaction (or on a hot standby), where temporary tables cannot
 * be made, that is an error (25006) with that hint instead.
 *
 * Interrupts are checked between the engine's calls (a batch of rows, a batch of
 * candidates), never inside them. The engine's memory is C++ heap, freed by a reset
 * callback of the memory context of the call, so an error (or a cancel) between calls
 * frees it too.
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "optimizer/cost.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "utils/builtins.h"
#include "utils/plancache.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "capi/similar_pairs_capi.h"
#include "pg/simhash_pg.h"
#include "pg/similarity.h"

/* Rows fetched from the cursor at a time, and text bytes handed to the engine at most. */
#define FETCH_ROWS 2000
#define BATCH_BYTES (2 * 1024 * 1024)
/*
 * The engine's work per call: steps through runs of equal keys and shingles merged (a few
 * milliseconds on one thread); pairs per call.
 */
#define VERIFY_WORK (1 << 22)
#define PAIRS_BATCH 4096
/*
 * What a batch of texts may add to the engine's memory, at most, a byte of text: its
 * shingle set (8 bytes a character at most, fewer for multi-byte characters and repeats)
 * and, while it is shingled, the features collected (8 more).
 */
#define BYTES_PER_TEXT_BYTE 16
/* A NOTICE at most this often while a call runs (the first one after this long). */
#define PROGRESS_INTERVAL_MS 5000

typedef struct SimilarRun
{
	const char *fname;
	bool		clusters;
	double		min_similarity;
	simhash_similar *engine;
	MemoryContext cxt;			/* the run's memory; its reset frees the engine */
	MemoryContext batch_cxt;	/* one batch of texts */
	Size		limit;			/* bytes the engine may hold: work_mem */
	bool		over_limit;

	/*
	 * Every row read, (id, body as text), for the disk-based path should the engine
	 * outgrow work_mem: the query runs once, whatever the path. A tuplestore of 1 MB in
	 * memory, the rest in a temporary file.
	 */
	Tuplestorestate *captured;
	TupleDesc	captured_desc;
	MemoryContext row_cxt;		/* one captured row's copy */

	/* Progress. */
	TimestampTz start;
	TimestampTz last_report;
	uint64		rows_read;
	uint64		results;

	/* The batch being collected. */
	int64	   *ids;
	const char **texts;
	size_t	   *lens;
	int			nbatch;
	Size		batch_bytes;
} SimilarRun;

/* A NOTICE on how far the call is, when the last one is PROGRESS_INTERVAL_MS old. */
static void
report_progress(SimilarRun *run)
{
	TimestampTz now = GetCurrentTimestamp();
	int32		stage;
	int32		stages;
	uint64		verified;

	if (!TimestampDifferenceExceeds(run->last_report, now, PROGRESS_INTERVAL_MS))
		return;
	run->last_report = now;
	simhash_similar_progress(run->engine, &stage, &stages, &verified);
	if (verified == 0 && run->results == 0)
		ereport(NOTICE,
				(errmsg("%s: %llu rows read after %.0f s", run->fname,
						(unsigned long long) run->rows_read,
						(double) (now - run->start) / 1000000.0)));
	else
		ereport(NOTICE,
				(errmsg("%s: candidates of band %d of %d after %.0f s, %llu candidates verified, %llu %s so far",
						run->fname, Min(stage + 1, stages), stages,
						(double) (now - run->start) / 1000000.0,
						(unsigned long long) verified, (unsigned long long) run->results,
						run->clusters ? "rows" : "pairs")));
}

static void
free_engine(void *arg)
{
	SimilarRun *run = (SimilarRun *) arg;

	simhash_similar_free(run->engine);
	run->engine = NULL;
}

/* Hands the batch to the engine, then notes whether the engine outgrew work_mem. */
static void
flush_batch(SimilarRun *run)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	if (run->nbatch > 0)
	{
		simhash_check_status(simhash_similar_add(run->engine, run->ids, run->texts, run->lens,
											  run->nbatch, errbuf, sizeof(errbuf)), errbuf);
		run->nbatch = 0;
		run->batch_bytes = 0;
		MemoryContextReset(run->batch_cxt);
	}
	if (simhash_similar_memory(run->engine) > run->limit)
		run->over_limit = true;
	CHECK_FOR_INTERRUPTS();
	report_progress(run);
}

/* Checks the query's columns: (id bigint/integer/smallint, body text/varchar/char). */
static void
check_columns(TupleDesc desc)
{
	Oid			id_type;
	Oid			body_type;

	if (desc->natts < 2)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
				 errmsg("simhash: the query must return two columns (id, body), not %d", desc->natts)));
	id_type = TupleDescAttr(desc, 0)->atttypid;
	body_type = TupleDescAttr(desc, 1)->atttypid;
	if (id_type != INT8OID && id_type != INT4OID && id_type != INT2OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("simhash: the first column of the query (id) must be bigint, integer or smallint, not %s",
						format_type_be(id_type))));
	if (body_type != TEXTOID && body_type != VARCHAROID && body_type != BPCHAROID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("simhash: the second column of the query (body) must be text, not %s",
						format_type_be(body_type))));
}

static int64
id_of(Datum d, Oid type)
{
	switch (type)
	{
		case INT2OID:
			return DatumGetInt16(d);
		case INT4OID:
			return DatumGetInt32(d);
		default:
			return DatumGetInt64(d);
	}
}

/* The row's body as text, detoasted once into the row's memory: char(n) without its padding. */
static text *
row_body(SimilarRun *run, Datum body, Oid body_type)
{
	MemoryContext old = MemoryContextSwitchTo(run->row_cxt);
	text	   *t = DatumGetTextPP(body);

	if (body_type == BPCHAROID)
	{
		int			bytes = VARSIZE_ANY_EXHDR(t);

		while (bytes > 0 && VARDATA_ANY(t)[bytes - 1] == ' ')
			bytes--;
		t = cstring_to_text_with_len(VARDATA_ANY(t), bytes);
	}
	MemoryContextSwitchTo(old);
	return t;
}

/* Adds one row to the batch: a copy of its text (from row_body), in UTF-8. */
static void
add_row(SimilarRun *run, int64 id, text *t)
{
	MemoryContext old;
	int			bytes = VARSIZE_ANY_EXHDR(t);
	const char *utf8;
	size_t		len;
	char	   *copy;

	/*
	 * A batch is handed over before it could take the engine past work_mem; a row that
	 * alone would ends the in-memory search before it is shingled.
	 */
	if (run->nbatch > 0 &&
		simhash_similar_memory(run->engine) + (run->batch_bytes + bytes) * BYTES_PER_TEXT_BYTE > run->limit)
		flush_batch(run);
	if (run->over_limit ||
		simhash_similar_memory(run->engine) + (Size) bytes * BYTES_PER_TEXT_BYTE > run->limit)
	{
		run->over_limit = true;
		return;
	}

	old = MemoryContextSwitchTo(run->batch_cxt);
	/* In UTF-8, converted from the database's encoding where that is another. */
	utf8 = simhash_bytes_utf8(VARDATA_ANY(t), bytes, &len);
	copy = palloc(len + 1);
	memcpy(copy, utf8, len);
	copy[len] = '\0';
	MemoryContextSwitchTo(old);
	run->ids[run->nbatch] = id;
	run->texts[run->nbatch] = copy;
	run->lens[run->nbatch] = len;
	run->nbatch++;
	run->batch_bytes += len;
	run->rows_read++;
	if (run->nbatch == FETCH_ROWS || run->batch_bytes >= BATCH_BYTES)
		flush_batch(run);
}

/*
 * The query must be one SELECT (VALUES, TABLE ...) without a data-modifying WITH: what
 * the functions are for, and what the disk-based path took as a subquery when it ran
 * the query itself.
 */
static void
check_query(SimilarRun *run, SPIPlanPtr plan)
{
	List	   *sources = SPI_plan_get_plan_sources(plan);
	bool		ok = list_length(sources) == 1;

	if (ok)
	{
		CachedPlanSource *source = linitial(sources);
		ListCell   *lc;

		ok = source->commandTag == CMDTAG_SELECT && list_length(source->query_list) == 1;
		foreach(lc, source->query_list)
		{
			Query	   *q = lfirst_node(Query, lc);

			ok = ok && q->commandType == CMD_SELECT && q->utilityStmt == NULL &&
				!q->hasModifyingCTE;
		}
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: the query must be one SELECT that returns rows (id, body) and changes nothing",
						run->fname)));
}

/* Keeps a row for the disk-based path: its id, and its body (from row_body, or NULL). */
static void
capture_row(SimilarRun *run, int64 id, text *body)
{
	Datum		values[2];
	bool		nulls[2] = {false, body == NULL};

	values[0] = Int64GetDatum(id);
	values[1] = PointerGetDatum(body);
	tuplestore_putvalues(run->captured, run->captured_desc, values, nulls);
}

/*
 * Runs the query through a cursor into the engine, keeping every row for the disk-based
 * path too. Returns false when the engine outgrew work_mem: it is then freed, and the
 * rest of the rows are only kept.
 */
static bool
read_query(SimilarRun *run, const char *query)
{
	SPIPlanPtr	plan;
	Portal		portal;
	bool		checked = false;
	Oid			id_type = InvalidOid;
	Oid			body_type = InvalidOid;

	plan = SPI_prepare_cursor(query, 0, NULL, 0);
	if (plan == NULL)
		elog(ERROR, "%s: SPI_prepare failed: %s", run->fname, SPI_result_code_string(SPI_result));
	check_query(run, plan);
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, false);
	for (;;)
	{
		uint64		n;

		SPI_cursor_fetch(portal, true, FETCH_ROWS);
		n = SPI_processed;
		if (!checked)
		{
			check_columns(SPI_tuptable->tupdesc);
			id_type = TupleDescAttr(SPI_tuptable->tupdesc, 0)->atttypid;
			body_type = TupleDescAttr(SPI_tuptable->tupdesc, 1)->atttypid;
			checked = true;
		}
		for (uint64 i = 0; i < n; i++)
		{
			HeapTuple	tuple = SPI_tuptable->vals[i];
			bool		id_null;
			bool		body_null;
			Datum		id = SPI_getbinval(tuple, SPI_tuptable->tupdesc, 1, &id_null);
			Datum		body = SPI_getbinval(tuple, SPI_tuptable->tupdesc, 2, &body_null);
			text	   *t;

			if (id_null)
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("simhash: the query returned a NULL id")));
			t = body_null ? NULL : row_body(run, body, body_type);
			capture_row(run, id_of(id, id_type), t);
			if (run->over_limit)
			{
				MemoryContextReset(run->row_cxt);
				continue;
			}
			if (t != NULL)
				add_row(run, id_of(id, id_type), t);
			else
			{
				/* Left out, but its id must still be unique. */
				char		errbuf[SIMHASH_ERRBUF_SIZE];

				simhash_check_status(simhash_similar_add_id(run->engine, id_of(id, id_type), errbuf,
															sizeof(errbuf)), errbuf);
			}
			MemoryContextReset(run->row_cxt);
			if (run->over_limit)
			{
				/* From here on the rows are only kept: give back the engine's memory. */
				free_engine(run);
				MemoryContextReset(run->batch_cxt);
				run->nbatch = 0;
				run->batch_bytes = 0;
			}
		}
		SPI_freetuptable(SPI_tuptable);
		if (n == 0)
			break;
		CHECK_FOR_INTERRUPTS();
	}
	SPI_cursor_close(portal);
	SPI_freeplan(plan);
	if (!run->over_limit)
		flush_batch(run);
	return !run->over_limit;
}

static void
check_ids(SimilarRun *run)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	int32		found;
	int64		duplicate;

	simhash_check_status(simhash_similar_duplicate_id(run->engine, &found, &duplicate, errbuf,
												   sizeof(errbuf)), errbuf);
	if (found)
		ereport(ERROR,
				(errcode(ERRCODE_CARDINALITY_VIOLATION),
				 errmsg("simhash: the query returned id " INT64_FORMAT " more than once", duplicate)));
}

/* One row of the result: (id1, id2, similarity) or (id, cluster_id, similarity). */
static void
put_result(ReturnSetInfo *rsinfo, int64 a, int64 b, double similarity)
{
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	values[0] = Int64GetDatum(a);
	values[1] = Int64GetDatum(b);
	values[2] = Float8GetDatum(similarity);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

static void
output_pairs(SimilarRun *run, ReturnSetInfo *rsinfo)
{
	simhash_similar_pair *buf = palloc(sizeof(simhash_similar_pair) * PAIRS_BATCH);
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	for (;;)
	{
		size_t		count;
		int32		finished;

		simhash_check_status(simhash_similar_next(run->engine, buf, PAIRS_BATCH, VERIFY_WORK, &count,
											   &finished, errbuf, sizeof(errbuf)), errbuf);
		for (size_t i = 0; i < count; i++)
			put_result(rsinfo, buf[i].id1, buf[i].id2, buf[i].similarity);
		run->results += count;
		if (finished)
			break;
		CHECK_FOR_INTERRUPTS();
		report_progress(run);
	}
	pfree(buf);
}

static void
output_clusters(SimilarRun *run, ReturnSetInfo *rsinfo)
{
	simhash_similar_cluster_row *buf = palloc(sizeof(simhash_similar_cluster_row) * PAIRS_BATCH);
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	int32		finished = 0;
	uint64		rows = 0;

	while (!finished)
	{
		simhash_check_status(simhash_similar_cluster_step(run->engine, VERIFY_WORK, &finished, &rows,
													   errbuf, sizeof(errbuf)), errbuf);
		CHECK_FOR_INTERRUPTS();
		report_progress(run);
	}
	for (uint64 first = 0; first < rows;)
	{
		size_t		count;

		simhash_check_status(simhash_similar_cluster_rows(run->engine, first, buf, PAIRS_BATCH, &count,
													   errbuf, sizeof(errbuf)), errbuf);
		for (size_t i = 0; i < count; i++)
			put_result(rsinfo, buf[i].id, buf[i].cluster_id, buf[i].similarity);
		first += count;
		if (count == 0)
			break;
		CHECK_FOR_INTERRUPTS();
	}
	pfree(buf);
}

/*
 * The engine outgrew work_mem: the rows kept go into a temporary table, and the disk-based
 * function of the extension's schema runs on that table (not on the caller's query, which
 * ran once and is not parsed again); its rows become ours. Its argument types are exactly
 * (text, double precision), so no other overload can be chosen (docs/security.md).
 */
static void
run_on_disk(SimilarRun *run, FunctionCallInfo fcinfo)
{
	static uint32 calls = 0;
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	Oid			types[2] = {TEXTOID, FLOAT8OID};
	Oid			insert_types[2] = {INT8OID, TEXTOID};
	Datum		args[2];
	const char *table;
	char	   *sql;
	SPIPlanPtr	plan;
	Portal		portal;
	TupleTableSlot *slot;
	uint64		rows = 0;

	if (XactReadOnly || RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("%s: the shingle sets outgrow work_mem (%d kB), and the disk-based path cannot run in a read-only transaction",
						run->fname, work_mem),
				 errdetail("The disk-based path makes temporary tables."),
				 errhint("Raise work_mem for the call, to about 16 bytes a byte of text: SET work_mem = '1GB'.")));
	ereport(NOTICE,
			(errmsg("%s: the shingle sets outgrew work_mem (%d kB): the rows go on through temporary tables",
					run->fname, work_mem),
			 errhint("Raise work_mem for the call to keep it in memory, about 6 times faster.")));

	/* The rows kept, into a temporary table of our own. */
	table = quote_identifier(psprintf("simhash_similar_input_%d_%u", MyProcPid, ++calls));
	if (SPI_execute(psprintf("CREATE TEMPORARY TABLE %s (id pg_catalog.int8, body pg_catalog.text) ON COMMIT DROP",
							 table), false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "%s: creating the table of the rows failed", run->fname);
	plan = SPI_prepare(psprintf("INSERT INTO pg_temp.%s (id, body) VALUES ($1, $2)", table), 2, insert_types);
	if (plan == NULL)
		elog(ERROR, "%s: SPI_prepare failed: %s", run->fname, SPI_result_code_string(SPI_result));
	slot = MakeSingleTupleTableSlot(run->captured_desc, &TTSOpsMinimalTuple);
	while (tuplestore_gettupleslot(run->captured, true, false, slot))
	{
		bool		isnull[2];
		Datum		values[2];
		char		nulls[2];

		values[0] = slot_getattr(slot, 1, &isnull[0]);
		values[1] = slot_getattr(slot, 2, &isnull[1]);
		nulls[0] = isnull[0] ? 'n' : ' ';
		nulls[1] = isnull[1] ? 'n' : ' ';
		if (SPI_execute_plan(plan, values, nulls, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "%s: inserting a row failed", run->fname);
		if (++rows % 1000 == 0)
			CHECK_FOR_INTERRUPTS();
	}
	ExecDropSingleTupleTableSlot(slot);
	SPI_freeplan(plan);
	tuplestore_end(run->captured);
	run->captured = NULL;

	sql = psprintf("SELECT r.* FROM %s.%s($1, $2) AS r",
				   quote_identifier(get_namespace_name(nsp)),
				   run->clusters ? "simhash_similar_clusters_disk" : "simhash_similar_pairs_disk");
	args[0] = CStringGetTextDatum(psprintf("SELECT id, body FROM pg_temp.%s", table));
	args[1] = Float8GetDatum(run->min_similarity);
	plan = SPI_prepare_cursor(sql, 2, types, 0);
	if (plan == NULL)
		elog(ERROR, "%s: SPI_prepare failed: %s", run->fname, SPI_result_code_string(SPI_result));
	portal = SPI_cursor_open(NULL, plan, args, NULL, false);
	for (;;)
	{
		uint64		n;

		SPI_cursor_fetch(portal, true, FETCH_ROWS);
		n = SPI_processed;
		for (uint64 i = 0; i < n; i++)
			tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[i]);
		SPI_freetuptable(SPI_tuptable);
		if (n == 0)
			break;
		CHECK_FOR_INTERRUPTS();
	}
	SPI_cursor_close(portal);
	SPI_freeplan(plan);
	if (SPI_execute(psprintf("DROP TABLE pg_temp.%s", table), false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "%s: dropping the table of the rows failed", run->fname);
}

static Datum
similar_pairs_or_clusters(FunctionCallInfo fcinfo, bool clusters)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(0));
	double		t = PG_GETARG_FLOAT8(1);
	MemoryContext cxt;
	MemoryContextCallback *callback;
	SimilarRun *run;
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	simhash_check_min_similarity(t);
	simhash_init_materialized_srf(fcinfo);

	cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash similar pairs",
								ALLOCSET_DEFAULT_SIZES);
	run = MemoryContextAllocZero(cxt, sizeof(SimilarRun));
	run->fname = clusters ? "simhash_similar_clusters" : "simhash_similar_pairs";
	run->clusters = clusters;
	run->min_similarity = t;
	run->cxt = cxt;
	run->batch_cxt = AllocSetContextCreate(cxt, "simhash similar batch", ALLOCSET_DEFAULT_SIZES);
	run->limit = (Size) work_mem * 1024;
	run->start = run->last_report = GetCurrentTimestamp();
	run->ids = MemoryContextAlloc(cxt, sizeof(int64) * FETCH_ROWS);
	run->texts = MemoryContextAlloc(cxt, sizeof(char *) * FETCH_ROWS);
	run->lens = MemoryContextAlloc(cxt, sizeof(size_t) * FETCH_ROWS);
	run->row_cxt = AllocSetContextCreate(cxt, "simhash similar row", ALLOCSET_SMALL_SIZES);
	{
		MemoryContext old = MemoryContextSwitchTo(cxt);

		run->captured_desc = CreateTemplateTupleDesc(2);
		TupleDescInitEntry(run->captured_desc, (AttrNumber) 1, "id", INT8OID, -1, 0);
		TupleDescInitEntry(run->captured_desc, (AttrNumber) 2, "body", TEXTOID, -1, 0);
		run->captured = tuplestore_begin_heap(false, false, 1024);
		MemoryContextSwitchTo(old);
	}
	/* The engine's C++ memory goes with the context, on success and on error alike. */
	callback = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));
	callback->func = free_engine;
	callback->arg = run;
	MemoryContextRegisterResetCallback(cxt, callback);
	simhash_check_status(simhash_similar_create(t, Min(1 + Max(max_parallel_workers_per_gather, 0),
													simhash_max_threads),
											 &run->engine, errbuf, sizeof(errbuf)), errbuf);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "%s: SPI_connect failed", run->fname);
	if (read_query(run, query))
	{
		check_ids(run);
		if (clusters)
			output_clusters(run, rsinfo);
		else
			output_pairs(run, rsinfo);
	}
	else
		run_on_disk(run, fcinfo);
	if (run->captured)
		tuplestore_end(run->captured);
	SPI_finish();
	MemoryContextDelete(cxt);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(simhash_similar_pairs);

/*
 * simhash_similar_pairs(query text, min_similarity float8) -> TABLE(id1 int8, id2 int8,
 * similarity float8)
 */
Datum
simhash_similar_pairs(PG_FUNCTION_ARGS)
{
	return similar_pairs_or_clusters(fcinfo, false);
}

PG_FUNCTION_INFO_V1(simhash_similar_clusters);

/*
 * simhash_similar_clusters(query text, min_similarity float8) -> TABLE(id int8, cluster_id
 * int8, similarity float8)
 */
Datum
simhash_similar_clusters(PG_FUNCTION_ARGS)
{
	return similar_pairs_or_clusters(fcinfo, true);
}
