/*
 * The similarity operators and the GIN operator class simhash_ops on text:
 *
 *   body %~ q     true when simhash_jaccard(body, q) >= simhash.similarity_threshold
 *   body <%> q    1 - simhash_jaccard(body, q): the Jaccard distance, for ORDER BY
 *   a <~> b       hamming(a, b) of two bigint fingerprints (the function of 0.1)
 *
 *   CREATE INDEX ... USING gin (body simhash_ops)
 *
 * The index keys of a text are its 20 MinHash LSH keys (simhash_lsh(body), src/core/minhash);
 * a search looks up the keys of q and rechecks each candidate with the operator itself, so
 * every row returned is exact, and the rows missed are those LSH misses (texts of
 * similarity >= 0.7 that share no key: docs/verified.md). Below 0.7 the keys are not
 * calibrated: the search then reads the whole index and rechecks every row, so the answer
 * equals a sequential scan's (and the planner, seeing a full index scan, prefers the scan).
 */
#include "postgres.h"

#include "access/gin.h"
#include "access/stratnum.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "capi/similarity_capi.h"
#include "pg/simhash_pg.h"
#include "pg/similarity.h"


/*
 * The shingle set of the query argument, kept in fn_extra across the rows of a scan: the
 * query text is usually the same constant for every row. Replaced (the old one freed) when
 * the text changes, as in a join.
 */
typedef struct QueryCache
{
	Size		len;
	char	   *bytes;
	SimhashShingleSet set;
} QueryCache;

static SimhashShingleSet
query_shingles(FunctionCallInfo fcinfo, int argno)
{
	text	   *q = PG_GETARG_TEXT_PP(argno);
	Size		len = VARSIZE_ANY_EXHDR(q);
	QueryCache *cache = (QueryCache *) fcinfo->flinfo->fn_extra;
	SimhashShingleSet set;
	uint64	   *copy;

	if (cache != NULL && cache->len == len && memcmp(cache->bytes, VARDATA_ANY(q), len) == 0)
		return cache->set;

	set = simhash_text_shingles(q);
	if (cache == NULL)
	{
		cache = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(QueryCache));
		fcinfo->flinfo->fn_extra = cache;
	}
	if (cache->bytes != NULL)
		pfree(cache->bytes);
	if (cache->set.data != NULL)
		pfree((void *) cache->set.data);
	cache->bytes = NULL;
	cache->set.data = NULL;
	cache->set.size = 0;
	cache->len = 0;

	copy = MemoryContextAllocHuge(fcinfo->flinfo->fn_mcxt, Max(set.size, 1) * sizeof(uint64));
	memcpy(copy, set.data, set.size * sizeof(uint64));
	pfree((void *) set.data);
	cache->bytes = MemoryContextAllocHuge(fcinfo->flinfo->fn_mcxt, Max(len, 1));
	memcpy(cache->bytes, VARDATA_ANY(q), len);
	cache->len = len;
	cache->set.data = copy;
	cache->set.size = set.size;
	return cache->set;
}

PG_FUNCTION_INFO_V1(simhash_similar_op);

/*
 * simhash_similar_op(body text, q text) -> boolean, the operator %~: simhash_jaccard(body,
 * q) >= simhash.similarity_threshold; false when the similarity is undefined (two texts
 * without characters). STABLE: it reads a setting.
 */
Datum
simhash_similar_op(PG_FUNCTION_ARGS)
{
	double		t = simhash_similarity_threshold;
	SimhashShingleSet q = query_shingles(fcinfo, 1);
	SimhashShingleSet a;
	double		j;
	bool		result;

	/* Read only as far as it can reach t (verify.c): a GIN scan's recheck of each row. */
	if (t > 0)
		PG_RETURN_BOOL(simhash_text_reaches(PG_GETARG_DATUM(0), NULL, q, t, &j, NULL));
	a = simhash_shingles_of_arg(fcinfo, 0);
	result = simhash_shingle_jaccard(a, q, &j) && j >= t;
	pfree((void *) a.data);
	PG_RETURN_BOOL(result);
}

PG_FUNCTION_INFO_V1(simhash_jaccard_distance);

/*
 * simhash_jaccard_distance(body text, q text) -> float8, the operator <%>: 1 -
 * simhash_jaccard(body, q); NULL for two texts without characters.
 */
