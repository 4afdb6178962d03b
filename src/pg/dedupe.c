/*
 * simhash_dedupe(): a BEFORE INSERT OR UPDATE row trigger that keeps near duplicates out of
 * a table, or links them to the row they duplicate.
 *
 *   CREATE TRIGGER docs_dedupe BEFORE INSERT OR UPDATE OF body ON docs FOR EACH ROW
 *       EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
 *
 * Arguments: the text column, the key column, the limit, the policy (reject | skip | link)
 * and, for link, the column that receives the primary key of the existing near duplicate.
 * Two kinds of limit (see parse_limit()):
 *   - a Hamming distance k (0..16): near duplicates are rows whose fingerprints lie within
 *     k bits; the key column is a bigint, filled with simhash(text) when it is NULL or the
 *     text changed, searched through the block indexes of simhash_create_index();
 *   - a similarity threshold (0.7..1, written with a decimal point): near duplicates are
 *     rows whose simhash_jaccard with the new text is at least the threshold; the key column
 *     is a bigint[] that the trigger always fills with simhash_lsh(text), searched through a
 *     GIN index on it (candidates: rows sharing a key), every candidate verified.
 *
 * Concurrency. Before looking for near duplicates, the trigger takes transaction-scoped
 * advisory locks on the new row's lock keys, in ascending order: with a distance, those of
 * its fingerprint (core/locks.hpp: fingerprints within k bits always share a key); with a
 * threshold, its LSH keys (a row is a candidate exactly when it shares one). A concurrent writer of a near duplicate
 * holds one of those keys until it commits, so we wait for it and then see its row: the
 * search runs on a snapshot taken after the locks (plus CommandCounterIncrement, so rows
 * of the same statement count too). Under REPEATABLE READ and SERIALIZABLE, a near
 * duplicate that this newest snapshot sees but the transaction's snapshot does not was
 * committed concurrently: that is a serialization failure (40001), never a silent
 * duplicate. Writers of unrelated fingerprints share a key only by chance.
 *
 * A transaction that writes many rows would hold many locks; past BULK_LOCKS of them on
 * one table (or half the budget below, if that is less), the trigger tries (without
 * waiting, so it cannot deadlock) to take SHARE ROW EXCLUSIVE on the table, which keeps
 * every other writer out; once it holds that lock, or the user took it with LOCK TABLE
 * before a bulk load, no advisory lock is needed. If another writer keeps the table busy
 * until this transaction has taken a quarter of the shared lock table (lock_budget()),
 * the trigger waits for the table lock.
 *
 * The search uses the block indexes of simhash_create_index() directly (one B-tree probe
 * per block value, through the planner's own choice of radii), or the GIN index of the LSH
 * keys (one bitmap scan); without them it reads the whole table, and says so in a NOTICE
 * once per session. Like a unique index, it sees every
 * row of the table, whatever the caller's privileges and row-level security policies; a
 * reject message shows the other row's key only to callers allowed to read it.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/gin.h"
#include "access/gin_private.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_type_d.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/tidbitmap.h"
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
#include "capi/similarity_capi.h"
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

/* Smallest similarity threshold: what the LSH keys serve (candidate recall >= 0.99). */
#define MIN_DEDUPE_SIMILARITY SIMHASH_LSH_MIN_SIMILARITY

/* The strategy of && in GIN's array_ops (GinOverlapStrategy of ginarrayproc.c). */
#define GIN_OVERLAP_STRATEGY 1

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
	Oid			gin_index;		/* with a threshold: GIN index on the keys, or none */
	bool		gin_pending;	/* it collects new entries in a pending list (fastupdate) */
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
	int			k;				/* with a distance */
	double		min_similarity; /* 0: near duplicates by distance alone; else LSH keys */
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

/*
 * A valid GIN index of relid whose only key is column attno, with no predicate, that
 * serves && (array_ops); InvalidOid without one.
 */
