/*
 * The locks of the simhash_dedupe() trigger (see "Concurrency" at the top of dedupe.c): the
 * lock keys of a row, the transaction-scoped advisory locks on them, and, once a
 * transaction has taken many on one table, SHARE ROW EXCLUSIVE on the table instead, within
 * a budget of the shared lock table.
 *
 * The table lock keeps every other writer (and VACUUM) out, so the trigger takes it only
 * for a role that LOCK TABLE would let take it: one with UPDATE, DELETE or TRUNCATE
 * privilege on the table. A role that may only insert keeps to the lock keys, each of
 * which holds back only the writers of rows that share it, as a unique index's entries
 * do; once its transaction has taken the whole budget, the trigger refuses the next row
 * (53400) rather than take a lock the role could not take itself.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/twophase.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "capi/search_capi.h"
#include "pg/dedupe.h"
#include "pg/simhash_pg.h"

/* objsubid of the trigger's advisory locks in pg_locks ("SH"), so they cannot collide
 * with pg_advisory_lock(), which uses 1 and 2. */
#define DEDUPE_LOCK_CLASS 0x5348

/* Advisory locks one transaction may take on one table before trying a table lock. */
#define BULK_LOCKS 4096

/* Advisory locks taken in the current transaction, per table (few tables per transaction). */
typedef struct LockCount
{
	LocalTransactionId lxid;
	Oid			root;
	uint64		locks;
	uint64		next_try;
} LockCount;

#define LOCK_COUNTS 16
static LockCount lock_counts[LOCK_COUNTS];

/* Advisory locks taken in the current transaction, on every table. */
static LocalTransactionId xact_lxid;
static uint64 xact_locks;

/*
 * Advisory locks one transaction may take, on all tables together, before it waits for a
 * table's lock instead of taking more: a quarter of the shared lock table, which lock.c sizes for
 * max_locks_per_transaction locks of every possible backend and prepared transaction. More
 * would let one bulk load fill it, and every session would fail with "out of shared
 * memory": with max_connections = 10 (the rest as by default) it holds 2,048 locks, about
 * twice that with its spare memory, and BULK_LOCKS alone would come close.
 */
static uint64
lock_budget(void)
{
	uint64		slots = (uint64) max_locks_per_xact *
		((uint64) MaxBackends + (uint64) max_prepared_xacts);

	return Max(slots / 4, 8);
}

/* Locks taken before the first try for the table lock: BULK_LOCKS, less on a small lock table. */
static uint64
first_try(void)
{
	return Min((uint64) BULK_LOCKS, lock_budget() / 2);
}

/* Locks taken between two tries: BULK_LOCKS / 4, less on a small lock table. */
static uint64
retry_step(void)
{
	return Min((uint64) BULK_LOCKS / 4, lock_budget() / 8);
}

/* The lock count of the current transaction for table root. */
static LockCount *
lock_count(Oid root)
{
	LockCount  *free_slot = NULL;

	for (int i = 0; i < LOCK_COUNTS; i++)
	{
		LockCount  *e = &lock_counts[i];

		if (e->lxid == SIMHASH_MY_LXID && e->root == root)
			return e;
		if (e->lxid != SIMHASH_MY_LXID && free_slot == NULL)
			free_slot = e;
	}
	if (free_slot == NULL)
		free_slot = &lock_counts[root % LOCK_COUNTS];	/* many tables: share a slot */
	free_slot->lxid = SIMHASH_MY_LXID;
	free_slot->root = root;
	free_slot->locks = 0;
	free_slot->next_try = first_try();
	return free_slot;
}

/*
 * True when this transaction keeps every other writer out of the table (and partitions):
 * it holds SHARE or a stronger lock on each, which conflicts with the ROW EXCLUSIVE of
 * every writer, and of every bulk load before it searches (make_filter()). SHARE is
 * enough: a transaction that took it itself (LOCK TABLE ... IN SHARE MODE, CREATE INDEX)
 * and then writes must not wait for a lock key held by a load that waits for its SHARE
 * to end (a deadlock).
 */
bool
holds_table(DedupeConfig *c)
{
	if (!simhash_relation_locked_by_me(c->root, ShareLock))
		return false;
	for (int i = 0; i < c->ntargets; i++)
		if (c->targets[i].relid != c->root &&
			!simhash_relation_locked_by_me(c->targets[i].relid, ShareLock))
			return false;
	return true;
}

/*
 * SHARE ROW EXCLUSIVE on the table and every partition, root first. Without waiting, a
 * lock that is not free releases the ones already taken and returns false.
 */
