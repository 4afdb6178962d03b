/*
 * simhash_dedupe(): a BEFORE INSERT OR UPDATE row trigger that keeps near duplicates out of
 * a table, or links them to the row they duplicate.
 *
 *   CREATE TRIGGER docs_dedupe BEFORE INSERT OR UPDATE OF body ON docs FOR EACH ROW
 *       EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
 *
 * Arguments: the text column, the fingerprint column (bigint, filled with simhash(text)
 * when it is NULL or the text changed), the largest distance k (0..16) or a similarity
 * threshold (0.8..1, written with a decimal point: see parse_limit()), the policy
 * (reject | skip | link) and, for link, the column that receives the primary key of the
 * existing near duplicate.
 *
 * Concurrency. Before looking for near duplicates, the trigger takes transaction-scoped
 * advisory locks on the new fingerprint's lock keys (core/locks.hpp: fingerprints within k
 * bits always share a key), in ascending order. A concurrent writer of a near duplicate
 * holds one of those keys until it commits, so we wait for it and then see its row: the
 * search runs on a snapshot taken after the locks (plus CommandCounterIncrement, so rows
 * of the same statement count too). Under REPEATABLE READ and SERIALIZABLE, a near
 * duplicate that this newest snapshot sees but the transaction's snapshot does not was
 * committed concurrently: that is a serialization failure (40001), never a silent
 * duplicate. Writers of unrelated fingerprints share a key only by chance.
 *
 * A transaction that writes many rows would hold many locks; past BULK_LOCKS of them on
 * one table, the trigger tries (without waiting, so it cannot deadlock) to take SHARE ROW
 * EXCLUSIVE on the table, which keeps every other writer out; once it holds that lock,
 * or the user took it with LOCK TABLE before a bulk load, no advisory lock is needed. If
 * another writer keeps the table busy until this transaction holds twice as many (or a
 * quarter of the shared lock table), the trigger waits for the table lock (lock_budget()).
 *
 * The search uses the block indexes of simhash_create_index() directly (one B-tree probe
 * per block value, through the planner's own choice of radii); without them it reads the
 * whole table, and says so in a NOTICE once per session. Like a unique index, it sees every
 * row of the table, whatever the caller's privileges and row-level security policies; a
 * reject message shows the other row's key only to callers allowed to read it.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type_d.h"
#include "commands/trigger.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "capi/search_capi.h"
#include "pg/layouts.h"
#include "pg/options_pg.h"
#include "pg/search.h"
#include "pg/similarity.h"
#include "pg/simhash_pg.h"

/* objsubid of the trigger's advisory locks in pg_locks ("SH"), so they cannot collide
 * with pg_advisory_lock(), which uses 1 and 2. */
#define DEDUPE_LOCK_CLASS 0x5348

/* Advisory locks one transaction may take on one table before trying a table lock. */
#define BULK_LOCKS 4096

/* Largest k: what the lock keys support (core/locks.hpp). */
#define MAX_DEDUPE_DISTANCE SIMHASH_MAX_LOCK_DISTANCE

/* Smallest similarity threshold: one candidate fingerprint serves 0.8 and above. */
#define MIN_DEDUPE_SIMILARITY 0.8

typedef enum DedupePolicy
{
	POLICY_REJECT,
	POLICY_SKIP,
	POLICY_LINK
} DedupePolicy;

/* One relation searched for near duplicates: the table, or each leaf of a partitioned one. */
typedef struct DedupeTarget
{
	Oid			relid;
	AttrNumber	text_attno;
	AttrNumber	fp_attno;
	AttrNumber	link_attno;		/* 0 unless the policy is link */
	AttrNumber	key_attnos[INDEX_MAX_KEYS];
	SimhashSearchPlan plan;		/* blocks = 0: read the whole relation */
	Oid			indexes[SIMHASH_MAX_BLOCKS];
	bool		has_fingerprint[SIMHASH_MAX_BLOCKS];	/* (block, fp) index */
} DedupeTarget;

/*
 * Checking a candidate costs about one index descent when its row must be read from the
 * table, and about this much when the index holds the fingerprint.
 */
#define IN_INDEX_CANDIDATE_COST 0.05

/* The trigger's arguments, checked, and what it searches; made once per statement. */
typedef struct DedupeConfig
{
	Oid			tgoid;
	Oid			relid;			/* the relation the trigger fired on */
	Oid			root;			/* the table, or the root of its partition tree */
	AttrNumber	text_attno;
	AttrNumber	fp_attno;
	AttrNumber	link_attno;
	int			k;
	double		min_similarity; /* 0: near duplicates by distance alone */
	SimhashRecipe recipe;		/* with a threshold: the fingerprint stored, k its radius */
	DedupePolicy policy;
	int			nkeys;			/* primary key columns of root; 0: none (ctid is shown) */
	char	   *key_names;		/* "id" or "a, b", for messages */
	int			ntargets;
	DedupeTarget *targets;
	bool		indexed;		/* every target has a usable layout */
} DedupeConfig;

