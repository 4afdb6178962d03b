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
 * committed (or updated) concurrently: reject reports it (23505) under REPEATABLE READ,
 * as a unique index would, and skip, link, and reject under SERIALIZABLE raise a
 * serialization failure (40001); never a silent duplicate. Writers of unrelated
 * fingerprints share a key only by chance.
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
#include "executor/executor.h"
#include "executor/spi.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/tidbitmap.h"
#include "parser/parsetree.h"
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
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"

#include "capi/search_capi.h"
#include "capi/similarity_capi.h"
#include "pg/citus.h"
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
	AttrNumber	root_keys[INDEX_MAX_KEYS];	/* their numbers in root */
	char	   *key_names;		/* "id" or "a, b", for messages */
	int			ntargets;
	DedupeTarget *targets;
	bool		indexed;		/* every target has a usable layout */
	/* Through a view (INSTEAD OF INSERT; see "Through a view" below): */
	bool		via_view;
	AttrNumber *to_base;		/* view column i + 1 is column to_base[i] of root */
	char	   *search_sql;		/* the query that finds the near duplicate */
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

		/*
		 * The text column as the function's argument: varchar is relabelled to text, char(n)
		 * cast by text(bpchar), which drops the trailing blanks that simhash() and
		 * simhash_lsh() ignore anyway, so the trigger's value of the raw column is the same.
		 */
		if (IsA(arg, RelabelType))
			arg = (Node *) ((RelabelType *) arg)->arg;
		else if (IsA(arg, FuncExpr) && ((FuncExpr *) arg)->funcid == F_TEXT_BPCHAR &&
				 list_length(((FuncExpr *) arg)->args) == 1)
			arg = linitial(((FuncExpr *) arg)->args);
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
 * The primary key of root, for messages and for link: its columns into c->root_keys and
 * c->nkeys, their names into c->key_names; and the link column, of the key's type.
 */
static void
find_keys(DedupeConfig *c, Relation rel, Relation root, Trigger *tg)
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
			c->root_keys[i] = pkrel->rd_index->indkey.values[i];
			appendStringInfo(&names, "%s%s", i > 0 ? ", " : "",
							 quote_identifier(NameStr(TupleDescAttr(RelationGetDescr(root),
																	c->root_keys[i] - 1)->attname)));
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
				TupleDescAttr(RelationGetDescr(root), c->root_keys[0] - 1)->atttypid, "link");

	/*
	 * The trigger stores the key as it is, and PostgreSQL applies no type modifier to a
	 * value a BEFORE trigger sets: a link column of another modifier than the key's
	 * (varchar(3) for a varchar(40) key, numeric(10,2) for numeric) could hold values its
	 * type does not allow. Without a modifier, or with the key's, every key fits.
	 */
	{
		int32		link_typmod = TupleDescAttr(RelationGetDescr(rel), c->link_attno - 1)->atttypmod;
		Form_pg_attribute key = TupleDescAttr(RelationGetDescr(root), c->root_keys[0] - 1);

		if (link_typmod >= 0 && link_typmod != key->atttypmod)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("simhash_dedupe: link column \"%s\" of table \"%s\" is of type %s, not %s",
							tg->tgargs[4], RelationGetRelationName(rel),
							format_type_with_typemod(key->atttypid, link_typmod),
							format_type_with_typemod(key->atttypid, key->atttypmod)),
					 errdetail("The trigger writes keys of the primary key's type into the link column unchanged.")));
	}
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
make_targets(DedupeConfig *c, Relation root, Trigger *tg, Oid nsp)
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
					root, c->nkeys, c->root_keys, block_fn, c);
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
 * On a table Citus distributes, the trigger fires on each shard and could search only
 * that shard's rows, so a near duplicate of a row on another shard would go in unseen:
 * refused, once per statement. Reference and single-shard tables, whose every copy holds
 * all rows, are searched whole and allowed.
 */
