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
 * Memory: in memory, the engine holds the shingle sets of the distinct texts (8 bytes a
 * shingle, about 8 bytes a character of text) and 160 bytes of keys a distinct text. When
 * that would outgrow work_mem, the engine goes external: every distinct set so far and from
 * then on is written once to a temporary file (BufFile) as a record (its size, its 20 LSH
 * keys, its sorted shingle hashes), each band's keys to a file of their own, and the sets
 * leave memory. The search then reads one band's keys at a time (16 bytes a distinct text
 * while the band is walked), and each batch of candidates loads just its records, in the
 * file's order, within work_mem / 2. What stays in memory is a few words a row: about 90
 * bytes a distinct text while the rows are read (the digests that group identical texts),
 * about 50 after; below 0.7, 16 more a row for the fingerprints. The query still runs
 * once, and the answers are the same (identical texts are then grouped by size and a
 * 128-bit digest instead of a comparison). Temporary files work on a hot standby and in a
 * read-only transaction; temp_file_limit bounds them; an error or a cancel closes them.
 *
 * Interrupts are checked between the engine's calls (a batch of rows, a batch of
 * candidates), and inside them the engine asks the glue's poll (simhash_pg_interrupt: a
 * row of 25 million characters takes seconds to shingle), returning SIMHASH_INTERRUPTED,
 * which raises the cancel once the call has returned. The engine's memory is C++ heap,
 * freed by a reset callback of the memory context of the call, so an error (or a cancel)
 * between calls frees it too.
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "optimizer/cost.h"
#include "storage/buffile.h"
#include "utils/builtins.h"
#include "utils/plancache.h"
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
/* The buffer through which records and keys go to and from the temporary files. */
#define EXPORT_BYTES (256 * 1024)
/* The LSH bands, at most (simhash_similar_external_state says how many). */
#define MAX_BANDS 32

struct SimilarRun
{
	const char *fname;
	bool		clusters;
	double		min_similarity;
	simhash_similar *engine;
	MemoryContext cxt;			/* the run's memory; its reset frees the engine */
	MemoryContext batch_cxt;	/* one batch of texts */
	Size		limit;			/* bytes the engine may hold: work_mem, or the caller's */
	const char *limit_name;		/* "work_mem", or the caller's setting */

	/*
	 * External mode (past the limit): the records file, a file of keys a band, and the
	 * buffer through which they are written and read, all in cxt.
	 */
	bool		external;
	BufFile    *records;
	BufFile    *bands[MAX_BANDS];
	int			nbands;
	unsigned char *io;

	MemoryContext row_cxt;		/* one row's detoasted body */

	/* Progress. */
	TimestampTz start;
	TimestampTz last_report;
	uint64		rows_read;
	uint64		results;
	Size		peak_memory;	/* the engine's, at most, as seen between calls */

	/* The batch being collected. */
	int64	   *ids;
	const char **texts;
	size_t	   *lens;
	int			nbatch;
	Size		batch_bytes;
};

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

/* Writes the records and band keys the engine added since the last time to their files. */
static void
export_all(SimilarRun *run)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	size_t		n;

	for (;;)
	{
		simhash_check_status(simhash_similar_export_records(run->engine, run->io, EXPORT_BYTES, &n,
															errbuf, sizeof(errbuf)), errbuf);
		if (n == 0)
			break;
		BufFileWrite(run->records, run->io, n);
	}
	for (int b = 0; b < run->nbands; b++)
	{
		for (;;)
		{
			simhash_check_status(simhash_similar_export_keys(run->engine, b, (int64_t *) run->io,
															 EXPORT_BYTES / sizeof(int64), &n,
															 errbuf, sizeof(errbuf)), errbuf);
			if (n == 0)
				break;
			BufFileWrite(run->bands[b], run->io, n * sizeof(int64));
		}
	}
	simhash_check_status(simhash_similar_export_done(run->engine, errbuf, sizeof(errbuf)), errbuf);
}

