/*
 * Verification of near duplicates: the resemblance of two texts as the Jaccard similarity
 * (or containment) of their sets of shingles of 5 normalized characters
 * (src/core/similarity.hpp).
 *
 *   simhash_jaccard(a text, b text), simhash_containment(a text, b text)
 *   simhash_shingles(body text) -> bigint[]: the set itself, to store or to pass on
 *   simhash_jaccard(a bigint[], b bigint[]), simhash_containment(a bigint[], b bigint[])
 *
 * Undefined similarities are NULL: Jaccard of two texts without characters, containment of
 * a text without characters. Sets passed as arrays must be as simhash_shingles returns them
 * (ascending as unsigned 64-bit values, distinct, no NULL): 22023, 22004 or 2202E otherwise.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "capi/similar_pairs_capi.h"
#include "capi/similarity_capi.h"
#include "pg/options_pg.h"
#include "pg/similarity.h"

typedef SimhashShingleSet ShingleSet;

ShingleSet
simhash_text_shingles(text *body)
{
	simhash_text_options options;
	uint64	   *features;
	ShingleSet	set;

	options.tokenizer = SIMHASH_TOKENIZER_CHAR;
	options.n = SIMHASH_SIMILARITY_SHINGLE;
	options.weighting = SIMHASH_WEIGHTING_BINARY;
	options.min_features = 1;
	set.size = simhash_distinct_features(body, &options, &features, NULL);
	set.data = features;
	return set;
}

/*
 * Shingles of a set processed between two interrupt checks by the digest, the LSH keys
 * and the array copies (a millisecond or two).
 */
#define SHINGLES_PER_CHECK ((size_t) 1 << 20)

/*
 * The shingle set of text argument argno. A detoasted copy of the text is freed at once: a
 * text of tens of megabytes need not stay in memory while the other argument is shingled.
 */
ShingleSet
simhash_shingles_of_arg(FunctionCallInfo fcinfo, int argno)
{
	Datum		d = PG_GETARG_DATUM(argno);
	text	   *body = PG_DETOAST_DATUM_PACKED(d);
	ShingleSet	set = simhash_text_shingles(body);

	if ((Pointer) body != DatumGetPointer(d))
		pfree(body);
	return set;
}

static ShingleSet
shingles_of_array(ArrayType *a)
{
	ShingleSet	set;

	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("simhash: a shingle set must be a one-dimensional array")));
	if (array_contains_nulls(a))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("simhash: a shingle set must not contain NULL")));
	/* int8 is pass-by-value and 8-byte aligned: the data is a plain array of 64-bit words. */
	set.data = (const uint64 *) ARR_DATA_PTR(a);
	set.size = ARR_NDIM(a) == 0 ? 0 : (size_t) ARR_DIMS(a)[0];
	return set;
}

static uint64
common_shingles(ShingleSet a, ShingleSet b)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	uint64		common = 0;

	/* polled: two sets of a hundred million shingles (bigint[] arguments) take seconds */
	simhash_check_status(simhash_shingle_overlap(a.data, a.size, b.data, b.size, &common,
												 &simhash_pg_interrupt, errbuf, sizeof(errbuf)),
						 errbuf);
	return common;
}

bool
simhash_shingle_jaccard(ShingleSet a, ShingleSet b, double *result)
{
	uint64		common;

	if (a.size == 0 && b.size == 0)
		return false;
	common = common_shingles(a, b);
	*result = (double) common / (double) (a.size + b.size - common);
	return true;
}

/* Share of a's shingles in b, false when undefined (a empty). */
static bool
containment(ShingleSet a, ShingleSet b, double *result)
{
	if (a.size == 0)
		return false;
	*result = (double) common_shingles(a, b) / (double) a.size;
	return true;
}

PG_FUNCTION_INFO_V1(simhash_jaccard_text);

/* simhash_jaccard(a text, b text) -> float8: |A ∩ B| / |A ∪ B| of their shingle sets. */
Datum
simhash_jaccard_text(PG_FUNCTION_ARGS)
{
	double		result;
	ShingleSet	a = simhash_shingles_of_arg(fcinfo, 0);

	if (!simhash_shingle_jaccard(a, simhash_shingles_of_arg(fcinfo, 1), &result))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(result);
}

PG_FUNCTION_INFO_V1(simhash_containment_text);

/* simhash_containment(a text, b text) -> float8: |A ∩ B| / |A|. */
Datum
simhash_containment_text(PG_FUNCTION_ARGS)
{
	double		result;
	ShingleSet	a = simhash_shingles_of_arg(fcinfo, 0);

	if (!containment(a, simhash_shingles_of_arg(fcinfo, 1), &result))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(result);
}