static void
refuse_citus_distributed(Relation rel, Trigger *tg)
{
	Oid			relid = RelationGetRelid(rel);
	Oid			table;

	if (!simhash_citus_installed())
		return;
	table = simhash_citus_shard_of(relid);
	if (simhash_citus_is_distributed(OidIsValid(table) ? table : relid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("simhash_dedupe: table \"%s\" is distributed by Citus, so trigger \"%s\" would see only one shard's rows",
						get_rel_name(OidIsValid(table) ? table : relid), tg->tgname),
				 errdetail("A near duplicate of a row stored on another shard would go in unseen."),
				 errhint("Put the trigger on a view of the table, INSTEAD OF INSERT, and insert through the view on the coordinator (CREATE VIEW %s AS SELECT * FROM %s).",
						 quote_identifier(psprintf("%s_in", get_rel_name(OidIsValid(table) ? table : relid))),
						 quote_identifier(get_rel_name(OidIsValid(table) ? table : relid)))));
}

/* The trigger takes 4 arguments, or 5 with policy link. */
static void
check_argument_count(Trigger *tg)
{
	if (tg->tgnargs < 4 || tg->tgnargs > 5)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_dedupe: trigger \"%s\" needs 4 or 5 arguments: text column, key column (fingerprint or LSH keys), maximum distance or similarity threshold, policy [, link column]",
						tg->tgname)));
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
	Relation	root;

	check_argument_count(tg);
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
	find_keys(c, rel, root, tg);
	check_layout(c, nsp, root, tg);
	make_targets(c, root, tg, nsp);
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

