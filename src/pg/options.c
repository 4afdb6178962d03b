/*
 * Fingerprints with options: simhash(body, tokenizer, n, weighting, min_features) and
 * simhash_features(body, tokenizer, n). Also the helpers options_pg.h declares for the
 * other option-based functions.
 *
 * The core is reached only through the C ABI (capi/text_options_capi.h); errors are raised
 * here after the C ABI call has returned. Every function here is IMMUTABLE: the options
 * are arguments, never settings.
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/tuplestore.h"

#include "pg/options_pg.h"

/* Text is fed in chunks of at most this size ... */
#define OPTIONS_CHUNK_BYTES (64 * 1024)
/* ... and the buffer grows when it has room for fewer than this many bytes. */
#define OPTIONS_MIN_CHUNK_BYTES 1024
/*
 * Collected features are sorted in slices of this much work (simhash_text_sort: a feature
 * counted or moved is one unit), a few milliseconds each, with an interrupt check between
 * slices; 64 million features take about 3 s to sort.
 */
#define SORT_SLICE_WORK ((size_t) 1 << 20)
/* A buffer this much larger than the distinct features it ends with is shrunk to them. */
#define SHRINK_MIN_BYTES ((size_t) 1 << 20)

int32
simhash_tokenizer_arg(text *name)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	int32		code = 0;
	simhash_status status;

	status = simhash_parse_tokenizer(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name), &code,
									 errbuf, sizeof(errbuf));
	if (status != SIMHASH_OK)
		simhash_raise_status(status, errbuf);
	return code;
}

int32
simhash_weighting_arg(text *name)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	int32		code = 0;
	simhash_status status;

	status = simhash_parse_weighting(VARDATA_ANY(name), VARSIZE_ANY_EXHDR(name), 0, &code,
									 errbuf, sizeof(errbuf));
	if (status != SIMHASH_OK)
		simhash_raise_status(status, errbuf);
	return code;
}

/*
 * The most features one call collects (the weightings other than 'tf', simhash_features,
 * TF-IDF): 512 MB of them. A normalized character can expand to 18 (U+FDFA), so without a
 * bound a 75 MB text took 3 GB; 'tf' streams in constant memory and needs none.
 */
#define MAX_COLLECTED_FEATURES ((size_t) 1 << 26)

/* Gives the core a buffer of at least `need` features, keeping what it holds. */
static void
grow_buffer(simhash_text_state *state, SimhashFeatureBuffer *buffer, size_t need)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	simhash_status status;
	size_t		capacity = need;

	if (need <= buffer->capacity)
		return;
	if (need > MAX_COLLECTED_FEATURES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("simhash: the text has too many features to collect (the limit is %zu)",
						(size_t) MAX_COLLECTED_FEATURES),
				 errdetail("Every feature of the text is held in memory, 8 bytes each: by the weightings other than 'tf', simhash_features, simhash_tfidf and the shingle sets of simhash_shingles, simhash_lsh, simhash_jaccard, simhash_containment and the dedupe trigger's threshold."),
				 errhint("Split the text; for a fingerprint, the weighting 'tf' streams and has no limit.")));
	if (capacity < 2 * buffer->capacity)
		capacity = Min(2 * buffer->capacity, MAX_COLLECTED_FEATURES);
	if (buffer->data == NULL)
		buffer->data = MemoryContextAllocHuge(CurrentMemoryContext, capacity * sizeof(uint64));
	else
		buffer->data = repalloc_huge(buffer->data, capacity * sizeof(uint64));
	buffer->capacity = capacity;
	status = simhash_text_set_buffer(state, buffer->data, buffer->capacity, errbuf,
									 sizeof(errbuf));
	if (status != SIMHASH_OK)
		simhash_raise_status(status, errbuf);
}

