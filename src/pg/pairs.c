/*
 * simhash_pairs(query, max_distance) and simhash_clusters(query, max_distance): every
 * near-duplicate pair, and the connected components of the near-duplicate graph, of the
 * (id, fp) rows a query returns. The search runs in the C++ core (src/core/near_pairs.hpp)
 * through the C ABI of src/capi/pairs_capi.h; this file feeds it and collects its output.
 *
 *  1. The query runs once through SPI, into a DestReceiver that checks the column types and
 *     keeps the rows in two arrays while the whole search fits in work_mem; past that it
 *     writes every row to a temporary file (BufFile) instead ("spilled").
 *  2. Ids must be unique: checked by the core on the arrays, or by a tuplesort of the file.
 *  3. In memory: one finder over every table. Spilled: for each table, the rows are split by
 *     the top bits of that table's key into temporary files small enough to load (split
 *     again when one is still too big), and a finder searches each part for that table only.
 *     Rows with equal keys always share a part, so every pair is still found exactly once.
 *  4. Pairs go straight into the result (a tuplestore, which spills per work_mem itself).
 *     Clusters go through a union-find of 4 bytes per row; then one pass over the rows names
 *     each cluster by its smallest id and a second pass writes the rows of the clusters.
 *
 * The core is called for about a millisecond of work at a time, and between calls this file
 * checks for interrupts (statement_timeout, cancel) and reports progress as a NOTICE every
 * few seconds. The core owns no memory: every array is palloc'd here, in one memory context
 * that PostgreSQL frees also when an error unwinds us, and the temporary files are closed
 * by their resource owner on error. Nothing is left to clean up by hand.
 */
#include "postgres.h"

#include "catalog/pg_operator_d.h"
#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/buffile.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/tuplesort.h"
#include "utils/tuplestore.h"

#include "capi/pairs_capi.h"
#include "pg/simhash_pg.h"

/* Pairs asked of the core per call, and its work budget per call (about a millisecond). */
#define PAIRS_BATCH 1024
#define PAIRS_WORK (1 << 20)
/* Rows per read or write of a temporary file, and per batch of the output passes. */
#define IO_ROWS 256
/* A NOTICE at most this often while a call runs (the first one after this long). */
#define PROGRESS_INTERVAL_MS 5000
/* What an open temporary file costs: its buffer and bookkeeping. */
#define BUFFILE_BYTES (BLCKSZ + 256)

/* A row in a temporary file: the fingerprint, and the id (or the row number, see below). */
typedef struct SpillRow
{
	uint64		fp;
	int64		tag;
} SpillRow;

typedef struct PairsRun
{
	const char *fname;			/* "simhash_pairs" or "simhash_clusters" */
	bool		clusters;
	int			k;
	Size		limit;			/* work_mem in bytes, less our fixed overhead */
	MemoryContext cxt;			/* everything below is allocated here */
	MemoryContext part_cxt;		/* one partition's arrays, reset after each */

	/* Input: rows with a fingerprint, in the order the query returned them. */
	uint64		n;
	uint64		without_fp;		/* rows skipped for a NULL fingerprint */
	Tuplesortstate *null_ids;	/* their ids, for the duplicate check (NULL: none yet) */
	int64	   *ids;			/* in memory: ids[0..n), fps[0..n) */
	uint64	   *fps;
	uint64		cap;
	uint64		fit_rows;		/* rows the in-memory search may hold */
	BufFile    *spill;			/* spilled: every row (fp, id), in order */
	SpillRow	iobuf[IO_ROWS];	/* rows waiting to be written to spill */
	int			iobuf_used;
	SpillRow	rows[IO_ROWS];	/* scratch for reading temporary files */
	uint64		scratch_fps[IO_ROWS];
	uint64		scratch_keys[IO_ROWS];

	/* The search. */
	simhash_pair_plan plan;
	uint32		tables;
	int32		blocks;
	int32		agree;
	uint32		table;			/* table being searched */
	uint64		table_rows_done;	/* spilled: rows of this table searched */
	int			open_files;		/* temporary files open besides spill */
	uint64		partitions;		/* spilled: parts searched */
	uint64		pairs;
	uint32	   *parent;			/* clusters: union-find, then labels */
	uint64		clusters_found;
	simhash_pair *batch;

	/* Output. */
	Tuplestorestate *tupstore;
	TupleDesc	tupdesc;

	/* Progress and the summary. */
	TimestampTz start;
	TimestampTz last_report;
	Size		peak;
	char		errbuf[SIMHASH_ERRBUF_SIZE];
} PairsRun;