static bool
lock_tables(DedupeConfig *c, bool wait)
{
	if (wait)
	{
		LockRelationOid(c->root, ShareRowExclusiveLock);
		for (int i = 0; i < c->ntargets; i++)
			if (c->targets[i].relid != c->root)
				LockRelationOid(c->targets[i].relid, ShareRowExclusiveLock);
		return true;
	}
	if (!ConditionalLockRelationOid(c->root, ShareRowExclusiveLock))
		return false;
	for (int i = 0; i < c->ntargets; i++)
	{
		if (c->targets[i].relid == c->root ||
			ConditionalLockRelationOid(c->targets[i].relid, ShareRowExclusiveLock))
			continue;
		while (--i >= 0)
			if (c->targets[i].relid != c->root)
				UnlockRelationOid(c->targets[i].relid, ShareRowExclusiveLock);
		UnlockRelationOid(c->root, ShareRowExclusiveLock);
		return false;
	}
	return true;
}

/*
 * True when LOCK TABLE would let the current user lock the table in SHARE ROW EXCLUSIVE
 * mode (LockTableAclCheck() of PostgreSQL: UPDATE, DELETE or TRUNCATE privilege on the
 * table named; it then locks every partition without checking theirs, as lock_tables()
 * does).
 */
static bool
may_lock_table(DedupeConfig *c)
{
	return pg_class_aclcheck(c->root, GetUserId(),
							 ACL_UPDATE | ACL_DELETE | ACL_TRUNCATE) == ACLCHECK_OK;
}

/*
 * True when the current user may have the table read whole for it: a statement memo
 * of the table (dedupe_memo.c), whose making reads every row of the table, the rows it
 * cannot see included, and logs how many (DEBUG1). holds_table() alone is not enough: a
 * role without SELECT takes SHARE ROW EXCLUSIVE by other routes than LOCK TABLE, with
 * REFERENCES (a foreign key to the table) or TRIGGER (CREATE TRIGGER on it). Allowed when
 * the rule of the table lock allows it (may_lock_table(): the role could take the lock,
 * and so the filter, anyway), or when the role may read the rows the filter would tell of
 * (may_read_near_duplicate(): SELECT, no row-level security). Otherwise each row is
 * searched, with the same answers. (The lock keys need no such rule: a transaction that
 * holds the table lock, by whatever route, takes none.)
 */
bool
may_read_table_whole(DedupeConfig *c)
{
	return may_lock_table(c) || may_read_near_duplicate(c);
}

/* The budget is spent and the current user may not lock the table: the row is refused. */
static void
refuse_past_budget(DedupeConfig *c)
{
	char	   *table = DatumGetCString(DirectFunctionCall1(regclassout,
															ObjectIdGetDatum(c->root)));

	ereport(ERROR,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("simhash_dedupe: this transaction has taken all the lock keys it may take, and the current user may not lock table \"%s\" instead",
					get_rel_name(c->root)),
			 errdetail("The trigger's advisory locks of this transaction fill a quarter of the shared lock table. Past that the trigger keeps other writers out with SHARE ROW EXCLUSIVE on the table instead, which LOCK TABLE allows only to roles with UPDATE, DELETE or TRUNCATE privilege on it."),
			 errhint("Write fewer rows in one transaction, raise max_locks_per_transaction, or load as a role that may lock the table, after LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE.",
					 table)));
}

/*
 * The rule of the table lock, once a transaction's advisory locks are many: SHARE ROW
 * EXCLUSIVE on the table instead (waiting for it when wait; true once taken) when the
 * current user may lock the table; otherwise, past the budget (over), the row is refused.
 */
static bool
table_instead(DedupeConfig *c, bool wait, bool over)
{
	if (may_lock_table(c))
		return lock_tables(c, wait);
	if (over)
		refuse_past_budget(c);
	return false;
}

/*
 * The table whose rows simhash_dedupe_insert() is inserting (dedupe_bulk.c), in the
 * transaction bulk_lxid: it took every lock key of its rows beforehand, so the trigger
 * only checks that it holds them (it neither counts them nor tries for the table lock).
 */
static Oid	bulk_root = InvalidOid;
static LocalTransactionId bulk_lxid;

/* Counts this transaction's advisory locks from 0 when a new transaction has begun. */
static void
start_xact_count(void)
{
	if (xact_lxid != SIMHASH_MY_LXID)
	{
		xact_lxid = SIMHASH_MY_LXID;
		xact_locks = 0;
	}
}

/* Takes the advisory locks keys[0..n) on the table c->root, and counts them. */
static void
acquire_keys(DedupeConfig *c, LockCount *count, const uint32 *keys, size_t n)
{
	for (size_t i = 0; i < n; i++)
	{
		LOCKTAG		tag;

		if ((i & 1023) == 0)
			CHECK_FOR_INTERRUPTS();
		SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, c->root, keys[i], DEDUPE_LOCK_CLASS);
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
	}
	count->locks += n;
	xact_locks += n;
}

