/*
 * simhash_dedupe(): a BEFORE INSERT OR UPDATE row trigger that keeps near duplicates out of
 * a table, or links them to the row they duplicate.
 *
 *   CREATE TRIGGER docs_dedupe BEFORE INSERT OR UPDATE OF body ON docs FOR EACH ROW
 *       EXECUTE FUNCTION simhash_dedupe('body', 'fp', 'k=3', 'reject');
 *
 * Arguments: the text column, the key column, the limit, the policy (reject | skip | link),
 * for link the column that receives the primary key of the existing near duplicate, and,
 * last and only with a threshold, optionally 'sets=column': a bytea column where the
 * trigger stores each row's shingle set (stored_set_bytes() below), against which
 * candidates are then verified. Checked at CREATE TRIGGER too (dedupe_check.c). Two kinds
 * of limit (see parse_limit(): 'k=3' or 'similarity=0.8'; the older '3' and '0.8'):
 *   - a Hamming distance k (0..16): near duplicates are rows whose fingerprints lie within
 *     k bits; the key column is a bigint, filled with simhash(text) when it is NULL or the
 *     text changed, searched through the block indexes of simhash_create_index();
 *   - a similarity threshold (0.7..1): near duplicates are rows whose simhash_jaccard
 *     with the new text is at least the threshold; the key column is a bigint[] that the
 *     trigger always fills with simhash_lsh(text), searched through a GIN index on it
 *     (candidates: rows sharing a key), every candidate verified.
 *
 * Concurrency. Before looking for near duplicates, the trigger takes transaction-scoped
 * advisory locks on the new row's lock keys, in ascending order: with a distance, those of
 * its fingerprint (core/locks.hpp: fingerprints within k bits always share a key); with a
 * threshold, its LSH keys (a row is a candidate exactly when it shares one). A concurrent writer of a near duplicate
 * holds one of those keys until it commits, so we wait for it and then see its row: the
 * search runs on a snapshot taken after the locks (plus CommandCounterIncrement, so rows
 * of the same statement count too). Under REPEATABLE READ and SERIALIZABLE, a near
 * duplicate that this newest snapshot sees but the transaction's snapshot does not was
 * committed (or updated) concurrently: reject reports it (23505) under REPEATABLE READ,
 * as a unique index would, and skip, link, and reject under SERIALIZABLE raise a
 * serialization failure (40001); never a silent duplicate. Writers of unrelated
 * fingerprints share a key only by chance.
 *
 * A transaction that writes many rows would hold many locks; past BULK_LOCKS of them on
 * one table (or half the budget below, if that is less), the trigger tries (without
 * waiting, so it cannot deadlock) to take SHARE ROW EXCLUSIVE on the table, which keeps
 * every other writer out; once it holds that lock, or the user took it (or SHARE, which
 * keeps writers out too) with LOCK TABLE before a bulk load, no advisory lock is needed.
 * If another writer keeps the table busy until this transaction has taken a quarter of
 * the shared lock table (lock_budget()), the trigger waits for the table lock. All this only for a role that LOCK TABLE would let
 * take that lock (UPDATE, DELETE or TRUNCATE on the table); any other keeps to advisory
 * locks and, past the budget, is refused (dedupe_locks.c).
 *
 * The search uses the block indexes of simhash_create_index() directly (one B-tree probe
 * per block value, through the planner's own choice of radii), or the GIN index of the LSH
 * keys (one bitmap scan); without them it reads the whole table, and says so in a NOTICE
 * once per session. Like a unique index, it sees every
 * row of the table, whatever the caller's privileges and row-level security policies; a
 * message shows the other row's key, distance or similarity only to callers allowed to
 * read its key, text and key columns (may_read_near_duplicate() in dedupe_search.c).
 *
 * The code is split by step (dedupe.h maps the files): this file holds the entry point,
 * the keys of a row, the search of every target under the locks, and the policies.
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "access/xact.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "capi/search_capi.h"
#include "pg/dedupe.h"
#include "pg/similarity.h"
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
 * The keys of a row (old: its previous version on UPDATE). A fingerprint is computed when
 * missing or when the text changed; LSH keys always (they are the text's own, whatever the
 * row gives), with the shingle set kept for verifying candidates. An UPDATE that changes
 * neither the text nor the fingerprint cannot make a new near duplicate: w->unchanged (the
 * row keeps its link too).
 */
