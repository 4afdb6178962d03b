/*
 * The statement memo: what one statement knows of the table, asked first for every row,
 * answering only what it knows exactly (what it holds, how it is seeded, its one guard:
 * docs/dedupe_internals.md, "The statement memo").
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/genam.h"
#include "access/heapam.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "capi/load_ids_capi.h"
#include "capi/near_filter_capi.h"
#include "capi/set_index_capi.h"
#include "pg/compat.h"
#include "pg/dedupe.h"
#include "pg/simhash_pg.h"

/* Searches of one statement before a memo of the table is considered, and between looks. */
#define MEMO_MIN_SEARCHES 256
#define MEMO_LOOK_EVERY 256

/*
 * A memo of the table is made once the statement has searched this many times as many
 * rows as it would read pages. Measured at k = 3 (85,000 new rows into a table of 1M):
 * reading costs about 50 us a page, one row's search 15 to 20 us; so a statement that ends
 * right after has spent at most about twice what its searches cost.
 */
#define MEMO_SEARCHES_PER_PAGE 2

/* Texts longer than this (bytes) are held without their set; their rows are searched. */
#define MEMO_MAX_TEXT (1024 * 1024)

/*
 * The search a memo stands for, by value (each partition's clone of the trigger has its
 * own DedupeConfig): made by search_of() alone, and compared whole.
 */
typedef struct MemoSearch
{
	Oid			root;
	const DedupeMetric *metric;
	int			k;
	double		min_similarity;
	DedupePolicy policy;
	AttrNumber	text_attno;		/* in root */
	AttrNumber	fp_attno;
	NameData	sets_name;		/* by name: numbers differ by partition; "" without */
} MemoSearch;

struct DedupeMemo
{
	/* whose: the statement and the search it stands for */
	LocalTransactionId lxid;
	SubTransactionId subxid;
	MemoSearch	search;
	/* the guard */
	CommandId	cid;			/* the command id the next row must find */
	int			ntargets;
	int64	   *updated;		/* each target's writes (target_writes()) when made */
	int64	   *deleted;
	int64		inserted;		/* the targets' inserts at the last row */
	bool		inserting;		/* the last row was let through as an INSERT */
	/* what it holds */
	simhash_near_filter *fps;
	simhash_set_index *sets;
	simhash_load_ids *clean;	/* from a load: the ids it answers; NULL: all */
	Oid			key_type;		/* link: the key's type (int2, int4, int8) */
	bool		may_read;		/* may_read_near_duplicate() when made */
	Size		budget;
	/* its making from the table, and what it did */
	bool		from_load;
	uint64		searches;
	uint64		next_look;
	bool		given_up;		/* not again in this statement */
	const char *why;			/* why given up */
	size_t		distinct;		/* a load's distinct ids, and how many were near */
	uint64		near_in_table;
	uint64		spared;
	uint64		searched;
	MemoryContext cxt;
};

static DedupeMemo *memo;

static const char *
memo_name(const DedupeMemo *m)
{
	if (m->from_load)
		return "load's memo";
	return m->search.metric->verifies ? "table index" : "table filter";
}

static bool
made(const DedupeMemo *m)
{
	return m->fps != NULL || m->sets != NULL;
}

/*
 * The statement keeps its state but no memo, and gets none again before it ends; why says
 * why in a DEBUG1 line (NULL: said already). The one place the C++ side is freed.
 */
static void
give_up(DedupeMemo *m, const char *why)
{
	if (made(m) && why != NULL)
		elog(DEBUG1, "simhash_dedupe: %s dropped after %s (%llu searches spared)",
			 memo_name(m), why, (unsigned long long) m->spared);
	simhash_near_filter_free(m->fps);
	m->fps = NULL;
	simhash_set_index_free(m->sets);
	m->sets = NULL;
	simhash_load_ids_free(m->clean);
	m->clean = NULL;
	if (!m->given_up)
		m->why = why != NULL ? why : "maintenance_work_mem";
	m->given_up = true;
}

/* The memo's context goes (end of transaction, or dropped), its C++ side with it. */
static void
forget_memo(void *arg)
{
	give_up(arg, NULL);
	if (memo == arg)
		memo = NULL;
}