/* True when this transaction keeps every other writer out of the table (and partitions). */
static bool
holds_table(DedupeConfig *c)
{
	if (!simhash_relation_locked_by_me(c->root, ShareRowExclusiveLock))
		return false;
	for (int i = 0; i < c->ntargets; i++)
		if (c->targets[i].relid != c->root &&
			!simhash_relation_locked_by_me(c->targets[i].relid, ShareRowExclusiveLock))
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

		/* Privileges on the table the caller writes to (a partition's own do not count). */
		if (pg_class_aclcheck(c->root, user, ACL_SELECT) != ACLCHECK_OK &&
			pg_attribute_aclcheck(c->root, c->root_keys[i], user, ACL_SELECT) != ACLCHECK_OK)
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

	/*
	 * As PostgreSQL does for a unique index: under REPEATABLE READ a conflict is reported
	 * as such (reject: 23505) whatever the snapshot sees, and only under SERIALIZABLE does
	 * an invisible one make a serialization failure; skip and link act on the row, like
	 * INSERT ... ON CONFLICT, so they may not use one the snapshot does not see (40001).
	 */
	if (xact_snapshot != NULL && (c->policy != POLICY_REJECT || IsolationIsSerializable()))
	{
		bool		isnull;
		TransactionId xmin = DatumGetTransactionId(slot_getsysattr(slot, MinTransactionIdAttributeNumber, &isnull));

		if (!TransactionIdIsCurrentTransactionId(xmin) &&
			!table_tuple_satisfies_snapshot(rel, slot, xact_snapshot))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not serialize access due to a concurrent write of a near duplicate into \"%s\"",
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
	if (c->policy != POLICY_SKIP)
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

	/*
	 * link, on UPDATE: only originals. A linked row's chain of links could lead back to the
	 * row being updated (an original that others link to), and linking to it would close a
	 * cycle; an original ends every chain. (A new row is in no chain yet.)
	 */
	if (s->c->policy == POLICY_LINK && s->old_tid != NULL)
	{
		bool		linked_isnull;

		(void) slot_getattr(s->slot, s->t->link_attno, &linked_isnull);
		if (!linked_isnull)
			return;
	}
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

/*
 * Policy link would write into the caller's row the key of a row the caller may not read
 * (row-level security, or no SELECT on the key): refused, as a reject would be, telling no
 * more than that such a row exists (what a unique index tells).
 */
static void
refuse_hidden_link(DedupeConfig *c, Relation rel, Trigger *tg)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("new row for relation \"%s\" is a near duplicate of a row the current user cannot read",
					RelationGetRelationName(rel)),
			 errdetail("Trigger \"%s\" would link the new row to that row's key.", tg->tgname),
			 errhint("Grant SELECT on the key column %s (without row-level security on the table), or use policy reject or skip.",
					 c->key_names)));
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
 * Through a view. On a table that Citus distributes, a row trigger fires on the shard a row
 * goes to and sees only that shard's rows (refuse_citus_distributed()), and the coordinator,
 * which reaches every shard through the queries Citus plans, fires no row trigger of the
 * table. So the trigger also works as an INSTEAD OF INSERT trigger on a plain view of the
 * table (CREATE VIEW docs_in AS SELECT * FROM docs), fired where the view is written, on
 * the coordinator:
 *
 *   CREATE TRIGGER docs_dedupe INSTEAD OF INSERT ON docs_in FOR EACH ROW
 *       EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
 *
 * For each row written to the view it computes the keys, takes the same advisory locks as
 * on a table (on the coordinator, where every writer through the view takes them), finds
 * the near duplicate the policy acts on with one query (simhash_near through the block
 * indexes of every shard, or && on the LSH keys and simhash_jaccard), and inserts the row
 * into the table, with the table's defaults for the columns left NULL. Citus commits the
 * shards' transactions before the coordinator releases its locks, so the next writer of a
 * near duplicate finds the row. The queries run with the writer's rights (SELECT and INSERT
 * on the table) and need READ COMMITTED, whose every query sees what committed before it;
 * row-level security is refused, since the search would miss the rows it hides. Works on a
 * plain or partitioned table too (the same answers as the table's own trigger, slower).
 */

/* The table of a view that selects plain columns of one table; error otherwise. */
static void
map_view_columns(DedupeConfig *c, Relation view, Trigger *tg)
{
	Query	   *q = get_view_query(view);
	TupleDesc	desc = RelationGetDescr(view);
	RangeTblEntry *rte = NULL;
	ListCell   *lc;
	int			rtindex = 0;

	if (q->jointree != NULL && list_length(q->jointree->fromlist) == 1 &&
		IsA(linitial(q->jointree->fromlist), RangeTblRef))
	{
		rtindex = ((RangeTblRef *) linitial(q->jointree->fromlist))->rtindex;
		rte = rt_fetch(rtindex, q->rtable);
	}
	if (rte == NULL || rte->rtekind != RTE_RELATION ||
		(rte->relkind != RELKIND_RELATION && rte->relkind != RELKIND_PARTITIONED_TABLE) ||
		q->jointree->quals != NULL || q->hasAggs || q->hasWindowFuncs || q->hasTargetSRFs ||
		q->groupClause != NIL || q->distinctClause != NIL || q->setOperations != NULL ||
		q->limitCount != NULL || q->limitOffset != NULL || q->cteList != NIL ||
		q->hasSubLinks || q->sortClause != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("simhash_dedupe: view \"%s\" of trigger \"%s\" is not a plain view of one table",
						RelationGetRelationName(view), tg->tgname),
				 errhint("Define it as CREATE VIEW %s AS SELECT * FROM <table>.",
						 quote_identifier(RelationGetRelationName(view)))));
	c->root = rte->relid;
	c->to_base = palloc0(sizeof(AttrNumber) * desc->natts);
	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Var		   *var = (Var *) tle->expr;

		if (!tle->resjunk && IsA(var, Var) && var->varno == rtindex &&
			var->varlevelsup == 0 && var->varattno > 0)
			c->to_base[tle->resno - 1] = var->varattno;
	}
	for (int i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped && c->to_base[i] == 0)
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("simhash_dedupe: column \"%s\" of view \"%s\" is not a column of table \"%s\"",
							NameStr(TupleDescAttr(desc, i)->attname),
							RelationGetRelationName(view), get_rel_name(c->root)),
					 errdetail("Trigger \"%s\" inserts each row written to the view into the table.",
							   tg->tgname)));
}