/* Receives the query's rows. */
typedef struct RowReceiver
{
	DestReceiver pub;
	PairsRun   *run;
	Oid			id_type;
} RowReceiver;

static void
check_status(PairsRun *run, simhash_status status)
{
	if (status != SIMHASH_OK)
		simhash_raise_status(status, run->errbuf);
}

static void
note_memory(PairsRun *run)
{
	Size		now = MemoryContextMemAllocated(run->cxt, true);

	if (now > run->peak)
		run->peak = now;
}

static void *
alloc_huge(PairsRun *run, MemoryContext cxt, Size bytes)
{
	void	   *p = MemoryContextAllocHuge(cxt, Max(bytes, 8));

	note_memory(run);
	return p;
}

static double
seconds_since(TimestampTz start)
{
	return (double) (GetCurrentTimestamp() - start) / 1000000.0;
}

/* A NOTICE on how far the search is, when the last one is PROGRESS_INTERVAL_MS old. */
static void
report_progress(PairsRun *run, double table_fraction)
{
	TimestampTz now = GetCurrentTimestamp();
	double		done;

	if (!TimestampDifferenceExceeds(run->last_report, now, PROGRESS_INTERVAL_MS))
		return;
	run->last_report = now;
	if (run->tables == 0)
	{
		ereport(NOTICE,
				(errmsg("%s: %llu rows read after %.0f s", run->fname,
						(unsigned long long) (run->n + run->without_fp),
						seconds_since(run->start))));
		return;
	}
	done = (run->table + Min(table_fraction, 1.0)) / run->tables;
	ereport(NOTICE,
			(errmsg("%s: %.0f%% of the search done after %.0f s, %llu pairs so far (table %u of %u, %s)",
					run->fname, 100.0 * done, seconds_since(run->start),
					(unsigned long long) run->pairs, run->table + 1, run->tables,
					run->spill ? "rows in temporary files" : "rows in memory")));
}

/* Bytes the in-memory search needs for n rows. */
static Size
memory_needed(PairsRun *run, uint64 n)
{
	simhash_pair_plan plan;
	uint32		tables;
	size_t		workspace;
	Size		dup;

	if (n > UINT32_MAX)
		return SIZE_MAX;
	check_status(run, simhash_pair_plan_init(&plan, n, run->k, run->errbuf, sizeof(run->errbuf)));
	simhash_pair_plan_shape(&plan, &tables, NULL, NULL);
	check_status(run, simhash_pair_workspace_bytes(&plan, n, 0, tables, &workspace,
												   run->errbuf, sizeof(run->errbuf)));
	dup = simhash_duplicate_id_workspace_bytes(n);
	return 16 * n + Max(workspace, dup);
}

/* The most rows the in-memory search holds within work_mem (a binary search). */
static uint64
rows_that_fit(PairsRun *run)
{
	uint64		lo = 0;
	uint64		hi = run->limit / 16 + 1;

	while (lo + 1 < hi)
	{
		uint64		mid = lo + (hi - lo) / 2;

		if (memory_needed(run, mid) <= run->limit)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static BufFile *
open_temp_file(PairsRun *run)
{
	MemoryContext old = MemoryContextSwitchTo(run->cxt);
	BufFile    *file = BufFileCreateTemp(false);

	MemoryContextSwitchTo(old);
	note_memory(run);
	return file;
}

static void
flush_spill(PairsRun *run)
{
	if (run->iobuf_used > 0)
		BufFileWrite(run->spill, run->iobuf, run->iobuf_used * sizeof(SpillRow));
	run->iobuf_used = 0;
}

/* From now on rows go to a temporary file: the search will not fit in work_mem. */
static void
start_spill(PairsRun *run)
{
	ereport(NOTICE,
			(errmsg("%s: the rows do not fit in work_mem (%d kB), so the search goes through temporary files",
					run->fname, work_mem),
			 errhint("A larger work_mem lets the search run in memory, which is faster.")));
	run->spill = open_temp_file(run);
	for (uint64 i = 0; i < run->n; i++)
	{
		run->iobuf[run->iobuf_used].fp = run->fps[i];
		run->iobuf[run->iobuf_used].tag = run->ids[i];
		if (++run->iobuf_used == IO_ROWS)
			flush_spill(run);
	}
	if (run->ids)
	{
		pfree(run->ids);
		pfree(run->fps);
	}
	run->ids = NULL;
	run->fps = NULL;
	run->cap = 0;
}

static void
add_row(PairsRun *run, int64 id, uint64 fp)
{
	if (run->clusters && run->n >= SIMHASH_MAX_CLUSTER_ROWS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s: the query returned more than %u rows with a fingerprint",
						run->fname, SIMHASH_MAX_CLUSTER_ROWS)));
	if (run->spill == NULL && run->n == run->cap)
	{
		if (run->cap >= run->fit_rows)
			start_spill(run);
		else
		{
			/* Grow by half (the query's row count is not known in advance). */
			uint64		cap = Min(Max(run->cap + run->cap / 2, 1024), run->fit_rows);

			if (run->ids == NULL)
			{
				run->ids = alloc_huge(run, run->cxt, cap * sizeof(int64));
				run->fps = alloc_huge(run, run->cxt, cap * sizeof(uint64));
			}
			else
			{
				run->ids = repalloc_huge(run->ids, cap * sizeof(int64));
				run->fps = repalloc_huge(run->fps, cap * sizeof(uint64));
				note_memory(run);
			}
			run->cap = cap;
		}
	}
	if (run->spill)
	{
		run->iobuf[run->iobuf_used].fp = fp;
		run->iobuf[run->iobuf_used].tag = id;
		if (++run->iobuf_used == IO_ROWS)
			flush_spill(run);
	}
	else
	{
		run->ids[run->n] = id;
		run->fps[run->n] = fp;
	}
	run->n++;
}