static Oid
find_gin_index(Oid relid, AttrNumber attno, bool *fastupdate)
{
	Relation	rel = table_open(relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	Oid			found = InvalidOid;

	foreach(lc, indexes)
	{
		Relation	ind = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index form = ind->rd_index;

		if (ind->rd_rel->relam == GIN_AM_OID && form->indisvalid && form->indisready &&
			form->indislive && form->indnatts == 1 && form->indkey.values[0] == attno &&
			heap_attisnull(ind->rd_indextuple, Anum_pg_index_indpred, NULL) &&
			get_opfamily_member(ind->rd_opfamily[0], ANYARRAYOID, ANYARRAYOID,
								GIN_OVERLAP_STRATEGY) == OID_ARRAY_OVERLAP_OP)
		{
			found = RelationGetRelid(ind);
			*fastupdate = GinGetUseFastUpdate(ind);
		}
		index_close(ind, AccessShareLock);
		if (OidIsValid(found))
			break;
	}
	list_free(indexes);
	table_close(rel, AccessShareLock);
	return found;
}

/* Fills a target for relation relid from the column names of the root. */
static void
make_target(DedupeTarget *t, Oid relid, const char *text_name, const char *fp_name,
			const char *link_name, Relation root, int nkeys, const AttrNumber *root_keys,
			Oid block_fn, DedupeConfig *c)
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
	if (c->min_similarity > 0)
	{
		t->gin_index = find_gin_index(relid, t->fp_attno, &t->gin_pending);
		return;
	}
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
	t->plan = simhash_choose_search(&layouts, c->k, in_index ? IN_INDEX_CANDIDATE_COST : 1.0, true);
	for (int i = 0; i < t->plan.blocks; i++)
	{
		t->indexes[i] = layouts.by[t->plan.blocks][i].index;
		t->has_fingerprint[i] = layouts.by[t->plan.blocks][i].has_fingerprint;
	}
}

/*
 * A generated key column is computed after BEFORE triggers, so the trigger computes it
 * itself, as simhash(text column) or, with a threshold, simhash_lsh(text column): the
 * column must be generated by exactly that, or stored and new keys would differ.
 */
static void
check_generated_fp(Relation rel, DedupeConfig *c, Oid nsp, Trigger *tg)
{
	Oid			text_arg = TEXTOID;
	const char *fn = c->min_similarity > 0 ? "simhash_lsh" : "simhash";
	Oid			simhash_fn = simhash_extension_function(nsp, fn, 1, &text_arg);
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
				 errmsg("simhash_dedupe: generated column \"%s\" of table \"%s\" is not %s(%s)",
						tg->tgargs[1], RelationGetRelationName(rel), fn, quote_identifier(tg->tgargs[0])),
				 errdetail("Generated columns are computed after BEFORE triggers, so trigger \"%s\" computes the column itself, as %s(%s).",
						   tg->tgname, fn, quote_identifier(tg->tgargs[0])),
				 errhint("Make \"%s\" a plain %s column, which the trigger fills, or generate it as %s(%s).",
						 tg->tgargs[1], c->min_similarity > 0 ? "bigint[]" : "bigint", fn,
						 quote_identifier(tg->tgargs[0]))));
}

/*
 * The third argument: a Hamming distance k ("3"), or a similarity threshold ("0.8", with a
 * decimal point). With a threshold t, near duplicates are the rows whose texts have a
 * simhash_jaccard of at least t; candidates are the rows that share a simhash_lsh key with
 * the new row. Below 0.7 the keys miss too many pairs (see the calibration): refused.
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
					 errdetail("Below %.1f, rows sharing no LSH key with the new row too often reach the threshold.",
							   MIN_DEDUPE_SIMILARITY),
					 errhint("Use a threshold of at least %.1f, or find such pairs with simhash_similar_pairs().",
							 MIN_DEDUPE_SIMILARITY)));
		c->min_similarity = t;
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

/* The first argument: a text, varchar or char column. */
static void
parse_text_column(DedupeConfig *c, Relation rel, Trigger *tg)
{
	Oid			text_type;

	c->text_attno = column(rel, tg->tgargs[0], "text");
	text_type = TupleDescAttr(RelationGetDescr(rel), c->text_attno - 1)->atttypid;
	if (text_type != TEXTOID && text_type != VARCHAROID && text_type != BPCHAROID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("simhash_dedupe: text column \"%s\" of table \"%s\" is of type %s, not text, varchar or char",
						tg->tgargs[0], RelationGetRelationName(rel), format_type_be(text_type))));
}