void
simhash_pg_text_begin(simhash_text_state *state, const simhash_text_options *options,
				   bool collect, SimhashFeatureBuffer *buffer)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	simhash_status status;

	buffer->data = NULL;
	buffer->capacity = 0;
	status = simhash_text_begin(state, options, collect ? 1 : 0, errbuf, sizeof(errbuf));
	if (status != SIMHASH_OK)
		simhash_raise_status(status, errbuf);
	if (simhash_text_feed_limit(state) != SIZE_MAX)
		grow_buffer(state, buffer, simhash_text_capacity_for(state, 0));
}

void
simhash_pg_text_feed(simhash_text_state *state, SimhashFeatureBuffer *buffer,
					  const char *data, size_t len)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	simhash_status status;
	size_t		done = 0;
	bool		collecting = simhash_text_feed_limit(state) != SIZE_MAX;

	while (done < len)
	{
		size_t		want = Min(len - done, (size_t) (collecting ? OPTIONS_CHUNK_BYTES
													 : SIMHASH_CHUNK_BYTES));
		size_t		n = want;

		if (collecting)
		{
			size_t		limit = simhash_text_feed_limit(state);

			if (limit < Min(want, (size_t) OPTIONS_MIN_CHUNK_BYTES))
			{
				grow_buffer(state, buffer, simhash_text_capacity_for(state, want));
				limit = simhash_text_feed_limit(state);
			}
			n = Min(want, limit);
		}
		status = simhash_text_feed(state, data + done, n, errbuf, sizeof(errbuf));
		if (status != SIMHASH_OK)
			simhash_raise_status(status, errbuf);
		done += n;
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Ends the text of a collecting state and sorts its features in slices, checking for
 * interrupts between them (the sort state is plain data: a cancel between slices leaves
 * nothing to clean up). simhash_text_end() and simhash_text_distinct() then do not sort.
 */
static void
sort_collected(simhash_text_state *state, SimhashFeatureBuffer *buffer)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	simhash_sort_state *sort;
	int32		finished = 0;

	simhash_text_reserve(state, buffer, 0);
	/* A short text's features sort in one slice: no need for the 19 kB of sort state. */
	if (simhash_text_size(state) <= SORT_SLICE_WORK / 2)
		return;
	sort = palloc(sizeof(simhash_sort_state));
	while (!finished)
	{
		simhash_check_status(simhash_text_sort(state, sort, SORT_SLICE_WORK, &finished, errbuf,
											   sizeof(errbuf)),
							 errbuf);
		CHECK_FOR_INTERRUPTS();
	}
	pfree(sort);
}

void
simhash_text_reserve(simhash_text_state *state, SimhashFeatureBuffer *buffer, size_t features)
{
	size_t		need = simhash_text_capacity_for(state, 0) + features;

	if (need > buffer->capacity)
		grow_buffer(state, buffer, need);
}

bool
simhash_pg_text_end(simhash_text_state *state, SimhashFeatureBuffer *buffer,
					const simhash_df_entry *df, size_t df_size, int64 docs, uint64 *fingerprint)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	simhash_status status;

	simhash_text_reserve(state, buffer, 0);
	if (simhash_text_feed_limit(state) != SIZE_MAX)
		sort_collected(state, buffer);
	status = simhash_text_end(state, df, df_size, docs, fingerprint, NULL, errbuf,
							  sizeof(errbuf));
	if (buffer->data != NULL)
	{
		pfree(buffer->data);
		buffer->data = NULL;
		buffer->capacity = 0;
	}
	if (status == SIMHASH_NO_FEATURES)
		return false;
	if (status != SIMHASH_OK)
		simhash_raise_status(status, errbuf);
	return true;
}

bool
simhash_text_fingerprint(text *body, const simhash_text_options *options, uint64 *fingerprint)
{
	simhash_text_state state;
	SimhashFeatureBuffer buffer;
	const char *data;
	size_t		len;

	simhash_pg_text_begin(&state, options, false, &buffer);
	data = simhash_text_utf8(body, &len);
	simhash_pg_text_feed(&state, &buffer, data, len);
	return simhash_pg_text_end(&state, &buffer, NULL, 0, 0, fingerprint);
}