/* The near duplicate the policy acts on. */
typedef struct Found
{
	bool		any;
	int			distance;
	double		similarity;		/* with a similarity threshold */
	bool		is_original;	/* its link column is NULL (policy link) */
	Datum		key;			/* its primary key (single column, policy link) */
	char	   *key_text;		/* "(id)=(42)", or NULL when the caller may not read it */
} Found;

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

/* Tables already warned about in this session: no layout (the whole table is read), or a
 * layout that costs the trigger many more index lookups than k + 1 blocks would. */
static List *warned_tables = NIL;
static List *advised_tables = NIL;

static AttrNumber
column(Relation rel, const char *name, const char *what)
{
	AttrNumber	attno = get_attnum(RelationGetRelid(rel), name);

	if (attno <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("simhash_dedupe: %s column \"%s\" of table \"%s\" does not exist",
						what, name, RelationGetRelationName(rel))));
	return attno;
}

static void
expect_type(Relation rel, AttrNumber attno, Oid type, const char *what)
{
	Oid			actual = TupleDescAttr(RelationGetDescr(rel), attno - 1)->atttypid;

	if (actual != type)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("simhash_dedupe: %s column \"%s\" of table \"%s\" is of type %s, not %s",
						what, NameStr(TupleDescAttr(RelationGetDescr(rel), attno - 1)->attname),
						RelationGetRelationName(rel), format_type_be(actual),
						format_type_be(type))));
}

/* The largest distance the layout recorded for root.col serves, or -1 without one. */
static int
layout_max_distance(Oid nsp, Oid root, const char *col)
{
	int			max_distance;
	int			blocks;

	return simhash_layout_lookup(nsp, root, col, &max_distance, &blocks) ? max_distance : -1;
}

/* Fills a target for relation relid from the column names of the root. */
static void
make_target(DedupeTarget *t, Oid relid, const char *text_name, const char *fp_name,
			const char *link_name, Relation root, int nkeys, const AttrNumber *root_keys,
			Oid block_fn, int k)
{
	SimhashLayouts layouts;
	bool		in_index = true;

	memset(t, 0, sizeof(*t));
	t->relid = relid;
	t->text_attno = get_attnum(relid, text_name);
	t->fp_attno = get_attnum(relid, fp_name);
	t->link_attno = link_name ? get_attnum(relid, link_name) : 0;
	for (int i = 0; i < nkeys; i++)
		t->key_attnos[i] = get_attnum(relid, NameStr(TupleDescAttr(RelationGetDescr(root),
																	 root_keys[i] - 1)->attname));
	simhash_find_layouts(relid, t->fp_attno, block_fn, AccessShareLock, &layouts);
	for (int b = 2; b <= SIMHASH_MAX_BLOCKS; b++)
		for (int i = 0; i < b; i++)
			if (OidIsValid(layouts.by[b][i].index) && !layouts.by[b][i].has_fingerprint)
				in_index = false;
	/*
	 * Index probes whenever a layout serves k: the search is planned once per statement, and
	 * a bulk load grows the table from what the estimate says (often nothing), so a table
	 * scan per row, cheap at first, grows with the table while probes do not.
	 */
	t->plan = simhash_choose_search(&layouts, k, in_index ? IN_INDEX_CANDIDATE_COST : 1.0, true);
	for (int i = 0; i < t->plan.blocks; i++)
	{
		t->indexes[i] = layouts.by[t->plan.blocks][i].index;
		t->has_fingerprint[i] = layouts.by[t->plan.blocks][i].has_fingerprint;
	}
}

/* Parses and checks the trigger's arguments and finds what to search: see the file header. */
/*
 * A generated fingerprint column is computed after BEFORE triggers, so the trigger
 * computes it itself, as simhash(text column): the column must be generated by exactly
 * that, or stored and new fingerprints would differ.
 */
static void
check_generated_fp(Relation rel, DedupeConfig *c, Oid nsp, Trigger *tg)
{
	Oid			text_arg = TEXTOID;
	Oid			simhash_fn = simhash_extension_function(nsp, "simhash", 1, &text_arg);
	Node	   *expr = build_column_default(rel, c->fp_attno);
	bool		ok = false;

	if (expr != NULL && IsA(expr, FuncExpr) && ((FuncExpr *) expr)->funcid == simhash_fn &&
		list_length(((FuncExpr *) expr)->args) == 1)
	{
		Node	   *arg = linitial(((FuncExpr *) expr)->args);

		if (IsA(arg, RelabelType))
			arg = (Node *) ((RelabelType *) arg)->arg;
		ok = IsA(arg, Var) && ((Var *) arg)->varattno == c->text_attno;
	}
	if (!ok)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("simhash_dedupe: generated column \"%s\" of table \"%s\" is not simhash(%s)",
						tg->tgargs[1], RelationGetRelationName(rel), quote_identifier(tg->tgargs[0])),
				 errdetail("Generated columns are computed after BEFORE triggers, so trigger \"%s\" computes the fingerprint itself, as simhash(%s).",
						   tg->tgname, quote_identifier(tg->tgargs[0])),
				 errhint("Make \"%s\" a plain bigint column, which the trigger fills, or generate it as simhash(%s).",
						 tg->tgargs[1], quote_identifier(tg->tgargs[0]))));
}