PG_FUNCTION_INFO_V1(simhash_jaccard_sets);

/* simhash_jaccard(a bigint[], b bigint[]) -> float8, for sets from simhash_shingles(). */
Datum
simhash_jaccard_sets(PG_FUNCTION_ARGS)
{
	double		result;

	if (!simhash_shingle_jaccard(shingles_of_array(PG_GETARG_ARRAYTYPE_P(0)),
				 shingles_of_array(PG_GETARG_ARRAYTYPE_P(1)), &result))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(result);
}

PG_FUNCTION_INFO_V1(simhash_containment_sets);

/* simhash_containment(a bigint[], b bigint[]) -> float8. */
Datum
simhash_containment_sets(PG_FUNCTION_ARGS)
{
	double		result;

	if (!containment(shingles_of_array(PG_GETARG_ARRAYTYPE_P(0)),
					 shingles_of_array(PG_GETARG_ARRAYTYPE_P(1)), &result))
		PG_RETURN_NULL();
	PG_RETURN_FLOAT8(result);
}

PG_FUNCTION_INFO_V1(simhash_shingles_text);

/*
 * simhash_shingles(body text) -> bigint[]: the shingle set of a text, ascending as unsigned
 * 64-bit values (the order simhash_jaccard(bigint[], bigint[]) expects); empty for a text
 * without characters.
 */
Datum
simhash_shingles_text(PG_FUNCTION_ARGS)
{
	ShingleSet	set = simhash_shingles_of_arg(fcinfo, 0);
	ArrayType  *result;
	char	   *chunk;
	Size		header = ARR_OVERHEAD_NONULLS(1);

	if (set.size > (size_t) MaxArraySize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("simhash: the text has too many shingles for an array (%zu)", set.size)));
	if (set.size == 0)
		PG_RETURN_ARRAYTYPE_P(construct_empty_array(INT8OID));

	/*
	 * The array is made in the set's own memory, not in a copy (a set of 64 million shingles
	 * is 512 MB): the chunk grows by the header, the values move up behind it a slice at a
	 * time from the end (each slice's destination is free: it was the source of the slice
	 * moved before it), and the header goes in front. As construct_array() would make it
	 * for pass-by-value, 8-byte aligned int8 without NULLs.
	 */
	chunk = repalloc_huge((void *) set.data, header + set.size * sizeof(int64));
	for (size_t end = set.size; end > 0;)
	{
		size_t		m = Min(end, SHINGLES_PER_CHECK);

		end -= m;
		memmove(chunk + header + end * sizeof(int64), chunk + end * sizeof(int64),
				m * sizeof(int64));
		CHECK_FOR_INTERRUPTS();
	}
	result = (ArrayType *) chunk;
	memset(result, 0, header);
	SET_VARSIZE(result, header + set.size * sizeof(int64));
	result->ndim = 1;
	result->dataoffset = 0;
	result->elemtype = INT8OID;
	ARR_DIMS(result)[0] = (int) set.size;
	ARR_LBOUND(result)[0] = 1;
	PG_RETURN_ARRAYTYPE_P(result);
}

int
simhash_shingle_lsh_keys(ShingleSet set, int64 *keys)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	size_t		n = 0;
	simhash_lsh_state state;

	/* In pieces (the same keys), with interrupt checks between them. */
	simhash_lsh_begin(&state);
	for (size_t done = 0; done < set.size;)
	{
		size_t		m = Min(set.size - done, SHINGLES_PER_CHECK);

		simhash_lsh_add(&state, set.data + done, m);
		done += m;
		if (done < set.size)
			CHECK_FOR_INTERRUPTS();
	}
	simhash_check_status(simhash_lsh_end(&state, keys, SIMHASH_LSH_BANDS, &n, errbuf,
										 sizeof(errbuf)),
						 errbuf);
	return (int) n;
}

/* simhash_shingle_digest of a set, in pieces with interrupt checks between them. */
static uint64
shingle_digest(ShingleSet set)
{
	uint64		state = simhash_shingle_digest_begin(set.size);

	for (size_t done = 0; done < set.size;)
	{
		size_t		m = Min(set.size - done, SHINGLES_PER_CHECK);

		state = simhash_shingle_digest_add(state, set.data + done, m);
		done += m;
		if (done < set.size)
			CHECK_FOR_INTERRUPTS();
	}
	return simhash_shingle_digest_end(state);
}