static void
drop_memo(void)
{
	DedupeMemo *m = memo;

	if (m == NULL)
		return;
	memo = NULL;
	if (m->sets != NULL)
		elog(DEBUG1, "simhash_dedupe: %s of %zu rows (%zu with their sets, %zu kB) dropped (%llu searches spared)",
			 memo_name(m), simhash_set_index_rows(m->sets), simhash_set_index_held(m->sets),
			 simhash_set_index_bytes(m->sets) / 1024, (unsigned long long) m->spared);
	else if (m->fps != NULL)
		elog(DEBUG1, "simhash_dedupe: %s dropped (%llu searches spared)",
			 memo_name(m), (unsigned long long) m->spared);
	MemoryContextDelete(m->cxt);
}

static void
search_of(const DedupeConfig *c, MemoSearch *s)
{
	memset(s, 0, sizeof(MemoSearch));	/* the padding too: compared with memcmp */
	s->root = c->root;
	s->metric = c->metric;
	s->k = c->k;
	s->min_similarity = c->min_similarity;
	s->policy = c->policy;
	s->text_attno = c->root_text_attno;
	s->fp_attno = c->root_fp_attno;
	if (c->args.sets != NULL)
		namestrcpy(&s->sets_name, c->args.sets);
}

/* True when the trigger of config c searches as the memo's does. */
static bool
same_search(const DedupeMemo *m, const DedupeConfig *c)
{
	MemoSearch	s;

	search_of(c, &s);
	return memcmp(&s, &m->search, sizeof(MemoSearch)) == 0;
}

/*
 * A new memo, not made yet, for the statement now running and c's trigger: a statement's
 * in the transaction's context (the next statement drops it), a load's in the load's (an
 * error before its INSERT, caught by a savepoint, frees it with the load).
 */
static DedupeMemo *
memo_new(DedupeConfig *c, MemoryContext parent)
{
	MemoryContext cxt = AllocSetContextCreate(parent, "simhash statement memo",
											  ALLOCSET_SMALL_SIZES);
	DedupeMemo *m = MemoryContextAllocZero(cxt, sizeof(DedupeMemo));
	MemoryContextCallback *cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));

	m->cxt = cxt;
	m->lxid = SIMHASH_MY_LXID;
	m->subxid = GetCurrentSubTransactionId();
	search_of(c, &m->search);
	m->next_look = MEMO_MIN_SEARCHES;
	m->ntargets = c->ntargets;
	m->updated = MemoryContextAlloc(cxt, sizeof(int64) * Max(c->ntargets, 1));
	m->deleted = MemoryContextAlloc(cxt, sizeof(int64) * Max(c->ntargets, 1));
	m->budget = (Size) maintenance_work_mem * 1024;
	cb->func = forget_memo;
	cb->arg = m;
	MemoryContextRegisterResetCallback(cxt, cb);
	return m;
}

/*
 * The command id the trigger leaves for the next row: the current one, marked used, so
 * that any SQL a function runs before the next row (SPI increments the command counter
 * before each statement that may write, but only past a used id) moves it on.
 */
static void
expect(DedupeMemo *m)
{
	m->cid = GetCurrentCommandId(true);
}

/*
 * The guard's write counts: true when no target had a row updated since the memo was
 * made, and the targets had at most the row let through last inserted since the last row
 * (none else can be without moving the command id, unless something kept the trigger from
 * firing). A SetIndex answers "found" too, so it must hold exactly the table's rows: no
 * delete either, and the row let through last inserted (not dropped by ON CONFLICT DO
 * NOTHING); a NearFilter may hold more. baseline: take the counts as they are now (false
 * when not counted: track_counts off).
 */
static bool
unchanged(DedupeMemo *m, DedupeConfig *c, bool baseline, const char **why)
{
	int64		inserted = 0;
	bool		ok = true;

	*why = "an update";
	for (int t = 0; t < c->ntargets; t++)
	{
		int64		u;
		int64		i;
		int64		d;

		if (!target_writes(c->targets[t].relid, &u, &i, &d, baseline))
			return false;
		if (baseline)
		{
			m->updated[t] = u;
			m->deleted[t] = d;
		}
		else if (u != m->updated[t])
			ok = false;
		else if (m->sets != NULL && d != m->deleted[t])
		{
			*why = "a delete";
			ok = false;
		}
		inserted += i;
	}
	if (!baseline && inserted - m->inserted > (m->inserting ? 1 : 0))
	{
		*why = "a row inserted past the trigger";
		ok = false;
	}
	else if (!baseline && m->sets != NULL && inserted - m->inserted < (m->inserting ? 1 : 0))
	{
		*why = "a row let through but not inserted";
		ok = false;
	}
	m->inserted = inserted;
	m->inserting = false;
	return ok;
}