void
row_keys(DedupeConfig *c, HeapTuple tuple, HeapTuple old, TupleDesc desc, RowWork *w)
{
	bool		fp_null;
	Datum		fp_datum = heap_getattr(tuple, c->fp_attno, desc, &fp_null);
	bool		unchanged;

	w->new_text.body = row_text(tuple, desc, c->text_attno);
	unchanged = old != NULL && same_text(c, w->new_text.body, old, desc);
	if (c->min_similarity > 0)
	{
		/* The shingle set serves the keys and then the verification of every candidate. */
		if (w->new_text.body != NULL)
		{
			w->new_text.set = simhash_text_shingles(w->new_text.body);
			w->nlsh = simhash_shingle_lsh_keys(w->new_text.set, w->lsh);
		}
		w->lsh_array = simhash_int8_array(w->lsh, w->nlsh);
		set_column(w, c->fp_attno, PointerGetDatum(w->lsh_array), w->new_text.body == NULL);
		if (c->sets_attno > 0)
		{
			bytea	   *stored = w->new_text.body != NULL ? stored_set_bytes(w->new_text.set) : NULL;

			set_column(w, c->sets_attno, PointerGetDatum(stored), stored == NULL);
		}
		w->unchanged = unchanged;
		w->search = w->nlsh > 0 && !unchanged;
		return;
	}
	if (unchanged && !fp_null)
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
 * Looks for the near duplicate the policy acts on, in every target: first the locks (see
 * the file header), then a snapshot that sees what committed while we waited and the rows
 * of this statement so far.
 */
static void
find_near_duplicate(DedupeConfig *c, Relation rel, HeapTuple old, RowWork *w, Found *found)
{
	Snapshot	snapshot;
	Snapshot	xact_snapshot = NULL;
	uint32		lock_keys[SIMHASH_MAX_LOCK_KEYS];

	serialize_writers(c, lock_keys, row_lock_keys(c, w->fp, w->lsh, w->nlsh, lock_keys));
	CommandCounterIncrement();
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	if (IsolationUsesXactSnapshot())
		xact_snapshot = GetTransactionSnapshot();
	for (int i = 0; i < c->ntargets; i++)
	{
		search_target(c, &c->targets[i], w->fp, w->lsh, w->nlsh, w->lsh_array, snapshot,
					  xact_snapshot, RelationGetRelid(rel), old ? &old->t_self : NULL,
					  &w->new_text, found);
		if (found->any && c->policy == POLICY_SKIP)
			break;
	}
	UnregisterSnapshot(snapshot);
}

/*
 * Policy link would write into the caller's row the key of a row the caller may not read
 * (row-level security, or no SELECT on its key, text or key column; see
 * may_read_near_duplicate()): refused, as a reject would be, telling no more than that
 * such a row exists (what a unique index tells).
 */
static void
refuse_hidden_link(DedupeConfig *c, Relation rel, Trigger *tg)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("new row for relation \"%s\" is a near duplicate of a row the current user cannot read",
					RelationGetRelationName(rel)),
			 errdetail("Trigger \"%s\" would link the new row to that row's key.", tg->tgname),
			 errhint("Grant SELECT on the columns %s, %s and %s (without row-level security on the table), or use policy reject or skip.",
					 c->key_names, quote_identifier(tg->tgargs[0]),
					 quote_identifier(tg->tgargs[1]))));
}

/* Policy reject: 23505, naming the near duplicate's key if the caller may read it. */
void
reject(DedupeConfig *c, Relation rel, Trigger *tg, const Found *found)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("new row for relation \"%s\" is a near duplicate of an existing row",
					RelationGetRelationName(rel)),
			 c->min_similarity > 0
			 ? (found->key_text
				? errdetail("Key %s has similarity %.3f to it, at or above the threshold %g of trigger \"%s\".",
							found->key_text, found->similarity, c->min_similarity, tg->tgname)
				: errdetail("A row you cannot read has a similarity at or above the threshold %g of trigger \"%s\".",
							c->min_similarity, tg->tgname))
			 : (found->key_text
				? errdetail("Key %s is at Hamming distance %d, within the %d that trigger \"%s\" allows.",
							found->key_text, found->distance, c->k, tg->tgname)
				: errdetail("A row you cannot read is within the Hamming distance %d that trigger \"%s\" allows.",
							c->k, tg->tgname)),
			 errtableconstraint(rel, tg->tgname)));
}

/*
 * Whether the new version of a row of partition rel no longer fits the partition, so that
 * PostgreSQL will move it: delete it here and insert it into another partition, firing
 * BEFORE INSERT there. Evaluated as ExecPartitionCheck() does (NULL passes).
 */
static bool
leaves_partition(Relation rel, HeapTuple tuple)
{
	List	   *qual = RelationGetPartitionQual(rel);
	EState	   *estate;
	ExprContext *econtext;
	TupleTableSlot *slot;
	bool		fits;

	if (qual == NIL)
		return false;
	estate = CreateExecutorState();
	econtext = GetPerTupleExprContext(estate);
	slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsHeapTuple);
	ExecStoreHeapTuple(tuple, slot, false);
	econtext->ecxt_scantuple = slot;
	fits = ExecCheck(ExecPrepareCheck(qual, estate), econtext);
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	return !fits;
}