/*
 * The third argument: a Hamming distance k ("3"), or a similarity threshold ("0.8", with a
 * decimal point). With a threshold t, near duplicates are the rows whose texts have a
 * simhash_jaccard of at least t; candidates are the rows whose fingerprints of t's recipe
 * (simhash_similar_recipes: simhash(text, 'char', 5, 'binary') from 0.8) lie within its
 * radius (14 below 0.9, 12 from 0.9). Below 0.8 the recipes need two fingerprints: refused.
 */
static void
parse_limit(DedupeConfig *c, Trigger *tg)
{
	const char *arg = tg->tgargs[2];
	char	   *end;

	errno = 0;
	if (strchr(arg, '.') != NULL)
	{
		/* Plain decimal notation only: digits, one point, digits (strtod takes much more). */
		bool		plain = strspn(arg, "0123456789.") == strlen(arg) &&
			strchr(arg, '.') == strrchr(arg, '.') && strpbrk(arg, "0123456789") != NULL;
		double		t = plain ? strtod(arg, &end) : 0;

		if (!plain || errno != 0 || *end != '\0' || !(t > 0 && t <= 1))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("simhash_dedupe: a similarity threshold must be a number in (0, 1], got \"%s\"",
							arg)));
		if (t < MIN_DEDUPE_SIMILARITY)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("simhash_dedupe: similarity thresholds below %.1f are not supported, got \"%s\"",
							MIN_DEDUPE_SIMILARITY, arg),
					 errdetail("Below %.1f, finding the candidates takes two fingerprints a row.",
							   MIN_DEDUPE_SIMILARITY),
					 errhint("Use a threshold of at least %.1f, or find such pairs with simhash_similar_pairs().",
							 MIN_DEDUPE_SIMILARITY)));
		{
			const SimhashRecipe *recipes;

			if (simhash_similar_recipes_for(t, &recipes) != 1)
				elog(ERROR, "simhash_dedupe: threshold %g has more than one candidate recipe", t);
			c->recipe = recipes[0];
		}
		c->min_similarity = t;
		c->k = c->recipe.max_distance;
		return;
	}
	{
		long		k = strtol(arg, &end, 10);

		if (errno != 0 || end == arg || *end != '\0' || k < 0 || k > MAX_DEDUPE_DISTANCE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("simhash_dedupe: maximum distance must be a whole number from 0 to %d, or a similarity threshold such as 0.8, got \"%s\"",
							MAX_DEDUPE_DISTANCE, arg)));
		c->k = (int) k;
	}
}

