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

#include "capi/near_filter_capi.h"
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
	simhash_near_filter *fps;	/* NULL until made */
	int			ntargets;
	int64	   *updated;		/* each target's updates (counted()) when made */
	int64		inserted;		/* the targets' inserts (counted()) at the last row */
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
	if (table_filter == f)
		table_filter = NULL;
}

static void
drop_filter(void)
{
	if (table_filter != NULL)
	{
		TableFilter *f = table_filter;

		table_filter = NULL;
		if (f->fps != NULL)
			elog(DEBUG1, "simhash_dedupe: table filter dropped (%llu searches spared)",
				 (unsigned long long) f->spared);
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
	f->given_up = true;
}

/* True when the trigger of config c searches as the filter's does. */
static bool
same_search(const TableFilter *f, const DedupeConfig *c)
{
	return f->root == c->root && f->k == c->k && c->min_similarity == 0 &&
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
 * The rows this transaction has updated and inserted in relation relid, as its table
 * statistics count them (every update and insert, whatever statement or trigger made it,
 * through the trigger or not; nothing else moves the counts but a TRUNCATE, which zeroes
 * them): false when they are not counted (track_counts off, or not yet for this relation).
 * start: when the filter is made, a relation this backend has not counted anything for
 * yet (a partition that no row has gone to, whose candidates were all read from the
 * index) starts being counted now, as its first count would start it (counts from then
 * on are all the filter needs); without it, such a partition kept the filter off.
 */
static bool
counted(Oid relid, int64 *updated, int64 *inserted, bool start)
{
	Relation	rel = RelationIdGetRelation(relid);
	struct PgStat_TableStatus *st;
	bool		ok = false;

	if (rel == NULL)
		return false;
	if (start && rel->pgstat_info == NULL && rel->pgstat_enabled)
		pgstat_assoc_relation(rel);
	st = rel->pgstat_info;
	if (st != NULL)
	{
		*updated = SIMHASH_TABSTAT_UPDATED(st);
		*inserted = SIMHASH_TABSTAT_INSERTED(st);
		for (struct PgStat_TableXactStatus *x = st->trans; x != NULL; x = x->upper)
		{
			*updated += x->tuples_updated;
			*inserted += x->tuples_inserted;
		}
		ok = true;
	}
	RelationClose(rel);
	return ok;
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

		if (!counted(c->targets[t].relid, &u, &i, baseline))
			return false;
		if (baseline)
			f->updated[t] = u;
		else if (u != f->updated[t])
			ok = false;
		inserted += i;
	}
	if (!baseline && inserted - f->inserted > (f->inserting ? 1 : 0))
	{
		*why = "a row inserted past the trigger";
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

/* Pages of the indexes the filter would read; false when a target has none to read. */
static bool
pages_to_read(DedupeConfig *c, BlockNumber *pages)
{
	*pages = 0;
	for (int t = 0; t < c->ntargets; t++)
	{
		Oid			ind = fingerprint_index(&c->targets[t]);
		Relation	r;

		if (!OidIsValid(ind))
			return false;
		r = index_open(ind, AccessShareLock);
		*pages += RelationGetNumberOfBlocks(r);
		index_close(r, NoLock);
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
	if (IsolationIsSerializable() || filter_unsafe(c, tg->tgname, tg->tgfoid) ||
		!pages_to_read(c, &pages))
	{
		f->given_up = true;
		return;
	}
	/* allocated once: this runs every FILTER_LOOK_EVERY searches until the filter is made */
	if (f->updated == NULL)
	{
		f->ntargets = c->ntargets;
		f->updated = MemoryContextAlloc(f->cxt, sizeof(int64) * Max(c->ntargets, 1));
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
	else if (f->fps != NULL && (f->ntargets != c->ntargets || !table_unchanged(f, c, false, &why)))
	{
		/* the statement updates the table (or inserts past the trigger): no filter again */
		elog(DEBUG1, "simhash_dedupe: table filter dropped after %s (%llu searches spared)",
			 why, (unsigned long long) f->spared);
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

	if (c->min_similarity > 0 || !c->indexed)
		return;
	if (f == NULL)
		f = start(c);
	f->searches++;
	if (f->fps == NULL && !f->given_up && f->searches >= f->next_look)
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

/* The row the trigger is about to return is an INSERT (table_unchanged() allows its insert). */
void
table_filter_inserting(void)
{
	if (table_filter != NULL)
		table_filter->inserting = true;
}
