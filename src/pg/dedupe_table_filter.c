/*
 * The table filter of the simhash_dedupe() trigger with a distance: during one long
 * statement (COPY, INSERT ... SELECT) of a transaction that holds the table lock, it holds
 * the fingerprints of the whole table in memory (a NearFilter, src/core/near_filter.hpp,
 * which never answers a false "no"), so that a new row with no fingerprint within k of
 * any of them is written without its k + 1 (or more) index descents. Rows with a possible
 * near duplicate are searched as always.
 *
 * Why it is exact. The filter answers "no near duplicate" only when no fingerprint in it
 * lies within k of the new row's, and it holds every fingerprint the trigger's search could
 * meet, in every target:
 * - it starts from one block index (simhash_block(fp, b, i), fp) of each target, read
 *   whole with SnapshotAny: every row version with an entry, live or dead, committed or not
 *   (but entries the index marked dead to every transaction, which no search meets);
 * - it is made only while this transaction keeps every other writer out of the table and
 *   its partitions (SHARE or a stronger lock on each, held until the transaction ends:
 *   holds_table()), and used only in the subtransaction it was made in (one rolled back
 *   releases the locks taken in it), so no other transaction writes a row it lacks;
 * - this transaction's own new rows reach it through the trigger (table_filter_written():
 *   every row the trigger lets through with a fingerprint), as no other trigger fires on
 *   INSERT (filter_unsafe(), checked when it is made; a row of another simhash_dedupe
 *   trigger drops it);
 * - an UPDATE of a row moves the table statistics' count of updates of its relation, which
 *   the filter checks before each row (updates_counted()): any UPDATE of a target since
 *   it was made, by the statement itself (a data-modifying WITH, ON CONFLICT DO UPDATE,
 *   MERGE) or by SQL a function of it runs, drops it. (Without the counts, track_counts
 *   off, there is no filter.) So does SQL run between two rows (a function, a default: the
 *   command id moves; see expect()) and the end of the statement;
 * - and so does a row inserted past the trigger within the statement (its
 *   session_replication_role set to replica for some rows by a function of the statement,
 *   which needs no SQL and so moves no command id): between two rows the trigger sees,
 *   the targets' count of inserts may grow only by the row it let through last
 *   (table_filter_inserting(); checked with the updates).
 * The search it spares would have found nothing: the same answer, without the reads.
 *
 * When. A statement's searches are counted; once the transaction holds the table lock
 * (the trigger takes it after BULK_LOCKS rows' locks, dedupe_locks.c, or the user did),
 * the filter is made when the index pages to read are few against the searches done so
 * far (FILTER_SEARCHES_PER_PAGE: what it costs then is about what the searches did),
 * within maintenance_work_mem (the load's plan's budget too): made only if its making fits
 * (k + 4 copies of each fingerprint, max_members()), then dropped once the k + 1 copies it
 * keeps as the statement adds rows would pass it; the statement then searches every row.
 * Not under SERIALIZABLE (the searches' predicate locks are part of what it checks).
 *
 * The table index (with a similarity threshold). The same state, made at the same point
 * (the pages counted are the targets' own: the making reads every row), holds instead a
 * SetIndex (src/core/set_index.hpp): each row's LSH keys and shingle set, by band key,
 * read from the targets with the search's snapshot (the latest: what committed before the
 * table lock, and this transaction's rows so far), the set each verification would use
 * (the stored one of 'sets=column' when well-formed, else the text's; a text over
 * INDEX_MAX_TEXT is held without one), and then every row the trigger lets through. It
 * answers a new row's search itself, so it must hold exactly the rows a search sees, not
 * a superset as the filter may: besides everything above, a delete in a target drops it,
 * and between two rows the count of inserts must grow by exactly the row let through last
 * (ON CONFLICT DO NOTHING lets a row through the trigger and then inserts nothing, or
 * inserts it speculatively and deletes it). Its answers:
 * - none: no row sharing a key in its band is at least as similar as the threshold (the
 *   same merge as the search's, stopped once the threshold is out of reach): the row is
 *   written without a search;
 * - found, for skip and link: skip drops the row; link names the row the search's order
 *   of preference picks (originals, then the most similar, then the smallest key: keys of
 *   type int2, int4 or int8, whose order the index compares; with another key there is no
 *   index for link). Reject searches, so that its message names the row as always;
 * - unknown: a row it holds without its set (past three quarters of maintenance_work_mem,
 *   or a long text) might decide, or (link) two originals are of similarity 1, of which
 *   the search takes the first it meets in the table: the row is searched.
 * A stored set decides for its row in the search too, also against a byte-identical text.
 * Only under READ COMMITTED (under REPEATABLE READ a search checks the rows it finds
 * against the transaction's snapshot). Past maintenance_work_mem it is dropped (checked
 * after each row added: a vector's growth allocates before it frees, so the heap peaks at
 * up to 1.4 times it, 2.2 with link, measured; docs/security.md).
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "access/detoast.h"
#include "access/heapam.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "utils/array.h"

#include "capi/near_filter_capi.h"
#include "capi/set_index_capi.h"
#include "pg/compat.h"
#include "pg/dedupe.h"
#include "pg/simhash_pg.h"

/* Searches of one statement before the filter is considered, and between two looks. */
#define FILTER_MIN_SEARCHES 256
#define FILTER_LOOK_EVERY 256