PG_FUNCTION_INFO_V1(simhash_dedupe);

/* simhash_dedupe() trigger: see the comment at the top of the file. */
Datum
simhash_dedupe(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	DedupeConfig *c;
	Relation	rel;
	HeapTuple	tuple;
	HeapTuple	old = NULL;
	RowWork		w = {0};
	Found		found = {0};
	int64		plan_row = -1;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("simhash_dedupe: not called as a trigger")));
	if (td->tg_relation->rd_rel->relkind == RELKIND_VIEW)
		return dedupe_through_view(fcinfo, td);
	if (!TRIGGER_FIRED_BEFORE(td->tg_event) || !TRIGGER_FIRED_FOR_ROW(td->tg_event) ||
		!(TRIGGER_FIRED_BY_INSERT(td->tg_event) || TRIGGER_FIRED_BY_UPDATE(td->tg_event)))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("simhash_dedupe: trigger \"%s\" must be BEFORE INSERT OR UPDATE ... FOR EACH ROW",
						td->tg_trigger->tgname)));

	rel = td->tg_relation;
	c = (DedupeConfig *) fcinfo->flinfo->fn_extra;
	if (c == NULL || c->tgoid != td->tg_trigger->tgoid || c->relid != RelationGetRelid(rel))
		fcinfo->flinfo->fn_extra = c = make_config(fcinfo, td);
	if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
	{
		old = td->tg_trigtuple;
		tuple = td->tg_newtuple;
	}
	else
		tuple = td->tg_trigtuple;

	row_keys(c, tuple, old, RelationGetDescr(rel), &w);

	/*
	 * skip: an UPDATE that moves the row to another partition is a delete and an insert,
	 * and a BEFORE INSERT trigger that drops the insert would lose the row. So the moved
	 * row is checked here, before the move, as a new one (even with its text unchanged):
	 * a near duplicate keeps the old version, as for any UPDATE under skip, and the insert
	 * then finds none (our locks are held).
	 */
	if (old != NULL && c->policy == POLICY_SKIP && !w.search && rel->rd_rel->relispartition &&
		(c->min_similarity > 0 ? w.nlsh > 0 : !heap_attisnull(tuple, c->fp_attno, RelationGetDescr(rel))) &&
		leaves_partition(rel, tuple))
	{
		w.search = true;
		w.unchanged = false;
	}
	/*
	 * In a bulk load, a row its filter clears has no near duplicate, and with a threshold
	 * its plan may know the answer (dedupe_bulk.c).
	 */
	if (old == NULL && c->min_similarity > 0)
		plan_row = bulk_plan_row(c, &w);
	table_filter_row(c);
	if (w.search &&
		!(old == NULL && c->min_similarity == 0 &&
		  (bulk_filter_clear(c, w.fp) || table_filter_clear(c, w.fp))) &&
		!bulk_plan_answer(c, plan_row, &found) &&
		!(old == NULL && c->min_similarity > 0 && plan_row < 0 &&
		  table_index_answer(c, &w, &found)))
	{
		find_near_duplicate(c, rel, old, &w, &found);
		bulk_plan_searched(c, plan_row);
		if (old == NULL)
			table_filter_searched(c, td->tg_trigger);
	}
	if (found.any && c->policy == POLICY_REJECT)
		reject(c, rel, td->tg_trigger, &found);
	if (found.any && c->policy == POLICY_SKIP)
		return PointerGetDatum(NULL);
	if (c->policy == POLICY_LINK && !w.unchanged)
	{
		if (found.any && found.key_text == NULL)
			refuse_hidden_link(c, rel, td->tg_trigger);
		set_column(&w, c->link_attno, found.any ? found.key : (Datum) 0, !found.any);
	}
	if (w.ncols > 0)
		tuple = heap_modify_tuple_by_cols(tuple, RelationGetDescr(rel), w.ncols, w.cols,
										  w.values, w.nulls);
	if (c->min_similarity == 0 && (w.search || w.unchanged))
	{
		bulk_filter_written(c, w.fp);
		table_filter_written(c, w.fp);
	}
	if (w.search)
		bulk_plan_written(c, plan_row, rel, tuple, &found);
	if (old == NULL && c->min_similarity > 0 && w.search)
		table_index_written(c, rel, &w, tuple, !found.any);
	if (old == NULL)
		table_filter_inserting();
	return PointerGetDatum(tuple);
}