/*
 * The second argument, after the limit: a bigint fingerprint column with a distance, a
 * bigint[] column of LSH keys with a threshold; if generated, by what the trigger computes.
 */
static void
parse_key_column(DedupeConfig *c, Relation rel, Trigger *tg, Oid nsp)
{
	if (c->min_similarity > 0)
	{
		c->fp_attno = column(rel, tg->tgargs[1], "keys");
		expect_type(rel, c->fp_attno, INT8ARRAYOID, "keys");
	}
	else
	{
		c->fp_attno = column(rel, tg->tgargs[1], "fingerprint");
		expect_type(rel, c->fp_attno, INT8OID, "fingerprint");
	}
	if (TupleDescAttr(RelationGetDescr(rel), c->fp_attno - 1)->attgenerated)
		check_generated_fp(rel, c, nsp, tg);
}

/* The fourth argument, and the fifth that only link takes. */
static void
parse_policy(DedupeConfig *c, Trigger *tg)
{
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
}

/*
 * The primary key of root, for messages and for link: its columns into root_keys and
 * c->nkeys, their names into c->key_names; and the link column, of the key's type.
 */
static void
find_keys(DedupeConfig *c, Relation rel, Relation root, Trigger *tg, AttrNumber *root_keys)
{
	Oid			pk = RelationGetPrimaryKeyIndex(root);

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
	if (c->policy != POLICY_LINK)
		return;
	c->link_attno = column(rel, tg->tgargs[4], "link");
	if (c->nkeys != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_dedupe: policy link needs a single-column primary key on table \"%s\"",
						RelationGetRelationName(root))));
	expect_type(rel, c->link_attno,
				TupleDescAttr(RelationGetDescr(root), root_keys[0] - 1)->atttypid, "link");
}

/* With a distance: refuses a k larger than the layout recorded for root.col serves. */
static void
check_layout(DedupeConfig *c, Oid nsp, Relation root, Trigger *tg)
{
	int			served;

	if (c->min_similarity > 0)
		return;
	served = layout_max_distance(nsp, c->root, tg->tgargs[1]);
	if (served >= 0 && c->k > served)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_dedupe: maximum distance %d is more than the %d the block indexes of %s.%s serve",
						c->k, served, RelationGetRelationName(root), tg->tgargs[1]),
				 errhint("Run simhash_create_index('%s', '%s', %d) first.",
						 RelationGetRelationName(root), tg->tgargs[1], c->k)));
}

/* The relations searched: root, or every leaf of its partition tree (all ordinary tables). */
static void
make_targets(DedupeConfig *c, Relation root, Trigger *tg, Oid nsp, const AttrNumber *root_keys)
{
	Oid			block_fn = simhash_block_function(nsp);
	List	   *leaves = root->rd_rel->relkind == RELKIND_PARTITIONED_TABLE
		? find_all_inheritors(c->root, AccessShareLock, NULL) : list_make1_oid(c->root);
	ListCell   *lc;

	c->targets = palloc0(sizeof(DedupeTarget) * list_length(leaves));
	c->indexed = true;
	foreach(lc, leaves)
	{
		Oid			leaf = lfirst_oid(lc);
		char		kind = get_rel_relkind(leaf);
		DedupeTarget *t = &c->targets[c->ntargets];

		if (kind == RELKIND_PARTITIONED_TABLE)
			continue;
		if (kind != RELKIND_RELATION)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("simhash_dedupe: partition \"%s\" of table \"%s\" is not an ordinary table, so trigger \"%s\" cannot search it",
							get_rel_name(leaf), RelationGetRelationName(root), tg->tgname),
					 errdetail("Foreign tables cannot be deduplicated.")));
		make_target(t, leaf, tg->tgargs[0], tg->tgargs[1],
					c->policy == POLICY_LINK ? tg->tgargs[4] : NULL,
					root, c->nkeys, root_keys, block_fn, c);
		if (c->min_similarity > 0 ? !OidIsValid(t->gin_index) : t->plan.blocks == 0)
			c->indexed = false;
		c->ntargets++;
	}
}

/* Adds root to *tables (kept for the session); false when it was there already. */
static bool
first_time(List **tables, Oid root)
{
	MemoryContext old;

	if (list_member_oid(*tables, root))
		return false;
	old = MemoryContextSwitchTo(TopMemoryContext);
	*tables = lappend_oid(*tables, root);
	MemoryContextSwitchTo(old);
	return true;
}