/* Column attno of the view must be the table's column of the same name. */
static void
expect_same_column(DedupeConfig *c, Relation view, Relation root, AttrNumber attno)
{
	const char *name = NameStr(TupleDescAttr(RelationGetDescr(view), attno - 1)->attname);

	if (strcmp(name, NameStr(TupleDescAttr(RelationGetDescr(root),
											 c->to_base[attno - 1] - 1)->attname)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("simhash_dedupe: column \"%s\" of view \"%s\" is not the column of that name of table \"%s\"",
						name, RelationGetRelationName(view), RelationGetRelationName(root))));
}

/* The key columns that start the row of the view form's query: the primary key, or ctid. */
static int
view_key_columns(const DedupeConfig *c)
{
	return c->nkeys > 0 ? c->nkeys : 1;
}

/*
 * The query that finds the near duplicate the policy acts on: its key columns, whether it
 * is an original (link), and its distance or similarity; originals first, then the
 * nearest, then the smallest key. $1 is the new fingerprint, or the new text with the keys
 * in $2 and the threshold in $3. Every function and operator is schema-qualified.
 */
static char *
view_search_sql(DedupeConfig *c, Relation view, Relation root,
				Oid nsp)
{
	TupleDesc	vdesc = RelationGetDescr(view);
	const char *ext = quote_identifier(get_namespace_name(nsp));
	const char *key = quote_identifier(NameStr(TupleDescAttr(vdesc, c->fp_attno - 1)->attname));
	const char *body = quote_identifier(NameStr(TupleDescAttr(vdesc, c->text_attno - 1)->attname));
	StringInfoData sql;

	initStringInfo(&sql);
	appendStringInfoString(&sql, "SELECT ");
	if (c->nkeys == 0)
		appendStringInfoString(&sql, "t.ctid, ");	/* for the message, as the table trigger */
	for (int i = 0; i < c->nkeys; i++)
		appendStringInfo(&sql, "t.%s, ",
						 quote_identifier(NameStr(TupleDescAttr(RelationGetDescr(root),
																c->root_keys[i] - 1)->attname)));
	if (c->policy == POLICY_LINK)
		appendStringInfo(&sql, "t.%s IS NULL, ",
						 quote_identifier(NameStr(TupleDescAttr(vdesc, c->link_attno - 1)->attname)));
	else
		appendStringInfoString(&sql, "true, ");
	if (c->min_similarity > 0)
		appendStringInfo(&sql,
						 "%s.simhash_jaccard(t.%s, $1) FROM %s t WHERE t.%s OPERATOR(pg_catalog.&&) $2"
						 " AND %s.simhash_jaccard(t.%s, $1) OPERATOR(pg_catalog.>=) $3 ORDER BY %d DESC, %d DESC",
						 ext, body, quote_qualified_identifier(get_namespace_name(RelationGetNamespace(root)),
															   RelationGetRelationName(root)),
						 key, ext, body, view_key_columns(c) + 1, view_key_columns(c) + 2);
	else
		appendStringInfo(&sql,
						 "%s.hamming(t.%s, $1) FROM %s t WHERE %s.simhash_near(t.%s, $1, %d) ORDER BY %d DESC, %d",
						 ext, key, quote_qualified_identifier(get_namespace_name(RelationGetNamespace(root)),
															  RelationGetRelationName(root)),
						 ext, key, c->k, view_key_columns(c) + 1, view_key_columns(c) + 2);
	for (int i = 0; i < c->nkeys; i++)
		appendStringInfo(&sql, ", %d", i + 1);
	appendStringInfoString(&sql, " LIMIT 1");
	return sql.data;
}

