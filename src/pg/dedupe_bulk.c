/*
 * simhash_dedupe_insert(target regclass, query text): a bulk load into a table with a
 * simhash_dedupe trigger that cannot deadlock with another such load.
 *
 * Why. The trigger takes the lock keys of each row as the row is written (dedupe.c). A
 * transaction that writes many rows therefore takes keys in the order of its rows, and a
 * lock key stands for many fingerprints (block values, LSH keys folded to 32 bits): two
 * multi-row loads of unrelated texts that share keys take them in different orders and
 * can deadlock (measured: 29 of 300 200-row transactions with 3 writers).
 *
 * How. The load reads the rows of the query once (into a tuplestore: work_mem, then a
 * temporary file), computes each row's keys as the trigger will (row_keys() and
 * row_lock_keys(), on the row as the target's columns hold it), and takes them ALL before
 * it writes any row: sorted, distinct, one after the other (serialize_bulk()); or, for a
 * load with many keys, SHARE ROW EXCLUSIVE on the table, waiting for it (one lock, in
 * place of many keys: decided from the number of rows before any key is computed, when
 * they may take that many, bulk_takes_table()). Then it inserts the rows with one INSERT
 * INTO target (columns) SELECT them FROM the tuplestore (insert_rows(): the query's values
 * as they are, and INSERT's rules, defaults, identity, domain checks and row-level
 * security): the trigger checks every row as for any INSERT (same search, same policies,
 * rows of the load that are near duplicates of each other included), finding its keys
 * already held
 * (set_bulk_root(): it checks that it holds them, and takes none). A load waits only while
 * it holds keys smaller than the one it waits for, so a cycle of loads waiting for each
 * other cannot form: two loads never deadlock on the trigger's locks, nor a load with a
 * transaction that writes one row.
 *
 * With a Hamming distance, the load also spares the trigger most of its searches (the
 * load's filter, BulkFilter below). Once its keys are held, the load takes ROW EXCLUSIVE
 * on the table (so that a writer holding the table lock in their place has committed) and
 * a snapshot, and searches the table for each distinct fingerprint of its rows, before any
 * row is written: through indexes that hold none of the load's rows yet (and not at all in
 * a table with no page). While the rows are written, the trigger skips the search of a row
 * whose fingerprint the table had no near duplicate for and that no row written since is
 * within k of (a NearFilter of their fingerprints, src/core/near_filter.hpp, which never
 * answers a false "no"); every other row is searched as usual, and only that search acts:
 * which row a link names, the key a reject shows, the serialization checks. The answer is
 * therefore the trigger's, row for row: the keys of every row were held from before the
 * snapshot, so no other writer can have added a near duplicate since, and the rows of this
 * statement are all in the filter. Past work_mem the filter stops growing and the rest of
 * the rows are searched as usual.
 *
 * With a similarity threshold, the load's plan does the same job with the pairs the
 * verified all-pairs engine finds among the load's distinct texts (BulkPlan below, built
 * by make_plan() under the load's keys or table lock, then ROW EXCLUSIVE and a snapshot
 * as for the filter, in which it searches the table once a distinct text): the trigger
 * takes its answer from the plan instead of searching whenever the plan decides it
 * exactly, and searches as usual otherwise. The plan's arrays stay within
 * maintenance_work_mem (else no plan, or it turns off and the rest of the rows are
 * searched); the engine's shingle sets have a budget of their own, maintenance_work_mem
 * too, past which they go to temporary files.
 *
 * The query's columns are named like the target's columns they fill (the text column must
 * be among them, of the column's type; so must the fingerprint, if given); the other values
 * are assigned to their columns as INSERT assigns them. It runs with
 * the caller's rights and search_path, like the query of simhash_pairs(). INSERT on the
 * target is checked before any lock is taken, so a role that may not insert cannot hold
 * the table's keys against its writers.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_trigger.h"
#include "tcop/utility.h"
#include "utils/rls.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"
#include "utils/queryenvironment.h"
#include "utils/rel.h"
#include "utils/tuplestore.h"
#include "utils/datum.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "access/tableam.h"
#include "access/table.h"
#include "access/xact.h"
#include "storage/proc.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/snapmgr.h"

#include "capi/dedupe_rule_capi.h"
#include "capi/near_filter_capi.h"
#include "pg/similarity.h"
#include "pg/compat.h"
#include "pg/dedupe.h"
#include "pg/search.h"
#include "pg/simhash_pg.h"

/* Rows fetched from the query at a time. */
#define BULK_FETCH_ROWS 1000

/* The lock keys of the load, growing; compacted (sorted, distinct) when full. */
typedef struct KeySet
{
	uint32	   *keys;
	size_t		n;
	size_t		capacity;
} KeySet;

static int
compare_key(const void *a, const void *b)
{
	uint32		x = *(const uint32 *) a;
	uint32		y = *(const uint32 *) b;

	return x < y ? -1 : x > y;
}

/* Sorts the keys and drops repeats. */
static void
compact_keys(KeySet *ks)
{
	size_t		n = 0;

	if (ks->n == 0)
		return;
	qsort(ks->keys, ks->n, sizeof(uint32), compare_key);
	for (size_t i = 0; i < ks->n; i++)
		if (n == 0 || ks->keys[i] != ks->keys[n - 1])
			ks->keys[n++] = ks->keys[i];
	ks->n = n;
}

static void
add_keys(KeySet *ks, const uint32 *keys, size_t n)
{
	if (ks->n + n > ks->capacity)
	{
		compact_keys(ks);
		if (ks->n + n > ks->capacity / 2)
		{
			ks->capacity = Max(ks->capacity * 2, ks->n + n);
			ks->keys = repalloc_huge(ks->keys, ks->capacity * sizeof(uint32));
		}
	}
	memcpy(ks->keys + ks->n, keys, n * sizeof(uint32));
	ks->n += n;
}

/*
 * The writes to the tables a load's rows may go to, as their table statistics count them
 * (target_writes() in dedupe_config.c: every insert, update and delete of the
 * transaction, whatever statement, trigger or cursor made it; the sums only grow within a
 * transaction). The filter and the plan know the table as searched before the INSERT plus
 * the rows the trigger saw; the command id catches SQL run between two rows, but not a
 * write run under the INSERT's own command id: a cursor over an UPDATE ... RETURNING (or
 * DELETE) opened before the load and fetched by a default, a check, a cast or an index
 * expression of a row runs with the command id current at the fetch, without an
 * increment. These counts catch it.
 */
typedef struct TargetWrites
{
	int			n;
	Oid		   *relids;
	int64		updated;		/* when the INSERT began (target_writes_start()) */
	int64		inserted;
	int64		deleted;
	bool		ok;				/* counted (false: track_counts off) */
} TargetWrites;

/* The sums of the targets' counts now (target_writes()); false when one is not counted. */
static bool
target_writes_now(const TargetWrites *w, int64 *updated, int64 *inserted, int64 *deleted)
{
	*updated = *inserted = *deleted = 0;
	for (int t = 0; t < w->n; t++)
	{
		int64		u;
		int64		i;
		int64		d;

		if (!target_writes(w->relids[t], &u, &i, &d, true))
			return false;
		*updated += u;
		*inserted += i;
		*deleted += d;
	}
	return true;
}