/*
 * The filter is made once the statement has searched this many times as many rows as
 * the indexes it reads have pages. Measured at k = 3 (85,000 new rows into a table of 1M):
 * making it costs about 50 us a page (reading about 300 entries, sorting them into k + 1
 * arrays), one row's search 15 to 20 us. So a statement that ends right after the filter
 * is made has spent at most about twice what its searches cost, and a long one saves
 * nearly all of them.
 */
#define FILTER_SEARCHES_PER_PAGE 2

typedef struct TableFilter
{
	Oid			root;
	LocalTransactionId lxid;
	SubTransactionId subxid;
	int			k;				/* the trigger's distance and columns (in root) */
	AttrNumber	text_attno;
	AttrNumber	fp_attno;
	CommandId	cid;			/* the command id the next row must find */
	uint64		searches;		/* of the statement, while the command id held */
	uint64		next_look;
	bool		given_up;		/* too large, or not allowed: not again in this statement */
	simhash_near_filter *fps;	/* NULL until made (with a distance) */
	/* With a threshold: the table index, its trigger's policy and what it shows. */
	double		min_similarity;
	DedupePolicy policy;
	char	   *sets_name;		/* 'sets=column' (by name: numbers differ by partition) */
	simhash_set_index *sets;	/* NULL until made */
	Oid			key_type;		/* link: the key's type (int2, int4, int8) */
	bool		may_read;		/* may_read_near_duplicate() when made */
	int			ntargets;
	int64	   *updated;		/* each target's updates (target_writes()) when made */
	int64	   *deleted;		/* and deletes */
	int64		inserted;		/* the targets' inserts (target_writes()) at the last row */
	bool		inserting;		/* the last row was let through as an INSERT */
	Size		budget;
	uint64		members;
	uint64		spared;
	MemoryContext cxt;
} TableFilter;

static TableFilter *table_filter;

/* Frees the filter's C++ side when its context goes (end of transaction, or dropped). */
static void
free_table_filter(void *arg)
{
	TableFilter *f = (TableFilter *) arg;

	simhash_near_filter_free(f->fps);
	f->fps = NULL;
	simhash_set_index_free(f->sets);
	f->sets = NULL;
	if (table_filter == f)
		table_filter = NULL;
}

/* True when the filter (or table index) is made and in use. */
static bool
made(const TableFilter *f)
{
	return f->fps != NULL || f->sets != NULL;
}

/* What the filter is called in messages. */
static const char *
filter_name(const TableFilter *f)
{
	return f->min_similarity > 0 ? "table index" : "table filter";
}