/*
 * Once per session and table, a NOTICE when every row written will cost much more than it
 * should: no index (the whole table is read), a GIN index with a pending list (read whole
 * by every search, and a bulk load keeps it full: 50 times slower, measured), or a layout
 * that takes many more index lookups than k + 1 blocks would.
 */
static void
advise(DedupeConfig *c, Trigger *tg)
{
	const char *table = get_rel_name(c->root);
	const char *col = tg->tgargs[1];

	if (!c->indexed && first_time(&warned_tables, c->root))
	{
		if (c->min_similarity > 0)
			ereport(NOTICE,
					(errmsg("simhash_dedupe: %s.%s has no GIN index, so every row written reads the whole table",
							table, col),
					 errhint("CREATE INDEX ON %s USING gin (%s) WITH (fastupdate = off);",
							 quote_identifier(table), quote_identifier(col))));
		else
			ereport(NOTICE,
					(errmsg("simhash_dedupe: %s.%s has no block indexes serving distance %d, so every row written reads the whole table",
							table, col, c->k),
					 errhint("Run simhash_create_index('%s', '%s', %d).", table, col, c->k)));
	}
	else if (c->indexed && c->min_similarity > 0 && c->targets[0].gin_pending &&
			 first_time(&advised_tables, c->root))
	{
		const char *index = quote_identifier(get_rel_name(c->targets[0].gin_index));

		ereport(NOTICE,
				(errmsg("simhash_dedupe: the GIN index %s of %s.%s has fastupdate on, so every row written reads its pending list",
						index, table, col),
				 errhint("ALTER INDEX %s SET (fastupdate = off); then empty the list with SELECT gin_clean_pending_list('%s');",
						 index, index)));
	}
	else if (c->indexed && c->min_similarity == 0 && c->k + 1 <= SIMHASH_MAX_BLOCKS &&
			 c->targets[0].plan.probes.probes > (uint64) (2 * (c->k + 1)) &&
			 first_time(&advised_tables, c->root))
		ereport(NOTICE,
				(errmsg("simhash_dedupe: with the %d-block layout of %s.%s, every row written takes " UINT64_FORMAT " index lookups at distance %d",
						c->targets[0].plan.blocks, table, col, c->targets[0].plan.probes.probes, c->k),
				 errhint("A layout of %d blocks takes %d: simhash_create_index('%s', '%s', %d, blocks => %d).",
						 c->k + 1, c->k + 1, table, col, c->k, c->k + 1)));
}

/*
 * Citus (a distributed table's rows live in shards on several nodes). The trigger fires
 * on each shard and could search only that shard's rows, so a near duplicate of a row on
 * another shard would go in unseen: refused. Found without Citus's headers, by its
 * catalogs, once per statement: the table itself in pg_dist_partition, or a shard, whose
 * name ends in _<shardid> of pg_dist_shard, of a table of the same schema (Citus's own
 * RelationIsAKnownShard()). Tables whose every copy holds all rows (reference and
 * single-shard tables, partmethod 'n') are searched whole and allowed.
 */
/*
 * Column value_col of the row of Citus catalog `catalog` (in pg_catalog) whose key_col
 * equals key (by eq), by a scan; false when the catalog, the columns or the row are missing
 * or the value is NULL.
 */