/* The targets of c, to be counted from target_writes_start() on. */
static void
target_writes_init(TargetWrites *w, DedupeConfig *c)
{
	w->n = c->ntargets;
	w->relids = palloc(sizeof(Oid) * Max(c->ntargets, 1));
	for (int t = 0; t < c->ntargets; t++)
		w->relids[t] = c->targets[t].relid;
	w->ok = false;
}

/* Just before the INSERT: the counts from which no write but the load's rows may come. */
static void
target_writes_start(TargetWrites *w)
{
	w->ok = target_writes_now(w, &w->updated, &w->inserted, &w->deleted);
}

/*
 * True when, since the INSERT began, no target had a row updated (nor deleted, when
 * deletes matters) and at most max_inserted rows were inserted (the rows the trigger let
 * through so far).
 */
static bool
target_writes_none(const TargetWrites *w, bool deletes, int64 max_inserted)
{
	int64		updated;
	int64		inserted;
	int64		deleted;

	return w->ok && target_writes_now(w, &updated, &inserted, &deleted) &&
		updated == w->updated && (!deletes || deleted == w->deleted) &&
		inserted - w->inserted <= max_inserted;
}

/*
 * The load's filter (see the top of the file), for the rows written into table `root` in
 * transaction lxid while simhash_dedupe_insert() runs. The trigger asks bulk_filter_clear()
 * before it searches and tells bulk_filter_written() of every row it lets through.
 */
typedef struct BulkFilter
{
	Oid			root;
	LocalTransactionId lxid;
	int			k;				/* the load's trigger: its distance and columns (in root) */
	AttrNumber	text_attno;
	AttrNumber	fp_attno;
	uint64	   *searched;		/* the load's fingerprints, sorted, distinct: the table */
	bool	   *in_table;		/* was searched for each; true: it held a near duplicate */
	size_t		nsearched;
	simhash_near_filter *written;	/* fingerprints of the rows written since */
	Size		budget;			/* bytes `written` may hold (work_mem) */
	bool		full;			/* past the budget: every row is searched */
	uint64		spared;			/* searches skipped */
	TargetWrites writes;		/* an update of the table it did not hear of: off */
} BulkFilter;

static BulkFilter *bulk_filter;

static int
compare_fp(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return x < y ? -1 : x > y;
}

static BulkFilter *
active_filter(DedupeConfig *c)
{
	BulkFilter *f = bulk_filter;

	/*
	 * Only for a trigger that searches as the load's does: another simhash_dedupe trigger
	 * of a partition (a larger distance, another column) must search for itself.
	 */
	return f != NULL && f->root == c->root && f->lxid == SIMHASH_MY_LXID &&
		c->min_similarity == 0 && f->k == c->k && f->text_attno == c->root_text_attno &&
		f->fp_attno == c->root_fp_attno ? f : NULL;
}

/*
 * True when a new row of fingerprint fp provably has no near duplicate in the table: the
 * load searched the table for fp before writing and found none, and no row written since
 * is within k. False: search as usual.
 */
bool
bulk_filter_clear(DedupeConfig *c, uint64 fp)
{
	BulkFilter *f = active_filter(c);
	uint64	   *at;

	if (f == NULL || f->full)
		return false;

	/*
	 * An update the trigger did not fire for (a trigger on INSERT only, or a cursor's
	 * UPDATE fetched while the rows are written) may have made a near duplicate the
	 * filter does not know of; the trigger's search sees it. (A delete only makes a
	 * "maybe" of the filter stale; inserts all pass the trigger, which the filter hears.)
	 */
	if (!target_writes_none(&f->writes, false, PG_INT64_MAX))
	{
		f->full = true;
		return false;
	}
	at = bsearch(&fp, f->searched, f->nsearched, sizeof(uint64), compare_fp);
	if (at == NULL || f->in_table[at - f->searched] ||
		simhash_near_filter_may_have(f->written, fp))
		return false;
	f->spared++;
	return true;
}

/* A row of fingerprint fp is being written into the table (any row, searched or not). */
void
bulk_filter_written(DedupeConfig *c, uint64 fp)
{
	BulkFilter *f = active_filter(c);
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	if (f == NULL || f->full)
		return;
	if (simhash_near_filter_bytes(f->written) > f->budget ||
		simhash_near_filter_add(f->written, fp, errbuf, sizeof(errbuf)) != SIMHASH_OK)
		f->full = true;
}

/* Frees the filter's C++ side, also when an error unwinds the load. */
static void
free_filter(void *arg)
{
	BulkFilter *f = (BulkFilter *) arg;

	simhash_near_filter_free(f->written);
	f->written = NULL;
	if (bulk_filter == f)
		bulk_filter = NULL;
}

/*
 * Before a load searches the table ahead of its writes: ROW EXCLUSIVE on it (a writer that
 * holds the table lock takes no key, and this waits for it to end; taken after the keys, as
 * a writer waiting for the table lock may hold some of them), then a snapshot that sees
 * what committed meanwhile.
 */
static Snapshot
lock_for_search(DedupeConfig *c)
{
	LockRelationOid(c->root, RowExclusiveLock);
	CommandCounterIncrement();
	return RegisterSnapshot(GetLatestSnapshot());
}

/*
 * The targets that hold a page into out[0..c->ntargets); returns how many (a table
 * without one has nothing to search).
 */
static int
nonempty_targets(DedupeConfig *c, int *out)
{
	int			n = 0;

	for (int t = 0; t < c->ntargets; t++)
	{
		Relation	rel = table_open(c->targets[t].relid, AccessShareLock);

		if (RelationGetNumberOfBlocks(rel) > 0)
			out[n++] = t;
		table_close(rel, NoLock);
	}
	return n;
}

/*
 * The filter of a load whose rows have fingerprints fps[0..n) (sorted and made distinct
 * here), under its locks: searches the table for each, as the trigger would with a policy
 * that needs one near duplicate. Only for a load the filter can serve, which the caller
 * decides (a distance, block indexes on every target, !filter_unsafe()).
 */