/*
 * With a threshold and link, the memo names a row by its key: one column of type int2,
 * int4 or int8 (the order of the SetIndex's tag), the same in each target.
 */
static bool
link_key_ok(DedupeMemo *m, DedupeConfig *c)
{
	m->key_type = InvalidOid;
	if (c->nkeys != 1 || !c->key_cmp_ok)
		return false;
	for (int t = 0; t < c->ntargets; t++)
	{
		Relation	r = table_open(c->targets[t].relid, AccessShareLock);
		Oid			type = TupleDescAttr(RelationGetDescr(r), c->targets[t].key_attnos[0] - 1)->atttypid;

		table_close(r, NoLock);
		if ((type != INT2OID && type != INT4OID && type != INT8OID) ||
			(m->key_type != InvalidOid && m->key_type != type))
			return false;
		m->key_type = type;
	}
	return true;
}

static int64
key_tag(DedupeMemo *m, Datum d)
{
	switch (m->key_type)
	{
		case INT2OID:
			return DatumGetInt16(d);
		case INT4OID:
			return DatumGetInt32(d);
	}
	return DatumGetInt64(d);
}

static Datum
tag_key(DedupeMemo *m, int64 tag)
{
	switch (m->key_type)
	{
		case INT2OID:
			return Int16GetDatum((int16) tag);
		case INT4OID:
			return Int32GetDatum((int32) tag);
	}
	return Int64GetDatum(tag);
}

/*
 * True when the memo could be wrong about a row of some table the rows may go to (the
 * table, or each partition): it knows the rows the simhash_dedupe trigger `ours` writes
 * and the table as it was read or searched, and answers for that trigger's search alone.
 * So it stays off (every row searched, as by the trigger alone) when, on the table or on
 * one of the tables its rows go to:
 * - that trigger is missing or disabled, or has a WHEN condition (its rows, or some of
 *   them, would not reach them: a row written past the trigger is a near duplicate its
 *   search finds), or other arguments (the memo is shared by the rows of every target:
 *   right for the clones of one trigger on a partitioned table, but a partition may have
 *   its own trigger of that name, another link column say);
 * - any other trigger fires on INSERT (row or statement, before or after): it may change
 *   the row's text or fingerprint, or run SQL that writes the table while the load does
 *   (an UPDATE of a row already there or written, which they would not hear of; with
 *   row-level security, each row is its own INSERT, so AFTER triggers run between rows);
 *   a second simhash_dedupe trigger is one of them. PostgreSQL's own triggers (foreign
 *   keys) only check.
 */
static bool
memo_unsafe(DedupeConfig *c, const Trigger *ours)
{
	bool		unsafe = false;

	for (int t = -1; t < c->ntargets && !unsafe; t++)
	{
		Oid			relid = t < 0 ? c->root : c->targets[t].relid;
		Relation	rel;
		TriggerDesc *desc;
		bool		found = false;

		/* the root, for its statement triggers, unless it is one of the targets */
		if (t < 0)
		{
			bool		target = false;

			for (int i = 0; i < c->ntargets; i++)
				target = target || c->targets[i].relid == relid;
			if (target)
				continue;
		}
		rel = table_open(relid, AccessShareLock);
		desc = rel->trigdesc;
		for (int i = 0; desc != NULL && i < desc->numtriggers && !unsafe; i++)
		{
			Trigger    *tg = &desc->triggers[i];

			if (!TRIGGER_FOR_INSERT(tg->tgtype) || tg->tgisinternal)
				continue;
			if (strcmp(tg->tgname, ours->tgname) == 0 && tg->tgfoid == ours->tgfoid &&
				TRIGGER_FOR_ROW(tg->tgtype) && TRIGGER_FOR_BEFORE(tg->tgtype))
				found = tg->tgqual == NULL && same_arguments(tg, ours) &&
					(tg->tgenabled == TRIGGER_FIRES_ON_ORIGIN ||
					 tg->tgenabled == TRIGGER_FIRES_ALWAYS);
			else if (tg->tgenabled != TRIGGER_DISABLED)
				unsafe = true;
		}
		unsafe = unsafe || (t >= 0 && !found);
		table_close(rel, NoLock);
	}
	return unsafe;
}