/* Parses the arguments of the trigger on a view and finds its table; once per statement. */
static DedupeConfig *
make_view_config(FunctionCallInfo fcinfo, TriggerData *td)
{
	Trigger    *tg = td->tg_trigger;
	Relation	view = td->tg_relation;
	MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	DedupeConfig *c = palloc0(sizeof(DedupeConfig));
	Oid			nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	Relation	root;

	check_argument_count(tg);
	c->via_view = true;
	c->tgoid = tg->tgoid;
	c->relid = RelationGetRelid(view);
	map_view_columns(c, view, tg);
	parse_text_column(c, view, tg);
	parse_limit(c, tg);
	parse_key_column(c, view, tg, nsp);
	parse_policy(c, tg);

	root = relation_open(c->root, AccessShareLock);
	if (simhash_citus_is_distributed(c->root) && !simhash_citus_is_coordinator())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("simhash_dedupe: trigger \"%s\" runs on a Citus worker; write to view \"%s\" on the coordinator",
						tg->tgname, RelationGetRelationName(view)),
				 errdetail("Writers serialize on locks taken on the coordinator.")));
	if (check_enable_rls(c->root, InvalidOid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("simhash_dedupe: table \"%s\" has row-level security, so trigger \"%s\" on view \"%s\" would miss the rows it hides",
						RelationGetRelationName(root), tg->tgname, RelationGetRelationName(view)),
				 errhint("Use the trigger on the table itself, which sees every row.")));
	expect_same_column(c, view, root, c->text_attno);
	expect_same_column(c, view, root, c->fp_attno);
	if (TupleDescAttr(RelationGetDescr(root), c->to_base[c->fp_attno - 1] - 1)->attgenerated)
	{
		DedupeConfig on_table = *c;

		on_table.text_attno = c->to_base[c->text_attno - 1];
		on_table.fp_attno = c->to_base[c->fp_attno - 1];
		check_generated_fp(root, &on_table, nsp, tg);
	}
	find_keys(c, view, root, tg);
	if (c->policy == POLICY_LINK)
		expect_same_column(c, view, root, c->link_attno);
	check_layout(c, nsp, root, tg);
	c->search_sql = view_search_sql(c, view, root, nsp);
	relation_close(root, NoLock);
	MemoryContextSwitchTo(old);
	return c;
}