static BulkFilter *
make_filter(DedupeConfig *c, uint64 *fps, size_t n)
{
	BulkFilter *f;
	DedupeConfig probe = *c;
	Snapshot	snapshot;
	int		   *targets;
	int			ntargets;
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	MemoryContextCallback *cb;

	Assert(c->min_similarity == 0 && c->indexed);
	f = palloc0(sizeof(BulkFilter));
	f->root = c->root;
	f->lxid = SIMHASH_MY_LXID;
	f->k = c->k;
	f->text_attno = c->root_text_attno;
	f->fp_attno = c->root_fp_attno;
	f->budget = (Size) work_mem * 1024;
	target_writes_init(&f->writes, c);
	simhash_check_status(simhash_near_filter_create(c->k, &f->written, errbuf, sizeof(errbuf)),
						 errbuf);
	cb = palloc(sizeof(MemoryContextCallback));
	cb->func = free_filter;
	cb->arg = f;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);

	if (n > 0)
		qsort(fps, n, sizeof(uint64), compare_fp);
	for (size_t i = 0; i < n; i++)
		if (f->nsearched == 0 || fps[i] != fps[f->nsearched - 1])
			fps[f->nsearched++] = fps[i];
	f->searched = fps;
	f->in_table = MemoryContextAllocExtended(CurrentMemoryContext, Max(f->nsearched, 1) * sizeof(bool),
											 MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);

	snapshot = lock_for_search(c);
	probe.policy = POLICY_SKIP;
	targets = palloc(sizeof(int) * Max(c->ntargets, 1));
	ntargets = nonempty_targets(c, targets);
	for (int k = 0; k < ntargets; k++)
	{
		int			t = targets[k];

		for (size_t i = 0; i < f->nsearched; i++)
		{
			Found		found = {0};

			if (f->in_table[i])
				continue;
			if ((i & 255) == 0)
				CHECK_FOR_INTERRUPTS();
			search_target(&probe, &c->targets[t], f->searched[i], NULL, 0, NULL, snapshot,
						  NULL, InvalidOid, NULL, NULL, &found);
			f->in_table[i] = found.any;
		}
	}
	UnregisterSnapshot(snapshot);
	return f;
}

/*
 * The load's plan, with a similarity threshold (see the top of the file). Rows are
 * grouped by their text (a 128-bit XXH3 digest of its bytes: the engine groups identical
 * sets the same way in external mode); the engine gets one text a group and finds every
 * pair of groups at or above the threshold that shares an LSH key, the pairs the trigger's
 * search would verify. While the rows are written, the trigger asks the plan instead of
 * searching: a row's near duplicates among the rows written so far are the rows of its
 * own group and of the groups paired with it that are written, which the plan tracks, a
 * few bytes a group. So skip drops a row without a search, reject and link let through a
 * row without one when none is written, and link names the row the search would: the
 * originals first, then the most similar, then the smallest key (a group's rows are
 * identical, so the group stands for its original, or for its smallest key when all of
 * its rows are linked; two originals of the load are never near each other). What the
 * plan cannot answer exactly is searched as usual: a row whose group had a near duplicate
 * in the table before the load (searched for once a group, before any row is written),
 * reject's near duplicate (its message names the row the search finds), link where the
 * caller may not read the row linked to (or, without an order of the key, a tie), and
 * every row once the plan is off (a row that is not the one expected next, past its
 * memory).
 */
#define GROUP_NONE 0			/* no row of the group written */
#define GROUP_ORIGINAL 1		/* written; its first row is an original (key) */
#define GROUP_ONE_LINKED 2		/* one row written, linked elsewhere (key) */
#define GROUP_MANY_LINKED 3		/* several written, each linked (the smallest key) */

typedef struct BulkPlan
{
	Oid			root;
	LocalTransactionId lxid;
	double		t;				/* the load's trigger: its threshold, policy, columns */
	DedupePolicy policy;
	AttrNumber	text_attno;
	AttrNumber	fp_attno;
	uint64		nrows;
	uint64		next;			/* the row the trigger sees next */
	int32	   *group;			/* a row's group, -1 for a NULL text */
	uint32		ngroups;
	XXH128_hash_t *digest;		/* a group's text */
	bool	   *table_near;		/* the table had a near duplicate of it before the load */
	uint8	   *state;			/* GROUP_* */
	Datum	   *key;			/* the primary key the state names (link) */
	uint64	   *adj_start;		/* a group's pairs: adj_other/adj_sim[adj_start[g]..[g + 1]) */
	int32	   *adj_other;
	double	   *adj_sim;
	uint64		npairs;
	bool		may_read;		/* link: the caller may read the rows linked to */
	Oid			key_relid;		/* the last relation a key was read from, and where */
	AttrNumber	key_attno;
	Size		bytes;			/* held, of budget (maintenance_work_mem) */
	Size		budget;
	bool		off;
	const char *why_off;
	CommandId	cid;			/* the command id the next row must find (bulk_plan_row) */
	TargetWrites writes;		/* and no write to the table but the rows seen so far */
	uint64		seed;			/* of the texts' digests (text_digest) */
	MemoryContext cxt;
	uint64		answered;		/* rows the plan answered, rows searched */
	uint64		searched;
	uint64		near_in_table;
} BulkPlan;

static BulkPlan *bulk_plan;

static BulkPlan *
active_plan(DedupeConfig *c)
{
	BulkPlan   *p = bulk_plan;

	return p != NULL && !p->off && p->root == c->root && p->lxid == SIMHASH_MY_LXID &&
		c->min_similarity > 0 && p->t == c->min_similarity && p->policy == c->policy &&
		p->text_attno == c->root_text_attno && p->fp_attno == c->root_fp_attno ? p : NULL;
}

static void
plan_off(BulkPlan *p, const char *why)
{
	if (!p->off)
		p->why_off = why;
	p->off = true;
}

/*
 * A text's digest, seeded with a secret drawn for each plan: whoever writes the texts of
 * a load cannot craft two different texts that the plan takes for one (XXH3 is not made
 * to resist that without a secret).
 */
static XXH128_hash_t
text_digest(const BulkPlan *p, text *t)
{
	return XXH3_128bits_withSeed(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), p->seed);
}

/*
 * The command id the rows are written under, from just before the INSERT that writes them
 * (insert_rows()). It moves on only when something increments the command counter while
 * it is used: SPI does after each statement that writes (a user's function run by a
 * default or a check, which may update or delete rows of the table), and so does the
 * trigger's own search (bulk_plan_searched() takes the new id as the expected one). The
 * rows' own writes (heap, indexes, TOAST) mark it used but do not move it.
 *
 * Taken here unused, after an increment: SPI's own increment before the INSERT then
 * leaves it as it is (nothing between writes: the INSERT is parsed and planned), and the
 * INSERT's executor marks it used when it starts, before its first row. So a function's
 * UPDATE run by a default or a check of any row, even one the plan dropped (nothing
 * written under the id), runs under a new id, which the next row sees.
 */
static void
bulk_plan_expect(BulkPlan *p)
{
	if (p == NULL || p->off)
		return;
	CommandCounterIncrement();
	p->cid = GetCurrentCommandId(false);
	target_writes_start(&p->writes);
}

void
bulk_plan_searched(DedupeConfig *c, int64 row)
{
	BulkPlan   *p = active_plan(c);

	if (p != NULL && row >= 0)
		p->cid = GetCurrentCommandId(true);
}