/*
 * What every memo needs of the trigger, the isolation and the budget aside: no other
 * trigger on INSERT to write rows it would not hear of, one trigger on every target, and
 * for link a key it can name. Makes its structure (empty); false when it cannot serve.
 */
static bool
memo_can_serve(DedupeMemo *m, DedupeConfig *c, Trigger *tg)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	const char *why;

	if ((c->metric->verifies && c->policy == POLICY_LINK && !link_key_ok(m, c)) ||
		memo_unsafe(c, tg) || !unchanged(m, c, true, &why))
		return false;
	if (c->metric->verifies)
	{
		m->may_read = may_read_near_duplicate(c);
		simhash_check_status(simhash_set_index_create(&m->sets, errbuf, sizeof(errbuf)), errbuf);
	}
	else
		simhash_check_status(simhash_near_filter_create(c->k, &m->fps, errbuf, sizeof(errbuf)),
							 errbuf);
	return true;
}

/* The block index with the fingerprint of target t, or InvalidOid. */
static Oid
fingerprint_index(const DedupeTarget *t)
{
	for (int i = 0; i < t->plan.blocks; i++)
		if (OidIsValid(t->indexes[i]) && t->has_fingerprint[i])
			return t->indexes[i];
	return InvalidOid;
}

/* Pages a memo of the table reads (with a threshold, the targets' own); false: no way to. */
static bool
pages_to_read(DedupeConfig *c, BlockNumber *pages)
{
	*pages = 0;
	for (int t = 0; t < c->ntargets; t++)
	{
		Oid			relid = c->metric->verifies ? c->targets[t].relid : fingerprint_index(&c->targets[t]);
		Relation	r;

		if (!OidIsValid(relid))
			return false;
		r = relation_open(relid, AccessShareLock);
		*pages += RelationGetNumberOfBlocks(r);
		relation_close(r, NoLock);
	}
	return true;
}

/*
 * With a distance, from the table: every fingerprint of the fingerprint index of each
 * target (read whole with SnapshotAny: every version with an entry), at once; false past
 * the budget.
 */
static bool
fill_fps(DedupeMemo *m, DedupeConfig *c)
{
	uint64		most = simhash_near_filter_max_members(m->budget, c->k);
	uint64		cap = Min((uint64) 1024, most);
	uint64		n = 0;
	uint64	   *fps;
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	bool		ok = true;

	if (cap == 0)
		return false;
	fps = MemoryContextAllocHuge(m->cxt, cap * sizeof(uint64));
	for (int t = 0; t < c->ntargets && ok; t++)
	{
		Relation	heap = table_open(c->targets[t].relid, AccessShareLock);
		Relation	ind = index_open(fingerprint_index(&c->targets[t]), AccessShareLock);
		IndexScanDesc scan = index_beginscan(heap, ind, SnapshotAny, 0, 0);
		uint64		read = 0;

		scan->xs_want_itup = true;
		index_rescan(scan, NULL, 0, NULL, 0);
		while (ok && index_getnext_tid(scan, ForwardScanDirection) != NULL)
		{
			bool		isnull;
			Datum		d = index_getattr(scan->xs_itup, 2, scan->xs_itupdesc, &isnull);

			if ((++read & 4095) == 0)
				CHECK_FOR_INTERRUPTS();
			/* entries come in (block, fp) order: copies of one fingerprint together */
			if (isnull || (n > 0 && fps[n - 1] == (uint64) DatumGetInt64(d)))
				continue;
			if (n == cap && cap >= most)
				ok = false;
			else
			{
				if (n == cap)
					fps = repalloc_huge(fps, (cap = Min(2 * cap, most)) * sizeof(uint64));
				fps[n++] = (uint64) DatumGetInt64(d);
			}
		}
		index_endscan(scan);
		index_close(ind, NoLock);
		table_close(heap, NoLock);
	}
	/* one block's sort a step, with a look for interrupts between them */
	for (int step = 0; ok && step <= c->k + 1; step++)
	{
		CHECK_FOR_INTERRUPTS();
		ok = simhash_near_filter_add_many_step(m->fps, fps, n, step, errbuf,
											   sizeof(errbuf)) == SIMHASH_OK;
	}
	pfree(fps);
	return ok;
}

/* Adds a row to the SetIndex; false (nothing added) past the budget, or out of memory. */
static bool
add_set(DedupeMemo *m, const int64 *keys, const uint64 *set, size_t n, int64 tag,
		bool original)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	return simhash_set_index_add(m->sets, keys, set, n, tag, original, m->budget, errbuf,
								 sizeof(errbuf)) == SIMHASH_OK;
}