static DedupeConfig *
make_config(FunctionCallInfo fcinfo, TriggerData *td)
{
	Trigger    *tg = td->tg_trigger;
	Relation	rel = td->tg_relation;
	MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	DedupeConfig *c = palloc0(sizeof(DedupeConfig));
	Oid			nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	Oid			block_fn = simhash_block_function(nsp);
	Relation	root;
	Oid			pk;
	AttrNumber	root_keys[INDEX_MAX_KEYS];
	List	   *leaves;
	ListCell   *lc;
	int			served;

	if (tg->tgnargs < 4 || tg->tgnargs > 5)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_dedupe: trigger \"%s\" needs 4 or 5 arguments: text column, fingerprint column, maximum distance or similarity threshold, policy [, link column]",
						tg->tgname)));
	if (rel->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("simhash_dedupe: trigger \"%s\" is on \"%s\", which is not a table",
						tg->tgname, RelationGetRelationName(rel)),
				 errdetail("The trigger searches the rows of ordinary tables and partitioned tables.")));
	c->tgoid = tg->tgoid;
	c->relid = RelationGetRelid(rel);
	c->text_attno = column(rel, tg->tgargs[0], "text");
	{
		Oid			t = TupleDescAttr(RelationGetDescr(rel), c->text_attno - 1)->atttypid;

		if (t != TEXTOID && t != VARCHAROID && t != BPCHAROID)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("simhash_dedupe: text column \"%s\" of table \"%s\" is of type %s, not text, varchar or char",
							tg->tgargs[0], RelationGetRelationName(rel), format_type_be(t))));
	}
	c->fp_attno = column(rel, tg->tgargs[1], "fingerprint");
	expect_type(rel, c->fp_attno, INT8OID, "fingerprint");
	parse_limit(c, tg);
	if (TupleDescAttr(RelationGetDescr(rel), c->fp_attno - 1)->attgenerated)
	{
		if (c->min_similarity > 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("simhash_dedupe: with a similarity threshold, fingerprint column \"%s\" of table \"%s\" must not be generated",
							tg->tgargs[1], RelationGetRelationName(rel)),
					 errhint("Make \"%s\" a plain bigint column: the trigger fills it with simhash(%s, 'char', 5, 'binary').",
							 tg->tgargs[1], quote_identifier(tg->tgargs[0]))));
		check_generated_fp(rel, c, nsp, tg);
	}

	if (strcmp(tg->tgargs[3], "reject") == 0)
		c->policy = POLICY_REJECT;
	else if (strcmp(tg->tgargs[3], "skip") == 0)
		c->policy = POLICY_SKIP;
	else if (strcmp(tg->tgargs[3], "link") == 0)
		c->policy = POLICY_LINK;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_dedupe: unknown policy \"%s\"; the policies are reject, skip and link",
						tg->tgargs[3])));
	if ((c->policy == POLICY_LINK) != (tg->tgnargs == 5))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg(c->policy == POLICY_LINK
						? "simhash_dedupe: policy link needs a fifth argument, the column that receives the key of the near duplicate"
						: "simhash_dedupe: only policy link takes a fifth argument")));

	/* Near duplicates are looked for in the whole partition tree. */
	c->root = c->relid;
	if (rel->rd_rel->relispartition)
		c->root = llast_oid(get_partition_ancestors(c->relid));
	root = relation_open(c->root, AccessShareLock);

	pk = RelationGetPrimaryKeyIndex(root);
	if (OidIsValid(pk))
	{
		Relation	pkrel = index_open(pk, AccessShareLock);
		StringInfoData names;

		initStringInfo(&names);
		c->nkeys = pkrel->rd_index->indnkeyatts;
		for (int i = 0; i < c->nkeys; i++)
		{
			root_keys[i] = pkrel->rd_index->indkey.values[i];
			appendStringInfo(&names, "%s%s", i > 0 ? ", " : "",
							 quote_identifier(NameStr(TupleDescAttr(RelationGetDescr(root),
																	root_keys[i] - 1)->attname)));
		}
		c->key_names = names.data;
		index_close(pkrel, NoLock);
	}
	if (c->policy == POLICY_LINK)
	{
		c->link_attno = column(rel, tg->tgargs[4], "link");
		if (c->nkeys != 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("simhash_dedupe: policy link needs a single-column primary key on table \"%s\"",
							RelationGetRelationName(root))));
		expect_type(rel, c->link_attno,
					TupleDescAttr(RelationGetDescr(root), root_keys[0] - 1)->atttypid, "link");
	}

	served = layout_max_distance(nsp, c->root, tg->tgargs[1]);
	if (served >= 0 && c->k > served)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 c->min_similarity > 0
				 ? errmsg("simhash_dedupe: the radius %d of similarity threshold %g is more than the %d the block indexes of %s.%s serve",
						  c->k, c->min_similarity, served, RelationGetRelationName(root), tg->tgargs[1])
				 : errmsg("simhash_dedupe: maximum distance %d is more than the %d the block indexes of %s.%s serve",
						  c->k, served, RelationGetRelationName(root), tg->tgargs[1]),
				 errhint("Run simhash_create_index('%s', '%s', %d) first.",
						 RelationGetRelationName(root), tg->tgargs[1], c->k)));

	leaves = root->rd_rel->relkind == RELKIND_PARTITIONED_TABLE
		? find_all_inheritors(c->root, AccessShareLock, NULL) : list_make1_oid(c->root);
	c->targets = palloc0(sizeof(DedupeTarget) * list_length(leaves));
	c->indexed = true;
	foreach(lc, leaves)
	{
		Oid			leaf = lfirst_oid(lc);

		char		kind = get_rel_relkind(leaf);

		if (kind == RELKIND_PARTITIONED_TABLE)
			continue;
		if (kind != RELKIND_RELATION)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("simhash_dedupe: partition \"%s\" of table \"%s\" is not an ordinary table, so trigger \"%s\" cannot search it",
							get_rel_name(leaf), RelationGetRelationName(root), tg->tgname),
					 errdetail("Foreign tables cannot be deduplicated.")));
		make_target(&c->targets[c->ntargets], leaf, tg->tgargs[0], tg->tgargs[1],
					c->policy == POLICY_LINK ? tg->tgargs[4] : NULL,
					root, c->nkeys, root_keys, block_fn, c->k);
		if (c->targets[c->ntargets].plan.blocks == 0)
			c->indexed = false;
		c->ntargets++;
	}
	relation_close(root, NoLock);

	if (!c->indexed && !list_member_oid(warned_tables, c->root))
	{
		MemoryContext top = MemoryContextSwitchTo(TopMemoryContext);

		warned_tables = lappend_oid(warned_tables, c->root);
		MemoryContextSwitchTo(top);
		ereport(NOTICE,
				(errmsg("simhash_dedupe: %s.%s has no block indexes serving distance %d, so every row written reads the whole table",
						get_rel_name(c->root), tg->tgargs[1], c->k),
				 errhint("Run simhash_create_index('%s', '%s', %d).",
						 get_rel_name(c->root), tg->tgargs[1], c->k)));
	}
	else if (c->indexed && c->k + 1 <= SIMHASH_MAX_BLOCKS &&
			 c->targets[0].plan.probes.probes > (uint64) (2 * (c->k + 1)) &&
			 !list_member_oid(advised_tables, c->root))
	{
		MemoryContext top = MemoryContextSwitchTo(TopMemoryContext);

		advised_tables = lappend_oid(advised_tables, c->root);
		MemoryContextSwitchTo(top);
		ereport(NOTICE,
				(errmsg("simhash_dedupe: with the %d-block layout of %s.%s, every row written takes " UINT64_FORMAT " index lookups at distance %d",
						c->targets[0].plan.blocks, get_rel_name(c->root), tg->tgargs[1],
						c->targets[0].plan.probes.probes, c->k),
				 errhint("A layout of %d blocks takes %d: simhash_create_index('%s', '%s', %d, blocks => %d).",
						 c->k + 1, c->k + 1, get_rel_name(c->root), tg->tgargs[1], c->k, c->k + 1)));
	}
	MemoryContextSwitchTo(old);
	return c;
}