static void
receiver_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	RowReceiver *rr = (RowReceiver *) self;
	const char *fname = rr->run->fname;
	Oid			id_type;
	Oid			fp_type;

	if (typeinfo->natts != 2)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: the query must return two columns (id bigint, fp bigint), not %d",
						fname, typeinfo->natts)));
	id_type = getBaseType(TupleDescAttr(typeinfo, 0)->atttypid);
	fp_type = getBaseType(TupleDescAttr(typeinfo, 1)->atttypid);
	if (id_type != INT8OID && id_type != INT4OID && id_type != INT2OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: column 1 of the query (\"%s\") is %s, expected the id: bigint, integer or smallint",
						fname, NameStr(TupleDescAttr(typeinfo, 0)->attname),
						format_type_be(TupleDescAttr(typeinfo, 0)->atttypid))));
	if (fp_type != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("%s: column 2 of the query (\"%s\") is %s, expected the fingerprint: bigint",
						fname, NameStr(TupleDescAttr(typeinfo, 1)->attname),
						format_type_be(TupleDescAttr(typeinfo, 1)->atttypid))));
	rr->id_type = id_type;
}

/* A sort of ids (int8), within work_mem, spilling beyond. */
static Tuplesortstate *
new_id_sort(void)
{
	return tuplesort_begin_datum(INT8OID, Int8LessOperator, InvalidOid, false, work_mem, NULL,
								 SIMHASH_TUPLESORT_NONE);
}

/* Sorts the ids and raises 21000 for the first one found twice; ends the sort. */
static void
check_sorted_ids(PairsRun *run, Tuplesortstate *sort)
{
	Datum		value;
	bool		isnull;
	bool		have_previous = false;
	int64		previous = 0;

	tuplesort_performsort(sort);
	while (simhash_tuplesort_getdatum(sort, true, &value, &isnull))
	{
		int64		id = DatumGetInt64(value);

		if (have_previous && id == previous)
			ereport(ERROR,
					(errcode(ERRCODE_CARDINALITY_VIOLATION),
					 errmsg("%s: the query returned id " INT64_FORMAT " more than once",
							run->fname, id),
					 errhint("Ids name the rows in the result, so they must be unique.")));
		previous = id;
		have_previous = true;
		CHECK_FOR_INTERRUPTS();
	}
	tuplesort_end(sort);
}

static bool
receiver_slot(TupleTableSlot *slot, DestReceiver *self)
{
	RowReceiver *rr = (RowReceiver *) self;
	PairsRun   *run = rr->run;
	bool		isnull;
	Datum		id_datum;
	Datum		fp_datum;
	int64		id;

	slot_getallattrs(slot);
	id_datum = slot->tts_values[0];
	if (slot->tts_isnull[0])
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s: the query returned a NULL id", run->fname)));
	fp_datum = slot->tts_values[1];
	isnull = slot->tts_isnull[1];
	if (rr->id_type == INT8OID)
		id = DatumGetInt64(id_datum);
	else if (rr->id_type == INT4OID)
		id = DatumGetInt32(id_datum);
	else
		id = DatumGetInt16(id_datum);
	if (isnull)
	{
		/* Not searched, but its id must still be unique. */
		if (run->null_ids == NULL)
		{
			MemoryContext old = MemoryContextSwitchTo(run->cxt);

			run->null_ids = new_id_sort();
			MemoryContextSwitchTo(old);
		}
		tuplesort_putdatum(run->null_ids, Int64GetDatum(id), false);
		run->without_fp++;
		return true;
	}
	add_row(run, id, (uint64) DatumGetInt64(fp_datum));
	if ((run->n & 0xFFFF) == 0)
		report_progress(run, 0);
	return true;
}