static void
drop_filter(void)
{
	if (table_filter != NULL)
	{
		TableFilter *f = table_filter;

		table_filter = NULL;
		if (f->sets != NULL)
			elog(DEBUG1, "simhash_dedupe: table index of %zu rows (%zu with their sets, %zu kB) dropped (%llu searches spared)",
				 simhash_set_index_rows(f->sets), simhash_set_index_held(f->sets),
				 simhash_set_index_bytes(f->sets) / 1024, (unsigned long long) f->spared);
		else if (made(f))
			elog(DEBUG1, "simhash_dedupe: %s dropped (%llu searches spared)",
				 filter_name(f), (unsigned long long) f->spared);
		MemoryContextDelete(f->cxt);
	}
}

/*
 * The statement keeps its state but loses its filter, and gets none again before it ends
 * (too large, or the table changed behind it).
 */
static void
give_up(TableFilter *f)
{
	simhash_near_filter_free(f->fps);
	f->fps = NULL;
	simhash_set_index_free(f->sets);
	f->sets = NULL;
	f->given_up = true;
}


/* True when the trigger of config c searches as the filter's does. */
static bool
same_search(const TableFilter *f, const DedupeConfig *c)
{
	return f->root == c->root && f->k == c->k && f->min_similarity == c->min_similarity &&
		f->policy == c->policy &&
		(f->sets_name == NULL ? c->sets_name == NULL :
		 c->sets_name != NULL && strcmp(f->sets_name, c->sets_name) == 0) &&
		f->text_attno == c->root_text_attno && f->fp_attno == c->root_fp_attno;
}

/* A new state for the statement now running, for c's trigger. */
static TableFilter *
start(DedupeConfig *c)
{
	MemoryContext cxt = AllocSetContextCreate(TopTransactionContext, "simhash table filter",
											  ALLOCSET_SMALL_SIZES);
	TableFilter *f = MemoryContextAllocZero(cxt, sizeof(TableFilter));
	MemoryContextCallback *cb = MemoryContextAlloc(cxt, sizeof(MemoryContextCallback));

	f->cxt = cxt;
	f->root = c->root;
	f->lxid = SIMHASH_MY_LXID;
	f->subxid = GetCurrentSubTransactionId();
	f->k = c->k;
	f->min_similarity = c->min_similarity;
	f->policy = c->policy;
	f->sets_name = c->sets_name != NULL ? MemoryContextStrdup(cxt, c->sets_name) : NULL;
	f->text_attno = c->root_text_attno;
	f->fp_attno = c->root_fp_attno;
	f->next_look = FILTER_MIN_SEARCHES;
	cb->func = free_table_filter;
	cb->arg = f;
	MemoryContextRegisterResetCallback(cxt, cb);
	table_filter = f;
	return f;
}

/*
 * The command id the trigger leaves for the next row: the current one, marked used, so
 * that any SQL a function runs before the next row (SPI increments the command counter
 * before each statement that may write, but only past a used id) moves it on.
 */
static void
expect(TableFilter *f)
{
	f->cid = GetCurrentCommandId(true);
}

/*
 * True when no target has had a row updated since the filter was made, and the targets
 * have had no row inserted since the last row the trigger saw but that row, if it let it
 * through as an INSERT (nothing but the statement's own rows can be inserted between two
 * of them without moving the command id, and each of those passes the trigger first,
 * unless something kept it from firing). Otherwise *why says which. baseline: the counts
 * are taken as they are now (false: not counted yet).
 */
static bool
table_unchanged(TableFilter *f, DedupeConfig *c, bool baseline, const char **why)
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
			f->updated[t] = u;
			f->deleted[t] = d;
		}
		else if (u != f->updated[t])
			ok = false;
		else if (f->sets != NULL && d != f->deleted[t])
		{
			*why = "a delete";
			ok = false;
		}
		inserted += i;
	}
	/*
	 * The table index answers "found" too, so a row it holds must be in the table: the
	 * row let through last must have been inserted (not dropped by ON CONFLICT DO NOTHING,
	 * whose speculative insertion, when undone, counts a delete).
	 */
	if (!baseline && inserted - f->inserted > (f->inserting ? 1 : 0))
	{
		*why = "a row inserted past the trigger";
		ok = false;
	}
	else if (!baseline && f->sets != NULL && inserted - f->inserted < (f->inserting ? 1 : 0))
	{
		*why = "a row let through but not inserted";
		ok = false;
	}
	f->inserted = inserted;
	f->inserting = false;
	return ok;
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