/*
 * The shingle sets would outgrow work_mem: from here on they live in temporary files
 * (the sets so far included), and a batch of candidates loads its records within half of
 * work_mem.
 */
static void
go_external(SimilarRun *run)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	MemoryContext old;
	int32		external;
	uint64		bytes;
	int32		bands;

	simhash_check_status(simhash_similar_go_external(run->engine, Max(run->limit / 2, 64 * 1024),
													 errbuf, sizeof(errbuf)), errbuf);
	simhash_similar_external_state(run->engine, &external, &bytes, &bands);
	if (bands < 0 || bands > MAX_BANDS)
		elog(ERROR, "%s: unexpected number of bands %d", run->fname, bands);
	old = MemoryContextSwitchTo(run->cxt);
	run->io = palloc(EXPORT_BYTES);
	run->records = BufFileCreateTemp(false);
	run->nbands = bands;
	for (int b = 0; b < bands; b++)
		run->bands[b] = BufFileCreateTemp(false);
	MemoryContextSwitchTo(old);
	run->external = true;
	ereport(DEBUG1,
			(errmsg("%s: the shingle sets outgrow %s (%zu kB) after %llu rows: they go on in temporary files",
					run->fname, run->limit_name, run->limit / 1024,
					(unsigned long long) run->rows_read)));
	export_all(run);
}

/* Notes the engine's memory for the DEBUG1 summary. */
static void
note_memory(SimilarRun *run)
{
	Size		m = simhash_similar_memory(run->engine);

	if (m > run->peak_memory)
		run->peak_memory = m;
}

/* Hands the batch to the engine; past work_mem, the engine goes external. */
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
	note_memory(run);
	if (!run->external && simhash_similar_memory(run->engine) > run->limit)
		go_external(run);
	else if (run->external)
		export_all(run);
	CHECK_FOR_INTERRUPTS();
	report_progress(run);
}

/* Reads band `band`'s keys from its file into the engine. */
static void
load_band(SimilarRun *run, int32 band)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	BufFile    *file;
	int32		need = SIMHASH_SIMILAR_NEED_BAND_KEYS;
	int32		asked;

	if (band < 0 || band >= run->nbands)
		elog(ERROR, "%s: the engine asked for band %d of %d", run->fname, band, run->nbands);
	file = run->bands[band];
	if (BufFileSeek(file, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("%s: could not rewind a temporary file", run->fname)));
	while (need == SIMHASH_SIMILAR_NEED_BAND_KEYS)
	{
		size_t		got = BufFileRead(file, run->io, EXPORT_BYTES);

		if (got == 0 || got % sizeof(int64) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("%s: could not read the keys of band %d from a temporary file",
							run->fname, band)));
		simhash_check_status(simhash_similar_provide_band_keys(run->engine, (const int64_t *) run->io,
															   got / sizeof(int64), errbuf,
															   sizeof(errbuf)), errbuf);
		simhash_similar_need(run->engine, &need, &asked);
		CHECK_FOR_INTERRUPTS();
	}
}

/* Reads the records a batch of candidates needs, in the file's order. */
static void
load_sets(SimilarRun *run)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	const simhash_similar_load *loads;
	size_t		n;

	simhash_similar_loads(run->engine, &loads, &n);
	for (size_t i = 0; i < n; i++)
	{
		if (BufFileSeek(run->records, 0, (off_t) loads[i].offset, SEEK_SET) != 0 ||
			BufFileRead(run->records, loads[i].dest, loads[i].bytes) != loads[i].bytes)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("%s: could not read a shingle set from a temporary file", run->fname)));
		if (i % 256 == 255)
			CHECK_FOR_INTERRUPTS();
	}
	simhash_check_status(simhash_similar_sets_loaded(run->engine, errbuf, sizeof(errbuf)), errbuf);
}