/* The lock count of the current transaction for table root. */
static LockCount *
lock_count(Oid root)
{
	LockCount  *free_slot = NULL;

	for (int i = 0; i < LOCK_COUNTS; i++)
	{
		LockCount  *e = &lock_counts[i];

		if (e->lxid == MyProc->lxid && e->root == root)
			return e;
		if (e->lxid != MyProc->lxid && free_slot == NULL)
			free_slot = e;
	}
	if (free_slot == NULL)
		free_slot = &lock_counts[root % LOCK_COUNTS];	/* many tables: share a slot */
	free_slot->lxid = MyProc->lxid;
	free_slot->root = root;
	free_slot->locks = 0;
	free_slot->next_try = BULK_LOCKS;
	return free_slot;
}

/* True when this transaction keeps every other writer out of the table (and partitions). */
static bool
holds_table(DedupeConfig *c)
{
	if (!CheckRelationOidLockedByMe(c->root, ShareRowExclusiveLock, true))
		return false;
	for (int i = 0; i < c->ntargets; i++)
		if (c->targets[i].relid != c->root &&
			!CheckRelationOidLockedByMe(c->targets[i].relid, ShareRowExclusiveLock, true))
			return false;
	return true;
}

/*
 * Advisory locks one transaction may take on a table before it waits for the table lock
 * instead: twice BULK_LOCKS, or a quarter of the shared lock table
 * (max_locks_per_transaction slots for each possible backend) when that is more.
 */
static uint64
lock_budget(void)
{
	uint64		slots = (uint64) max_locks_per_xact * (uint64) MaxBackends;

	return Max((uint64) 2 * BULK_LOCKS, slots / 4);
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

/* Takes the advisory locks of fingerprint fp, or makes sure no other writer can run. */
static void
serialize_writers(DedupeConfig *c, uint64 fp)
{
	LockCount  *count;
	uint32		keys[SIMHASH_MAX_LOCK_KEYS];
	size_t		n;
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	if (holds_table(c))
		return;
	count = lock_count(c->root);
	if (count->locks >= count->next_try)
	{
		/*
		 * Many rows in one transaction: keep the other writers out instead. Without
		 * waiting first (a writer of a near duplicate may wait for one of our locks); but
		 * before the locks fill a good part of the shared lock table (which would make
		 * every session fail with "out of shared memory"), waiting: should that writer
		 * be waiting for us, the deadlock detector aborts one of the two.
		 */
		bool		wait = count->locks >= lock_budget();

		if (lock_tables(c, wait))
			return;
		count->next_try = count->locks + BULK_LOCKS / 4;
	}
	simhash_check_status(simhash_lock_keys(fp, c->k, keys, SIMHASH_MAX_LOCK_KEYS, &n,
								   errbuf, sizeof(errbuf)), errbuf);
	for (size_t i = 0; i < n; i++)
	{
		LOCKTAG		tag;

		SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, c->root, keys[i], DEDUPE_LOCK_CLASS);
		(void) LockAcquire(&tag, ExclusiveLock, false, false);
	}
	count->locks += n;
}