static void
receiver_shutdown(DestReceiver *self)
{
}

static void
receiver_destroy(DestReceiver *self)
{
}

#ifndef SIMHASH_HAVE_SPI_EXECUTE_EXTENDED
/*
 * PostgreSQL 13 cannot send the rows of an SPI plan to a DestReceiver of ours: read them
 * through a cursor, a batch at a time, and hand each row to the receiver's functions.
 * (A cursor runs without parallel workers.)
 */
#define CURSOR_BATCH_ROWS 10000

static void
read_through_cursor(RowReceiver *receiver, SPIPlanPtr plan)
{
	Portal		portal = SPI_cursor_open(NULL, plan, NULL, NULL, false);
	TupleTableSlot *slot = NULL;

	for (;;)
	{
		uint64		n;

		SPI_cursor_fetch(portal, true, CURSOR_BATCH_ROWS);
		n = SPI_processed;
		if (slot == NULL)
		{
			receiver->pub.rStartup(&receiver->pub, CMD_SELECT, SPI_tuptable->tupdesc);
			slot = MakeSingleTupleTableSlot(SPI_tuptable->tupdesc, &TTSOpsHeapTuple);
		}
		for (uint64 i = 0; i < n; i++)
		{
			ExecStoreHeapTuple(SPI_tuptable->vals[i], slot, false);
			receiver->pub.receiveSlot(slot, &receiver->pub);
		}
		ExecClearTuple(slot);
		SPI_freetuptable(SPI_tuptable);
		if (n == 0)
			break;
	}
	ExecDropSingleTupleTableSlot(slot);
	SPI_cursor_close(portal);
}
#endif

/* Runs the query once and collects its rows. */
static void
read_query(PairsRun *run, const char *query)
{
	RowReceiver receiver;
	SPIPlanPtr	plan;
#ifdef SIMHASH_HAVE_SPI_EXECUTE_EXTENDED
	SPIPrepareOptions prepare;
	SPIExecuteOptions execute;
	int			rc;
#endif

	memset(&receiver, 0, sizeof(receiver));
	receiver.pub.receiveSlot = receiver_slot;
	receiver.pub.rStartup = receiver_startup;
	receiver.pub.rShutdown = receiver_shutdown;
	receiver.pub.rDestroy = receiver_destroy;
	receiver.pub.mydest = DestNone;
	receiver.run = run;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "%s: SPI_connect failed", run->fname);
#ifdef SIMHASH_HAVE_SPI_EXECUTE_EXTENDED
	memset(&prepare, 0, sizeof(prepare));
	/* The query runs to completion, so it may use parallel workers. */
	prepare.cursorOptions = CURSOR_OPT_PARALLEL_OK;
	plan = SPI_prepare_extended(query, &prepare);
#else
	plan = SPI_prepare_cursor(query, 0, NULL, 0);
#endif
	if (plan == NULL)
		elog(ERROR, "%s: SPI_prepare failed: %s", run->fname, SPI_result_code_string(SPI_result));
	if (!SPI_is_cursor_plan(plan))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: the query must be one statement that returns rows (id, fp)",
						run->fname)));
#ifdef SIMHASH_HAVE_SPI_EXECUTE_EXTENDED
	memset(&execute, 0, sizeof(execute));
	execute.read_only = false;
#ifdef SIMHASH_HAVE_SPI_MUST_RETURN_TUPLES
	execute.must_return_tuples = true;
#endif
	execute.dest = &receiver.pub;
	rc = SPI_execute_plan_extended(plan, &execute);
	if (rc < 0)
		elog(ERROR, "%s: running the query failed: %s", run->fname, SPI_result_code_string(rc));
#else
	read_through_cursor(&receiver, plan);
#endif
	SPI_freeplan(plan);
	SPI_finish();
	if (run->spill)
		flush_spill(run);
	else if (run->ids && run->cap > run->n)
	{
		/* Give back what the growth left unused before the search allocates its own. */
		run->cap = Max(run->n, 1);
		run->ids = repalloc_huge(run->ids, run->cap * sizeof(int64));
		run->fps = repalloc_huge(run->fps, run->cap * sizeof(uint64));
	}
}