/* Serves what the engine waits for, if anything (external mode). */
static void
serve_engine(SimilarRun *run)
{
	int32		need;
	int32		band;

	simhash_similar_need(run->engine, &need, &band);
	if (need == SIMHASH_SIMILAR_NEED_BAND_KEYS)
		load_band(run, band);
	else if (need == SIMHASH_SIMILAR_NEED_SETS)
		load_sets(run);
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
	 * In memory, a batch is handed over before it could take the engine past work_mem,
	 * and a row that alone would takes the engine external before it is shingled.
	 */
	if (!run->external && run->nbatch > 0 &&
		simhash_similar_memory(run->engine) + (run->batch_bytes + bytes) * BYTES_PER_TEXT_BYTE > run->limit)
		flush_batch(run);
	if (!run->external &&
		simhash_similar_memory(run->engine) + (Size) bytes * BYTES_PER_TEXT_BYTE > run->limit)
		go_external(run);

	/*
	 * External, a batch's sets are held until they are written: a batch is handed over
	 * before they could pass half of work_mem.
	 */
	if (run->external && run->nbatch > 0 &&
		(run->batch_bytes + bytes) * BYTES_PER_TEXT_BYTE > run->limit / 2)
		flush_batch(run);

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

/* Runs the query through a cursor into the engine. */
static void
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

			if (id_null)
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("simhash: the query returned a NULL id")));
			if (!body_null)
				add_row(run, id_of(id, id_type), row_body(run, body, body_type));
			else
			{
				/* Left out, but its id must still be unique. */
				char		errbuf[SIMHASH_ERRBUF_SIZE];

				simhash_check_status(simhash_similar_add_id(run->engine, id_of(id, id_type), errbuf,
															sizeof(errbuf)), errbuf);
			}
			MemoryContextReset(run->row_cxt);
			CHECK_FOR_INTERRUPTS();
		}
		SPI_freetuptable(SPI_tuptable);
		if (n == 0)
			break;
		CHECK_FOR_INTERRUPTS();
	}
	SPI_cursor_close(portal);
	SPI_freeplan(plan);
	flush_batch(run);
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
	bool		finished = false;

	while (!finished)
	{
		size_t		count;

		finished = similar_run_next(run, buf, PAIRS_BATCH, &count);
		for (size_t i = 0; i < count; i++)
			put_result(rsinfo, buf[i].id1, buf[i].id2, buf[i].similarity);
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
		note_memory(run);
		if (!finished)
			serve_engine(run);
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
		run->results += count;
		if (count == 0)
			break;
		CHECK_FOR_INTERRUPTS();
	}
	pfree(buf);
}

/* Closes the temporary files (on error, their resource owner does). */
static void
close_files(SimilarRun *run)
{
	if (run->records != NULL)
		BufFileClose(run->records);
	run->records = NULL;
	for (int b = 0; b < run->nbands; b++)
		if (run->bands[b] != NULL)
			BufFileClose(run->bands[b]);
	run->nbands = 0;
}

/*
 * The engine run for another caller (the bulk load of dedupe_bulk.c): rows added one at a
 * time, then the pairs drained; memory as above, with `limit` bytes in place of work_mem. The
 * run's memory is a child of CurrentMemoryContext; similar_run_end() frees it, and so does
 * an error (its reset callback frees the engine, the resource owner the files).
 */