/*
 * One row of target in slot into the SetIndex: its keys (from the keys column, or as the
 * simhash_ops index computes them from its text), the set its verification would use (the
 * stored one when well-formed, else its text's), its tag and class. A row without keys or
 * shingles is never a candidate. False past the budget, or when the memo cannot answer
 * for it (a link key that is NULL, a text too long to shingle here without a keys column).
 */
static bool
index_row(DedupeMemo *m, DedupeTarget *target, TupleTableSlot *slot)
{
	int64		keys[SIMHASH_LSH_BANDS];
	bool		isnull;
	Datum		d;
	bool		long_text;
	SimhashShingleSet set = {NULL, 0};
	bool		have_set = false;
	int64		tag = 0;
	bool		original = true;

	if (target->fp_attno > 0)
	{
		d = slot_getattr(slot, target->fp_attno, &isnull);
		if (isnull || !lsh_band_keys(d, keys))
			return true;
	}
	d = slot_getattr(slot, target->text_attno, &isnull);
	if (isnull)
		return true;
	long_text = toast_raw_datum_size(d) - VARHDRSZ > MEMO_MAX_TEXT;
	if (target->sets_attno > 0)
	{
		Datum		sd = slot_getattr(slot, target->sets_attno, &isnull);

		have_set = !isnull && stored_set_of(sd, &set);
	}
	if (target->fp_attno == 0)
	{
		SimhashShingleSet text_set;

		if (long_text)
			return false;
		text_set = simhash_text_shingles(DatumGetTextPP(d));
		if (simhash_shingle_lsh_keys(text_set, keys) != SIMHASH_LSH_BANDS)
			return true;
		if (!have_set)
			set = text_set;
		have_set = true;
	}
	else if (!have_set && !long_text)
	{
		set = simhash_text_shingles(DatumGetTextPP(d));
		have_set = true;
	}
	if (have_set && set.size == 0)
		return true;
	if (m->search.policy == POLICY_LINK)
	{
		(void) slot_getattr(slot, target->link_attno, &isnull);
		original = isnull;
		d = slot_getattr(slot, target->key_attnos[0], &isnull);
		if (isnull)
			return false;
		tag = key_tag(m, d);
	}
	return add_set(m, keys, have_set ? set.data : NULL,
				   have_set ? set.size : SIMHASH_SET_UNKNOWN_SIZE, tag, original);
}

/*
 * With a threshold, from the table: every row a search would see now (the latest
 * snapshot: what committed before the table lock, and this transaction's rows so far).
 * False past the budget.
 */
static bool
fill_sets(DedupeMemo *m, DedupeConfig *c)
{
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	MemoryContext row_cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash memo row",
												  ALLOCSET_DEFAULT_SIZES);
	bool		ok = true;

	for (int t = 0; t < c->ntargets && ok; t++)
	{
		Relation	heap = table_open(c->targets[t].relid, AccessShareLock);
		TableScanDesc scan = table_beginscan(heap, snapshot, 0, NULL);
		TupleTableSlot *slot = table_slot_create(heap, NULL);

		while (ok && table_scan_getnextslot(scan, ForwardScanDirection, slot))
		{
			MemoryContext old = MemoryContextSwitchTo(row_cxt);

			CHECK_FOR_INTERRUPTS();
			ok = index_row(m, &c->targets[t], slot);
			MemoryContextSwitchTo(old);
			MemoryContextReset(row_cxt);
		}
		ExecDropSingleTupleTableSlot(slot);
		table_endscan(scan);
		table_close(heap, NoLock);
	}
	MemoryContextDelete(row_cxt);
	UnregisterSnapshot(snapshot);
	return ok;
}

