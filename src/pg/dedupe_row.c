/*
 * What a row is to the simhash_dedupe trigger, below every path that answers for it (the
 * search, the statement memo, the bulk load, the view): its text,
 * its fingerprint or LSH keys and shingle set (row_keys()), the columns the trigger sets in
 * it, its stored shingle set (the sets column's format), a keys column value read as band
 * keys.
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "catalog/pg_type_d.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "capi/search_capi.h"
#include "capi/stored_set_capi.h"
#include "pg/dedupe.h"
#include "pg/similarity.h"
#include "pg/simhash_pg.h"

/*
 * The sets column ('sets=column', with a threshold): each row's shingle set, stored by the
 * trigger so that a candidate is verified against it instead of its text being shingled
 * again, in the format of core/stored_set.hpp. A set too large to store is NULL, and a
 * value that is not a stored set is ignored: such a candidate is verified against its
 * text, as without the column.
 */

/* The stored form of set, or NULL when it is too large to store. */
bytea *
stored_set_bytes(SimhashShingleSet set)
{
	size_t		len = simhash_stored_set_size(set.size);
	bytea	   *b;

	if (len == 0)
		return NULL;
	b = palloc(VARHDRSZ + len);
	SET_VARSIZE(b, VARHDRSZ + len);
	simhash_stored_set_write(set.data, set.size, (unsigned char *) VARDATA(b));
	return b;
}

/*
 * The set stored in sets column value sd, palloc'd into *set, when it is a stored set;
 * false otherwise. Only a value of a stored set's length is detoasted (at most 64 kB: a
 * longer value, which the trigger never writes, is not), and only a well-formed one is
 * believed. What the search verifies a candidate against and what the table index holds
 * for a row, alike.
 */
bool
stored_set_of(Datum sd, SimhashShingleSet *set)
{
	bytea	   *stored;
	size_t		len;
	uint64	   *data;
	bool		ok;

	if (!simhash_stored_set_length_ok(toast_raw_datum_size(sd) - VARHDRSZ))
		return false;
	stored = DatumGetByteaPP(sd);
	len = VARSIZE_ANY_EXHDR(stored);
	data = palloc(sizeof(uint64) * Max(len / 8, 1));
	ok = simhash_stored_set_read((const unsigned char *) VARDATA_ANY(stored), len, data,
								 &set->size);
	if (ok)
		set->data = data;
	else
		pfree(data);
	if ((Pointer) stored != DatumGetPointer(sd))
		pfree(stored);
	return ok;
}

/* The text of the row, or NULL. */
text *
row_text(HeapTuple tuple, TupleDesc desc, AttrNumber attno)
{
	bool		isnull;
	Datum		d = heap_getattr(tuple, attno, desc, &isnull);

	return isnull ? NULL : DatumGetTextPP(d);
}

/* Sets column attno of the row to (value, isnull) when the trigger returns it. */
void
set_column(RowWork *w, AttrNumber attno, Datum value, bool isnull)
{
	w->cols[w->ncols] = attno;
	w->values[w->ncols] = value;
	w->nulls[w->ncols] = isnull;
	w->ncols++;
}

/* True when text x is byte-identical to the text of row b (or both are NULL). */
static bool
same_text(DedupeConfig *c, text *x, HeapTuple b, TupleDesc desc)
{
	text	   *y = row_text(b, desc, c->text_attno);

	if (x == NULL || y == NULL)
		return x == y;
	return VARSIZE_ANY_EXHDR(x) == VARSIZE_ANY_EXHDR(y) &&
		memcmp(VARDATA_ANY(x), VARDATA_ANY(y), VARSIZE_ANY_EXHDR(x)) == 0;
}

/*
 * The keys of a row (old: its previous version on UPDATE), by the metric's row_keys(): an
 * UPDATE that changes neither the text nor the keys cannot make a new near duplicate
 * (w->unchanged; the row keeps its link too).
 */
void
row_keys(DedupeConfig *c, HeapTuple tuple, HeapTuple old, TupleDesc desc, RowWork *w)
{
	w->new_text.body = row_text(tuple, desc, c->text_attno);
	c->metric->row_keys(c, tuple, old, desc, w,
						old != NULL && same_text(c, w->new_text.body, old, desc));
}

/*
 * The band keys of keys column value d into keys[0..SIMHASH_LSH_BANDS): false unless it is a
 * one-dimensional int8 array of SIMHASH_LSH_BANDS keys without NULL (such a row shares no
 * key with any row; the table index leaves it out for the same reason).
 */
bool
lsh_band_keys(Datum d, int64 *keys)
{
	ArrayType  *a = DatumGetArrayTypeP(d);
	bool		ok = ARR_NDIM(a) == 1 && ARR_ELEMTYPE(a) == INT8OID && !array_contains_nulls(a) &&
		ARR_DIMS(a)[0] == SIMHASH_LSH_BANDS;

	if (ok)
		memcpy(keys, ARR_DATA_PTR(a), sizeof(int64) * SIMHASH_LSH_BANDS);
	if ((Pointer) a != DatumGetPointer(d))
		pfree(a);
	return ok;
}