/*
 * Pages the filter would read (with a threshold, the table index: the targets' own); false
 * when a target has none to read.
 */
static bool
pages_to_read(DedupeConfig *c, BlockNumber *pages)
{
	*pages = 0;
	for (int t = 0; t < c->ntargets; t++)
	{
		Oid			relid = c->min_similarity > 0 ? c->targets[t].relid : fingerprint_index(&c->targets[t]);
		Relation	r;

		if (!OidIsValid(relid))
			return false;
		r = relation_open(relid, AccessShareLock);
		*pages += RelationGetNumberOfBlocks(r);
		relation_close(r, NoLock);
	}
	return true;
}

/* Adds fp to the filter; false past the budget (or out of memory). */
static bool
add(TableFilter *f, uint64 fp)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	if (simhash_near_filter_add(f->fps, fp, errbuf, sizeof(errbuf)) != SIMHASH_OK)
		return false;
	f->members++;
	return (f->members & 1023) != 0 || simhash_near_filter_bytes(f->fps) <= f->budget;
}

/*
 * The most members a filter at distance k may be made with from an array, within budget:
 * while it is made it holds its k + 1 sorted copies of each member and their start tables,
 * the array read here (at most that many members), and two buffers of the merge with the
 * radix sort's counts (see near_filter.hpp): 8 (k + 4) bytes a member, plus the tables.
 * At most what a NearFilter holds (2^31 - 1).
 */
static uint64
max_members(Size budget, int k)
{
	Size		fixed = (Size) (k + 1) * 65537 * 4 + 65536 * 8;
	uint64		most;

	if (budget <= fixed)
		return 0;
	most = (uint64) (budget - fixed) / (8 * (uint64) (k + 4));
	return Min(most, (uint64) PG_INT32_MAX);
}

/*
 * Reads every fingerprint of the fingerprint index of each target into the filter, at
 * once; false past the budget (nothing is added then). The array grows to at most
 * max_members(), so that the making stays within the budget.
 */
static bool
fill(TableFilter *f, DedupeConfig *c)
{
	uint64		most = max_members(f->budget, c->k);
	uint64		cap = Min((uint64) 1024, most);
	uint64		n = 0;
	uint64	   *fps;
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	bool		ok = true;

	if (cap == 0)
		return false;
	fps = MemoryContextAllocHuge(f->cxt, cap * sizeof(uint64));

	for (int t = 0; t < c->ntargets && ok; t++)
	{
		Relation	heap = table_open(c->targets[t].relid, AccessShareLock);
		Relation	ind = index_open(fingerprint_index(&c->targets[t]), AccessShareLock);
		IndexScanDesc scan;
		bool		have_last = false;
		uint64		last = 0;
		uint64		read = 0;

		scan = index_beginscan(heap, ind, SnapshotAny, 0, 0);
		scan->xs_want_itup = true;
		index_rescan(scan, NULL, 0, NULL, 0);
		while (ok && index_getnext_tid(scan, ForwardScanDirection) != NULL)
		{
			bool		isnull;
			Datum		d = index_getattr(scan->xs_itup, 2, scan->xs_itupdesc, &isnull);
			uint64		fp;

			if ((++read & 4095) == 0)
				CHECK_FOR_INTERRUPTS();
			if (isnull)
				continue;
			fp = (uint64) DatumGetInt64(d);
			/* entries come in (block, fp) order: copies of one fingerprint together */
			if (have_last && fp == last)
				continue;
			have_last = true;
			last = fp;
			if (n == cap)
			{
				if (cap >= most)
				{
					ok = false;
					break;
				}
				cap = Min(2 * cap, most);
				fps = repalloc_huge(fps, cap * sizeof(uint64));
			}
			fps[n++] = fp;
		}
		index_endscan(scan);
		index_close(ind, NoLock);
		table_close(heap, NoLock);
	}
	/* one block's sort a step, with a look for interrupts between them */
	for (int step = 0; ok && step <= c->k + 1; step++)
	{
		CHECK_FOR_INTERRUPTS();
		if (simhash_near_filter_add_many_step(f->fps, fps, n, step, errbuf,
											  sizeof(errbuf)) != SIMHASH_OK)
			ok = false;
	}
	if (ok)
		f->members = n;
	pfree(fps);
	return ok;
}