static void
emit_pair(PairsRun *run, int64 a, int64 b, int32 distance)
{
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	values[0] = Int64GetDatum(Min(a, b));
	values[1] = Int64GetDatum(Max(a, b));
	values[2] = Int32GetDatum(distance);
	tuplestore_putvalues(run->tupstore, run->tupdesc, values, nulls);
}

/*
 * Drains a finder: pairs into the result (ids from tags[]) or into the union-find (rows
 * from tags[] when spilled, the finder's own numbers when in memory).
 */
static void
drain_finder(PairsRun *run, simhash_pair_iter *iter, const int64 *tags, uint64 part_rows)
{
	int32		finished = 0;

	while (!finished)
	{
		size_t		count;
		uint32		table;
		double		fraction;

		check_status(run, simhash_pair_iter_next(iter, run->batch, PAIRS_BATCH, PAIRS_WORK,
												 &count, &finished, run->errbuf,
												 sizeof(run->errbuf)));
		run->pairs += count;
		if (run->clusters)
			check_status(run, simhash_clusters_unite(run->parent, run->n, run->batch, count,
													 run->spill ? (const uint64 *) tags : NULL,
													 run->errbuf, sizeof(run->errbuf)));
		else
			for (size_t p = 0; p < count; p++)
				emit_pair(run, tags[run->batch[p].i], tags[run->batch[p].j],
						  run->batch[p].distance);
		CHECK_FOR_INTERRUPTS();
		simhash_pair_iter_progress(iter, &table, &fraction);
		if (run->spill)
			fraction = (run->table_rows_done + fraction * part_rows) / (double) run->n;
		else
			run->table = Min(table, run->tables - 1);
		report_progress(run, fraction);
	}
}

/* Rows with a fingerprint are in memory: look for a duplicate id, then search every table. */
static void
search_in_memory(PairsRun *run)
{
	size_t		workspace_bytes;
	void	   *workspace;
	int32		found;
	int64		duplicate;
	simhash_pair_iter iter;

	check_status(run, simhash_pair_workspace_bytes(&run->plan, run->n, 0, run->tables,
												   &workspace_bytes, run->errbuf,
												   sizeof(run->errbuf)));
	workspace_bytes = Max(workspace_bytes, simhash_duplicate_id_workspace_bytes(run->n));
	workspace = alloc_huge(run, run->cxt, workspace_bytes);
	check_status(run, simhash_find_duplicate_id(run->ids, run->n, workspace, workspace_bytes,
												&found, &duplicate, run->errbuf,
												sizeof(run->errbuf)));
	if (found)
		ereport(ERROR,
				(errcode(ERRCODE_CARDINALITY_VIOLATION),
				 errmsg("%s: the query returned id " INT64_FORMAT " more than once",
						run->fname, duplicate),
				 errhint("Ids name the rows in the result, so they must be unique.")));
	if (run->null_ids != NULL)
	{
		/* Rows without a fingerprint: their ids against each other and the others'. */
		for (uint64 i = 0; i < run->n; i++)
			tuplesort_putdatum(run->null_ids, Int64GetDatum(run->ids[i]), false);
		check_sorted_ids(run, run->null_ids);
		run->null_ids = NULL;
	}
	if (run->clusters)
	{
		run->parent = alloc_huge(run, run->cxt, run->n * sizeof(uint32));
		check_status(run, simhash_clusters_init(run->parent, run->n, run->errbuf,
												sizeof(run->errbuf)));
	}
	check_status(run, simhash_pair_iter_begin(&iter, &run->plan, run->fps, run->n, 0,
											  run->tables, workspace, workspace_bytes,
											  run->errbuf, sizeof(run->errbuf)));
	drain_finder(run, &iter, run->ids, run->n);
	run->table = run->tables - 1;
	pfree(workspace);
}

/*
 * Reads up to max rows of a temporary file. In the spill file the tag is the id; when
 * clustering, rows in partition files carry their row number instead (the union-find's
 * index), assigned here as the spill file is read in order from *row.
 */
static int
read_rows(PairsRun *run, BufFile *file, bool is_spill, uint64 *row, SpillRow *out, int max)
{
	size_t		got = BufFileRead(file, out, max * sizeof(SpillRow));

	if (got % sizeof(SpillRow) != 0)
		elog(ERROR, "%s: could not read a whole row from a temporary file", run->fname);
	got /= sizeof(SpillRow);
	if (is_spill && run->clusters)
		for (size_t r = 0; r < got; r++)
			out[r].tag = (int64) (*row + r);
	*row += got;
	return (int) got;
}