PG_FUNCTION_INFO_V1(simhash_text_with_options);

/*
 * simhash(body text, tokenizer text, n integer, weighting text, min_features integer)
 * -> bigint: the fingerprint with options; NULL below min_features features.
 */
Datum
simhash_text_with_options(PG_FUNCTION_ARGS)
{
	simhash_text_options options;
	uint64		fp;

	options.tokenizer = simhash_tokenizer_arg(PG_GETARG_TEXT_PP(1));
	options.n = PG_GETARG_INT32(2);
	options.weighting = simhash_weighting_arg(PG_GETARG_TEXT_PP(3));
	options.min_features = PG_GETARG_INT32(4);

	if (!simhash_text_fingerprint(PG_GETARG_TEXT_PP(0), &options, &fp))
		PG_RETURN_NULL();
	/* The unsigned fingerprint's bits, reinterpreted as a two's complement bigint. */
	PG_RETURN_INT64((int64) fp);
}

size_t
simhash_distinct_features(text *body, const simhash_text_options *options, uint64 **features,
						  uint64 **counts)
{
	simhash_text_state state;
	SimhashFeatureBuffer buffer;
	const char *data;
	size_t		len;
	size_t		distinct = 0;
	uint64	   *occurrences;
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	simhash_status status;

	simhash_pg_text_begin(&state, options, true, &buffer);
	data = simhash_text_utf8(body, &len);
	simhash_pg_text_feed(&state, &buffer, data, len);
	/* Room for the features the end of the text may still add, then the sort. */
	sort_collected(&state, &buffer);
	if (counts == NULL)
	{
		/* A set needs no numbers of occurrences: no second buffer as large as the first. */
		status = simhash_text_distinct(&state, NULL, 0, &distinct, errbuf, sizeof(errbuf));
		simhash_check_status(status, errbuf);
		/* What the caller keeps is the distinct features only (a repetitive text has few). */
		if ((buffer.capacity - distinct) * sizeof(uint64) >= SHRINK_MIN_BYTES)
			buffer.data = repalloc_huge(buffer.data, Max(distinct, 1) * sizeof(uint64));
	}
	else
	{
		occurrences = MemoryContextAllocHuge(CurrentMemoryContext,
											 (buffer.capacity + 1) * sizeof(uint64));
		status = simhash_text_distinct(&state, occurrences, buffer.capacity, &distinct, errbuf,
									   sizeof(errbuf));
		simhash_check_status(status, errbuf);
		*counts = occurrences;
	}
	*features = buffer.data;
	return distinct;
}

PG_FUNCTION_INFO_V1(simhash_features_of_text);

/*
 * simhash_features(body text, tokenizer text, n integer)
 * -> SETOF (feature bigint, count bigint): the distinct features of a text and how often
 * each occurs, in ascending order of the unsigned feature hash.
 */
Datum
simhash_features_of_text(PG_FUNCTION_ARGS)
{
	text	   *body = PG_GETARG_TEXT_PP(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	simhash_text_options options;
	uint64	   *features;
	uint64	   *counts;
	size_t		distinct;
	size_t		i;

	options.tokenizer = simhash_tokenizer_arg(PG_GETARG_TEXT_PP(1));
	options.n = PG_GETARG_INT32(2);
	options.weighting = SIMHASH_WEIGHTING_TF;
	options.min_features = 1;

	simhash_init_materialized_srf(fcinfo);
	distinct = simhash_distinct_features(body, &options, &features, &counts);
	for (i = 0; i < distinct; i++)
	{
		Datum		values[2];
		bool		nulls[2] = {false, false};

		values[0] = Int64GetDatum((int64) features[i]);
		values[1] = Int64GetDatum((int64) counts[i]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		if (i % 65536 == 65535)
			CHECK_FOR_INTERRUPTS();
	}
	pfree(counts);
	pfree(features);
	return (Datum) 0;
}