/* Makes the memo from the table if the transaction's locks allow it and it pays. */
static void
from_table(DedupeMemo *m, DedupeConfig *c, Trigger *tg)
{
	BlockNumber pages;

	m->next_look = m->searches + MEMO_LOOK_EVERY;
	if (!holds_table(c))
		return;
	if (!may_read_table_whole(c) || IsolationIsSerializable() ||
		(c->metric->verifies && IsolationUsesXactSnapshot()) || !pages_to_read(c, &pages))
	{
		m->given_up = true;
		return;
	}
	if ((uint64) pages * MEMO_SEARCHES_PER_PAGE > m->searches)
		return;
	if (!memo_can_serve(m, c, tg))
	{
		m->given_up = true;
		return;
	}
	if (!(c->metric->verifies ? fill_sets(m, c) : fill_fps(m, c)))
	{
		elog(DEBUG1, "simhash_dedupe: no %s: the table's %s would take more than maintenance_work_mem",
			 memo_name(m), m->fps != NULL ? "fingerprints" : "rows");
		give_up(m, NULL);
		return;
	}
	if (m->sets != NULL)
		elog(DEBUG1, "simhash_dedupe: table index of %zu rows (%zu with their sets) after %llu searches",
			 simhash_set_index_rows(m->sets), simhash_set_index_held(m->sets),
			 (unsigned long long) m->searches);
	else
		elog(DEBUG1, "simhash_dedupe: table filter of %zu fingerprints after %llu searches",
			 simhash_near_filter_size(m->fps), (unsigned long long) m->searches);
}

/* Whether the memo answers for a row of this fingerprint or text. */
static bool
covers(const DedupeMemo *m, const RowWork *w)
{
	const text *body = m->search.metric->verifies ? w->new_text.body : NULL;

	return m->clean == NULL ||
		simhash_load_ids_has(m->clean, w->fp, body != NULL ? VARDATA_ANY(body) : NULL,
							 body != NULL ? VARSIZE_ANY_EXHDR(body) : 0);
}

/*
 * The guard, first for every row the trigger sees: the memo of an earlier statement, or
 * of this one once SQL ran meanwhile or the table changed behind it, goes.
 */
void
memo_row(DedupeConfig *c)
{
	DedupeMemo *m = memo;
	const char *why = "an update";	/* a partition added counts as one */

	if (m == NULL)
		return;
	if (m->lxid != SIMHASH_MY_LXID || m->subxid != GetCurrentSubTransactionId() ||
		m->cid != GetCurrentCommandId(false) || !same_search(m, c))
	{
		if (!m->from_load)
			drop_memo();
		else
			give_up(m, "SQL run while the rows were written");
	}
	else if (made(m) && (m->ntargets != c->ntargets || !unchanged(m, c, false, &why)))
		give_up(m, why);
}

/*
 * The memo's answer for a new row (w) into *found: true when it knows it (no near
 * duplicate, or for skip and link the one the search would act on); false: search.
 */
bool
memo_answer(DedupeConfig *c, RowWork *w, Found *found)
{
	DedupeMemo *m = memo;
	simhash_set_answer answer = SIMHASH_SET_NONE;
	int64		tag;
	int			original;
	double		similarity;

	if (m == NULL || !made(m) || (m->sets != NULL && w->nlsh != SIMHASH_LSH_BANDS) ||
		!covers(m, w))
		return false;
	if (m->fps != NULL && simhash_near_filter_may_have(m->fps, w->fp))
		return false;
	if (m->sets != NULL)
		answer = simhash_set_index_find(m->sets, w->lsh, w->new_text.set.data,
										w->new_text.set.size, c->min_similarity,
										c->policy == POLICY_LINK, &tag, &original, &similarity);
	if (answer == SIMHASH_SET_UNKNOWN || (answer == SIMHASH_SET_FOUND && c->policy == POLICY_REJECT))
		return false;
	m->spared++;
	expect(m);
	found->any = answer == SIMHASH_SET_FOUND;
	if (!found->any)
		return true;
	found->similarity = similarity;
	found->is_original = original != 0;
	if (c->policy == POLICY_LINK)
	{
		found->key = tag_key(m, tag);
		/* only whether it is NULL counts for link (refuse_hidden_link()) */
		found->key_text = m->may_read ? pstrdup("") : NULL;
	}
	return true;
}

/* After the trigger searched for a new row: the memo of the table may now pay. */
void
memo_searched(DedupeConfig *c, Trigger *tg)
{
	DedupeMemo *m = memo;

	if (!c->indexed)
		return;
	if (m == NULL)
		m = memo = memo_new(c, TopTransactionContext);
	m->searches++;
	m->searched += made(m);
	if (!made(m) && !m->given_up && !m->from_load && m->searches >= m->next_look)
		from_table(m, c, tg);
	expect(m);
}

/*
 * The row in tuple (w its keys and set; of rel) is let through; original: it is not linked;
 * insert: by an INSERT (the guard counts its insert).
 */