int64
bulk_plan_row(DedupeConfig *c, const RowWork *w)
{
	BulkPlan   *p = active_plan(c);
	uint64		j;
	int32		g;

	if (p == NULL)
		return -1;

	/*
	 * SQL that wrote since the last row (a default or a check whose function updates or
	 * deletes rows of the table, or inserts rows of its own) may have changed what the
	 * plan knows of the table: the plan is off (see bulk_plan_expect()).
	 */
	if (GetCurrentCommandId(false) != p->cid)
	{
		plan_off(p, "SQL run while the rows were written");
		return -1;
	}

	/*
	 * Nor a write under the INSERT's command id (a cursor's UPDATE or DELETE fetched
	 * meanwhile, see TargetWrites; rows inserted past the trigger): the table counts only
	 * the rows the trigger saw before this one.
	 */
	if (!target_writes_none(&p->writes, true, (int64) p->next))
	{
		plan_off(p, "a write to the table the plan did not see");
		return -1;
	}
	j = p->next++;
	if (j >= p->nrows)
	{
		plan_off(p, "more rows than the load's");
		return -1;
	}
	g = p->group[j];
	if ((g < 0) != (w->new_text.body == NULL) ||
		(g >= 0 && !XXH128_isEqual(p->digest[g], text_digest(p, w->new_text.body))))
	{
		plan_off(p, "a row other than the one expected");
		return -1;
	}
	return (int64) j;
}

/*
 * A candidate group h of similarity sim against the best so far, by the trigger's one
 * rule (src/core/dedupe_rule.hpp: originals first, then the most similar), then (link)
 * the smallest key. *tied: the best is not decided (no key order).
 */
static void
consider_group(DedupeConfig *c, BulkPlan *p, int32 h, double sim, int32 *best,
			   double *best_sim, bool *tied)
{
	uint8		st = p->state[h];
	int			preference;

	if (st == GROUP_NONE)
		return;
	preference = *best < 0 ? -1
		: simhash_dedupe_prefer(st == GROUP_ORIGINAL, sim,
								p->state[*best] == GROUP_ORIGINAL, *best_sim);
	if (preference < 0)
	{
		*best = h;
		*best_sim = sim;
		/* several linked rows of one text tie among themselves, but for the key order */
		*tied = st == GROUP_MANY_LINKED && !c->key_cmp_ok;
	}
	else if (preference == 0 && c->policy == POLICY_LINK)
	{
		if (!c->key_cmp_ok)
			*tied = true;
		else if (dedupe_key_before(c, p->key[h], p->key[*best]))
			*best = h;
	}
}

bool
bulk_plan_answer(DedupeConfig *c, int64 row, Found *found)
{
	BulkPlan   *p = active_plan(c);
	int32		g;
	int32		best = -1;
	double		best_sim = 0;
	bool		tied = false;

	if (p == NULL || row < 0)
		return false;
	g = p->group[row];
	if (g < 0 || p->table_near[g])
	{
		p->searched++;
		return false;
	}
	consider_group(c, p, g, 1.0, &best, &best_sim, &tied);
	for (uint64 e = p->adj_start[g]; e < p->adj_start[g + 1]; e++)
	{
		if (best >= 0 && c->policy != POLICY_LINK)
			break;
		consider_group(c, p, p->adj_other[e], p->adj_sim[e], &best, &best_sim, &tied);
	}
	if (best < 0)
	{
		found->any = false;
		p->answered++;
		return true;
	}
	if (c->policy == POLICY_SKIP)
	{
		found->any = true;
		found->similarity = best_sim;
		p->answered++;
		return true;
	}
	if (c->policy == POLICY_REJECT || tied || !p->may_read)
	{
		p->searched++;
		return false;
	}
	found->any = true;
	found->similarity = best_sim;
	found->is_original = p->state[best] == GROUP_ORIGINAL;
	found->key = p->key[best];
	/* readable (may_read): only its being set matters to the trigger */
	found->key_text = "(a row of this load)";
	p->answered++;
	return true;
}

void
bulk_plan_written(DedupeConfig *c, int64 row, Relation rel, HeapTuple tuple, const Found *found)
{
	BulkPlan   *p = active_plan(c);
	int32		g;
	uint8	   *st;

	if (p == NULL || row < 0 || (g = p->group[row]) < 0)
		return;
	st = &p->state[g];
	if (c->policy != POLICY_LINK)
	{
		*st = GROUP_ORIGINAL;
		return;
	}
	if (*st != GROUP_NONE && !found->any)
	{
		plan_off(p, "an original of a group already written");
		return;
	}
	if (*st == GROUP_ORIGINAL)
		return;
	{
		TupleDesc	desc = RelationGetDescr(rel);
		Form_pg_attribute att;
		bool		isnull;
		Datum		k;
		MemoryContext old;

		if (p->key_relid != RelationGetRelid(rel))
		{
			p->key_attno = 0;
			for (int t = 0; t < c->ntargets; t++)
				if (c->targets[t].relid == RelationGetRelid(rel))
					p->key_attno = c->targets[t].key_attnos[0];
			p->key_relid = RelationGetRelid(rel);
		}
		if (p->key_attno <= 0)
		{
			plan_off(p, "a row of a table without the key");
			return;
		}
		att = TupleDescAttr(desc, p->key_attno - 1);
		k = heap_getattr(tuple, p->key_attno, desc, &isnull);
		if (isnull)
		{
			plan_off(p, "a row without a key");
			return;
		}
		if (!att->attbyval)
		{
			p->bytes += datumGetSize(k, att->attbyval, att->attlen);
			if (p->bytes > p->budget)
			{
				plan_off(p, "keys past maintenance_work_mem");
				return;
			}
		}
		/* several linked rows of one text: the candidate among them is the smallest key */
		if (*st != GROUP_NONE)
		{
			*st = GROUP_MANY_LINKED;
			if (!dedupe_key_before(c, k, p->key[g]))
				return;
		}
		else
			*st = found->any ? GROUP_ONE_LINKED : GROUP_ORIGINAL;
		old = MemoryContextSwitchTo(p->cxt);
		p->key[g] = datumCopy(k, att->attbyval, att->attlen);
		MemoryContextSwitchTo(old);
	}
}

/* The digest of a group's text, and its number. */
typedef struct DigestEntry
{
	XXH128_hash_t digest;
	int32		group;
} DigestEntry;

/* Adds bytes to the plan's memory; false (the plan is off) past its budget. */
static bool
plan_grow(BulkPlan *p, Size bytes)
{
	p->bytes += bytes;
	if (p->bytes <= p->budget)
		return true;
	plan_off(p, "past maintenance_work_mem");
	return false;
}

#define PLAN_PAIRS_BATCH 4096

/* A plan given up while it is made (what would pass maintenance_work_mem): NULL. */
static BulkPlan *
no_plan(TupleTableSlot *slot, Tuplestorestate *rows, const char *what, uint64 nrows)
{
	ExecDropSingleTupleTableSlot(slot);
	tuplestore_rescan(rows);
	ereport(DEBUG1,
			(errmsg("simhash_dedupe_insert: no plan: %s of %llu rows would pass maintenance_work_mem (%d kB); every row searched",
					what, (unsigned long long) nrows, maintenance_work_mem)));
	return NULL;
}