static bool
citus_catalog_value(const char *catalog, const char *key_col, RegProcedure eq, Datum key,
					const char *value_col, Datum *value)
{
	Oid			relid = get_relname_relid(catalog, PG_CATALOG_NAMESPACE);
	AttrNumber	key_att = OidIsValid(relid) ? get_attnum(relid, key_col) : InvalidAttrNumber;
	AttrNumber	value_att = OidIsValid(relid) ? get_attnum(relid, value_col) : InvalidAttrNumber;
	bool		found = false;
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData skey;
	HeapTuple	tuple;

	if (key_att <= 0 || value_att <= 0)
		return false;
	rel = table_open(relid, AccessShareLock);
	ScanKeyInit(&skey, key_att, BTEqualStrategyNumber, eq, key);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 1, &skey);
	if ((tuple = systable_getnext(scan)) != NULL)
	{
		bool		isnull;

		*value = heap_getattr(tuple, value_att, RelationGetDescr(rel), &isnull);
		found = !isnull;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/* The partition method of a Citus table ('h', 'r', 'a', 'n'), or 0 for another table. */
static char
citus_partition_method(Oid relid)
{
	Datum		method;

	return citus_catalog_value("pg_dist_partition", "logicalrelid", F_OIDEQ,
							   ObjectIdGetDatum(relid), "partmethod", &method)
		? DatumGetChar(method) : 0;
}

/*
 * Whether name is the name Citus gives the shard with suffix "_<shardid>" of table
 * `table`: table's name and the suffix, or, when that would not fit in a name, the start
 * of table's name, a hash and the suffix (Citus's AppendShardIdToName()).
 */
static bool
is_shard_name(const char *name, const char *table, const char *suffix)
{
	size_t		len;

	if (table == NULL)
		return false;
	len = strlen(table);
	if (len + strlen(suffix) < NAMEDATALEN)
		return strncmp(name, table, len) == 0 && strcmp(name + len, suffix) == 0;
	/* Shortened: compare a prefix that any shortening keeps. */
	return strncmp(name, table, Min(len, (size_t) 20)) == 0;
}

/* The distributed table relid is a shard of (same schema), or InvalidOid. */
static Oid
citus_shard_of(Oid relid)
{
	char	   *name = get_rel_name(relid);
	char	   *digits = name ? strrchr(name, '_') : NULL;
	Datum		table;
	int64		shardid;
	char	   *end;

	if (digits == NULL || digits[1] == '\0' ||
		strspn(digits + 1, "0123456789") != strlen(digits + 1))
		return InvalidOid;
	errno = 0;
	shardid = strtoll(digits + 1, &end, 10);
	if (errno != 0 ||
		!citus_catalog_value("pg_dist_shard", "shardid", F_INT8EQ, Int64GetDatum(shardid),
							 "logicalrelid", &table) ||
		DatumGetObjectId(table) == relid ||
		get_rel_namespace(DatumGetObjectId(table)) != get_rel_namespace(relid) ||
		!is_shard_name(name, get_rel_name(DatumGetObjectId(table)), digits))
		return InvalidOid;
	return DatumGetObjectId(table);
}

static void
refuse_citus_distributed(Relation rel, Trigger *tg)
{
	Oid			relid = RelationGetRelid(rel);
	Oid			table;
	char		method;

	if (!OidIsValid(get_extension_oid("citus", true)))
		return;
	table = citus_shard_of(relid);
	method = citus_partition_method(OidIsValid(table) ? table : relid);
	if (method == 'h' || method == 'r' || method == 'a')
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("simhash_dedupe: table \"%s\" is distributed by Citus, so trigger \"%s\" would see only one shard's rows",
						get_rel_name(OidIsValid(table) ? table : relid), tg->tgname),
				 errdetail("A near duplicate of a row stored on another shard would go in unseen."),
				 errhint("Deduplicate before distributing the table (simhash_similar_clusters or simhash_clusters), or keep it a reference or single-shard table.")));
}

/*
 * Parses and checks the trigger's arguments and finds what to search (see the file
 * header); made once per statement, in the function's memory context.
 */
static DedupeConfig *
make_config(FunctionCallInfo fcinfo, TriggerData *td)
{
	Trigger    *tg = td->tg_trigger;
	Relation	rel = td->tg_relation;
	MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	DedupeConfig *c = palloc0(sizeof(DedupeConfig));
	Oid			nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	AttrNumber	root_keys[INDEX_MAX_KEYS];
	Relation	root;

	if (tg->tgnargs < 4 || tg->tgnargs > 5)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_dedupe: trigger \"%s\" needs 4 or 5 arguments: text column, key column (fingerprint or LSH keys), maximum distance or similarity threshold, policy [, link column]",
						tg->tgname)));
	if (rel->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("simhash_dedupe: trigger \"%s\" is on \"%s\", which is not a table",
						tg->tgname, RelationGetRelationName(rel)),
				 errdetail("The trigger searches the rows of ordinary tables and partitioned tables.")));
	refuse_citus_distributed(rel, tg);
	c->tgoid = tg->tgoid;
	c->relid = RelationGetRelid(rel);
	parse_text_column(c, rel, tg);
	parse_limit(c, tg);
	parse_key_column(c, rel, tg, nsp);
	parse_policy(c, tg);

	/* Near duplicates are looked for in the whole partition tree. */
	c->root = rel->rd_rel->relispartition ? llast_oid(get_partition_ancestors(c->relid)) : c->relid;
	root = relation_open(c->root, AccessShareLock);
	find_keys(c, rel, root, tg, root_keys);
	check_layout(c, nsp, root, tg);
	make_targets(c, root, tg, nsp, root_keys);
	relation_close(root, NoLock);
	advise(c, tg);
	MemoryContextSwitchTo(old);
	return c;
}