/* "(id)=(42)" for the key of the row in slot, or NULL when the caller may not read it. */
static char *
describe_key(DedupeConfig *c, DedupeTarget *t, TupleTableSlot *slot)
{
	StringInfoData buf;
	Oid			user = GetUserId();

	if (check_enable_rls(c->root, InvalidOid, true) == RLS_ENABLED)
		return NULL;
	initStringInfo(&buf);
	if (c->nkeys == 0)
	{
		if (pg_class_aclcheck(c->root, user, ACL_SELECT) != ACLCHECK_OK)
			return NULL;
		appendStringInfo(&buf, "(ctid)=((%u,%u))",
						 ItemPointerGetBlockNumber(&slot->tts_tid),
						 ItemPointerGetOffsetNumber(&slot->tts_tid));
		return buf.data;
	}
	appendStringInfo(&buf, "(%s)=(", c->key_names);
	for (int i = 0; i < c->nkeys; i++)
	{
		AttrNumber	attno = t->key_attnos[i];
		bool		isnull;
		Datum		d;
		Oid			out;
		bool		varlena;

		if (pg_class_aclcheck(c->root, user, ACL_SELECT) != ACLCHECK_OK &&
			pg_attribute_aclcheck(t->relid, attno, user, ACL_SELECT) != ACLCHECK_OK)
			return NULL;
		d = slot_getattr(slot, attno, &isnull);
		getTypeOutputInfo(TupleDescAttr(slot->tts_tupleDescriptor, attno - 1)->atttypid,
						  &out, &varlena);
		appendStringInfo(&buf, "%s%s", i > 0 ? ", " : "",
						 isnull ? "null" : OidOutputFunctionCall(out, d));
	}
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/*
 * Considers one row of target t within k of the new fingerprint: raises a serialization
 * failure if the transaction may not see it, else keeps it if the policy prefers it.
 */
static void
consider(DedupeConfig *c, DedupeTarget *t, Relation rel, TupleTableSlot *slot, int distance,
		 double similarity, Snapshot xact_snapshot, Found *found)
{
	bool		is_original = true;
	bool		better;

	if (xact_snapshot != NULL)
	{
		bool		isnull;
		TransactionId xmin = DatumGetTransactionId(slot_getsysattr(slot, MinTransactionIdAttributeNumber, &isnull));

		if (!TransactionIdIsCurrentTransactionId(xmin) &&
			!table_tuple_satisfies_snapshot(rel, slot, xact_snapshot))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not serialize access due to a concurrent insert of a near duplicate into \"%s\"",
							get_rel_name(c->root)),
					 c->min_similarity > 0
					 ? errdetail("A row within the radius %d of similarity threshold %g was committed after this transaction's snapshot was taken.",
								 c->k, c->min_similarity)
					 : errdetail("A row within Hamming distance %d was committed after this transaction's snapshot was taken.",
								 distance),
					 errhint("The transaction might succeed if retried.")));
	}
	if (c->policy == POLICY_LINK)
	{
		bool		isnull;

		(void) slot_getattr(slot, t->link_attno, &isnull);
		is_original = isnull;
	}
	/* Originals before rows that are themselves linked, then the nearest (most similar). */
	better = !found->any ||
		(is_original && !found->is_original) ||
		(is_original == found->is_original &&
		 (c->min_similarity > 0 ? similarity > found->similarity : distance < found->distance));
	if (!better)
		return;
	found->any = true;
	found->distance = distance;
	found->similarity = similarity;
	found->is_original = is_original;
	if (c->policy == POLICY_LINK)
	{
		bool		isnull;
		Form_pg_attribute att = TupleDescAttr(slot->tts_tupleDescriptor, t->key_attnos[0] - 1);

		found->key = datumCopy(slot_getattr(slot, t->key_attnos[0], &isnull), att->attbyval,
							   att->attlen);
	}
	if (c->policy == POLICY_REJECT)
		found->key_text = describe_key(c, t, slot);
}

/* The text of the row being written, and its shingle set once a candidate needs it. */
typedef struct NewText
{
	text	   *body;
	bool		have_set;
	SimhashShingleSet set;
} NewText;

/* One search of one target for a fingerprint: what every candidate is checked against. */
typedef struct Search
{
	DedupeConfig *c;
	DedupeTarget *t;
	Relation	rel;
	TupleTableSlot *slot;
	uint64		fp;
	Snapshot	xact_snapshot;
	Oid			old_relid;		/* the row being updated (old_tid NULL on insert) */
	ItemPointer old_tid;
	NewText    *new_text;
	HTAB	   *verified;		/* with a threshold: rows whose similarity is known */
	Found	   *found;
} Search;

/*
 * With a threshold, reject and skip need one similar row, not the most similar: the search
 * stops at the first.
 */
static bool
search_done(Search *s)
{
	return s->c->min_similarity > 0 && s->found->any && s->c->policy != POLICY_LINK;
}

/*
 * With a similarity threshold, the similarity of the candidate in s->slot to the new row;
 * false when it is below the threshold (or undefined).
 */
static bool
similar_enough(Search *s, double *similarity)
{
	bool		isnull;
	Datum		d = slot_getattr(s->slot, s->t->text_attno, &isnull);
	SimhashShingleSet other;
	text	   *body;
	bool		defined;

	if (isnull)
		return false;
	if (!s->new_text->have_set)
	{
		s->new_text->set = simhash_text_shingles(s->new_text->body);
		s->new_text->have_set = true;
	}
	body = DatumGetTextPP(d);
	other = simhash_text_shingles(body);
	defined = simhash_shingle_jaccard(s->new_text->set, other, similarity);
	pfree((void *) other.data);
	if ((Pointer) body != DatumGetPointer(d))
		pfree(body);
	return defined && *similarity >= s->c->min_similarity;
}

/*
 * Checks a candidate row (in s->slot) whose fingerprint is fp: within k, not the row itself,
 * and with a threshold, similar enough.
 */
