/*
 * The two metrics of the simhash_dedupe trigger, chosen once when its limit is parsed
 * (parse_limit(): c->metric), in the way pgvector's HnswTypeInfo chooses a type's
 * functions once: a Hamming distance k between fingerprints, or a similarity threshold t
 * between shingle sets, found through LSH keys. Everything that differs between them
 * below the search is here: a row's keys, its lock keys, whether a candidate's keys
 * column is near, closeness for the winner rule, the messages. What is left to the
 * search and the memo is one question, c->metric->verifies: candidates are confirmed by
 * their shingle sets (threshold) or by the keys alone (distance).
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type_d.h"
#include "utils/array.h"

#include "capi/search_capi.h"
#include "pg/dedupe.h"
#include "pg/simhash_pg.h"

/* The fingerprint the trigger stores, simhash(text); false when the text has no feature. */
static bool
row_fingerprint(text *t, uint64 *fp)
{
	simhash_options options;

	simhash_default_options(&options);
	return simhash_fingerprint_text(t, &options, fp);
}

/*
 * Distance: the fingerprint, computed when missing or when the text changed (the row's
 * own otherwise). An UPDATE that changes neither text nor fingerprint makes no new near
 * duplicate.
 */
static void
distance_row_keys(DedupeConfig *c, HeapTuple tuple, HeapTuple old, TupleDesc desc,
				  RowWork *w, bool same_text)
{
	bool		fp_null = true;
	Datum		fp_datum = c->fp_attno > 0 ? heap_getattr(tuple, c->fp_attno, desc, &fp_null) : (Datum) 0;

	if (same_text && !fp_null)
	{
		bool		old_fp_null;
		Datum		old_fp = heap_getattr(old, c->fp_attno, desc, &old_fp_null);

		w->fp = (uint64) DatumGetInt64(fp_datum);
		w->unchanged = !old_fp_null && DatumGetInt64(fp_datum) == DatumGetInt64(old_fp);
		w->search = !w->unchanged;
		return;
	}
	if (fp_null || old != NULL)
	{
		fp_null = w->new_text.body == NULL || !row_fingerprint(w->new_text.body, &w->fp);
		set_column(w, c->fp_attno, fp_null ? (Datum) 0 : Int64GetDatum((int64) w->fp), fp_null);
	}
	else
		w->fp = (uint64) DatumGetInt64(fp_datum);
	w->search = !fp_null;
}

/*
 * Threshold: the LSH keys, always the text's own (whatever the row gives), with the
 * shingle set kept for verifying candidates and stored in the sets column.
 */
static void
similarity_row_keys(DedupeConfig *c, HeapTuple tuple, HeapTuple old, TupleDesc desc,
					RowWork *w, bool same_text)
{
	if (w->new_text.body != NULL)
	{
		w->new_text.set = simhash_text_shingles(w->new_text.body);
		w->nlsh = simhash_shingle_lsh_keys(w->new_text.set, w->lsh);
	}
	w->lsh_array = simhash_int8_array(w->lsh, w->nlsh);
	if (c->fp_attno > 0)
		set_column(w, c->fp_attno, PointerGetDatum(w->lsh_array), w->new_text.body == NULL);
	if (c->sets_attno > 0)
	{
		bytea	   *stored = w->new_text.body != NULL ? stored_set_bytes(w->new_text.set) : NULL;

		set_column(w, c->sets_attno, PointerGetDatum(stored), stored == NULL);
	}
	w->unchanged = same_text;
	w->search = w->nlsh > 0 && !same_text;
}

/* What the table's lock keys are keyed with (load_lock_secret()). */
static simhash_lock_secret
lock_secret(const DedupeConfig *c)
{
	simhash_lock_secret secret = {(uint32) c->root, c->lock_k0, c->lock_k1};

	return secret;
}

/* Distance: the lock keys of the fingerprint at k (core/locks.hpp). */
static size_t
distance_lock_keys(const DedupeConfig *c, uint64 fp, const int64 *lsh, int nlsh, uint32 *keys)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	simhash_lock_secret secret = lock_secret(c);
	size_t		n = 0;

	simhash_check_status(simhash_row_lock_keys(fp, c->k, &secret, keys, SIMHASH_MAX_LOCK_KEYS,
											   &n, errbuf, sizeof(errbuf)), errbuf);
	return n;
}

/* Threshold: the LSH keys folded to 32 bits (rows that share an LSH key share a lock key). */
static size_t
similarity_lock_keys(const DedupeConfig *c, uint64 fp, const int64 *lsh, int nlsh, uint32 *keys)
{
	simhash_lock_secret secret = lock_secret(c);

	StaticAssertStmt(SIMHASH_LSH_BANDS <= SIMHASH_MAX_LOCK_KEYS, "room for the LSH lock keys");
	return simhash_lsh_row_lock_keys(lsh, nlsh, &secret, keys);
}

/* The most lock keys one row takes: those of a fingerprint at k, or one per LSH band. */
static uint64
distance_lock_key_bound(const DedupeConfig *c)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	uint64		bound = 0;

	simhash_check_status(simhash_lock_key_bound(c->k, &bound, errbuf, sizeof(errbuf)), errbuf);
	return bound;
}