/*
 * Advisory locks one transaction may take on a table before it waits for the table lock
 * instead: a quarter of the shared lock table, which lock.c sizes for
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
	free_slot->next_try = first_try();
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

static int
compare_uint32(const void *a, const void *b)
{
	uint32		x = *(const uint32 *) a;
	uint32		y = *(const uint32 *) b;

	return x < y ? -1 : x > y;
}

/*
 * The lock keys of a new row into keys[0..SIMHASH_MAX_LOCK_KEYS), ascending and distinct;
 * returns their number. With a distance, those of fingerprint fp (core/locks.hpp); with a
 * threshold, the LSH keys folded to 32 bits (rows that share an LSH key share a lock key).
 */
static size_t
row_lock_keys(DedupeConfig *c, uint64 fp, const int64 *lsh, int nlsh, uint32 *keys)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	size_t		n = 0;

	StaticAssertStmt(SIMHASH_LSH_BANDS <= SIMHASH_MAX_LOCK_KEYS, "room for the LSH lock keys");
	if (c->min_similarity == 0)
	{
		simhash_check_status(simhash_lock_keys(fp, c->k, keys, SIMHASH_MAX_LOCK_KEYS, &n,
											   errbuf, sizeof(errbuf)), errbuf);
		return n;
	}
	for (int i = 0; i < nlsh; i++)
		keys[i] = (uint32) ((uint64) lsh[i] ^ ((uint64) lsh[i] >> 32));
	qsort(keys, nlsh, sizeof(uint32), compare_uint32);
	for (int i = 0; i < nlsh; i++)
		if (n == 0 || keys[i] != keys[n - 1])
			keys[n++] = keys[i];
	return n;
}

/* Takes the advisory locks keys[0..n), or makes sure no other writer can run. */
static void
serialize_writers(DedupeConfig *c, const uint32 *keys, size_t n)
{
	LockCount  *count;

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
		count->next_try = count->locks + retry_step();
	}
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
					 ? errdetail("A row with a similarity of at least %g was committed after this transaction's snapshot was taken.",
								 c->min_similarity)
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

/* The text of the row being written and, with a threshold, its shingle set (row_keys). */
typedef struct NewText
{
	text	   *body;
	SimhashShingleSet set;
} NewText;

/* One search of one target for a fingerprint: what every candidate is checked against. */
typedef struct Search
{
	DedupeConfig *c;
	DedupeTarget *t;
	Relation	rel;
	TupleTableSlot *slot;
	uint64		fp;				/* with a distance */
	const int64 *lsh;			/* with a threshold: the new row's keys, by band */
	int			nlsh;
	Snapshot	xact_snapshot;
	Oid			old_relid;		/* the row being updated (old_tid NULL on insert) */
	ItemPointer old_tid;
	NewText    *new_text;
	HTAB	   *verified;		/* with a threshold: rows whose similarity is known */
	Found	   *found;
} Search;

/*
 * With a threshold, reject and skip need one similar row, not the most similar: the search
 * stops at the first. Link stops at an original that no row can beat (similarity 1, or
 * distance 0): candidates replace it only when strictly nearer.
 */