static void
check_candidate(Search *s, uint64 fp)
{
	int			distance = simhash_hamming(s->fp, fp);
	double		similarity = 0;

	if (distance > s->c->k)
		return;
	if (s->old_tid != NULL && s->t->relid == s->old_relid &&
		ItemPointerEquals(&s->slot->tts_tid, s->old_tid))
		return;
	if (s->c->min_similarity > 0)
	{
		bool		seen;

		/* A row matches in several blocks: verify it once. */
		if (s->verified == NULL)
		{
			HASHCTL		ctl;

			ctl.keysize = sizeof(ItemPointerData);
			ctl.entrysize = sizeof(ItemPointerData);
			ctl.hcxt = CurrentMemoryContext;
			s->verified = hash_create("simhash_dedupe verified rows", 64, &ctl,
									  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		}
		(void) hash_search(s->verified, &s->slot->tts_tid, HASH_ENTER, &seen);
		if (seen)
			return;
		/* link prefers originals: once one is found, rows linked elsewhere cannot win. */
		if (s->c->policy == POLICY_LINK && s->found->any && s->found->is_original)
		{
			bool		linked_isnull;

			(void) slot_getattr(s->slot, s->t->link_attno, &linked_isnull);
			if (!linked_isnull)
				return;
		}
		if (!similar_enough(s, &similarity))
			return;
	}
	consider(s->c, s->t, s->rel, s->slot, distance, similarity, s->xact_snapshot, s->found);
}

/* Checks the row in s->slot, reading its fingerprint there. */
static void
check_slot(Search *s)
{
	bool		isnull;
	Datum		d = slot_getattr(s->slot, s->t->fp_attno, &isnull);

	if (!isnull)
		check_candidate(s, (uint64) DatumGetInt64(d));
}

/*
 * Probes block index i of the target with every value in probes[0..n). With the
 * fingerprint in the index, only rows within k are read from the table.
 */
static void
probe_block(Search *s, int i, Snapshot snapshot, const uint32 *probes, size_t n)
{
	Relation	ind = index_open(s->t->indexes[i], AccessShareLock);
	IndexScanDesc scan = index_beginscan(s->rel, ind, snapshot, 1, 0);
	bool		in_index = s->t->has_fingerprint[i];

	scan->xs_want_itup = in_index;
	for (size_t p = 0; p < n && !search_done(s); p++)
	{
		ScanKeyData key;

		ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum((int32) probes[p]));
		index_rescan(scan, &key, 1, NULL, 0);
		if (!in_index)
		{
			while (!search_done(s) && index_getnext_slot(scan, ForwardScanDirection, s->slot))
				check_slot(s);
			continue;
		}
		while (!search_done(s) && index_getnext_tid(scan, ForwardScanDirection) != NULL)
		{
			bool		isnull;
			Datum		d = index_getattr(scan->xs_itup, 2, scan->xs_itupdesc, &isnull);

			/* An MVCC snapshot sees at most one version of a HOT chain. */
			if (!isnull && simhash_hamming(s->fp, (uint64) DatumGetInt64(d)) <= s->c->k &&
				index_fetch_heap(scan, s->slot))
				check_candidate(s, (uint64) DatumGetInt64(d));
		}
	}
	index_endscan(scan);
	index_close(ind, NoLock);
}

