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
#include "pg/dedupe.h"
#include "pg/similarity.h"
#include "pg/simhash_pg.h"

/*
 * The sets column ('sets=column', with a threshold): each row's shingle set, stored by the
 * trigger so that a candidate is verified against it instead of its text being shingled
 * again. Format 1, which never changes once stored: one byte 0x01, then the set's hashes
 * (the ascending, distinct 64-bit shingle hashes simhash_jaccard compares), 8 bytes each,
 * little-endian. A set of more than STORED_SET_MAX_SHINGLES is not stored (NULL): such a
 * candidate is verified against its text, as without the column. A value that is not
 * format 1 is ignored the same way.
 */
#define STORED_SET_FORMAT 1

/* The stored form of set, or NULL when it is too large to store. */
bytea *
stored_set_bytes(SimhashShingleSet set)
{
	bytea	   *b;
	unsigned char *p;

	if (set.size > STORED_SET_MAX_SHINGLES)
		return NULL;
	b = palloc(VARHDRSZ + 1 + set.size * 8);
	SET_VARSIZE(b, VARHDRSZ + 1 + set.size * 8);
	p = (unsigned char *) VARDATA(b);
	*p++ = STORED_SET_FORMAT;
	for (size_t i = 0; i < set.size; i++)
		for (int byte = 0; byte < 8; byte++)
			*p++ = (unsigned char) (set.data[i] >> (8 * byte));
	return b;
}

/*
 * True when a value of len bytes has the size of a format-1 set: the format byte, then
 * whole 8-byte hashes, at most STORED_SET_MAX_SHINGLES of them. (What stored_set_read()
 * checks first; also checked before a value is detoasted.)
 */
static bool
stored_set_length_ok(Size len)
{
	return len >= 1 && (len - 1) % 8 == 0 && (len - 1) / 8 <= STORED_SET_MAX_SHINGLES;
}

/*
 * Reads a stored set (format 1, ascending and distinct, at most STORED_SET_MAX_SHINGLES)
 * into *set, palloc'd; false when b is not such a value.
 */
static bool
stored_set_read(bytea *b, SimhashShingleSet *set)
{
	size_t		len = VARSIZE_ANY_EXHDR(b);
	const unsigned char *p = (const unsigned char *) VARDATA_ANY(b);
	uint64	   *data;
	size_t		n;

	if (!stored_set_length_ok(len) || p[0] != STORED_SET_FORMAT)
		return false;
	n = (len - 1) / 8;
	data = palloc(sizeof(uint64) * Max(n, 1));
	p++;
	for (size_t i = 0; i < n; i++, p += 8)
	{
		uint64		h = 0;

		for (int byte = 7; byte >= 0; byte--)
			h = (h << 8) | p[byte];
		if (i > 0 && h <= data[i - 1])
		{
			pfree(data);
			return false;
		}
		data[i] = h;
	}
	set->data = data;
	set->size = n;
	return true;
}

/*
 * The set stored in sets column value sd, palloc'd into *set, when it is well-formed
 * format 1; false otherwise. Only a value of a well-formed set's size is read (at most
 * 64 kB: a longer value, which the trigger never writes, is not detoasted), and only a
 * well-formed one is believed. What the search verifies a candidate against and what the
 * table index holds for a row, alike.
 */
bool
stored_set_of(Datum sd, SimhashShingleSet *set)
{
	bytea	   *stored;
	bool		ok;

	if (!stored_set_length_ok(toast_raw_datum_size(sd) - VARHDRSZ))
		return false;
	stored = DatumGetByteaPP(sd);
	ok = stored_set_read(stored, set);
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