/* A plan for the load's nrows rows under c, its arrays not made yet; NULL past the budget. */
static BulkPlan *
plan_new(DedupeConfig *c, uint64 nrows)
{
	BulkPlan   *p = palloc0(sizeof(BulkPlan));

	p->root = c->root;
	p->lxid = SIMHASH_MY_LXID;
	p->t = c->min_similarity;
	p->policy = c->policy;
	p->text_attno = c->root_text_attno;
	p->fp_attno = c->root_fp_attno;
	p->nrows = nrows;
	p->cxt = CurrentMemoryContext;
	p->budget = (Size) maintenance_work_mem * 1024;
	p->may_read = c->policy == POLICY_LINK && may_read_near_duplicate(c);
	target_writes_init(&p->writes, c);
	if (!pg_strong_random(&p->seed, sizeof(p->seed)))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("simhash_dedupe_insert: could not generate a random seed")));
	if (!plan_grow(p, nrows * sizeof(int32)))
		return NULL;
	p->group = MemoryContextAllocHuge(p->cxt, Max(nrows, 1) * sizeof(int32));
	return p;
}

/*
 * 1. The rows grouped by text (the digest of each text, keyed by the plan's secret), one
 * text a group added to the engine; then the plan's per-group arrays. False when the
 * groups outgrow the budget (the plan is off).
 */
