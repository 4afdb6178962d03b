/*
 * TF-IDF fingerprints with document frequencies kept in a table the user owns:
 * simhash_tfidf(body, df regclass, tokenizer, n, min_features).
 *
 * The table (usually made by CREATE TABLE ... AS SELECT * FROM simhash_df(...)) has the
 * columns feature bigint, df bigint and docs bigint: the number of documents each feature
 * occurs in, and on every row the number of documents counted. It is read with SPI, under
 * the caller's privileges and the statement's snapshot, once per statement: the entries
 * are kept in fn_extra (16 bytes per row, in the memory of the function call, which lives
 * as long as the statement) and read again only when the snapshot changes (a PL/pgSQL loop
 * that modifies the table in between sees its changes). Reading a table makes the function
 * STABLE, so it cannot be used in an index or a generated column; and a fingerprint
 * stored from it is not recomputed when the statistics change later.
 */
#include "postgres.h"

#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "pg/options_pg.h"

/* Rows fetched from the table per batch (an interrupt check between batches). */
#define DF_FETCH_ROWS 10000

typedef struct DfCache
{
	Oid			relid;
	bool		valid;
	/* The snapshot the entries were read under. */
	TransactionId xmin;
	TransactionId xmax;
	CommandId	curcid;
	simhash_df_entry *entries;
	size_t		size;
	int64		docs;
} DfCache;

static bool
cache_is_current(const DfCache *cache, Oid relid)
{
	Snapshot	snap;

	if (cache == NULL || !cache->valid || cache->relid != relid || !ActiveSnapshotSet())
		return false;
	snap = GetActiveSnapshot();
	return snap->xmin == cache->xmin && snap->xmax == cache->xmax &&
		snap->curcid == cache->curcid;
}

/* Makes room in cache->entries (allocated in mcxt) for `more` rows; name for messages. */
static void
grow_df(DfCache *cache, MemoryContext mcxt, size_t *capacity, uint64 more, const char *name)
{
	if (cache->size + more <= *capacity)
		return;
	*capacity = Max(2 * *capacity, cache->size + more);
	if (*capacity > MaxAllocHugeSize / sizeof(simhash_df_entry))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("simhash: too many rows in document frequency table %s", name)));
	cache->entries = cache->entries == NULL
		? MemoryContextAllocHuge(mcxt, *capacity * sizeof(simhash_df_entry))
		: repalloc_huge(cache->entries, *capacity * sizeof(simhash_df_entry));
}

/*
 * Appends the rows SPI fetched (feature, df, docs) to cache: no NULL, and the same docs on
 * every row (*have_docs once one was read).
 */
static void
add_df_rows(DfCache *cache, bool *have_docs, const char *name)
{
	TupleDesc	desc = SPI_tuptable->tupdesc;

	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		bool		null_feature,
					null_df,
					null_docs;
		int64		feature = DatumGetInt64(SPI_getbinval(row, desc, 1, &null_feature));
		int64		df = DatumGetInt64(SPI_getbinval(row, desc, 2, &null_df));
		int64		docs = DatumGetInt64(SPI_getbinval(row, desc, 3, &null_docs));

		if (null_feature || null_df || null_docs)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("simhash: document frequency table %s has NULL in column feature, df or docs",
							name)));
		if (*have_docs && docs != cache->docs)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("simhash: document frequency table %s has different numbers of documents (%lld and %lld) in column docs",
							name, (long long) cache->docs, (long long) docs)));
		cache->docs = docs;
		*have_docs = true;
		cache->entries[cache->size].feature = (uint64) feature;
		cache->entries[cache->size].df = (uint64) df;
		cache->size++;
	}
}

/*
 * Reads the table into cache (allocated in mcxt) through a cursor, a batch at a time;
 * then sorts and checks it (every feature once, 1 <= df <= docs) and remembers the
 * snapshot it is valid for.
 */
static void
load_df(DfCache *cache, MemoryContext mcxt, Oid relid)
{
	char	   *relname = get_rel_name(relid);
	const char *name;
	SPIPlanPtr	plan;
	Portal		portal;
	size_t		capacity = 0;
	bool		have_docs = false;
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("simhash: relation with OID %u does not exist", relid)));
	/* Quoted, schema-qualified name: independent of the caller's search_path. */
	name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), relname);

	cache->valid = false;
	if (cache->entries != NULL)
		pfree(cache->entries);
	cache->entries = NULL;
	cache->size = 0;
	cache->docs = 0;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "simhash: SPI_connect failed");
	plan = SPI_prepare(psprintf("SELECT feature::pg_catalog.int8, df::pg_catalog.int8, "
								"docs::pg_catalog.int8 FROM %s", name), 0, NULL);
	if (plan == NULL)
		elog(ERROR, "simhash: SPI_prepare failed for the document frequencies of %s: %s", name,
			 SPI_result_code_string(SPI_result));
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, true);
	for (SPI_cursor_fetch(portal, true, DF_FETCH_ROWS); SPI_processed > 0;
		 SPI_cursor_fetch(portal, true, DF_FETCH_ROWS))
	{
		grow_df(cache, mcxt, &capacity, SPI_processed, name);
		add_df_rows(cache, &have_docs, name);
		SPI_freetuptable(SPI_tuptable);
		CHECK_FOR_INTERRUPTS();
	}
	SPI_cursor_close(portal);
	SPI_finish();

	simhash_check_status(simhash_df_prepare(cache->entries, cache->size, cache->docs, errbuf,
											sizeof(errbuf)), errbuf);
	cache->relid = relid;
	if (ActiveSnapshotSet())
	{
		Snapshot	snap = GetActiveSnapshot();

		cache->xmin = snap->xmin;
		cache->xmax = snap->xmax;
		cache->curcid = snap->curcid;
		cache->valid = true;
	}
}

PG_FUNCTION_INFO_V1(simhash_tfidf_text);

/*
 * simhash_tfidf(body text, df regclass, tokenizer text, n integer, min_features integer)
 * -> bigint: weight = occurrences * (1 + ln((1 + docs) / (1 + df))), df 0 for features
 * missing from the table.
 */
Datum
simhash_tfidf_text(PG_FUNCTION_ARGS)
{
	text	   *body = PG_GETARG_TEXT_PP(0);
	Oid			relid = PG_GETARG_OID(1);
	DfCache    *cache = (DfCache *) fcinfo->flinfo->fn_extra;
	simhash_text_options options;
	simhash_text_state state;
	SimhashFeatureBuffer buffer;
	const char *data;
	size_t		len;
	uint64		fp;
	bool		found;

	options.tokenizer = simhash_tokenizer_arg(PG_GETARG_TEXT_PP(2));
	options.n = PG_GETARG_INT32(3);
	options.weighting = SIMHASH_WEIGHTING_IDF;
	options.min_features = PG_GETARG_INT32(4);
	/* Check the options before reading the table. */
	simhash_pg_text_begin(&state, &options, false, &buffer);

	if (!cache_is_current(cache, relid))
	{
		if (cache == NULL)
		{
			cache = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(DfCache));
			fcinfo->flinfo->fn_extra = cache;
		}
		load_df(cache, fcinfo->flinfo->fn_mcxt, relid);
	}

	data = simhash_text_utf8(body, &len);
	simhash_pg_text_feed(&state, &buffer, data, len);
	found = simhash_pg_text_end(&state, &buffer, cache->entries, cache->size, cache->docs, &fp);
	if (!found)
		PG_RETURN_NULL();
	PG_RETURN_INT64((int64) fp);
}