static void
rewind_file(PairsRun *run, BufFile *file)
{
	if (BufFileSeek(file, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("%s: could not rewind temporary file", run->fname)));
}

static void
close_part(PairsRun *run, BufFile *file, bool is_spill)
{
	if (!is_spill)
	{
		BufFileClose(file);
		run->open_files--;
	}
}

/* Whether a part of this many rows can be searched in memory for the current table. */
static bool
part_fits(PairsRun *run, uint64 rows)
{
	size_t		workspace;

	if (rows > UINT32_MAX)
		return false;
	check_status(run, simhash_pair_workspace_bytes(&run->plan, rows, run->table, run->table + 1,
												   &workspace, run->errbuf,
												   sizeof(run->errbuf)));
	/* Half of work_mem for a part's arrays, half for the temporary files' buffers. */
	return 16 * rows + workspace <= run->limit / 2;
}

/* Loads a part (rows of a temporary file) and searches it for the current table. */
static void
search_part(PairsRun *run, BufFile *file, uint64 rows, bool is_spill)
{
	uint64	   *fps = alloc_huge(run, run->part_cxt, rows * sizeof(uint64));
	int64	   *tags = alloc_huge(run, run->part_cxt, rows * sizeof(int64));
	size_t		workspace_bytes;
	void	   *workspace;
	SpillRow   *buf = run->rows;
	uint64		row = 0;
	uint64		loaded = 0;
	simhash_pair_iter iter;

	while (loaded < rows)
	{
		int			got = read_rows(run, file, is_spill, &row, buf, Min(IO_ROWS, rows - loaded));

		if (got == 0)
			elog(ERROR, "%s: temporary file ended early", run->fname);
		for (int r = 0; r < got; r++)
		{
			fps[loaded + r] = buf[r].fp;
			tags[loaded + r] = buf[r].tag;
		}
		loaded += got;
	}
	close_part(run, file, is_spill);
	check_status(run, simhash_pair_workspace_bytes(&run->plan, rows, run->table, run->table + 1,
												   &workspace_bytes, run->errbuf,
												   sizeof(run->errbuf)));
	workspace = alloc_huge(run, run->part_cxt, workspace_bytes);
	check_status(run, simhash_pair_iter_begin(&iter, &run->plan, fps, rows, run->table,
											  run->table + 1, workspace, workspace_bytes,
											  run->errbuf, sizeof(run->errbuf)));
	drain_finder(run, &iter, tags, rows);
	run->table_rows_done += rows;
	run->partitions++;
	MemoryContextReset(run->part_cxt);
}

/*
 * How many more key bits (of the `left` not used yet) to split `rows` rows by: enough parts
 * that each fits with room to spare (rows are split by key bits, close to evenly for random
 * fingerprints), as many as half of work_mem allows buffers for, at least two.
 */
static int
split_bits(PairsRun *run, uint64 rows, int left)
{
	uint64		want = 2 * rows / Max(run->limit / 2 / 40, 1) + 1;
	Size		file_budget = run->limit / 2 > (Size) run->open_files * BUFFILE_BYTES ?
		run->limit / 2 - (Size) run->open_files * BUFFILE_BYTES : 0;
	int			bits = 1;

	while (bits < left && bits < 16 && ((uint64) 1 << bits) < want)
		bits++;
	while (bits > 1 && ((Size) 1 << bits) * BUFFILE_BYTES > file_budget)
		bits--;
	return bits;
}

/*
 * Searches the rows of a temporary file for the current table: in memory when they fit, or
 * when all of them share the key bits used so far; otherwise split by the next bits of the
 * key into parts, each searched in turn (recursively).
 */