/* Looks for rows of target t within k of fp visible to snapshot. */
static void
search_target(DedupeConfig *c, DedupeTarget *t, uint64 fp, Snapshot snapshot,
			  Snapshot xact_snapshot, Oid old_relid, ItemPointer old_tid, NewText *new_text,
			  Found *found)
{
	Search		s = {c, t, NULL, NULL, fp, xact_snapshot, old_relid, old_tid, new_text, NULL, found};
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	s.rel = table_open(t->relid, AccessShareLock);
	s.slot = table_slot_create(s.rel, NULL);
	if (t->plan.blocks == 0)
	{
		TableScanDesc scan = table_beginscan(s.rel, snapshot, 0, NULL);
		uint64		rows = 0;

		while (!search_done(&s) && table_scan_getnextslot(scan, ForwardScanDirection, s.slot))
		{
			if ((++rows & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
			check_slot(&s);
		}
		table_endscan(scan);
	}
	for (int i = 0; i < t->plan.blocks && !search_done(&s); i++)
	{
		int			radius = t->plan.probes.radius[i];
		uint64		count;
		size_t		n;
		uint32	   *probes;

		if (radius < 0)
			continue;
		simhash_check_status(simhash_block_probe_count(t->plan.blocks, i, radius, &count,
											   errbuf, sizeof(errbuf)), errbuf);
		probes = palloc(sizeof(uint32) * count);
		simhash_check_status(simhash_block_probes(fp, t->plan.blocks, i, radius, probes, count, &n,
										  errbuf, sizeof(errbuf)), errbuf);
		probe_block(&s, i, snapshot, probes, n);
		pfree(probes);
	}
	if (s.verified != NULL)
		hash_destroy(s.verified);
	ExecDropSingleTupleTableSlot(s.slot);
	table_close(s.rel, NoLock);
}

/*
 * The fingerprint the trigger stores: simhash(text), or with a similarity threshold the
 * fingerprint of its recipe, simhash(text, 'char', 5, 'binary'); false when the text has no
 * feature.
 */
static bool
row_fingerprint(DedupeConfig *c, text *t, uint64 *fp)
{
	if (c->min_similarity > 0)
	{
		simhash_text_options options = {c->recipe.tokenizer, c->recipe.n, SIMHASH_WEIGHTING_BINARY, 1};

		return simhash_text_fingerprint(t, &options, fp);
	}
	else
	{
		simhash_options options;

		simhash_default_options(&options);
		return simhash_fingerprint_text(t, &options, fp);
	}
}

/* The text of the row, or NULL. */
static text *
row_text(HeapTuple tuple, TupleDesc desc, AttrNumber attno)
{
	bool		isnull;
	Datum		d = heap_getattr(tuple, attno, desc, &isnull);

	return isnull ? NULL : DatumGetTextPP(d);
}

PG_FUNCTION_INFO_V1(simhash_dedupe);

/* simhash_dedupe() trigger: see the comment at the top of the file. */
Datum
simhash_dedupe(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	DedupeConfig *c;
	Relation	rel;
	TupleDesc	desc;
	HeapTuple	tuple;
	HeapTuple	old = NULL;
	Datum		fp_datum;
	bool		fp_null;
	bool		recompute;
	uint64		fp = 0;
	int			cols[2];
	Datum		values[2];
	bool		nulls[2];
	int			ncols = 0;
	Found		found = {0};
	NewText		new_text = {0};

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("simhash_dedupe: not called as a trigger")));
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
	desc = RelationGetDescr(rel);

	if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
	{
		old = td->tg_trigtuple;
		tuple = td->tg_newtuple;
	}
	else
		tuple = td->tg_trigtuple;

	/* The fingerprint: computed when missing or when the text changed. */
	fp_datum = heap_getattr(tuple, c->fp_attno, desc, &fp_null);
	/* With a threshold the fingerprint is the text's own, whatever the row gives. */
	recompute = fp_null || c->min_similarity > 0;
	if (old != NULL)
	{
		text	   *new_text = row_text(tuple, desc, c->text_attno);
		text	   *old_text = row_text(old, desc, c->text_attno);
		bool		old_fp_null;
		Datum		old_fp = heap_getattr(old, c->fp_attno, desc, &old_fp_null);
		bool		same_text = (new_text == NULL) == (old_text == NULL) &&
			(new_text == NULL ||
			 (VARSIZE_ANY_EXHDR(new_text) == VARSIZE_ANY_EXHDR(old_text) &&
			  memcmp(VARDATA_ANY(new_text), VARDATA_ANY(old_text), VARSIZE_ANY_EXHDR(new_text)) == 0));

		recompute = recompute || !same_text;
		/* Nothing that matters changed: no new near duplicate can appear. */
		if (same_text && c->min_similarity == 0 && !fp_null && !old_fp_null &&
			DatumGetInt64(fp_datum) == DatumGetInt64(old_fp))
			return PointerGetDatum(tuple);
	}
	if (recompute)
	{
		text	   *t = row_text(tuple, desc, c->text_attno);

		fp_null = t == NULL || !row_fingerprint(c, t, &fp);
		cols[ncols] = c->fp_attno;
		values[ncols] = fp_null ? (Datum) 0 : Int64GetDatum((int64) fp);
		nulls[ncols] = fp_null;
		ncols++;
	}
	else
		fp = (uint64) DatumGetInt64(fp_datum);

	if (!fp_null)
	{
		Snapshot	snapshot;
		Snapshot	xact_snapshot = NULL;

		serialize_writers(c, fp);
		/* See what committed while we waited, and the rows of this statement so far. */
		CommandCounterIncrement();
		snapshot = RegisterSnapshot(GetLatestSnapshot());
		if (IsolationUsesXactSnapshot())
			xact_snapshot = GetTransactionSnapshot();
		new_text.body = row_text(tuple, desc, c->text_attno);
		for (int i = 0; i < c->ntargets; i++)
		{
			search_target(c, &c->targets[i], fp, snapshot, xact_snapshot,
						  RelationGetRelid(rel), old ? &old->t_self : NULL, &new_text, &found);
			if (found.any && c->policy == POLICY_SKIP)
				break;
		}
		UnregisterSnapshot(snapshot);
	}

	if (found.any && c->policy == POLICY_REJECT)
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("new row for relation \"%s\" is a near duplicate of an existing row",
						RelationGetRelationName(rel)),
				 c->min_similarity > 0
				 ? (found.key_text
					? errdetail("Key %s has similarity %.3f to it, at or above the threshold %g of trigger \"%s\".",
								found.key_text, found.similarity, c->min_similarity,
								td->tg_trigger->tgname)
					: errdetail("A row with similarity %.3f to it exists, at or above the threshold %g of trigger \"%s\".",
								found.similarity, c->min_similarity, td->tg_trigger->tgname))
				 : (found.key_text
					? errdetail("Key %s is at Hamming distance %d, within the %d that trigger \"%s\" allows.",
								found.key_text, found.distance, c->k, td->tg_trigger->tgname)
					: errdetail("A row at Hamming distance %d exists, within the %d that trigger \"%s\" allows.",
								found.distance, c->k, td->tg_trigger->tgname)),
				 errtableconstraint(rel, td->tg_trigger->tgname)));
	if (found.any && c->policy == POLICY_SKIP)
		return PointerGetDatum(NULL);
	if (c->policy == POLICY_LINK)
	{
		cols[ncols] = c->link_attno;
		values[ncols] = found.any ? found.key : (Datum) 0;
		nulls[ncols] = !found.any;
		ncols++;
	}
	if (ncols > 0)
		tuple = heap_modify_tuple_by_cols(tuple, desc, ncols, cols, values, nulls);
	return PointerGetDatum(tuple);
}