ArrayType *
simhash_int8_array(const int64 *values, int n)
{
	ArrayType  *result;
	Size		nbytes;
	int64	   *out;

	if (n <= 0)
		return construct_empty_array(INT8OID);

	/*
	 * What construct_array() makes for pass-by-value, 8-byte aligned int8 without NULLs, but
	 * copied with memcpy in slices: a shingle set of tens of millions of values is hundreds of
	 * megabytes, which construct_array() copies element by element without interrupt checks.
	 */
	nbytes = ARR_OVERHEAD_NONULLS(1) + (Size) n * sizeof(int64);
	result = (ArrayType *) palloc(nbytes);
	memset(result, 0, ARR_OVERHEAD_NONULLS(1));
	SET_VARSIZE(result, nbytes);
	result->ndim = 1;
	result->dataoffset = 0;
	result->elemtype = INT8OID;
	ARR_DIMS(result)[0] = n;
	ARR_LBOUND(result)[0] = 1;
	out = (int64 *) ARR_DATA_PTR(result);
	for (size_t done = 0; done < (size_t) n;)
	{
		size_t		m = Min((size_t) n - done, SHINGLES_PER_CHECK);

		memcpy(out + done, values + done, m * sizeof(int64));
		done += m;
		if (done < (size_t) n)
			CHECK_FOR_INTERRUPTS();
	}
	return result;
}

/* Bytes of text shingled and folded into the LSH sketch at a time (simhash_text_lsh_keys). */
#define LSH_PIECE_BYTES 8192

/*
 * The LSH keys of a text (simhash_shingle_lsh_keys() of simhash_text_shingles()), without
 * keeping its shingle set: a MinHash minimum does not care about order or repeats, so the
 * shingles of each piece of the text, as they come, are folded into the sketch and
 * forgotten; the same keys, a buffer the size of a piece's shingles (kept for the
 * session). How many (0: a text without characters).
 */
int
simhash_text_lsh_keys(text *body, int64 *keys)
{
	static uint64 *buffer = NULL;
	static size_t capacity = 0;
	simhash_text_options options;
	simhash_text_state state;
	simhash_lsh_state lsh;
	const char *data;
	size_t		len;
	size_t		n;
	size_t		nkeys = 0;
	size_t		need;
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	options.tokenizer = SIMHASH_TOKENIZER_CHAR;
	options.n = SIMHASH_SIMILARITY_SHINGLE;
	options.weighting = SIMHASH_WEIGHTING_BINARY;
	options.min_features = 1;
	simhash_check_status(simhash_text_begin(&state, &options, 1, errbuf, sizeof(errbuf)), errbuf);
	need = simhash_text_capacity_for(&state, LSH_PIECE_BYTES);
	if (capacity < need)
	{
		uint64	   *grown = MemoryContextAlloc(TopMemoryContext, need * sizeof(uint64));

		if (buffer != NULL)
			pfree(buffer);
		buffer = grown;
		capacity = need;
	}
	simhash_check_status(simhash_text_set_buffer(&state, buffer, capacity, errbuf, sizeof(errbuf)),
						 errbuf);
	data = simhash_text_utf8(body, &len);
	simhash_lsh_begin(&lsh);
	for (size_t done = 0; done < len;)
	{
		size_t		m = Min(len - done, (size_t) LSH_PIECE_BYTES);

		simhash_check_status(simhash_text_feed(&state, data + done, m, errbuf, sizeof(errbuf)),
							 errbuf);
		simhash_lsh_add(&lsh, buffer, simhash_text_size(&state));
		simhash_check_status(simhash_text_drain(&state, errbuf, sizeof(errbuf)), errbuf);
		done += m;
		if ((done & 0xFFFF) < LSH_PIECE_BYTES)
			CHECK_FOR_INTERRUPTS();
	}
	simhash_check_status(simhash_text_collected(&state, &n, errbuf, sizeof(errbuf)), errbuf);
	simhash_lsh_add(&lsh, buffer, n);
	simhash_check_status(simhash_lsh_end(&lsh, keys, SIMHASH_LSH_BANDS, &nkeys, errbuf,
										 sizeof(errbuf)),
						 errbuf);
	return (int) nkeys;
}

PG_FUNCTION_INFO_V1(simhash_lsh_text);

/*
 * simhash_lsh(body text) -> bigint[]: the MinHash LSH keys of a text's shingle set
 * (src/core/minhash.hpp), SIMHASH_LSH_BANDS of them; empty for a text without characters.
 * Texts with similarity t share at least one key with probability about 1 - (1 - t^5)^20.
 */