static void
search_file(PairsRun *run, BufFile *file, uint64 rows, bool is_spill, int used_bits, int width)
{
	int			bits;
	int			parts;
	BufFile   **files;
	uint64	   *counts;
	uint64		row = 0;
	SpillRow   *buf = run->rows;
	int			got;

	check_stack_depth();
	if (rows < 2)
	{
		close_part(run, file, is_spill);
		run->table_rows_done += rows;
		return;
	}
	if (used_bits >= width || part_fits(run, rows))
	{
		search_part(run, file, rows, is_spill);
		return;
	}

	bits = split_bits(run, rows, width - used_bits);
	parts = 1 << bits;

	files = MemoryContextAllocZero(run->cxt, parts * sizeof(BufFile *));
	counts = MemoryContextAllocZero(run->cxt, parts * sizeof(uint64));
	while ((got = read_rows(run, file, is_spill, &row, buf, IO_ROWS)) > 0)
	{
		for (int r = 0; r < got; r++)
			run->scratch_fps[r] = buf[r].fp;
		check_status(run, simhash_pair_table_keys(&run->plan, run->table, run->scratch_fps, got,
												  run->scratch_keys, run->errbuf,
												  sizeof(run->errbuf)));
		for (int r = 0; r < got; r++)
		{
			int			p = (int) ((run->scratch_keys[r] >> (width - used_bits - bits)) & (parts - 1));

			if (files[p] == NULL)
			{
				files[p] = open_temp_file(run);
				run->open_files++;
			}
			BufFileWrite(files[p], &buf[r], sizeof(SpillRow));
			counts[p]++;
		}
		CHECK_FOR_INTERRUPTS();
		report_progress(run, (double) run->table_rows_done / run->n);
	}
	if (row != rows)
		elog(ERROR, "%s: temporary file has " UINT64_FORMAT " rows, expected " UINT64_FORMAT,
			 run->fname, row, rows);
	close_part(run, file, is_spill);
	for (int p = 0; p < parts; p++)
	{
		if (files[p] == NULL)
			continue;
		rewind_file(run, files[p]);
		search_file(run, files[p], counts[p], false, used_bits + bits, width);
	}
	pfree(files);
	pfree(counts);
}

/* Rows are in the spill file: look for a duplicate id with a sort, then search by parts. */
static void
search_spilled(PairsRun *run)
{
	Tuplesortstate *sort = run->null_ids != NULL ? run->null_ids : new_id_sort();
	SpillRow   *buf = run->rows;
	uint64		row = 0;
	int			got;

	/* Every id, with those of the rows without a fingerprint already in the sort. */
	run->null_ids = NULL;
	rewind_file(run, run->spill);
	while ((got = read_rows(run, run->spill, false, &row, buf, IO_ROWS)) > 0)
	{
		for (int r = 0; r < got; r++)
			tuplesort_putdatum(sort, Int64GetDatum(buf[r].tag), false);
		CHECK_FOR_INTERRUPTS();
	}
	check_sorted_ids(run, sort);

	if (run->clusters)
	{
		run->parent = alloc_huge(run, run->cxt, run->n * sizeof(uint32));
		check_status(run, simhash_clusters_init(run->parent, run->n, run->errbuf,
												sizeof(run->errbuf)));
	}
	for (run->table = 0; run->table < run->tables; run->table++)
	{
		int			width = simhash_pair_table_key_bits(&run->plan, run->table);

		run->table_rows_done = 0;
		rewind_file(run, run->spill);
		search_file(run, run->spill, run->n, true, 0, width);
	}
	run->table = run->tables - 1;
}

/* Writes every row that has a near duplicate with its cluster id and distance to it. */
static void
output_clusters(PairsRun *run)
{
	size_t		clusters;
	simhash_cluster_rep *reps;
	SpillRow   *buf = run->rows;
	int64		ids[IO_ROWS];
	uint32		of[IO_ROWS];

	check_status(run, simhash_clusters_label(run->parent, run->n, &clusters, run->errbuf,
											 sizeof(run->errbuf)));
	run->clusters_found = clusters;
	reps = alloc_huge(run, run->cxt, clusters * sizeof(simhash_cluster_rep));

	/* Two passes over the rows in order: the representatives, then the output. */
	for (int pass = 0; pass < 2; pass++)
	{
		uint64		first = 0;

		if (run->spill)
			rewind_file(run, run->spill);
		while (first < run->n)
		{
			const int64 *batch_ids;
			const uint64 *batch_fps;
			int			count;

			if (run->spill)
			{
				uint64		row = first;

				count = read_rows(run, run->spill, false, &row, buf, IO_ROWS);
				if (count == 0)
					elog(ERROR, "%s: temporary file ended early", run->fname);
				for (int r = 0; r < count; r++)
				{
					ids[r] = buf[r].tag;
					run->scratch_fps[r] = buf[r].fp;
				}
				batch_ids = ids;
				batch_fps = run->scratch_fps;
			}
			else
			{
				count = (int) Min(IO_ROWS, run->n - first);
				batch_ids = run->ids + first;
				batch_fps = run->fps + first;
			}
			if (pass == 0)
				check_status(run, simhash_clusters_collect(run->parent, run->n, first, batch_ids,
														   batch_fps, count, reps, clusters,
														   run->errbuf, sizeof(run->errbuf)));
			else
			{
				check_status(run, simhash_clusters_lookup(run->parent, run->n, first, count, of,
														  run->errbuf, sizeof(run->errbuf)));
				for (int r = 0; r < count; r++)
				{
					Datum		values[3];
					bool		nulls[3] = {false, false, false};

					if (of[r] == SIMHASH_NO_CLUSTER)
						continue;
					values[0] = Int64GetDatum(batch_ids[r]);
					values[1] = Int64GetDatum(reps[of[r]].id);
					values[2] = Int32GetDatum(simhash_hamming(batch_fps[r], reps[of[r]].fp));
					tuplestore_putvalues(run->tupstore, run->tupdesc, values, nulls);
				}
			}
			first += count;
			CHECK_FOR_INTERRUPTS();
		}
	}
}