/* Runs the search query (an SPI connection is open); the near duplicate into *found. */
static void
view_search(DedupeConfig *c, RowWork *w, MemoryContext upper, Found *found)
{
	Oid			types[3] = {INT8OID, INT8ARRAYOID, FLOAT8OID};
	Datum		values[3] = {Int64GetDatum((int64) w->fp), PointerGetDatum(w->lsh_array),
	Float8GetDatum(c->min_similarity)};
	int			nargs = 1;
	TupleDesc	desc;
	HeapTuple	row;
	bool		isnull;
	MemoryContext spi;

	if (c->min_similarity > 0)
	{
		types[0] = TEXTOID;
		values[0] = PointerGetDatum(w->new_text.body);
		nargs = 3;
	}
	if (SPI_execute_with_args(c->search_sql, nargs, types, values, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "simhash_dedupe: search failed");
	if (SPI_processed == 0)
		return;
	desc = SPI_tuptable->tupdesc;
	row = SPI_tuptable->vals[0];
	found->any = true;
	found->is_original = DatumGetBool(SPI_getbinval(row, desc, view_key_columns(c) + 1, &isnull));
	if (c->min_similarity > 0)
		found->similarity = DatumGetFloat8(SPI_getbinval(row, desc, view_key_columns(c) + 2, &isnull));
	else
		found->distance = DatumGetInt32(SPI_getbinval(row, desc, view_key_columns(c) + 2, &isnull));
	spi = MemoryContextSwitchTo(upper);
	if (c->policy == POLICY_LINK)
	{
		Form_pg_attribute att = TupleDescAttr(desc, 0);

		found->key = datumCopy(SPI_getbinval(row, desc, 1, &isnull), att->attbyval, att->attlen);
	}
	if (c->policy == POLICY_REJECT && c->nkeys == 0)
		found->key_text = psprintf("(ctid)=(%s)", SPI_getvalue(row, desc, 1));
	else if (c->policy == POLICY_REJECT)
	{
		StringInfoData buf;

		initStringInfo(&buf);
		appendStringInfo(&buf, "(%s)=(", c->key_names);
		for (int i = 0; i < c->nkeys; i++)
		{
			char	   *v = SPI_getvalue(row, desc, i + 1);

			appendStringInfo(&buf, "%s%s", i > 0 ? ", " : "", v ? v : "null");
		}
		appendStringInfoChar(&buf, ')');
		found->key_text = buf.data;
	}
	MemoryContextSwitchTo(spi);
}

/*
 * Inserts row (of the view) into the table: every column the table does not generate, its
 * default for those left NULL that have one. Returns the row as inserted, in the view's
 * format, allocated in upper.
 */
static HeapTuple
view_insert(DedupeConfig *c, Relation view, Relation root, HeapTuple row, MemoryContext upper)
{
	TupleDesc	vdesc = RelationGetDescr(view);
	TupleDesc	bdesc = RelationGetDescr(root);
	StringInfoData cols,
				vals,
				ret,
				sql;
	Oid		   *types = palloc(sizeof(Oid) * vdesc->natts);
	Datum	   *values = palloc(sizeof(Datum) * vdesc->natts);
	char	   *nulls = palloc(vdesc->natts);
	Datum	   *out = palloc(sizeof(Datum) * vdesc->natts);
	bool	   *out_nulls = palloc0(sizeof(bool) * vdesc->natts);
	int			n = 0;
	int			r = 0;
	HeapTuple	inserted;
	MemoryContext spi;

	initStringInfo(&cols);
	initStringInfo(&vals);
	initStringInfo(&ret);
	for (int i = 0; i < vdesc->natts; i++)
	{
		Form_pg_attribute va = TupleDescAttr(vdesc, i);
		Form_pg_attribute ba;
		const char *name;
		bool		isnull;
		Datum		d;

		if (va->attisdropped)
			continue;
		ba = TupleDescAttr(bdesc, c->to_base[i] - 1);
		name = quote_identifier(NameStr(ba->attname));
		appendStringInfo(&ret, "%s%s", r > 0 ? ", " : "", name);
		r++;
		if (ba->attgenerated)
			continue;
		d = heap_getattr(row, i + 1, vdesc, &isnull);
		appendStringInfo(&cols, "%s%s", cols.len > 0 ? ", " : "", name);
		if (isnull && (ba->atthasdef || ba->attidentity))
		{
			appendStringInfo(&vals, "%sDEFAULT", vals.len > 0 ? ", " : "");
			continue;
		}
		types[n] = va->atttypid;
		values[n] = d;
		nulls[n] = isnull ? 'n' : ' ';
		n++;
		appendStringInfo(&vals, "%s$%d", vals.len > 0 ? ", " : "", n);
	}
	initStringInfo(&sql);
	appendStringInfo(&sql, "INSERT INTO %s ",
					 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(root)),
												RelationGetRelationName(root)));
	if (cols.len > 0)
		appendStringInfo(&sql, "(%s) VALUES (%s)", cols.data, vals.data);
	else
		appendStringInfoString(&sql, "DEFAULT VALUES");
	appendStringInfo(&sql, " RETURNING %s", ret.data);
	if (SPI_execute_with_args(sql.data, n, types, values, nulls, false, 0) != SPI_OK_INSERT_RETURNING ||
		SPI_processed != 1)
		elog(ERROR, "simhash_dedupe: insert into \"%s\" failed", RelationGetRelationName(root));
	inserted = SPI_copytuple(SPI_tuptable->vals[0]);
	spi = MemoryContextSwitchTo(upper);
	r = 0;
	for (int i = 0; i < vdesc->natts; i++)
	{
		if (TupleDescAttr(vdesc, i)->attisdropped)
			out_nulls[i] = true;
		else
		{
			/* (heap_getattr is a macro before PostgreSQL 15: no side effects in its arguments) */
			r++;
			out[i] = heap_getattr(inserted, r, SPI_tuptable->tupdesc, &out_nulls[i]);
		}
	}
	inserted = heap_form_tuple(vdesc, out, out_nulls);
	MemoryContextSwitchTo(spi);
	return inserted;
}