/*
 * With a threshold: texts longer than this (in bytes) are not shingled for the table
 * index; a row sharing a key with one is searched.
 */
#define INDEX_MAX_TEXT (1024 * 1024)

/*
 * Adds a row to the table index, its set held while the index stays within three
 * quarters of the budget; false (nothing added) when adding it could pass the whole
 * budget at any point (simhash_set_index_peak(): a growing buffer holds its old and new
 * copies at once), or out of memory.
 */
static bool
index_add(TableFilter *f, const int64 *keys, const uint64 *set, size_t n, int64 tag,
		  bool original)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	size_t		hold_limit = f->budget - f->budget / 4;

	if (simhash_set_index_peak(f->sets, n, set != NULL, original, hold_limit) > f->budget)
		return false;
	if (simhash_set_index_add(f->sets, keys, set, n, tag, original, hold_limit,
							  errbuf, sizeof(errbuf)) != SIMHASH_OK)
		return false;
	f->members++;
	return true;
}

/* The link policy's tag of a key value: the key itself (int2, int4 or int8). */
static int64
key_tag(TableFilter *f, Datum d)
{
	switch (f->key_type)
	{
		case INT2OID:
			return DatumGetInt16(d);
		case INT4OID:
			return DatumGetInt32(d);
		case INT8OID:
			return DatumGetInt64(d);
	}
	return 0;
}

static Datum
tag_key(TableFilter *f, int64 tag)
{
	switch (f->key_type)
	{
		case INT2OID:
			return Int16GetDatum((int16) tag);
		case INT4OID:
			return Int32GetDatum((int32) tag);
	}
	return Int64GetDatum(tag);
}

/*
 * One row of target in slot into the table index: its keys (from the keys column, or
 * without one from its text, as the simhash_ops index computes them), its set, its tag and
 * class; a row without keys or shingles is never a candidate. False past the budget, or
 * when the index cannot answer for the row (a link key that is NULL, a text too long to
 * shingle here without a keys column).
 */
static bool
index_row(TableFilter *f, DedupeTarget *target, TupleTableSlot *slot)
{
	int64		keys[SIMHASH_LSH_BANDS];
	bool		isnull;
	Datum		d;
	SimhashShingleSet set = {NULL, 0};
	SimhashShingleSet text_set = {NULL, 0};
	bool		have_set = false;
	size_t		n = SIMHASH_SET_UNKNOWN_SIZE;
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
	if (target->fp_attno == 0)
	{
		if (toast_raw_datum_size(d) - VARHDRSZ > INDEX_MAX_TEXT)
			return false;
		text_set = simhash_text_shingles(DatumGetTextPP(d));
		if (simhash_shingle_lsh_keys(text_set, keys) != SIMHASH_LSH_BANDS)
			return true;		/* no key: never a candidate */
	}
	if (target->sets_attno > 0)
	{
		bool		sets_null;
		Datum		sd = slot_getattr(slot, target->sets_attno, &sets_null);

		have_set = !sets_null && stored_set_of(sd, &set);
	}
	if (!have_set && text_set.data != NULL)
	{
		set = text_set;
		have_set = true;
	}
	if (!have_set && toast_raw_datum_size(d) - VARHDRSZ <= INDEX_MAX_TEXT)
	{
		set = simhash_text_shingles(DatumGetTextPP(d));
		have_set = true;
	}
	if (have_set)
		n = set.size;
	if (have_set && n == 0)
		return true;			/* no shingle: never similar */
	if (f->policy == POLICY_LINK)
	{
		(void) slot_getattr(slot, target->link_attno, &isnull);
		original = isnull;
		d = slot_getattr(slot, target->key_attnos[0], &isnull);
		if (isnull)
			return false;		/* cannot name it: the search would */
		tag = key_tag(f, d);
	}
	return index_add(f, keys, have_set ? set.data : NULL, n, tag, original);
}