static bool
plan_groups(BulkPlan *p, SimilarRun *run, Tuplestorestate *rows, TupleTableSlot *slot,
			AttrNumber q_text)
{
	HASHCTL		ctl;
	HTAB	   *digests;
	HASH_SEQ_STATUS seq;
	DigestEntry *e;

	ctl.keysize = sizeof(XXH128_hash_t);
	ctl.entrysize = sizeof(DigestEntry);
	ctl.hcxt = CurrentMemoryContext;
	digests = hash_create("simhash_dedupe_insert texts", 1024, &ctl,
						  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	for (uint64 j = 0; tuplestore_gettupleslot(rows, true, false, slot); j++)
	{
		bool		isnull;
		Datum		d = slot_getattr(slot, q_text, &isnull);
		text	   *body;
		XXH128_hash_t h;
		bool		seen;

		if (isnull)
		{
			p->group[j] = -1;
			continue;
		}
		body = DatumGetTextPP(d);
		h = text_digest(p, body);
		e = hash_search(digests, &h, HASH_ENTER, &seen);
		if (!seen)
		{
			if (p->ngroups == PG_INT32_MAX ||
				!plan_grow(p, 64 + sizeof(XXH128_hash_t) + 2 * sizeof(bool) + sizeof(Datum) + sizeof(uint64)))
				break;
			e->group = (int32) p->ngroups++;
			similar_run_add(run, e->group, body);
		}
		p->group[j] = e->group;
		if ((Pointer) body != DatumGetPointer(d))
			pfree(body);
	}
	if (p->off)
	{
		hash_destroy(digests);
		return false;
	}
	similar_run_added(run);
	p->digest = MemoryContextAllocHuge(p->cxt, Max(p->ngroups, 1) * sizeof(XXH128_hash_t));
	hash_seq_init(&seq, digests);
	while ((e = hash_seq_search(&seq)) != NULL)
		p->digest[e->group] = e->digest;
	hash_destroy(digests);
	p->bytes -= (Size) p->ngroups * 64;
	p->table_near = MemoryContextAllocExtended(p->cxt, Max(p->ngroups, 1) * sizeof(bool),
											   MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	p->state = MemoryContextAllocExtended(p->cxt, Max(p->ngroups, 1) * sizeof(uint8),
										  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	p->key = MemoryContextAllocExtended(p->cxt, Max(p->ngroups, 1) * sizeof(Datum),
										MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	return true;
}

/* The np pairs pa/ps as each group's list of near groups, both ways (adj_*). */
static void
plan_adjacency(BulkPlan *p, const int32 *pa, const double *ps, uint64 np)
{
	uint64	   *fill;

	p->adj_start = MemoryContextAllocExtended(p->cxt, (p->ngroups + 1) * sizeof(uint64),
											  MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	p->adj_other = MemoryContextAllocHuge(p->cxt, Max(np, 1) * 2 * sizeof(int32));
	p->adj_sim = MemoryContextAllocHuge(p->cxt, Max(np, 1) * 2 * sizeof(double));
	for (uint64 i = 0; i < 2 * np; i++)
		p->adj_start[pa[i] + 1]++;
	for (uint32 g = 0; g < p->ngroups; g++)
		p->adj_start[g + 1] += p->adj_start[g];
	fill = MemoryContextAllocHuge(p->cxt, Max(p->ngroups, 1) * sizeof(uint64));
	memcpy(fill, p->adj_start, p->ngroups * sizeof(uint64));
	for (uint64 i = 0; i < np; i++)
	{
		int32		a = pa[2 * i];
		int32		b = pa[2 * i + 1];

		p->adj_other[fill[a]] = b;
		p->adj_sim[fill[a]++] = ps[i];
		p->adj_other[fill[b]] = a;
		p->adj_sim[fill[b]++] = ps[i];
	}
	pfree(fill);
	p->npairs = np;
}

/* 2. The pairs of groups from the engine (which it ends), then each group's, both ways. */
static void
plan_pairs(BulkPlan *p, SimilarRun *run)
{
	simhash_similar_pair *buf = palloc(sizeof(simhash_similar_pair) * PLAN_PAIRS_BATCH);
	int32	   *pa = NULL;
	double	   *ps = NULL;
	uint64		np = 0;
	uint64		cap = 0;
	bool		finished = false;

	while (!finished && !p->off)
	{
		size_t		count;

		finished = similar_run_next(run, buf, PLAN_PAIRS_BATCH, &count);
		if (np + count > cap)
		{
			uint64		want = Max(cap * 2, np + count);

			if (!plan_grow(p, (want - cap) * (2 * sizeof(int32) + sizeof(double))))
				break;
			pa = pa == NULL ? MemoryContextAllocHuge(p->cxt, want * 2 * sizeof(int32))
				: repalloc_huge(pa, want * 2 * sizeof(int32));
			ps = ps == NULL ? MemoryContextAllocHuge(p->cxt, want * sizeof(double))
				: repalloc_huge(ps, want * sizeof(double));
			cap = want;
		}
		for (size_t i = 0; i < count; i++)
		{
			pa[2 * np] = (int32) buf[i].id1;
			pa[2 * np + 1] = (int32) buf[i].id2;
			ps[np++] = buf[i].similarity;
		}
	}
	similar_run_end(run);
	pfree(buf);
	if (!p->off && plan_grow(p, (p->ngroups + 1) * sizeof(uint64) + np * 2 * (sizeof(int32) + sizeof(double))))
		plan_adjacency(p, pa, ps, np);
	if (pa != NULL)
	{
		pfree(pa);
		pfree(ps);
	}
}

/*
 * 3. The table, searched for each group before any row is written, as the trigger would
 * with a policy that needs one near duplicate (see make_filter()): the group's first row
 * shingled once, then every target that holds a page.
 */
static void
plan_search_table(BulkPlan *p, DedupeConfig *c, Tuplestorestate *rows, TupleTableSlot *slot,
				  AttrNumber q_text)
{
	Snapshot	snapshot = lock_for_search(c);
	DedupeConfig *probe = palloc(sizeof(DedupeConfig));	/* its set cache in this context */
	MemoryContext row_cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash_dedupe_insert plan row",
												  ALLOCSET_DEFAULT_SIZES);
	int		   *targets = palloc(sizeof(int) * Max(c->ntargets, 1));
	int			ntargets = nonempty_targets(c, targets);
	uint32		next_group = 0;

	*probe = *c;
	probe->policy = POLICY_SKIP;
	probe->set_cache = NULL;
	probe->set_cache_bytes = 0;
	tuplestore_rescan(rows);
	for (uint64 j = 0; ntargets > 0 && tuplestore_gettupleslot(rows, true, false, slot); j++)
	{
		int32		g = p->group[j];
		bool		isnull;
		MemoryContext old;
		NewText		nt;
		int64		lsh[SIMHASH_LSH_BANDS];
		int			nlsh;
		Found		found = {0};

		if (g < 0 || (uint32) g != next_group)
			continue;			/* the group's first row only */
		next_group++;
		if ((g & 255) == 0)
			CHECK_FOR_INTERRUPTS();
		old = MemoryContextSwitchTo(row_cxt);
		nt.body = DatumGetTextPP(slot_getattr(slot, q_text, &isnull));
		nt.set = simhash_text_shingles(nt.body);
		nlsh = simhash_shingle_lsh_keys(nt.set, lsh);
		if (nlsh > 0)
		{
			ArrayType  *keys = simhash_int8_array(lsh, nlsh);

			for (int k = 0; k < ntargets && !found.any; k++)
				search_target(probe, &c->targets[targets[k]], 0, lsh, nlsh, keys, snapshot,
							  NULL, InvalidOid, NULL, &nt, &found);
		}
		MemoryContextSwitchTo(old);
		MemoryContextReset(row_cxt);
		if (found.any)
		{
			p->table_near[g] = true;
			p->near_in_table++;
		}
	}
	MemoryContextDelete(row_cxt);
	UnregisterSnapshot(snapshot);
}

/*
 * The plan of a load (threshold c->min_similarity) whose rows are in the tuplestore, the
 * text in the query's column q_text, under its locks; NULL when it does not fit in
 * maintenance_work_mem (every row is then searched). Only for a load the plan can serve,
 * which the caller decides (a threshold, !filter_unsafe()).
 */
static BulkPlan *
make_plan(DedupeConfig *c, Tuplestorestate *rows, TupleDesc qdesc, AttrNumber q_text,
		  uint64 nrows)
{
	BulkPlan   *p = plan_new(c, nrows);
	TupleTableSlot *slot;
	SimilarRun *run;

	if (p == NULL)
		return NULL;
	slot = MakeSingleTupleTableSlot(qdesc, &TTSOpsMinimalTuple);
	/* the engine's sets within maintenance_work_mem too, as an index build's (then files) */
	run = similar_run_begin("simhash_dedupe_insert", c->min_similarity,
							(Size) maintenance_work_mem * 1024, "maintenance_work_mem");
	if (!plan_groups(p, run, rows, slot, q_text))
	{
		similar_run_end(run);
		return no_plan(slot, rows, "its groups", nrows);
	}
	plan_pairs(p, run);
	if (p->off)
		return no_plan(slot, rows, "the pairs", nrows);
	plan_search_table(p, c, rows, slot, q_text);
	ExecDropSingleTupleTableSlot(slot);
	tuplestore_rescan(rows);
	return p;
}

/* The one enabled simhash_dedupe trigger BEFORE INSERT ... FOR EACH ROW of rel. */
static Trigger *
find_dedupe_trigger(Relation rel, Oid dedupe_fn)
{
	TriggerDesc *desc = rel->trigdesc;
	Trigger    *found = NULL;

	for (int i = 0; desc != NULL && i < desc->numtriggers; i++)
	{
		Trigger    *tg = &desc->triggers[i];

		if (tg->tgfoid != dedupe_fn || tg->tgenabled == TRIGGER_DISABLED ||
			!TRIGGER_FOR_ROW(tg->tgtype) || !TRIGGER_FOR_BEFORE(tg->tgtype) ||
			!TRIGGER_FOR_INSERT(tg->tgtype))
			continue;
		if (found != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("simhash_dedupe_insert: table \"%s\" has more than one simhash_dedupe trigger (\"%s\", \"%s\")",
							RelationGetRelationName(rel), found->tgname, tg->tgname)));
		found = tg;
	}
	if (found == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("simhash_dedupe_insert: table \"%s\" has no enabled simhash_dedupe trigger BEFORE INSERT ... FOR EACH ROW",
						RelationGetRelationName(rel)),
				 errhint("Load it with INSERT or COPY.")));
	return found;
}

/* The query's column i, matched by name to a column of rel; its number in rel. */
static AttrNumber
target_column(Relation rel, Form_pg_attribute qa)
{
	AttrNumber	attno = get_attnum(RelationGetRelid(rel), NameStr(qa->attname));

	if (attno <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("simhash_dedupe_insert: the query's column \"%s\" is not a column of table \"%s\"",
						NameStr(qa->attname), RelationGetRelationName(rel)),
				 errhint("Name each column of the query after the column of the table it fills.")));
	return attno;
}

/* The query's column that fills rel's column attno must have its type. */
static void
expect_column_type(Relation rel, Form_pg_attribute qa, AttrNumber attno)
{
	Oid			want = TupleDescAttr(RelationGetDescr(rel), attno - 1)->atttypid;

	if (qa->atttypid != want)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("simhash_dedupe_insert: the query's column \"%s\" is of type %s, not %s as in table \"%s\"",
						NameStr(qa->attname), format_type_be(qa->atttypid), format_type_be(want),
						RelationGetRelationName(rel)),
				 errhint("Cast it in the query: %s::%s.", quote_identifier(NameStr(qa->attname)),
						 format_type_be(want))));
}

/* INSERT on the table, or on every column the query fills, before any lock is taken. */
static void
check_insert_privilege(Relation rel, const AttrNumber *to, int ncols)
{
	Oid			user = GetUserId();

	if (pg_class_aclcheck(RelationGetRelid(rel), user, ACL_INSERT) == ACLCHECK_OK)
		return;
	for (int i = 0; i < ncols; i++)
		if (pg_attribute_aclcheck(RelationGetRelid(rel), to[i], user, ACL_INSERT) != ACLCHECK_OK)
			aclcheck_error(ACLCHECK_NO_PRIV, get_relkind_objtype(rel->rd_rel->relkind),
						   RelationGetRelationName(rel));
}

/*
 * The name the load's rows have in the INSERT that writes them (an ephemeral named
 * relation, as a trigger's transition table: it hides a table of that name while the
 * INSERT is parsed, and the target is named with its schema).
 */