static uint64
similarity_lock_key_bound(const DedupeConfig *c)
{
	return SIMHASH_LSH_BANDS;
}

/* The row has keys: a fingerprint, or LSH keys (after row_keys()). */
static bool
distance_has_keys(const DedupeConfig *c, const RowWork *w, HeapTuple tuple, TupleDesc desc)
{
	return !heap_attisnull(tuple, c->fp_attno, desc);
}

static bool
similarity_has_keys(const DedupeConfig *c, const RowWork *w, HeapTuple tuple, TupleDesc desc)
{
	return w->nlsh > 0;
}

/*
 * Whether a candidate's keys column value d makes it a candidate, and its distance: within
 * k of the new row's fingerprint, or sharing an LSH key with the new row, band by band (a
 * row searched has SIMHASH_LSH_BANDS keys: simhash_shingle_lsh_keys() gives all or none).
 */
static bool
distance_keys_near(const DedupeConfig *c, uint64 fp, const int64 *lsh, int nlsh, Datum d,
				   int *distance)
{
	*distance = simhash_hamming(fp, (uint64) DatumGetInt64(d));
	return *distance <= c->k;
}

static bool
similarity_keys_near(const DedupeConfig *c, uint64 fp, const int64 *lsh, int nlsh, Datum d,
					 int *distance)
{
	int64		keys[SIMHASH_LSH_BANDS];

	*distance = 0;
	if (nlsh != SIMHASH_LSH_BANDS || !lsh_band_keys(d, keys))
		return false;
	for (int b = 0; b < SIMHASH_LSH_BANDS; b++)
		if (keys[b] == lsh[b])
			return true;
	return false;
}

/* A near duplicate's closeness for the winner rule: minus its distance, or its similarity. */
static double
distance_closeness(int distance, double similarity)
{
	return -(double) distance;
}

static double
similarity_closeness(int distance, double similarity)
{
	return similarity;
}

/* Nothing can be nearer than this near duplicate: distance 0, or similarity 1. */
static bool
distance_exact(const Found *found)
{
	return found->distance == 0;
}

static bool
similarity_exact(const Found *found)
{
	return found->similarity >= 1.0;
}

/* The target has the index its search needs: block indexes serving k, or a GIN index. */
static bool
distance_indexed(const DedupeTarget *t)
{
	return t->plan.blocks > 0;
}

static bool
similarity_indexed(const DedupeTarget *t)
{
	return OidIsValid(t->gin_index);
}

/* reject's DETAIL: how near the near duplicate is, naming its key when the caller may read it. */
static int
distance_detail(const DedupeConfig *c, const Found *found, const char *tgname)
{
	return found->key_text
		? errdetail("Key %s is at Hamming distance %d, within the %d that trigger \"%s\" allows.",
					found->key_text, found->distance, c->k, tgname)
		: errdetail("A row you cannot read is within the Hamming distance %d that trigger \"%s\" allows.",
					c->k, tgname);
}

static int
similarity_detail(const DedupeConfig *c, const Found *found, const char *tgname)
{
	return found->key_text
		? errdetail("Key %s has similarity %.3f to it, at or above the threshold %g of trigger \"%s\".",
					found->key_text, found->similarity, c->min_similarity, tgname)
		: errdetail("A row you cannot read has a similarity at or above the threshold %g of trigger \"%s\".",
					c->min_similarity, tgname);
}

/* The DETAIL of a serialization failure: a near duplicate committed after the snapshot. */
static int
distance_late_detail(DedupeConfig *c, int distance)
{
	return may_read_near_duplicate(c)
		? errdetail("A row within Hamming distance %d was committed after this transaction's snapshot was taken.",
					distance)
		: errdetail("A row you cannot read, within the Hamming distance %d that the trigger allows, was committed after this transaction's snapshot was taken.",
					c->k);
}

static int
similarity_late_detail(DedupeConfig *c, int distance)
{
	return errdetail("A row with a similarity of at least %g was committed after this transaction's snapshot was taken.",
					 c->min_similarity);
}

const DedupeMetric dedupe_distance_metric = {
	.verifies = false,
	.key_function = "simhash",
	.key_type = INT8OID,
	.key_type_name = "bigint",
	.key_what = "fingerprint",
	.row_keys = distance_row_keys,
	.lock_keys = distance_lock_keys,
	.lock_key_bound = distance_lock_key_bound,
	.has_keys = distance_has_keys,
	.keys_near = distance_keys_near,
	.closeness = distance_closeness,
	.exact = distance_exact,
	.indexed = distance_indexed,
	.detail = distance_detail,
	.late_detail = distance_late_detail,
};

const DedupeMetric dedupe_similarity_metric = {
	.verifies = true,
	.key_function = "simhash_lsh",
	.key_type = INT8ARRAYOID,
	.key_type_name = "bigint[]",
	.key_what = "keys",
	.row_keys = similarity_row_keys,
	.lock_keys = similarity_lock_keys,
	.lock_key_bound = similarity_lock_key_bound,
	.has_keys = similarity_has_keys,
	.keys_near = similarity_keys_near,
	.closeness = similarity_closeness,
	.exact = similarity_exact,
	.indexed = similarity_indexed,
	.detail = similarity_detail,
	.late_detail = similarity_late_detail,
};