/*
 * With a threshold: reads every row of each target that a search would see now (the
 * latest snapshot: what committed before the table lock, and this transaction's rows so
 * far) into the table index, with the set its verification would use: the stored set
 * ('sets=column') when well-formed, else its text's. False past the budget.
 */
static bool
fill_sets(TableFilter *f, DedupeConfig *c)
{
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	MemoryContext row_cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash table index row",
												  ALLOCSET_DEFAULT_SIZES);
	bool		ok = true;

	for (int t = 0; t < c->ntargets && ok; t++)
	{
		DedupeTarget *target = &c->targets[t];
		Relation	heap = table_open(target->relid, AccessShareLock);
		TableScanDesc scan = table_beginscan(heap, snapshot, 0, NULL);
		TupleTableSlot *slot = table_slot_create(heap, NULL);

		while (ok && table_scan_getnextslot(scan, ForwardScanDirection, slot))
		{
			MemoryContext old = MemoryContextSwitchTo(row_cxt);

			/* every row: shingling a text of up to INDEX_MAX_TEXT takes tens of ms */
			CHECK_FOR_INTERRUPTS();
			ok = index_row(f, target, slot);
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


/*
 * With a threshold and policy link, the table index names a row by its key, which must be
 * one column of type int2, int4 or int8 (whose order is the tag's), the same in each
 * target; false otherwise.
 */
static bool
link_key_ok(TableFilter *f, DedupeConfig *c)
{
	f->key_type = InvalidOid;
	if (c->nkeys != 1 || !c->key_cmp_ok)
		return false;
	for (int t = 0; t < c->ntargets; t++)
	{
		Relation	r = table_open(c->targets[t].relid, AccessShareLock);
		Oid			type = TupleDescAttr(RelationGetDescr(r), c->targets[t].key_attnos[0] - 1)->atttypid;

		table_close(r, NoLock);
		if ((type != INT2OID && type != INT4OID && type != INT8OID) ||
			(f->key_type != InvalidOid && f->key_type != type))
			return false;
		f->key_type = type;
	}
	return true;
}

/*
 * True when the trigger tg fires on every target with the same arguments. The statement's
 * state is shared by the rows of every target (the configurations of one root, compared by
 * same_search()), which is right for the clones of one trigger on a partitioned table; but
 * each partition may have its own trigger of the same name (filter_unsafe() allows one
 * a target), with another link column, say, so that which rows count as originals depends
 * on the partition a row goes to. The index would then answer a row by another
 * trigger's columns: none is made.
 */
static bool
same_trigger_everywhere(DedupeConfig *c, Trigger *tg)
{
	bool		same = true;

	for (int t = 0; t < c->ntargets && same; t++)
	{
		Relation	rel = table_open(c->targets[t].relid, AccessShareLock);
		TriggerDesc *desc = rel->trigdesc;
		bool		found = false;

		for (int i = 0; desc != NULL && i < desc->numtriggers && !found; i++)
		{
			Trigger    *other = &desc->triggers[i];

			if (strcmp(other->tgname, tg->tgname) != 0 || other->tgfoid != tg->tgfoid)
				continue;
			found = true;
			same = other->tgnargs == tg->tgnargs;
			for (int a = 0; same && a < tg->tgnargs; a++)
				same = strcmp(other->tgargs[a], tg->tgargs[a]) == 0;
		}
		same = same && found;
		table_close(rel, NoLock);
	}
	return same;
}

/* Makes the filter if the statement and the transaction's locks allow it and it pays. */
static void
consider(TableFilter *f, DedupeConfig *c, Trigger *tg)
{
	BlockNumber pages;
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	const char *why;

	f->next_look = f->searches + FILTER_LOOK_EVERY;
	if (!holds_table(c))
		return;
	if (!may_read_table_whole(c))
	{
		f->given_up = true;		/* a lock taken by REFERENCES or TRIGGER: no filter */
		return;
	}
	/*
	 * With a threshold, only under READ COMMITTED: under REPEATABLE READ a search also
	 * checks each near duplicate against the transaction's snapshot.
	 */
	if (IsolationIsSerializable() || (c->min_similarity > 0 && IsolationUsesXactSnapshot()) ||
		(c->min_similarity > 0 && c->policy == POLICY_LINK && !link_key_ok(f, c)) ||
		(c->min_similarity > 0 && !same_trigger_everywhere(c, tg)) ||
		filter_unsafe(c, tg->tgname, tg->tgfoid) || !pages_to_read(c, &pages))
	{
		f->given_up = true;
		return;
	}
	/* allocated once: this runs every FILTER_LOOK_EVERY searches until the filter is made */
	if (f->updated == NULL)
	{
		f->ntargets = c->ntargets;
		f->updated = MemoryContextAlloc(f->cxt, sizeof(int64) * Max(c->ntargets, 1));
		f->deleted = MemoryContextAlloc(f->cxt, sizeof(int64) * Max(c->ntargets, 1));
	}
	else if (f->ntargets != c->ntargets)
	{
		f->given_up = true;
		return;
	}
	if (!table_unchanged(f, c, true, &why))
		return;					/* not counted yet: later */
	if ((uint64) pages * FILTER_SEARCHES_PER_PAGE > f->searches)
		return;
	f->budget = (Size) maintenance_work_mem * 1024;
	if (c->min_similarity > 0)
	{
		simhash_check_status(simhash_set_index_create(&f->sets, errbuf, sizeof(errbuf)), errbuf);
		f->may_read = may_read_near_duplicate(c);
		if (!fill_sets(f, c))
		{
			elog(DEBUG1, "simhash_dedupe: no table index: the table's rows would take more than maintenance_work_mem");
			give_up(f);
			return;
		}
		elog(DEBUG1, "simhash_dedupe: table index of %llu rows (%zu with their sets) after %llu searches",
			 (unsigned long long) f->members, simhash_set_index_held(f->sets),
			 (unsigned long long) f->searches);
		return;
	}
	simhash_check_status(simhash_near_filter_create(c->k, &f->fps, errbuf, sizeof(errbuf)),
						 errbuf);
	if (!fill(f, c))
	{
		elog(DEBUG1, "simhash_dedupe: no table filter: the table's fingerprints would take more than maintenance_work_mem");
		give_up(f);
		return;
	}
	elog(DEBUG1, "simhash_dedupe: table filter of %llu fingerprints after %llu searches",
		 (unsigned long long) f->members, (unsigned long long) f->searches);
}

/*
 * Called first for every row the trigger sees with a distance: the state (and filter) of
 * an earlier statement, or of this one once SQL wrote meanwhile, is dropped.
 */
void
table_filter_row(DedupeConfig *c)
{
	TableFilter *f = table_filter;
	const char *why = "an update";	/* a partition added counts as one */

	if (f == NULL)
		return;
	if (f->lxid != SIMHASH_MY_LXID || f->subxid != GetCurrentSubTransactionId() ||
		f->cid != GetCurrentCommandId(false) || !same_search(f, c))
		drop_filter();
	else if (made(f) && (f->ntargets != c->ntargets || !table_unchanged(f, c, false, &why)))
	{
		/* the statement updates the table (or inserts past the trigger): no filter again */
		elog(DEBUG1, "simhash_dedupe: %s dropped after %s (%llu searches spared)",
			 filter_name(f), why, (unsigned long long) f->spared);
		give_up(f);
	}
}

bool
table_filter_clear(DedupeConfig *c, uint64 fp)
{
	TableFilter *f = table_filter;

	if (f == NULL || f->fps == NULL || simhash_near_filter_may_have(f->fps, fp))
		return false;
	f->spared++;
	return true;
}

void
table_filter_searched(DedupeConfig *c, Trigger *tg)
{
	TableFilter *f = table_filter;

	if (!c->indexed)
		return;
	if (f == NULL)
		f = start(c);
	f->searches++;
	if (!made(f) && !f->given_up && f->searches >= f->next_look)
		consider(f, c, tg);
	expect(f);
}

void
table_filter_written(DedupeConfig *c, uint64 fp)
{
	TableFilter *f = table_filter;

	if (f == NULL)
		return;
	if (f->fps != NULL && !add(f, fp))
	{
		elog(DEBUG1, "simhash_dedupe: table filter past maintenance_work_mem");
		give_up(f);
	}
	expect(f);
}

/*
 * With a threshold: the table index's answer for a new row with keys and a shingle set
 * (w), into *found; false when the row is to be searched (no index, a row it holds without
 * its set might decide, or reject found one: the search names it in the message).
 */
bool
table_index_answer(DedupeConfig *c, RowWork *w, Found *found)
{
	TableFilter *f = table_filter;
	simhash_set_answer answer;
	int64		tag;
	int			original;
	double		similarity;

	if (f == NULL || f->sets == NULL || w->nlsh != SIMHASH_LSH_BANDS)
		return false;
	answer = simhash_set_index_find(f->sets, w->lsh, w->new_text.set.data, w->new_text.set.size,
									c->min_similarity, c->policy == POLICY_LINK, &tag,
									&original, &similarity);
	if (answer == SIMHASH_SET_UNKNOWN || (answer == SIMHASH_SET_FOUND && c->policy == POLICY_REJECT))
		return false;
	f->spared++;
	expect(f);
	if (answer == SIMHASH_SET_NONE)
		return true;
	found->any = true;
	found->similarity = similarity;
	found->is_original = original != 0;
	if (c->policy == POLICY_LINK)
	{
		found->key = tag_key(f, tag);
		/* only whether it is NULL counts for link (refuse_hidden_link()) */
		found->key_text = f->may_read ? pstrdup("") : NULL;
	}
	return true;
}

/*
 * With a threshold: the new row in tuple (w its keys and set) is let through; original:
 * its link column is NULL.
 */
void
table_index_written(DedupeConfig *c, Relation rel, RowWork *w, HeapTuple tuple, bool original)
{
	TableFilter *f = table_filter;
	int64		tag = 0;

	if (f == NULL)
		return;
	if (f->sets != NULL && w->nlsh == SIMHASH_LSH_BANDS && w->new_text.set.size > 0)
	{
		if (c->policy == POLICY_LINK)
		{
			bool		isnull = true;
			Datum		d = (Datum) 0;

			/* the key of the row, in the target it goes to */
			for (int t = 0; t < c->ntargets; t++)
				if (c->targets[t].relid == RelationGetRelid(rel))
					d = heap_getattr(tuple, c->targets[t].key_attnos[0], RelationGetDescr(rel),
									 &isnull);
			if (isnull)
			{
				elog(DEBUG1, "simhash_dedupe: table index dropped: a row without a key");
				give_up(f);
				expect(f);
				return;
			}
			tag = key_tag(f, d);
		}
		if (!index_add(f, w->lsh, w->new_text.set.data, w->new_text.set.size, tag, original))
		{
			elog(DEBUG1, "simhash_dedupe: table index past maintenance_work_mem");
			give_up(f);
		}
	}
	expect(f);
}

/* The row the trigger is about to return is an INSERT (table_unchanged() allows its insert). */
void
table_filter_inserting(void)
{
	if (table_filter != NULL)
		table_filter->inserting = true;
}