#define BULK_ROWS_NAME "simhash_dedupe_insert_rows"

/*
 * The rows into rel as one INSERT INTO rel (the query's columns) SELECT them FROM the
 * tuplestore: PostgreSQL's own INSERT, with the rules, defaults, identity columns, domain
 * checks, row-level security, partition routing and triggers that INSERT INTO rel SELECT
 * ... FROM (query) has, and the query's values as they are (no text round trip through
 * output and input functions, which depends on the session's settings). The rows
 * inserted, as INSERT counts them.
 */
static uint64
insert_rows(Relation rel, TupleDesc qdesc, Tuplestorestate *rows, uint64 nrows)
{
	EphemeralNamedRelation enr = palloc0(sizeof(EphemeralNamedRelationData));
	StringInfoData sql;
	StringInfoData cols;
	int			ret;

	initStringInfo(&cols);
	for (int i = 0; i < qdesc->natts; i++)
		if (!TupleDescAttr(qdesc, i)->attisdropped)
			appendStringInfo(&cols, "%s%s", cols.len > 0 ? ", " : "",
							 quote_identifier(NameStr(TupleDescAttr(qdesc, i)->attname)));
	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s (%s) SELECT %s FROM %s",
					 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
												RelationGetRelationName(rel)),
					 cols.data, cols.data, BULK_ROWS_NAME);

	enr->md.name = BULK_ROWS_NAME;
	enr->md.reliddesc = InvalidOid;
	enr->md.tupdesc = qdesc;
	enr->md.enrtype = ENR_NAMED_TUPLESTORE;
	enr->md.enrtuples = (double) nrows;
	enr->reldata = rows;
	tuplestore_rescan(rows);
	if (SPI_register_relation(enr) != SPI_OK_REL_REGISTER)
		elog(ERROR, "simhash_dedupe_insert: SPI_register_relation failed");
	bulk_plan_expect(bulk_plan);
	if (bulk_filter != NULL)
		target_writes_start(&bulk_filter->writes);
	ret = SPI_execute(sql.data, false, 0);
	if (ret < 0)
		elog(ERROR, "simhash_dedupe_insert: the INSERT failed: %s", SPI_result_code_string(ret));
	if (SPI_unregister_relation(BULK_ROWS_NAME) != SPI_OK_REL_UNREGISTER)
		elog(ERROR, "simhash_dedupe_insert: SPI_unregister_relation failed");
	return SPI_processed;
}

/* One load of simhash_dedupe_insert(), from phase to phase. */
typedef struct BulkLoad
{
	Relation	rel;			/* the target */
	DedupeConfig *c;
	Oid			dedupe_fn;
	char	   *dedupe_name;	/* its trigger's name, for filter_unsafe() */
	TupleDesc	qdesc;			/* the query's rows */
	AttrNumber	q_text;			/* the query's text and fingerprint columns (0: none) */
	AttrNumber	q_fp;
	Tuplestorestate *rows;
	uint64		nrows;
} BulkLoad;

/*
 * The query's columns, matched by name to the target's (each once; the text column among
 * them, of its type, and so the fingerprint if given); INSERT checked on them.
 */
static void
map_query_columns(BulkLoad *l)
{
	TupleDesc	qdesc = l->qdesc;
	AttrNumber *to = palloc0(qdesc->natts * sizeof(AttrNumber));
	int			ncols = 0;

	for (int i = 0; i < qdesc->natts; i++)
	{
		Form_pg_attribute qa = TupleDescAttr(qdesc, i);

		if (qa->attisdropped)
			continue;
		to[ncols] = target_column(l->rel, qa);
		for (int j = 0; j < ncols; j++)
			if (to[j] == to[ncols])
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("simhash_dedupe_insert: the query gives column \"%s\" twice",
								NameStr(qa->attname))));
		if (to[ncols] == l->c->text_attno)
			l->q_text = i + 1;
		if (to[ncols] == l->c->fp_attno)
			l->q_fp = i + 1;
		if (to[ncols] == l->c->text_attno || to[ncols] == l->c->fp_attno)
			expect_column_type(l->rel, qa, to[ncols]);
		ncols++;
	}
	if (l->q_text == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("simhash_dedupe_insert: the query must give the text column \"%s\" of table \"%s\"",
						NameStr(TupleDescAttr(RelationGetDescr(l->rel), l->c->text_attno - 1)->attname),
						RelationGetRelationName(l->rel))));
	check_insert_privilege(l->rel, to, ncols);
}

/* 1. The rows of the query (one SELECT or VALUES), into a tuplestore, before any lock. */
static void
read_rows(BulkLoad *l, const char *query)
{
	SPIPlanPtr	plan = SPI_prepare(query, 0, NULL);
	Portal		portal;

	if (plan == NULL)
		elog(ERROR, "simhash_dedupe_insert: SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	if (!SPI_is_cursor_plan(plan) || list_length(SPI_plan_get_plan_sources(plan)) != 1 ||
		((CachedPlanSource *) linitial(SPI_plan_get_plan_sources(plan)))->commandTag != CMDTAG_SELECT)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_dedupe_insert: the query must be one SELECT (or VALUES) that returns the rows to insert")));
	l->rows = tuplestore_begin_heap(false, false, work_mem);
	portal = SPI_cursor_open(NULL, plan, NULL, NULL, false);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, BULK_FETCH_ROWS);
		if (l->qdesc == NULL)
		{
			l->qdesc = CreateTupleDescCopy(SPI_tuptable->tupdesc);
			map_query_columns(l);
		}
		if (SPI_processed == 0)
			break;
		for (uint64 r = 0; r < SPI_processed; r++)
			tuplestore_puttuple(l->rows, SPI_tuptable->vals[r]);
		l->nrows += SPI_processed;
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
}

/* The keys of the load's row in slot, computed on the row as the target's columns hold it. */
static void
load_row_keys(BulkLoad *l, TupleTableSlot *slot, Datum *values, bool *nulls, RowWork *w)
{
	DedupeConfig *c = l->c;
	TupleDesc	desc = RelationGetDescr(l->rel);

	slot_getallattrs(slot);
	for (int a = 0; a < desc->natts; a++)
		nulls[a] = true;
	values[c->text_attno - 1] = slot->tts_values[l->q_text - 1];
	nulls[c->text_attno - 1] = slot->tts_isnull[l->q_text - 1];
	if (l->q_fp > 0)
	{
		values[c->fp_attno - 1] = slot->tts_values[l->q_fp - 1];
		nulls[c->fp_attno - 1] = slot->tts_isnull[l->q_fp - 1];
	}
	row_keys(c, heap_form_tuple(desc, values, nulls), NULL, desc, w);
}

/*
 * 2. Every lock key at once, in one order; or the table lock, at once when the rows may
 * take enough keys for it (their keys are then not needed). With a distance, the load's
 * filter from the rows' fingerprints. The filter, or NULL.
 */