Datum
simhash_lsh_text(PG_FUNCTION_ARGS)
{
	Datum		d = PG_GETARG_DATUM(0);
	text	   *body = PG_DETOAST_DATUM_PACKED(d);
	int64		keys[SIMHASH_LSH_BANDS];
	int			n = simhash_text_lsh_keys(body, keys);

	if ((Pointer) body != DatumGetPointer(d))
		pfree(body);
	PG_RETURN_ARRAYTYPE_P(simhash_int8_array(keys, n));
}

PG_FUNCTION_INFO_V1(simhash_shingle_digest_text);

/*
 * simhash_shingle_digest(body text) -> bigint: a 64-bit digest of the text's shingle set,
 * equal for texts whose shingle sets are equal (similarity 1); NULL for a text without
 * characters.
 */
Datum
simhash_shingle_digest_text(PG_FUNCTION_ARGS)
{
	ShingleSet	set = simhash_shingles_of_arg(fcinfo, 0);
	uint64		digest;

	if (set.size == 0)
		PG_RETURN_NULL();
	digest = shingle_digest(set);
	pfree((void *) set.data);
	PG_RETURN_INT64((int64) digest);
}

PG_FUNCTION_INFO_V1(simhash_shingle_summary);

/*
 * simhash_shingle_summary(body text, OUT digest bigint, OUT keys bigint[]): the digest and
 * the LSH keys of a text's shingle set from one shingling (both NULL for a text without
 * characters). simhash_similar_pairs groups by the digest and joins on the keys.
 */
Datum
simhash_shingle_summary(PG_FUNCTION_ARGS)
{
	ShingleSet	set = simhash_shingles_of_arg(fcinfo, 0);
	TupleDesc	desc;
	Datum		values[2];
	bool		nulls[2] = {true, true};

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "simhash_shingle_summary: return type must be a row type");
	if (set.size > 0)
	{
		int64		keys[SIMHASH_LSH_BANDS];
		int			n = simhash_shingle_lsh_keys(set, keys);

		values[0] = Int64GetDatum((int64) shingle_digest(set));
		values[1] = PointerGetDatum(simhash_int8_array(keys, n));
		nulls[0] = nulls[1] = false;
	}
	pfree((void *) set.data);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

PG_FUNCTION_INFO_V1(simhash_lsh_set);

/* simhash_lsh(shingles bigint[]) -> bigint[]: the same from a set of simhash_shingles(). */
Datum
simhash_lsh_set(PG_FUNCTION_ARGS)
{
	int64		keys[SIMHASH_LSH_BANDS];
	int			n = simhash_shingle_lsh_keys(shingles_of_array(PG_GETARG_ARRAYTYPE_P(0)), keys);

	PG_RETURN_ARRAYTYPE_P(simhash_int8_array(keys, n));
}

void
simhash_check_min_similarity(double t)
{
	if (!(t > 0 && t <= 1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash: min_similarity must be in (0, 1], got %s",
						DatumGetCString(DirectFunctionCall1(float8out, Float8GetDatum(t))))));
}

int
simhash_similar_recipes_for(double t, SimhashRecipe *recipes)
{
	simhash_similar_recipe out[SIMHASH_MAX_RECIPES];
	size_t		count;
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	simhash_check_min_similarity(t);
	simhash_check_status(simhash_similar_recipe_list(t, out, SIMHASH_MAX_RECIPES, &count, errbuf,
													 sizeof(errbuf)), errbuf);
	for (size_t i = 0; i < count; i++)
	{
		recipes[i].lsh = out[i].lsh != 0;
		recipes[i].tokenizer = out[i].tokenizer;
		recipes[i].n = out[i].n;
		recipes[i].max_distance = out[i].max_distance;
	}
	return (int) count;
}

PG_FUNCTION_INFO_V1(simhash_similar_recipes);

/*
 * simhash_similar_recipes(min_similarity float8) -> TABLE(candidates text, tokenizer text,
 * n int, max_distance int): the calibration table's rows for a threshold.
 */
Datum
simhash_similar_recipes(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SimhashRecipe recipes[SIMHASH_MAX_RECIPES];
	int			count = simhash_similar_recipes_for(PG_GETARG_FLOAT8(0), recipes);

	simhash_init_materialized_srf(fcinfo);
	for (int i = 0; i < count; i++)
	{
		Datum		values[4];
		bool		nulls[4] = {false, false, false, recipes[i].lsh};

		values[0] = CStringGetTextDatum(recipes[i].lsh ? "lsh" : "simhash");
		values[1] = CStringGetTextDatum(recipes[i].tokenizer == SIMHASH_TOKENIZER_CHAR ? "char" : "word");
		values[2] = Int32GetDatum(recipes[i].n);
		values[3] = Int32GetDatum(recipes[i].max_distance);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