Datum
simhash_jaccard_distance(PG_FUNCTION_ARGS)
{
	SimhashShingleSet q = query_shingles(fcinfo, 1);
	SimhashShingleSet a = simhash_shingles_of_arg(fcinfo, 0);
	double		j;
	bool		defined = simhash_shingle_jaccard(a, q, &j);

	pfree((void *) a.data);
	if (!defined)
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(1.0 - j);
}

/* The LSH keys of a text as GIN keys (none for a text without characters). */
static Datum *
lsh_key_datums(text *body, int32 *nkeys)
{
	int64		keys[SIMHASH_LSH_BANDS];
	int			n = simhash_text_lsh_keys(body, keys);
	Datum	   *datums = NULL;

	if (n > 0)
	{
		datums = palloc(sizeof(Datum) * n);
		for (int i = 0; i < n; i++)
			datums[i] = Int64GetDatum(keys[i]);
	}
	*nkeys = n;
	return datums;
}

PG_FUNCTION_INFO_V1(simhash_gin_extract_value);

/* GIN extractValue(text, internal nkeys, internal nullFlags) -> the LSH keys of a row. */
Datum
simhash_gin_extract_value(PG_FUNCTION_ARGS)
{
	text	   *body = PG_GETARG_TEXT_PP(0);
	int32	   *nkeys = (int32 *) PG_GETARG_POINTER(1);

	PG_RETURN_POINTER(lsh_key_datums(body, nkeys));
}

PG_FUNCTION_INFO_V1(simhash_gin_extract_query);

/*
 * GIN extractQuery(text, internal nkeys, int2 strategy, internal, internal, internal,
 * internal searchMode) -> the LSH keys of q; from a threshold below
 * SIMHASH_LSH_MIN_SIMILARITY, no key and a full index scan (every row rechecked).
 */
Datum
simhash_gin_extract_query(PG_FUNCTION_ARGS)
{
	text	   *q = PG_GETARG_TEXT_PP(0);
	int32	   *nkeys = (int32 *) PG_GETARG_POINTER(1);
	StrategyNumber strategy = PG_GETARG_UINT16(2);
	int32	   *searchMode = (int32 *) PG_GETARG_POINTER(6);

	if (strategy != SIMHASH_SIMILAR_STRATEGY)
		elog(ERROR, "simhash_ops: unknown strategy %d", strategy);
	if (simhash_similarity_threshold < SIMHASH_LSH_MIN_SIMILARITY)
	{
		*nkeys = 0;
		*searchMode = GIN_SEARCH_MODE_ALL;
		PG_RETURN_POINTER(NULL);
	}
	/* No key (q without characters): GIN returns no row, as %~ is then false. */
	PG_RETURN_POINTER(lsh_key_datums(q, nkeys));
}

PG_FUNCTION_INFO_V1(simhash_gin_consistent);

/*
 * GIN consistent(internal check, int2, text, int4 nkeys, internal, internal recheck,
 * internal, internal) -> boolean: a candidate when it shares a key with q (or, in a full
 * index scan, always); always rechecked.
 */
Datum
simhash_gin_consistent(PG_FUNCTION_ARGS)
{
	bool	   *check = (bool *) PG_GETARG_POINTER(0);
	int32		nkeys = PG_GETARG_INT32(3);
	bool	   *recheck = (bool *) PG_GETARG_POINTER(5);

	*recheck = true;
	if (nkeys == 0)
		PG_RETURN_BOOL(true);
	for (int32 i = 0; i < nkeys; i++)
		if (check[i])
			PG_RETURN_BOOL(true);
	PG_RETURN_BOOL(false);
}

PG_FUNCTION_INFO_V1(simhash_gin_triconsistent);

/*
 * GIN triConsistent(internal check, int2, text, int4 nkeys, internal, internal, internal)
 * -> "char": maybe when a key may match (never true: the operator decides), else false.
 */
Datum
simhash_gin_triconsistent(PG_FUNCTION_ARGS)
{
	GinTernaryValue *check = (GinTernaryValue *) PG_GETARG_POINTER(0);
	int32		nkeys = PG_GETARG_INT32(3);

	if (nkeys == 0)
		PG_RETURN_GIN_TERNARY_VALUE(GIN_MAYBE);
	for (int32 i = 0; i < nkeys; i++)
		if (check[i] != GIN_FALSE)
			PG_RETURN_GIN_TERNARY_VALUE(GIN_MAYBE);
	PG_RETURN_GIN_TERNARY_VALUE(GIN_FALSE);
}