static bool
search_done(Search *s)
{
	const Found *f = s->found;

	if (!f->any)
		return false;
	if (s->c->policy == POLICY_LINK)
		return f->is_original &&
			(s->c->min_similarity > 0 ? f->similarity >= 1.0 : f->distance == 0);
	return s->c->min_similarity > 0;
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
	body = DatumGetTextPP(d);
	/* A byte-identical text (common: licences, boilerplate) needs no shingling. */
	if (s->new_text->set.size > 0 &&
		VARSIZE_ANY_EXHDR(body) == VARSIZE_ANY_EXHDR(s->new_text->body) &&
		memcmp(VARDATA_ANY(body), VARDATA_ANY(s->new_text->body), VARSIZE_ANY_EXHDR(body)) == 0)
	{
		*similarity = 1.0;
		defined = true;
	}
	else
	{
		other = simhash_text_shingles(body);
		defined = simhash_shingle_jaccard(s->new_text->set, other, similarity);
		pfree((void *) other.data);
	}
	if ((Pointer) body != DatumGetPointer(d))
		pfree(body);
	return defined && *similarity >= s->c->min_similarity;
}

/*
 * Checks a candidate row (in s->slot), at Hamming distance `distance` within k or, with a
 * threshold, sharing an LSH key: not the row itself, and with a threshold, similar enough.
 */
static void
check_candidate(Search *s, int distance)
{
	double		similarity = 0;

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

/* True when the keys array d shares a key with the new row's, band by band. */
static bool
shares_lsh_key(Search *s, Datum d)
{
	ArrayType  *a = DatumGetArrayTypeP(d);
	bool		shared = false;

	if (ARR_NDIM(a) == 1 && ARR_ELEMTYPE(a) == INT8OID && !array_contains_nulls(a) &&
		ARR_DIMS(a)[0] == s->nlsh)
	{
		const int64 *keys = (const int64 *) ARR_DATA_PTR(a);

		for (int i = 0; i < s->nlsh && !shared; i++)
			shared = keys[i] == s->lsh[i];
	}
	if ((Pointer) a != DatumGetPointer(d))
		pfree(a);
	return shared;
}

/* Checks the row in s->slot, reading its fingerprint or keys there. */
static void
check_slot(Search *s)
{
	bool		isnull;
	Datum		d = slot_getattr(s->slot, s->t->fp_attno, &isnull);

	if (isnull)
		return;
	if (s->c->min_similarity > 0)
	{
		if (shares_lsh_key(s, d))
			check_candidate(s, 0);
	}
	else
	{
		int			distance = simhash_hamming(s->fp, (uint64) DatumGetInt64(d));

		if (distance <= s->c->k)
			check_candidate(s, distance);
	}
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

			int			distance = isnull ? INT_MAX : simhash_hamming(s->fp, (uint64) DatumGetInt64(d));

			/* An MVCC snapshot sees at most one version of a HOT chain. */
			if (distance <= s->c->k && index_fetch_heap(scan, s->slot))
				check_candidate(s, distance);
		}
	}
	index_endscan(scan);
	index_close(ind, NoLock);
}

/*
 * The rows sharing an LSH key with the new row, through the GIN index of the target: one
 * bitmap scan for keys && new keys, then each row fetched as an index scan would (one
 * visible version of a HOT chain; on a lossy page, every line pointer is tried, and
 * those that do not start a chain find nothing).
 */
static void
probe_gin(Search *s, Snapshot snapshot, ArrayType *keys)
{
	Relation	ind = index_open(s->t->gin_index, AccessShareLock);
	IndexScanDesc scan = index_beginscan_bitmap(ind, snapshot, 1);
	TIDBitmap  *tbm = tbm_create((long) work_mem * 1024L, NULL);
	IndexFetchTableData *fetch;
	TBMIterator *it;
	TBMIterateResult *page;
	ScanKeyData key;

	ScanKeyInit(&key, 1, GIN_OVERLAP_STRATEGY, F_ARRAYOVERLAP, PointerGetDatum(keys));
	index_rescan(scan, &key, 1, NULL, 0);
	(void) index_getbitmap(scan, tbm);
	index_endscan(scan);
	index_close(ind, NoLock);

	fetch = table_index_fetch_begin(s->rel);
	it = tbm_begin_iterate(tbm);
	while (!search_done(s) && (page = tbm_iterate(it)) != NULL)
	{
		int			n = page->ntuples >= 0 ? page->ntuples : MaxHeapTuplesPerPage;

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < n && !search_done(s); i++)
		{
			ItemPointerData tid;
			bool		call_again = false;
			bool		all_dead = false;

			ItemPointerSet(&tid, page->blockno,
						   page->ntuples >= 0 ? page->offsets[i] : (OffsetNumber) (i + 1));
			if (table_index_fetch_tuple(fetch, &tid, snapshot, s->slot, &call_again, &all_dead))
				check_slot(s);
		}
	}
	tbm_end_iterate(it);
	table_index_fetch_end(fetch);
	tbm_free(tbm);
}