/* The keys of a row written to the view; a key column the table generates is recomputed. */
static void
view_row_keys(DedupeConfig *c, Relation root, HeapTuple tuple, TupleDesc desc, RowWork *w)
{
	bool		generated = TupleDescAttr(RelationGetDescr(root),
										  c->to_base[c->fp_attno - 1] - 1)->attgenerated;
	bool		fp_null;
	Datum		fp = heap_getattr(tuple, c->fp_attno, desc, &fp_null);

	if (c->min_similarity > 0 || fp_null || generated)
	{
		/* As for a new row of the table: the keys from the text. */
		HeapTuple	cleared = tuple;

		if (!fp_null)
		{
			int			col = c->fp_attno;
			Datum		none = (Datum) 0;
			bool		isnull = true;

			cleared = heap_modify_tuple_by_cols(tuple, desc, 1, &col, &none, &isnull);
		}
		row_keys(c, cleared, NULL, desc, w);
		return;
	}
	w->new_text.body = row_text(tuple, desc, c->text_attno);
	w->fp = (uint64) DatumGetInt64(fp);
	w->search = true;
}

/* simhash_dedupe() as an INSTEAD OF INSERT trigger on a view: see "Through a view". */
static Datum
dedupe_through_view(FunctionCallInfo fcinfo, TriggerData *td)
{
	Relation	view = td->tg_relation;
	DedupeConfig *c = (DedupeConfig *) fcinfo->flinfo->fn_extra;
	MemoryContext upper = CurrentMemoryContext;
	HeapTuple	tuple = td->tg_trigtuple;
	RowWork		w = {0};
	Found		found = {0};
	Relation	root;

	if (!TRIGGER_FIRED_INSTEAD(td->tg_event) || !TRIGGER_FIRED_FOR_ROW(td->tg_event) ||
		!TRIGGER_FIRED_BY_INSERT(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("simhash_dedupe: trigger \"%s\" on a view must be INSTEAD OF INSERT ... FOR EACH ROW",
						td->tg_trigger->tgname)));
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("simhash_dedupe: trigger \"%s\" on view \"%s\" needs READ COMMITTED",
						td->tg_trigger->tgname, RelationGetRelationName(view)),
				 errdetail("Its search must see the rows that committed while it waited for its locks.")));
	if (c == NULL || c->tgoid != td->tg_trigger->tgoid || c->relid != RelationGetRelid(view))
		fcinfo->flinfo->fn_extra = c = make_view_config(fcinfo, td);

	root = table_open(c->root, RowExclusiveLock);
	view_row_keys(c, root, tuple, RelationGetDescr(view), &w);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "simhash_dedupe: SPI_connect failed");
	if (w.search)
	{
		uint32		lock_keys[SIMHASH_MAX_LOCK_KEYS];

		serialize_writers(c, lock_keys, row_lock_keys(c, w.fp, w.lsh, w.nlsh, lock_keys));
		view_search(c, &w, upper, &found);
	}
	if (found.any && c->policy == POLICY_REJECT)
		reject(c, root, td->tg_trigger, &found);
	if (found.any && c->policy == POLICY_SKIP)
	{
		SPI_finish();
		table_close(root, NoLock);
		return PointerGetDatum(NULL);
	}
	if (c->policy == POLICY_LINK)
		set_column(&w, c->link_attno, found.any ? found.key : (Datum) 0, !found.any);
	if (w.ncols > 0)
		tuple = heap_modify_tuple_by_cols(tuple, RelationGetDescr(view), w.ncols, w.cols,
										  w.values, w.nulls);
	tuple = view_insert(c, view, root, tuple, upper);
	SPI_finish();
	table_close(root, NoLock);
	return PointerGetDatum(tuple);
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
	if (w.search)
		find_near_duplicate(c, rel, old, &w, &found);
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
	return PointerGetDatum(tuple);
}