static Datum
pairs_or_clusters(FunctionCallInfo fcinfo, bool clusters)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(0));
	int32		k = PG_GETARG_INT32(1);
	PairsRun   *run;
	MemoryContext cxt;

	simhash_init_materialized_srf(fcinfo);
	cxt = AllocSetContextCreate(rsinfo->econtext->ecxt_per_query_memory, "simhash pairs",
								ALLOCSET_DEFAULT_SIZES);
	run = MemoryContextAllocZero(cxt, sizeof(PairsRun));
	run->fname = clusters ? "simhash_clusters" : "simhash_pairs";
	run->clusters = clusters;
	run->k = k;
	run->limit = (Size) work_mem * 1024;
	run->cxt = cxt;
	run->part_cxt = AllocSetContextCreate(cxt, "simhash pairs partition", ALLOCSET_DEFAULT_SIZES);
	run->tupstore = rsinfo->setResult;
	run->tupdesc = rsinfo->setDesc;
	run->start = run->last_report = GetCurrentTimestamp();
	run->batch = MemoryContextAlloc(cxt, PAIRS_BATCH * sizeof(simhash_pair));
	/* What is allocated so far (this struct, the batch) comes out of work_mem. */
	note_memory(run);
	run->limit = run->limit > run->peak ? run->limit - run->peak : 0;

	/* A bad max_distance fails before the query runs. */
	check_status(run, simhash_pair_plan_init(&run->plan, 0, k, run->errbuf, sizeof(run->errbuf)));
	run->fit_rows = rows_that_fit(run);

	read_query(run, query);

	check_status(run, simhash_pair_plan_init(&run->plan, run->n, k, run->errbuf,
											 sizeof(run->errbuf)));
	simhash_pair_plan_shape(&run->plan, &run->tables, &run->blocks, &run->agree);
	/* (The plan for the final count may need more than the plans the arrays grew with.) */
	if (run->spill == NULL && memory_needed(run, run->n) > run->limit)
	{
		start_spill(run);
		flush_spill(run);
	}
	if (run->spill)
		search_spilled(run);
	else
		search_in_memory(run);
	if (clusters)
		output_clusters(run);
	if (run->spill)
		BufFileClose(run->spill);

	ereport(DEBUG1,
			(errmsg("%s: %llu rows (%llu without a fingerprint), k = %d: %u tables (%d of %d blocks agree), %s; %llu pairs%s; peak memory %zu kB (work_mem %zu kB); %.3f s",
					run->fname, (unsigned long long) run->n,
					(unsigned long long) run->without_fp, k, run->tables, run->agree,
					run->blocks,
					run->spill ? psprintf("spilled to temporary files, %llu parts",
										  (unsigned long long) run->partitions)
					: "in memory",
					(unsigned long long) run->pairs,
					clusters ? psprintf(", %llu clusters", (unsigned long long) run->clusters_found)
					: "",
					run->peak / 1024, (Size) work_mem, seconds_since(run->start))));
	MemoryContextDelete(cxt);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(simhash_pairs);

/*
 * simhash_pairs(query text, max_distance int) -> setof (id1, id2, distance): every pair of
 * the query's rows whose fingerprints differ in at most max_distance bits, id1 < id2.
 */
Datum
simhash_pairs(PG_FUNCTION_ARGS)
{
	return pairs_or_clusters(fcinfo, false);
}

PG_FUNCTION_INFO_V1(simhash_clusters);

/*
 * simhash_clusters(query text, max_distance int) -> setof (id, cluster_id, distance): each
 * row that has a near duplicate, its connected component's smallest id, and the distance
 * of its fingerprint to that row's.
 */
Datum
simhash_clusters(PG_FUNCTION_ARGS)
{
	return pairs_or_clusters(fcinfo, true);
}