/*
 * Looks for near duplicates in target t visible to snapshot: rows within k of fp, or with a
 * threshold, rows sharing one of the keys lsh[0..nlsh) (also given as the array lsh_array)
 * and similar enough.
 */
static void
search_target(DedupeConfig *c, DedupeTarget *t, uint64 fp, const int64 *lsh, int nlsh,
			  ArrayType *lsh_array, Snapshot snapshot, Snapshot xact_snapshot, Oid old_relid,
			  ItemPointer old_tid, NewText *new_text, Found *found)
{
	Search		s = {c, t, NULL, NULL, fp, lsh, nlsh, xact_snapshot, old_relid, old_tid, new_text,
		NULL, found};
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	s.rel = table_open(t->relid, AccessShareLock);
	s.slot = table_slot_create(s.rel, NULL);
	if (c->min_similarity > 0 && OidIsValid(t->gin_index))
		probe_gin(&s, snapshot, lsh_array);
	else if (c->min_similarity > 0 || t->plan.blocks == 0)
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

/* The fingerprint the trigger stores, simhash(text); false when the text has no feature. */
static bool
row_fingerprint(text *t, uint64 *fp)
{
	simhash_options options;

	simhash_default_options(&options);
	return simhash_fingerprint_text(t, &options, fp);
}

/* The text of the row, or NULL. */
static text *
row_text(HeapTuple tuple, TupleDesc desc, AttrNumber attno)
{
	bool		isnull;
	Datum		d = heap_getattr(tuple, attno, desc, &isnull);

	return isnull ? NULL : DatumGetTextPP(d);
}

/* A row being written: its keys, and the columns the trigger sets in it. */
typedef struct RowWork
{
	uint64		fp;				/* with a distance */
	int64		lsh[SIMHASH_LSH_BANDS]; /* with a threshold: lsh[0..nlsh) */
	int			nlsh;
	ArrayType  *lsh_array;
	NewText		new_text;
	bool		search;			/* false: no near duplicate to look for */
	bool		unchanged;		/* an UPDATE that cannot make a new near duplicate */
	int			ncols;
	int			cols[2];
	Datum		values[2];
	bool		nulls[2];
} RowWork;

/* Sets column attno of the row to (value, isnull) when the trigger returns it. */
static void
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
static void
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

/* Policy reject: 23505, naming the near duplicate's key if the caller may read it. */
static void
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
				: errdetail("A row with similarity %.3f to it exists, at or above the threshold %g of trigger \"%s\".",
							found->similarity, c->min_similarity, tg->tgname))
			 : (found->key_text
				? errdetail("Key %s is at Hamming distance %d, within the %d that trigger \"%s\" allows.",
							found->key_text, found->distance, c->k, tg->tgname)
				: errdetail("A row at Hamming distance %d exists, within the %d that trigger \"%s\" allows.",
							found->distance, c->k, tg->tgname)),
			 errtableconstraint(rel, tg->tgname)));
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
	if (TRIGGER_FIRED_BY_UPDATE(td->tg_event))
	{
		old = td->tg_trigtuple;
		tuple = td->tg_newtuple;
	}
	else
		tuple = td->tg_trigtuple;

	row_keys(c, tuple, old, RelationGetDescr(rel), &w);
	if (w.search)
		find_near_duplicate(c, rel, old, &w, &found);
	if (found.any && c->policy == POLICY_REJECT)
		reject(c, rel, td->tg_trigger, &found);
	if (found.any && c->policy == POLICY_SKIP)
		return PointerGetDatum(NULL);
	if (c->policy == POLICY_LINK && !w.unchanged)
		set_column(&w, c->link_attno, found.any ? found.key : (Datum) 0, !found.any);
	if (w.ncols > 0)
		tuple = heap_modify_tuple_by_cols(tuple, RelationGetDescr(rel), w.ncols, w.cols,
										  w.values, w.nulls);
	return PointerGetDatum(tuple);
}