/* Marks the rows written from now on as rows of a bulk load into root (InvalidOid: none);
 * returns the previous mark, to be restored. */
Oid
set_bulk_root(Oid root)
{
	Oid			previous = bulk_lxid == SIMHASH_MY_LXID ? bulk_root : InvalidOid;

	bulk_root = root;
	bulk_lxid = SIMHASH_MY_LXID;
	return previous;
}

/* Takes the advisory locks keys[0..n), or makes sure no other writer can run. */
void
serialize_writers(DedupeConfig *c, const uint32 *keys, size_t n)
{
	LockCount  *count;
	bool		over;

	if (holds_table(c))
		return;
	if (OidIsValid(bulk_root) && bulk_root == c->root && bulk_lxid == SIMHASH_MY_LXID)
	{
		for (size_t i = 0; i < n; i++)
		{
			LOCKTAG		tag;

			SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, c->root, keys[i], DEDUPE_LOCK_CLASS);
			if (!LockHeldByMe(&tag, ExclusiveLock))
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("simhash_dedupe: a row of the bulk load into \"%s\" has keys that simhash_dedupe_insert() did not lock",
								get_rel_name(c->root)),
						 errdetail("The keys of a row come from the columns the query gives; a default or another trigger changed its text or fingerprint."),
						 errhint("Give the text and key columns in the query, or load with INSERT.")));
		}
		return;
	}
	count = lock_count(c->root);
	start_xact_count();
	over = xact_locks >= lock_budget();
	if (count->locks >= count->next_try || over)
	{
		/*
		 * Many rows in one transaction: keep the other writers out instead. Without
		 * waiting first (a writer of a near duplicate may wait for one of our locks); but
		 * before the locks fill a good part of the shared lock table (which would make
		 * every session fail with "out of shared memory"), waiting: should that writer
		 * be waiting for us, the deadlock detector aborts one of the two. The budget is
		 * the transaction's, whatever the number of tables it writes: a transaction
		 * writing to many tables with the trigger takes each table's lock once its
		 * advisory locks on all of them reach it (counted per table, with more tables
		 * than LOCK_COUNTS, a table whose slot was taken would start again from 0).
		 */
		if (table_instead(c, over, over))
			return;
		count->next_try = count->locks + retry_step();
	}
	acquire_keys(c, count, keys, n);
}

/*
 * A load of n keys at once: true when it takes the table lock instead, waiting for it (n
 * reaches first_try() or the budget, and the current user may lock the table); past the
 * budget otherwise, it is refused when refuse.
 */
static bool
load_takes_table(DedupeConfig *c, uint64 n, bool refuse)
{
	bool		over;

	start_xact_count();
	over = xact_locks + n > lock_budget();
	return (n >= first_try() || over) && table_instead(c, true, over && refuse);
}

/*
 * simhash_dedupe_insert(), before it computes any key: true when it holds, or has just
 * taken (waiting for it), SHARE ROW EXCLUSIVE on the table, because its rows may take up
 * to max_keys keys, enough for serialize_bulk() to take the table lock anyway, and the
 * current user may lock the table. The load then needs no key at all (so does not compute
 * them: for a threshold, the shingles of every row).
 */
bool
bulk_takes_table(DedupeConfig *c, uint64 max_keys)
{
	return holds_table(c) || load_takes_table(c, max_keys, false);
}

/* Adds keys[0..n) to ks (sorted and repeats dropped as it fills). */
void
add_keys(KeySet *ks, const uint32 *keys, size_t n)
{
	if (ks->keys == NULL)
	{
		ks->capacity = Max(1024, n);
		ks->keys = palloc(ks->capacity * sizeof(uint32));
	}
	if (ks->n + n > ks->capacity)
	{
		ks->n = simhash_sort_distinct_keys(ks->keys, ks->n);
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
 * simhash_dedupe_insert() (dedupe_bulk.c): takes every lock key of a statement at once,
 * ks (sorted here, repeats dropped), before any of its rows is written; or, for a load that
 * would take many (first_try()) or more than the budget, SHARE ROW EXCLUSIVE on the table
 * and its partitions, waiting for it, when the current user may lock the table. Two loads
 * that take their keys so cannot deadlock with each other on them (each waits only while
 * it holds keys below the one it waits for), nor with writers of one row a transaction.
 * Called before the load's first row takes ROW EXCLUSIVE on the table.
 */
void
serialize_bulk(DedupeConfig *c, KeySet *ks)
{
	LockCount  *count;

	if (holds_table(c))
		return;
	ks->n = simhash_sort_distinct_keys(ks->keys, ks->n);
	count = lock_count(c->root);
	if (!load_takes_table(c, ks->n, true))
		acquire_keys(c, count, ks->keys, ks->n);
}