SimilarRun *
similar_run_begin(const char *fname, double t, Size limit, const char *limit_name)
{
	MemoryContext cxt;
	MemoryContextCallback *callback;
	SimilarRun *run;
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	simhash_check_min_similarity(t);
	cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash similar pairs",
								ALLOCSET_DEFAULT_SIZES);
	run = MemoryContextAllocZero(cxt, sizeof(SimilarRun));
	run->fname = fname;
	run->min_similarity = t;
	run->cxt = cxt;
	run->batch_cxt = AllocSetContextCreate(cxt, "simhash similar batch", ALLOCSET_DEFAULT_SIZES);
	run->limit = limit;
	run->limit_name = limit_name;
	run->start = run->last_report = GetCurrentTimestamp();
	run->ids = MemoryContextAlloc(cxt, sizeof(int64) * FETCH_ROWS);
	run->texts = MemoryContextAlloc(cxt, sizeof(char *) * FETCH_ROWS);
	run->lens = MemoryContextAlloc(cxt, sizeof(size_t) * FETCH_ROWS);
	run->row_cxt = AllocSetContextCreate(cxt, "simhash similar row", ALLOCSET_SMALL_SIZES);
	/* The engine's C++ memory goes with the context, on success and on error alike. */
	callback = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));
	callback->func = free_engine;
	callback->arg = run;
	MemoryContextRegisterResetCallback(cxt, callback);
	simhash_check_status(simhash_similar_create(t, Min(1 + Max(max_parallel_workers_per_gather, 0),
													simhash_max_threads),
											 &run->engine, errbuf, sizeof(errbuf)), errbuf);
	simhash_similar_set_interrupt(run->engine, &simhash_pg_interrupt);
	return run;
}

/* Adds a row: its id (unique) and text (read during the call). */
void
similar_run_add(SimilarRun *run, int64 id, text *t)
{
	add_row(run, id, t);
}

/* After the last row: the rest of the batch goes to the engine. */
void
similar_run_added(SimilarRun *run)
{
	flush_batch(run);
}

/*
 * Up to cap pairs into out (*count): one bounded step of the engine, then whatever it
 * waits for is served. True once every pair has been handed out.
 */
bool
similar_run_next(SimilarRun *run, simhash_similar_pair *out, size_t cap, size_t *count)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	int32		finished;

	simhash_check_status(simhash_similar_next(run->engine, out, cap, VERIFY_WORK, count,
										   &finished, errbuf, sizeof(errbuf)), errbuf);
	run->results += *count;
	note_memory(run);
	if (!finished)
		serve_engine(run);
	CHECK_FOR_INTERRUPTS();
	report_progress(run);
	return finished != 0;
}

/* A DEBUG1 summary of the run. */
static void
similar_run_summary(SimilarRun *run)
{
	int32		external;
	uint64		record_bytes;
	uint64		rows;
	uint64		groups;

	simhash_similar_external_state(run->engine, &external, &record_bytes, NULL);
	simhash_similar_counts(run->engine, &rows, &groups);
	ereport(DEBUG1,
			(errmsg("%s: %llu rows, %llu distinct shingle sets, %llu results; engine memory at most %zu kB%s, records file %llu kB",
					run->fname, (unsigned long long) rows, (unsigned long long) groups,
					(unsigned long long) run->results, run->peak_memory / 1024,
					external ? " (external)" : " (in memory)",
					(unsigned long long) (record_bytes / 1024))));
}

/* Ends a run: its files closed, its memory (the engine's too) freed. */
void
similar_run_end(SimilarRun *run)
{
	close_files(run);
	MemoryContextDelete(run->cxt);
}

static Datum
similar_pairs_or_clusters(FunctionCallInfo fcinfo, bool clusters)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(0));
	double		t = PG_GETARG_FLOAT8(1);
	SimilarRun *run;

	simhash_check_min_similarity(t);
	simhash_init_materialized_srf(fcinfo);
	run = similar_run_begin(clusters ? "simhash_similar_clusters" : "simhash_similar_pairs", t,
							(Size) work_mem * 1024, "work_mem");
	run->clusters = clusters;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "%s: SPI_connect failed", run->fname);
	read_query(run, query);
	check_ids(run);
	if (clusters)
		output_clusters(run, rsinfo);
	else
		output_pairs(run, rsinfo);
	SPI_finish();
	similar_run_summary(run);
	similar_run_end(run);
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