static BulkFilter *
lock_rows(BulkLoad *l)
{
	DedupeConfig *c = l->c;
	bool		table_locked = bulk_takes_table(c, l->nrows * row_lock_key_bound(c));
	uint64	   *fps = NULL;
	size_t		nfps = 0;
	KeySet		ks = {palloc(1024 * sizeof(uint32)), 0, 1024};
	MemoryContext row_cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash_dedupe_insert row",
												  ALLOCSET_DEFAULT_SIZES);
	TupleDesc	desc = RelationGetDescr(l->rel);
	Datum	   *values = palloc(desc->natts * sizeof(Datum));
	bool	   *nulls = palloc(desc->natts * sizeof(bool));
	TupleTableSlot *slot;

	if (c->min_similarity == 0 && c->indexed && !filter_unsafe(c, l->dedupe_name, l->dedupe_fn))
		fps = MemoryContextAllocHuge(CurrentMemoryContext, Max(l->nrows, 1) * sizeof(uint64));
	if (table_locked && fps == NULL)
		return NULL;
	slot = MakeSingleTupleTableSlot(l->qdesc, &TTSOpsMinimalTuple);
	while (tuplestore_gettupleslot(l->rows, true, false, slot))
	{
		MemoryContext old = MemoryContextSwitchTo(row_cxt);
		RowWork		w = {0};

		CHECK_FOR_INTERRUPTS();
		load_row_keys(l, slot, values, nulls, &w);
		MemoryContextSwitchTo(old);
		if (w.search && !table_locked)
		{
			uint32		keys[SIMHASH_MAX_LOCK_KEYS];

			add_keys(&ks, keys, row_lock_keys(c, w.fp, w.lsh, w.nlsh, keys));
		}
		if (w.search && fps != NULL)
			fps[nfps++] = w.fp;
		MemoryContextReset(row_cxt);
	}
	ExecDropSingleTupleTableSlot(slot);
	tuplestore_rescan(l->rows);
	if (!table_locked)
	{
		compact_keys(&ks);
		serialize_bulk(c, ks.keys, ks.n);
	}
	return fps != NULL ? make_filter(c, fps, nfps) : NULL;
}

/*
 * 3. The rows, each checked by the trigger with its keys held: one INSERT ... SELECT from
 * the tuplestore (insert_rows()), with the load's filter and plan where the trigger finds
 * them. The rows inserted.
 */
static uint64
write_rows(BulkLoad *l, BulkFilter *filter, BulkPlan *load_plan)
{
	Oid			previous = set_bulk_root(l->c->root);
	BulkFilter *previous_filter = bulk_filter;
	BulkPlan   *previous_plan = bulk_plan;
	uint64		inserted = 0;

	/*
	 * A load run inside another one's (by a trigger of one of its rows) writes rows the
	 * outer load's filter would not hear of: that filter stops clearing rows.
	 */
	if (previous_filter != NULL)
		previous_filter->full = true;
	if (previous_plan != NULL)
		plan_off(previous_plan, "a load inside it");
	bulk_filter = filter;
	bulk_plan = load_plan;
	PG_TRY();
	{
		inserted = insert_rows(l->rel, l->qdesc, l->rows, l->nrows);
	}
	PG_FINALLY();
	{
		set_bulk_root(previous);
		bulk_filter = previous_filter;
		bulk_plan = previous_plan;
	}
	PG_END_TRY();
	return inserted;
}

/* The DEBUG1 lines of a load: what its filter or its plan spared the trigger. */
static void
report_load(BulkLoad *l, BulkFilter *filter, BulkPlan *load_plan)
{
	if (filter != NULL)
	{
		size_t		held = 0;

		for (size_t i = 0; i < filter->nsearched; i++)
			held += filter->in_table[i];
		ereport(DEBUG1,
				(errmsg("simhash_dedupe_insert: %llu rows read; %zu distinct fingerprints searched in \"%s\" before writing (%zu with a near duplicate there); %llu searches spared by the load's filter (%zu kB%s)",
						(unsigned long long) l->nrows, filter->nsearched,
						RelationGetRelationName(l->rel), held,
						(unsigned long long) filter->spared,
						simhash_near_filter_bytes(filter->written) / 1024,
						filter->full ? ", full: the rest of the rows searched" : "")));
	}
	if (load_plan != NULL)
		ereport(DEBUG1,
				(errmsg("simhash_dedupe_insert: %llu rows read, %u distinct texts, %llu pairs of them at or above %g; %llu with a near duplicate in \"%s\" before writing; %llu rows answered by the load's plan, %llu searched%s%s",
						(unsigned long long) l->nrows, load_plan->ngroups,
						(unsigned long long) load_plan->npairs, load_plan->t,
						(unsigned long long) load_plan->near_in_table, RelationGetRelationName(l->rel),
						(unsigned long long) load_plan->answered,
						(unsigned long long) load_plan->searched,
						load_plan->off ? "; off after " : "", load_plan->off ? load_plan->why_off : "")));
}

PG_FUNCTION_INFO_V1(simhash_dedupe_insert);

/* simhash_dedupe_insert(target, query): the rows inserted (see the top of the file). */
Datum
simhash_dedupe_insert(PG_FUNCTION_ARGS)
{
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(1));
	Oid			nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	BulkLoad	l = {0};
	BulkFilter *filter;
	BulkPlan   *load_plan = NULL;
	uint64		inserted;
	Trigger    *tg;

	l.dedupe_fn = simhash_extension_function(nsp, "simhash_dedupe", 0, NULL);
	l.rel = relation_open(PG_GETARG_OID(0), AccessShareLock);
	if (l.rel->rd_rel->relkind != RELKIND_RELATION &&
		l.rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("simhash_dedupe_insert: \"%s\" is not a table", RelationGetRelationName(l.rel)),
				 errdetail("The bulk load writes ordinary and partitioned tables; write a view with INSERT.")));
	tg = find_dedupe_trigger(l.rel, l.dedupe_fn);
	l.dedupe_name = pstrdup(tg->tgname);	/* rel's triggers may be rebuilt meanwhile */
	l.c = bulk_config(l.rel, tg, nsp);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "simhash_dedupe_insert: SPI_connect failed");
	read_rows(&l, query);
	if (!l.rel->rd_islocaltemp)
		PreventCommandIfReadOnly("simhash_dedupe_insert()");
	filter = lock_rows(&l);

	/*
	 * The plan, not on a table with row-level security: which rows the caller may see (a
	 * link to a row it cannot read is refused, a reject names no key) is the search's to
	 * decide.
	 */
	if (l.c->min_similarity > 0 &&
		check_enable_rls(RelationGetRelid(l.rel), InvalidOid, false) != RLS_ENABLED &&
		!filter_unsafe(l.c, l.dedupe_name, l.dedupe_fn))
		load_plan = make_plan(l.c, l.rows, l.qdesc, l.q_text, l.nrows);
	inserted = write_rows(&l, filter, load_plan);
	report_load(&l, filter, load_plan);
	tuplestore_end(l.rows);
	SPI_finish();
	relation_close(l.rel, NoLock);
	PG_RETURN_INT64((int64) inserted);
}