void
memo_written(DedupeConfig *c, Relation rel, RowWork *w, HeapTuple tuple, bool original,
			 bool insert)
{
	DedupeMemo *m = memo;
	int64		tag = 0;
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	if (m == NULL)
		return;
	if (m->fps != NULL && (w->search || w->unchanged) &&
		simhash_near_filter_add(m->fps, w->fp, m->budget, errbuf, sizeof(errbuf)) != SIMHASH_OK)
		give_up(m, "maintenance_work_mem");
	if (m->sets != NULL && insert && w->search && w->nlsh == SIMHASH_LSH_BANDS &&
		w->new_text.set.size > 0)
	{
		if (c->policy == POLICY_LINK)
		{
			bool		isnull = true;

			for (int t = 0; t < c->ntargets; t++)
				if (c->targets[t].relid == RelationGetRelid(rel))
				{
					Datum		d = heap_getattr(tuple, c->targets[t].key_attnos[0],
												 RelationGetDescr(rel), &isnull);

					if (!isnull)
						tag = key_tag(m, d);
				}
			if (isnull)
				give_up(m, "a row without a key");
		}
		if (m->sets != NULL &&
			!add_set(m, w->lsh, w->new_text.set.data, w->new_text.set.size, tag, original))
			give_up(m, "maintenance_work_mem");
	}
	m->inserting = insert;
	expect(m);
}

/*
 * A load's memo (simhash_dedupe_insert(), before it takes its locks): NULL when it cannot
 * serve the load's trigger tg. Its rows are then given with memo_load_add().
 */
DedupeMemo *
memo_load_begin(DedupeConfig *c, Trigger *tg, uint64 nrows)
{
	DedupeMemo *m;
	uint64		seed;			/* of the texts' digests (a secret: no crafted collision) */
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	if (!c->indexed)
		return NULL;
	m = memo_new(c, CurrentMemoryContext);
	m->from_load = true;
	if (simhash_load_ids_bytes(nrows) > m->budget || !memo_can_serve(m, c, tg))
	{
		MemoryContextDelete(m->cxt);
		return NULL;
	}
	if (!pg_strong_random(&seed, sizeof(seed)))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("simhash_dedupe_insert: could not generate a random seed")));
	simhash_check_status(simhash_load_ids_create(nrows, seed, &m->clean, errbuf, sizeof(errbuf)),
						 errbuf);
	return m;
}

/* The load's row number `row`: its fingerprint fp, or with a threshold its text body. */
void
memo_load_add(DedupeMemo *m, uint64 row, uint64 fp, const text *body)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	if (m != NULL)
		simhash_check_status(simhash_load_ids_add(m->clean, row, fp,
												  body != NULL ? VARDATA_ANY(body) : NULL,
												  body != NULL ? VARSIZE_ANY_EXHDR(body) : 0,
												  errbuf, sizeof(errbuf)), errbuf);
}

/*
 * Searches the table for a row of the load (the row's text body, or its fingerprint fp),
 * as the trigger would with a policy that needs one near duplicate, in the targets that
 * hold a page: whether one is there.
 */
static bool
search_table(DedupeConfig *probe, const int *targets, int ntargets, Snapshot snapshot,
			 uint64 fp, text *body)
{
	Found		found = {0};
	NewText		nt = {body, {NULL, 0}};
	int64		lsh[SIMHASH_LSH_BANDS];
	int			nlsh = 0;
	ArrayType  *keys = NULL;

	if (body != NULL)
	{
		nt.set = simhash_text_shingles(body);
		nlsh = simhash_shingle_lsh_keys(nt.set, lsh);
		if (nlsh == 0)
			return false;
		keys = simhash_int8_array(lsh, nlsh);
	}
	for (int k = 0; k < ntargets && !found.any; k++)
		search_target(probe, &probe->targets[targets[k]], fp, lsh, nlsh, keys, snapshot, NULL,
					  InvalidOid, NULL, body != NULL ? &nt : NULL, &found);
	return found.any;
}

/*
 * Under the load's locks, before it writes: ROW EXCLUSIVE on the table (a writer that
 * holds the table lock takes no key; this waits for it to end), a snapshot that sees what
 * committed meanwhile, and the table searched once for each distinct fingerprint or text
 * of the load (a text read again from the load's first row with it, column q_text); the
 * memo keeps the ids found clean, the ones it answers.
 */
