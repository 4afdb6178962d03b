/*
 * Caller-supplied features: simhash(features text[], min_features) and
 * simhash(features text[], weights float8[], min_features), for people who segment text
 * themselves (jieba for Chinese, say) or weight terms by their own rules.
 *
 * A feature's hash is XXH3 of its UTF-8 bytes as given: no normalization, no tokenizing.
 * Errors: a NULL element 22004; arrays of more than one dimension or of different lengths
 * 2202E (as PostgreSQL's own functions that pair two arrays); weights that are NaN,
 * infinite or negative 22023.
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "pg/options_pg.h"

/* An interrupt check every this many features. */
#define FEATURES_PER_CHECK 65536

/* The length of a one-dimensional (or empty) array; 2202E for more dimensions. */
static int
array_length_1d(ArrayType *a, const char *what)
{
	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
				 errmsg("simhash: %s must be a one-dimensional array", what)));
	return ARR_NDIM(a) == 0 ? 0 : ARR_DIMS(a)[0];
}

/* The fingerprint of features with the given weights (NULL: all 1). */
static bool
fingerprint_features(ArrayType *features, ArrayType *weights, int32 min_features, uint64 *fp)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	simhash_status status;
	simhash_features_state state;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;
	const double *w = NULL;
	double		max_weight = 1.0;

	n = array_length_1d(features, "features");
	if (weights != NULL)
	{
		int			m = array_length_1d(weights, "weights");

		if (m != n)
			ereport(ERROR,
					(errcode(ERRCODE_ARRAY_SUBSCRIPT_ERROR),
					 errmsg("simhash: features and weights have different lengths (%d and %d)",
							n, m)));
		if (array_contains_nulls(weights))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("simhash: weights must not contain NULL")));
		/* float8 is pass-by-value and 8-byte aligned: the data is a plain double array. */
		w = (const double *) ARR_DATA_PTR(weights);
		status = simhash_weights_check(w, (size_t) n, &max_weight, errbuf, sizeof(errbuf));
		if (status != SIMHASH_OK)
			simhash_raise_status(status, errbuf);
	}

	deconstruct_array(features, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
	status = simhash_features_begin(&state, max_weight, errbuf, sizeof(errbuf));
	if (status != SIMHASH_OK)
		simhash_raise_status(status, errbuf);
	for (i = 0; i < n; i++)
	{
		const char *data;
		size_t		len;

		if (nulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("simhash: features must not contain NULL")));
		data = simhash_text_utf8(DatumGetTextPP(elems[i]), &len);
		status = simhash_features_add(&state, data, len, w != NULL ? w[i] : 1.0, errbuf,
									  sizeof(errbuf));
		if (status != SIMHASH_OK)
			simhash_raise_status(status, errbuf);
		if (i % FEATURES_PER_CHECK == FEATURES_PER_CHECK - 1)
			CHECK_FOR_INTERRUPTS();
	}
	status = simhash_features_end(&state, min_features, fp, errbuf, sizeof(errbuf));
	if (status == SIMHASH_NO_FEATURES)
		return false;
	if (status != SIMHASH_OK)
		simhash_raise_status(status, errbuf);
	return true;
}

PG_FUNCTION_INFO_V1(simhash_feature_array);

/* simhash(features text[], min_features integer) -> bigint: every feature weight 1. */
Datum
simhash_feature_array(PG_FUNCTION_ARGS)
{
	uint64		fp;

	if (!fingerprint_features(PG_GETARG_ARRAYTYPE_P(0), NULL, PG_GETARG_INT32(1), &fp))
		PG_RETURN_NULL();
	PG_RETURN_INT64((int64) fp);
}

PG_FUNCTION_INFO_V1(simhash_weighted_feature_array);

/* simhash(features text[], weights float8[], min_features integer) -> bigint. */
Datum
simhash_weighted_feature_array(PG_FUNCTION_ARGS)
{
	uint64		fp;

	if (!fingerprint_features(PG_GETARG_ARRAYTYPE_P(0), PG_GETARG_ARRAYTYPE_P(1),
							  PG_GETARG_INT32(2), &fp))
		PG_RETURN_NULL();
	PG_RETURN_INT64((int64) fp);
}