void
memo_load_search(DedupeMemo *m, DedupeConfig *c, Tuplestorestate *rows, TupleTableSlot *slot,
				 AttrNumber q_text)
{
	DedupeConfig *probe = palloc(sizeof(DedupeConfig));	/* its context keeps the set cache */
	MemoryContext row_cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash load memo row",
												  ALLOCSET_DEFAULT_SIZES);
	int		   *targets = palloc(sizeof(int) * Max(c->ntargets, 1));
	int			ntargets = 0;
	Snapshot	snapshot;
	uint64		next = 0;		/* the row of rows read next */

	LockRelationOid(c->root, RowExclusiveLock);
	CommandCounterIncrement();
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	*probe = *c;
	probe->policy = POLICY_SKIP;
	probe->set_cache = NULL;
	probe->set_cache_bytes = 0;
	for (int t = 0; t < c->ntargets; t++)
	{
		Relation	rel = table_open(c->targets[t].relid, AccessShareLock);

		if (RelationGetNumberOfBlocks(rel) > 0)
			targets[ntargets++] = t;
		table_close(rel, NoLock);
	}
	m->distinct = simhash_load_ids_settle(m->clean);
	tuplestore_rescan(rows);
	/* each distinct id in the order of its first row: a text is read there */
	for (size_t i = 0; i < m->distinct && ntargets > 0; i++)
	{
		uint64		row = simhash_load_ids_row(m->clean, i);
		MemoryContext old;
		text	   *body = NULL;
		bool		isnull;

		CHECK_FOR_INTERRUPTS();
		if (c->metric->verifies)
		{
			tuplestore_skiptuples(rows, (int64) (row - next), true);
			if (!tuplestore_gettupleslot(rows, true, false, slot))
				elog(ERROR, "simhash_dedupe_insert: row %llu of the load is missing",
					 (unsigned long long) row);
			next = row + 1;
		}
		old = MemoryContextSwitchTo(row_cxt);
		if (c->metric->verifies)
			body = DatumGetTextPP(slot_getattr(slot, q_text, &isnull));
		if (search_table(probe, targets, ntargets, snapshot,
						 body != NULL ? 0 : simhash_load_ids_fingerprint(m->clean, i), body))
			simhash_load_ids_set_near(m->clean, i);
		MemoryContextSwitchTo(old);
		MemoryContextReset(row_cxt);
	}
	UnregisterSnapshot(snapshot);
	MemoryContextDelete(row_cxt);
	tuplestore_rescan(rows);
	m->near_in_table = simhash_load_ids_keep_clean(m->clean);
}

/*
 * Just before the load's INSERT: the memo becomes the statement's, with the command id
 * and the write counts the first row must find. The command id is taken unused after an
 * increment: SPI's own increment before the INSERT then leaves it, and the INSERT's
 * executor marks it used before its first row. The memo before it is returned (given up:
 * the load writes rows it does not hear of), for memo_load_end().
 */
DedupeMemo *
memo_load_start(DedupeMemo *m, DedupeConfig *c)
{
	DedupeMemo *previous = memo;
	const char *why;

	if (previous != NULL && previous->search.root == c->root)
		give_up(previous, "a load inside its statement");
	memo = m;
	if (m == NULL)
		return previous;
	CommandCounterIncrement();
	m->cid = GetCurrentCommandId(false);
	if (!unchanged(m, c, true, &why))
		give_up(m, "its counts");
	return previous;
}

/* After the load's INSERT (or its error): the memo goes, the one before comes back. */
void
memo_load_end(DedupeMemo *m, DedupeMemo *previous, const char *table, uint64 nrows)
{
	if (m != NULL && table != NULL)
		ereport(DEBUG1,
				(errmsg("simhash_dedupe_insert: %llu rows read; %zu distinct %s searched in \"%s\" before writing (%llu with a near duplicate there); %llu rows answered by the load's memo, %llu searched%s%s",
						(unsigned long long) nrows, m->distinct,
						m->search.metric->verifies ? "texts" : "fingerprints", table,
						(unsigned long long) m->near_in_table,
						(unsigned long long) m->spared, (unsigned long long) m->searched,
						m->given_up ? "; given up after " : "", m->given_up ? m->why : "")));
	/* a memo of the table the load's statement made without one of its own goes too */
	if (memo != NULL && memo != m && memo != previous)
		drop_memo();
	if (m != NULL)
		MemoryContextDelete(m->cxt);
	memo = previous;
}
