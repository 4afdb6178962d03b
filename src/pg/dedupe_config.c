/*
 * The arguments of the simhash_dedupe() trigger (see dedupe.c), parsed and checked once per
 * statement into a DedupeConfig: the text and key columns, the limit (a distance or a
 * similarity threshold), the policy, the primary key and link column; the relations
 * searched (the table, or every leaf of its partition tree) with the block-index layout or
 * GIN index of each; the NOTICE when writes will cost much more than they should, and the
 * refusal of a table Citus distributes. The view form parses its arguments with the same
 * functions (dedupe_view.c).
 */
#include "postgres.h"

#include "access/nbtree.h"

#include "access/genam.h"
#include "access/gin.h"
#include "access/gin_private.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/partition.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type_d.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "pgstat.h"
#include "rewrite/rewriteHandler.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"

#include "capi/search_capi.h"
#include "capi/similarity_capi.h"
#include "pg/citus.h"
#include "pg/compat.h"
#include "pg/dedupe.h"
#include "pg/layouts.h"
#include "pg/search.h"

/* Largest k: what the lock keys support (core/locks.hpp). */
#define MAX_DEDUPE_DISTANCE SIMHASH_MAX_LOCK_DISTANCE

/* Smallest similarity threshold: what the LSH keys serve (candidate recall >= 0.99). */
#define MIN_DEDUPE_SIMILARITY SIMHASH_LSH_MIN_SIMILARITY

/*
 * Checking a candidate costs about one index descent when its row must be read from the
 * table, and about this much when the index holds the fingerprint.
 */
#define IN_INDEX_CANDIDATE_COST 0.05

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
 * Whether GIN index ind's one key is the extension's simhash_ops: its keys are the text's
 * simhash_lsh keys (extractValue), looked up by the query text's (extractQuery).
 */
static bool
is_simhash_ops(Relation ind, Oid nsp)
{
	Oid			value_args[3] = {TEXTOID, INTERNALOID, INTERNALOID};
	Oid			query_args[7] = {TEXTOID, INTERNALOID, INT2OID, INTERNALOID, INTERNALOID,
	INTERNALOID, INTERNALOID};
	Oid			consistent_args[8] = {INTERNALOID, INT2OID, TEXTOID, INT4OID, INTERNALOID,
	INTERNALOID, INTERNALOID, INTERNALOID};
	Oid			value_fn = simhash_extension_function(nsp, "simhash_gin_extract_value", 3, value_args);
	Oid			query_fn = simhash_extension_function(nsp, "simhash_gin_extract_query", 7, query_args);
	Oid			consistent_fn = simhash_extension_function(nsp, "simhash_gin_consistent", 8,
														   consistent_args);
	Oid			tri_fn = simhash_extension_function(nsp, "simhash_gin_triconsistent", 7,
													consistent_args);
	Oid			fam = ind->rd_opfamily[0];

	/* every support function the scan uses is the extension's (an opclass is a superuser's) */
	return OidIsValid(value_fn) && OidIsValid(query_fn) && OidIsValid(consistent_fn) &&
		get_opfamily_proc(fam, TEXTOID, TEXTOID, GIN_EXTRACTVALUE_PROC) == value_fn &&
		get_opfamily_proc(fam, TEXTOID, TEXTOID, GIN_EXTRACTQUERY_PROC) == query_fn &&
		get_opfamily_proc(fam, TEXTOID, TEXTOID, GIN_CONSISTENT_PROC) == consistent_fn &&
		get_opfamily_proc(fam, TEXTOID, TEXTOID, GIN_TRICONSISTENT_PROC) == tri_fn &&
		get_opfamily_proc(fam, TEXTOID, TEXTOID, GIN_COMPARE_PROC) == F_BTINT8CMP;
}

/*
 * A valid GIN index of relid whose only key is column attno, with no predicate, that
 * serves && (array_ops) on a keys column, or with on_text, the extension's simhash_ops on
 * the text column; InvalidOid without one.
 */
static Oid
find_gin_index(Oid relid, AttrNumber attno, bool on_text, Oid nsp, bool *fastupdate)
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
			(on_text ? is_simhash_ops(ind, nsp)
			 : get_opfamily_member(ind->rd_opfamily[0], ANYARRAYOID, ANYARRAYOID,
								   GIN_OVERLAP_STRATEGY) == OID_ARRAY_OVERLAP_OP))
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
make_target(DedupeTarget *t, Oid relid, Relation root, Oid nsp, DedupeConfig *c)
{
	SimhashLayouts layouts;
	bool		in_index = true;

	memset(t, 0, sizeof(*t));
	t->relid = relid;
	t->text_attno = get_attnum(relid, c->args.text);
	t->fp_attno = c->args.keys[0] != '\0' ? get_attnum(relid, c->args.keys) : 0;
	t->link_attno = c->policy == POLICY_LINK ? get_attnum(relid, c->args.link) : 0;
	t->sets_attno = c->args.sets != NULL ? get_attnum(relid, c->args.sets) : 0;
	for (int i = 0; i < c->nkeys; i++)
		t->key_attnos[i] = get_attnum(relid, NameStr(TupleDescAttr(RelationGetDescr(root),
																	 c->root_keys[i] - 1)->attname));
	if (c->metric->verifies)
	{
		t->gin_on_text = t->fp_attno == 0;
		t->gin_index = find_gin_index(relid, t->gin_on_text ? t->text_attno : t->fp_attno,
									  t->gin_on_text, nsp, &t->gin_pending);
		return;
	}
	simhash_find_layouts(relid, t->fp_attno, simhash_block_function(nsp), AccessShareLock,
						 &layouts);
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
void
check_generated_fp(Relation rel, DedupeConfig *c, Oid nsp)
{
	Oid			text_arg = TEXTOID;
	const char *fn = c->metric->key_function;
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
						c->args.keys, RelationGetRelationName(rel), fn, quote_identifier(c->args.text)),
				 errdetail("Generated columns are computed after BEFORE triggers, so trigger \"%s\" computes the column itself, as %s(%s).",
						   c->args.tgname, fn, quote_identifier(c->args.text)),
				 errhint("Make \"%s\" a plain %s column, which the trigger fills, or generate it as %s(%s).",
						 c->args.keys, c->metric->key_type_name, fn,
						 quote_identifier(c->args.text))));
}

/*
 * The third argument, the kind of limit written out: "k=3", a Hamming distance k (0..16),
 * or "similarity=0.8", a similarity threshold (0.7..1). The older forms stay valid: a
 * whole number is a distance ("3"), a number with a decimal point a threshold ("0.8").
 * With a threshold t, near duplicates are the rows whose texts have a simhash_jaccard of at
 * least t; candidates are the rows that share a simhash_lsh key with the new row. Below 0.7
 * the keys miss too many pairs (see the calibration): refused.
 */
static void
parse_limit(DedupeConfig *c)
{
	const char *full = c->args.limit;
	const char *arg = full;
	bool		similarity;
	char	   *end;

	if (strncmp(arg, "k=", 2) == 0)
	{
		similarity = false;
		arg += 2;
	}
	else if (strncmp(arg, "similarity=", 11) == 0)
	{
		similarity = true;
		arg += 11;
	}
	else if (strchr(arg, '=') != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_dedupe: unknown kind of limit \"%s\"", full),
				 errhint("Write k=3 for a Hamming distance of at most 3, or similarity=0.8 for a similarity of at least 0.8.")));
	else
		similarity = strchr(arg, '.') != NULL;

	errno = 0;
	if (similarity)
	{
		/* Plain decimal notation only: digits, at most one point (strtod takes much more). */
		bool		plain = strspn(arg, "0123456789.") == strlen(arg) &&
			strchr(arg, '.') == strrchr(arg, '.') && strpbrk(arg, "0123456789") != NULL;
		double		t = plain ? strtod(arg, &end) : 0;

		if (!plain || errno != 0 || *end != '\0' || !(t > 0 && t <= 1))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("simhash_dedupe: a similarity threshold must be a number in (0, 1], got \"%s\"",
							full)));
		if (t < MIN_DEDUPE_SIMILARITY)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("simhash_dedupe: similarity thresholds below %.1f are not supported, got \"%s\"",
							MIN_DEDUPE_SIMILARITY, full),
					 errdetail("Below %.1f, rows sharing no LSH key with the new row too often reach the threshold.",
							   MIN_DEDUPE_SIMILARITY),
					 errhint("Use a threshold of at least %.1f, or find such pairs with simhash_similar_pairs().",
							 MIN_DEDUPE_SIMILARITY)));
		c->min_similarity = t;
		c->metric = &dedupe_similarity_metric;
		return;
	}
	{
		/*
		 * After "k=", digits only (strtol would take blanks and a sign too); the older form
		 * stays as strtol read it.
		 */
		bool		digits = arg == full ||
			(arg[0] != '\0' && strspn(arg, "0123456789") == strlen(arg));
		long		k = digits ? strtol(arg, &end, 10) : -1;

		if (!digits || errno != 0 || end == arg || *end != '\0' || k < 0 || k > MAX_DEDUPE_DISTANCE)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("simhash_dedupe: maximum distance must be a whole number from 0 to %d, or a similarity threshold such as 0.8, got \"%s\"",
							MAX_DEDUPE_DISTANCE, full),
					 errhint("Write k=3 for a Hamming distance of at most 3, or similarity=0.8 for a similarity of at least 0.8.")));
		c->k = (int) k;
		c->metric = &dedupe_distance_metric;
	}
}

/* The first argument: a text, varchar or char column. */
static void
parse_text_column(DedupeConfig *c, Relation rel)
{
	Oid			text_type;

	c->text_attno = column(rel, c->args.text, "text");
	text_type = TupleDescAttr(RelationGetDescr(rel), c->text_attno - 1)->atttypid;
	if (text_type != TEXTOID && text_type != VARCHAROID && text_type != BPCHAROID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("simhash_dedupe: text column \"%s\" of table \"%s\" is of type %s, not text, varchar or char",
						c->args.text, RelationGetRelationName(rel), format_type_be(text_type))));
}

/*
 * The second argument, after the limit: a bigint fingerprint column with a distance, a
 * bigint[] column of LSH keys with a threshold; if generated, by what the trigger computes.
 */
static void
parse_key_column(DedupeConfig *c, Relation rel, Oid nsp)
{
	if (c->args.keys[0] == '\0')
	{
		c->fp_attno = 0;		/* split_arguments(): no keys column (simhash_ops) */
		return;
	}
	c->fp_attno = column(rel, c->args.keys, c->metric->key_what);
	expect_type(rel, c->fp_attno, c->metric->key_type, c->metric->key_what);
	if (TupleDescAttr(RelationGetDescr(rel), c->fp_attno - 1)->attgenerated)
		check_generated_fp(rel, c, nsp);
}

/*
 * The optional last argument 'sets=column', with a similarity threshold only: a bytea
 * column in which the trigger stores each row's shingle set (simhash_shingle_set_bytes
 * format, dedupe.c), so that a candidate is verified against it instead of its text being
 * shingled again. Not generated (the trigger writes it).
 */
static void
parse_sets_column(DedupeConfig *c, Relation rel)
{
	const char *name = c->args.sets;

	if (name == NULL)
		return;
	if (!c->metric->verifies)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_dedupe: argument \"sets=%s\" needs a similarity threshold", name),
				 errdetail("With a Hamming distance the fingerprint is all the trigger compares.")));
	c->sets_attno = column(rel, name, "sets");
	expect_type(rel, c->sets_attno, BYTEAOID, "sets");
	if (TupleDescAttr(RelationGetDescr(rel), c->sets_attno - 1)->attnotnull)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_dedupe: sets column \"%s\" of table \"%s\" is NOT NULL", name,
						RelationGetRelationName(rel)),
				 errdetail("The trigger stores NULL for a NULL text and for a text of more than 8192 distinct shingles."),
				 errhint("ALTER TABLE %s ALTER COLUMN %s DROP NOT NULL.",
						 quote_identifier(RelationGetRelationName(rel)), quote_identifier(name))));
	if (TupleDescAttr(RelationGetDescr(rel), c->sets_attno - 1)->attgenerated)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("simhash_dedupe: sets column \"%s\" of table \"%s\" is generated", name,
						RelationGetRelationName(rel)),
				 errhint("Make it a plain bytea column: trigger \"%s\" fills it.", c->args.tgname)));
	if (c->sets_attno == c->text_attno || c->sets_attno == c->fp_attno ||
		(c->policy == POLICY_LINK && c->sets_attno == c->link_attno))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_dedupe: sets column \"%s\" is also another argument of trigger \"%s\"",
						name, c->args.tgname)));
}

/* The fourth argument, and the fifth that only link takes. */
static void
parse_policy(DedupeConfig *c)
{
	if (strcmp(c->args.policy, "reject") == 0)
		c->policy = POLICY_REJECT;
	else if (strcmp(c->args.policy, "skip") == 0)
		c->policy = POLICY_SKIP;
	else if (strcmp(c->args.policy, "link") == 0)
		c->policy = POLICY_LINK;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_dedupe: unknown policy \"%s\"; the policies are reject, skip and link",
						c->args.policy)));
	if ((c->policy == POLICY_LINK) != (c->args.link != NULL))
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
void
find_keys(DedupeConfig *c, Relation rel, Relation root)
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
		if (c->policy == POLICY_LINK && c->nkeys == 1)
		{
			Oid			cmp = get_opfamily_proc(pkrel->rd_opfamily[0], pkrel->rd_opcintype[0],
												pkrel->rd_opcintype[0], BTORDER_PROC);

			if (OidIsValid(cmp))
			{
				fmgr_info_cxt(cmp, &c->key_cmp, GetMemoryChunkContext(c));
				c->key_collation = pkrel->rd_indcollation[0];
				c->key_cmp_ok = true;
			}
		}
		index_close(pkrel, NoLock);
	}
	if (c->policy != POLICY_LINK)
		return;
	c->link_attno = column(rel, c->args.link, "link");
	if (c->nkeys != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_dedupe: policy link needs a single-column primary key on table \"%s\"",
						RelationGetRelationName(root))));
	expect_type(rel, c->link_attno,
				TupleDescAttr(RelationGetDescr(root), c->root_keys[0] - 1)->atttypid, "link");
	/* the trigger writes the link column: not the fingerprint, the text or the key */
	if (c->link_attno == c->fp_attno || c->link_attno == c->text_attno ||
		strcmp(c->args.link, NameStr(TupleDescAttr(RelationGetDescr(root),
													c->root_keys[0] - 1)->attname)) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_dedupe: link column \"%s\" of trigger \"%s\" is also its %s",
						c->args.link, c->args.tgname,
						c->link_attno == c->fp_attno ? "key column" :
						c->link_attno == c->text_attno ? "text column" : "table's primary key")));

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
							c->args.link, RelationGetRelationName(rel),
							format_type_with_typemod(key->atttypid, link_typmod),
							format_type_with_typemod(key->atttypid, key->atttypmod)),
					 errdetail("The trigger writes keys of the primary key's type into the link column unchanged.")));
	}
}

/*
 * How a relation is named in the SQL of a hint: as regclass prints it, quoted as needed,
 * with its schema when the search path does not find it.
 */
static char *
sql_name(Oid relid)
{
	return DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(relid)));
}

/* With a distance: refuses a k larger than the layout recorded for root.col serves. */
void
check_layout(DedupeConfig *c, Oid nsp, Relation root)
{
	int			served;

	if (c->metric->verifies)
		return;
	served = layout_max_distance(nsp, c->root, c->args.keys);
	if (served >= 0 && c->k > served)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_dedupe: maximum distance %d is more than the %d the block indexes of %s.%s serve",
						c->k, served, RelationGetRelationName(root), c->args.keys),
				 errhint("Run simhash_create_index(%s, %s, %d) first.",
						 quote_literal_cstr(sql_name(c->root)), quote_literal_cstr(c->args.keys), c->k)));
}

/* The relations searched: root, or every leaf of its partition tree (all ordinary tables). */
static void
make_targets(DedupeConfig *c, Relation root, Oid nsp)
{
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
							get_rel_name(leaf), RelationGetRelationName(root), c->args.tgname),
					 errdetail("Foreign tables cannot be deduplicated.")));
		make_target(t, leaf, root, nsp, c);
		if (!c->metric->indexed(t))
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
advise(DedupeConfig *c)
{
	const char *table = get_rel_name(c->root);
	bool		on_text = c->fp_attno == 0;	/* a simhash_ops index on the text */
	const char *col = on_text ? c->args.text : c->args.keys;
	const char *qtable = sql_name(c->root);		/* for the SQL of the hints */
	const char *lit_table = quote_literal_cstr(qtable);
	const char *lit_col = quote_literal_cstr(col);

	if (!c->indexed && first_time(&warned_tables, c->root))
	{
		if (c->metric->verifies)
			ereport(NOTICE,
					(errmsg("simhash_dedupe: %s.%s has no GIN index%s, so every row written reads the whole table",
							table, col, on_text ? " with simhash_ops" : ""),
					 errhint("CREATE INDEX ON %s USING gin (%s%s) WITH (fastupdate = off);",
							 qtable, quote_identifier(col), on_text ? " simhash_ops" : "")));
		else
			ereport(NOTICE,
					(errmsg("simhash_dedupe: %s.%s has no block indexes serving distance %d, so every row written reads the whole table",
							table, col, c->k),
					 errhint("Run simhash_create_index(%s, %s, %d).", lit_table, lit_col, c->k)));
	}
	else if (c->indexed && c->targets[0].gin_pending &&
			 first_time(&advised_tables, c->root))
	{
		const char *index = sql_name(c->targets[0].gin_index);

		ereport(NOTICE,
				(errmsg("simhash_dedupe: the GIN index %s of %s.%s has fastupdate on, so every row written reads its pending list",
						index, table, col),
				 errhint("ALTER INDEX %s SET (fastupdate = off); then empty the list with SELECT gin_clean_pending_list(%s);",
						 index, quote_literal_cstr(index))));
	}
	else if (c->indexed && !c->metric->verifies && c->k + 1 <= SIMHASH_MAX_BLOCKS &&
			 c->targets[0].plan.probes.probes > (uint64) (2 * (c->k + 1)) &&
			 first_time(&advised_tables, c->root))
		ereport(NOTICE,
				(errmsg("simhash_dedupe: with the %d-block layout of %s.%s, every row written takes " UINT64_FORMAT " index lookups at distance %d",
						c->targets[0].plan.blocks, table, col, c->targets[0].plan.probes.probes, c->k),
				 errhint("A layout of %d blocks takes %d: simhash_create_index(%s, %s, %d, blocks => %d).",
						 c->k + 1, c->k + 1, lit_table, lit_col, c->k, c->k + 1)));
}

/*
 * On a table Citus distributes, the trigger fires on each shard and could search only
 * that shard's rows, so a near duplicate of a row on another shard would go in unseen:
 * refused, once per statement. Reference and single-shard tables, whose every copy holds
 * all rows, are searched whole and allowed.
 */
static void
refuse_citus_distributed(DedupeConfig *c, Relation rel)
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
						get_rel_name(OidIsValid(table) ? table : relid), c->args.tgname),
				 errdetail("A near duplicate of a row stored on another shard would go in unseen."),
				 errhint("Put the trigger on a view of the table, INSTEAD OF INSERT, and insert through the view on the coordinator (CREATE VIEW %s AS SELECT * FROM %s).",
						 quote_identifier(psprintf("%s_in", get_rel_name(OidIsValid(table) ? table : relid))),
						 quote_identifier(get_rel_name(OidIsValid(table) ? table : relid)))));
}

static bool
is_policy(const char *arg)
{
	return strcmp(arg, "reject") == 0 || strcmp(arg, "skip") == 0 || strcmp(arg, "link") == 0;
}

/*
 * The arguments of trigger tg, counted and split into c->args (copies, in the current
 * memory context): 4, 5 with policy link, and 'sets=column' last, optionally. With a
 * threshold the key column may be left out, simhash_dedupe('body', 'similarity=0.8',
 * 'reject'), when a GIN index with simhash_ops on the text column serves the search (its
 * keys are the text's simhash_lsh keys): c->args.keys is then "". Only the written-out
 * form of the limit followed by a policy starts the shorter list: a column may be named
 * "0.8", or even "similarity=0.8" when a limit follows it. on_view: the trigger is on a
 * view, which takes neither form.
 */
void
split_arguments(DedupeConfig *c, Trigger *tg, bool on_view)
{
	char	  **arg = tg->tgargs;
	int			omitted = tg->tgnargs >= 3 && strncmp(arg[1], "similarity=", 11) == 0 &&
		is_policy(arg[2]);
	int			n = tg->tgnargs + omitted;
	bool		sets = n >= 5 && strncmp(arg[tg->tgnargs - 1], "sets=", 5) == 0;

	if (omitted && on_view)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("simhash_dedupe: trigger \"%s\" on a view needs a key column", tg->tgname),
				 errdetail("Through a view, candidates are found by a bigint[] column of LSH keys, not a simhash_ops index."),
				 errhint("Add a bigint[] column for simhash_lsh(%s) with a GIN index, and name it as the second argument.",
						 quote_identifier(arg[0]))));
	if (n < 4 || n > 6 || (n == 6 && !sets))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_dedupe: trigger \"%s\" needs 4 to 6 arguments: text column, key column (fingerprint or LSH keys), maximum distance or similarity threshold, policy [, link column] [, 'sets=column']",
						tg->tgname),
				 errhint("With a similarity threshold the key column may be left out, simhash_dedupe('body', 'similarity=0.8', 'reject'), when a GIN index with simhash_ops on the text column serves the search.")));
	if (sets && on_view)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("simhash_dedupe: argument \"%s\" is not supported on a view", arg[tg->tgnargs - 1]),
				 errdetail("Through a view, candidates are verified against their texts.")));
	c->tgoid = tg->tgoid;
	c->args.tgname = pstrdup(tg->tgname);
	c->args.text = pstrdup(arg[0]);
	c->args.keys = omitted ? "" : pstrdup(arg[1]);
	c->args.limit = pstrdup(arg[2 - omitted]);
	c->args.policy = pstrdup(arg[3 - omitted]);
	c->args.link = n - sets == 5 ? pstrdup(arg[4 - omitted]) : NULL;
	c->args.sets = sets ? pstrdup(arg[tg->tgnargs - 1] + 5) : NULL;
}

/* The columns, the limit and the policy, as the trigger on a table and on a view read them. */
void
parse_arguments(DedupeConfig *c, Relation rel, Oid nsp)
{
	parse_text_column(c, rel);
	parse_limit(c);
	parse_key_column(c, rel, nsp);
	parse_policy(c);
}

/*
 * The configuration of trigger tg on rel (a table or a partition), made in the current
 * memory context. at_create: checked when the trigger is created (dedupe_check.c), where
 * rel may also be a partitioned table; the run-time parts (the Citus refusal, the layout
 * and partitions, the advice NOTICE, the secret of the lock keys) are left out.
 */
static DedupeConfig *
table_config(Relation rel, Trigger *tg, Oid nsp, bool at_create, bool partitioned_ok)
{
	DedupeConfig *c = palloc0(sizeof(DedupeConfig));
	Relation	root;

	split_arguments(c, tg, false);
	if (rel->rd_rel->relkind != RELKIND_RELATION &&
		!(partitioned_ok && rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("simhash_dedupe: trigger \"%s\" is on \"%s\", which is not a table",
						tg->tgname, RelationGetRelationName(rel)),
				 errdetail("The trigger searches the rows of ordinary tables and partitioned tables.")));
	if (!at_create)
		refuse_citus_distributed(c, rel);
	c->relid = RelationGetRelid(rel);
	parse_arguments(c, rel, nsp);

	/* Near duplicates are looked for in the whole partition tree. */
	c->root = rel->rd_rel->relispartition ? llast_oid(get_partition_ancestors(c->relid)) : c->relid;
	root = relation_open(c->root, AccessShareLock);
	c->root_text_attno = get_attnum(c->root, c->args.text);
	c->root_fp_attno = c->fp_attno > 0 ? get_attnum(c->root, c->args.keys) : 0;
	find_keys(c, rel, root);
	parse_sets_column(c, rel);
	if (!at_create)
	{
		/*
		 * The state of the table rather than the arguments, which may change before the
		 * first row: the layout (the trigger is created before simhash_create_index), the
		 * partitions.
		 */
		check_layout(c, nsp, root);
		make_targets(c, root, nsp);
	}
	relation_close(root, NoLock);
	if (!at_create)
	{
		load_lock_secret(c, nsp);
		advise(c);
	}
	return c;
}

/* Checks the arguments of trigger tg on table rel when it is created (dedupe_check.c). */
void
check_table_trigger(Relation rel, Trigger *tg, Oid nsp)
{
	(void) table_config(rel, tg, nsp, true, true);
}

/*
 * The configuration of trigger tg on rel (a table, a partition or a partitioned table) for
 * simhash_dedupe_insert() (dedupe_bulk.c), in the current memory context: the keys its
 * rows will lock, as the trigger on each partition computes them (same root, same limit).
 */
DedupeConfig *
bulk_config(Relation rel, Trigger *tg, Oid nsp)
{
	return table_config(rel, tg, nsp, false, true);
}

/*
 * Parses and checks the trigger's arguments and finds what to search (see the header
 * of dedupe.c); made once per statement, in the function's memory context.
 */
DedupeConfig *
make_config(FunctionCallInfo fcinfo, TriggerData *td)
{
	MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	DedupeConfig *c = table_config(td->tg_relation, td->tg_trigger,
								   get_func_namespace(fcinfo->flinfo->fn_oid), false, false);

	MemoryContextSwitchTo(old);
	return c;
}

/*
 * The rows this transaction has updated, inserted and deleted in relation relid, as its
 * table statistics count them, for the shortcuts that must hear of every write (the table
 * filter, the bulk load's filter and plan): every update and insert, whatever statement
 * or trigger made it, through the trigger or not; nothing else moves the counts but a
 * TRUNCATE, which zeroes them. False when they are not counted (track_counts off, or not
 * yet for this relation).
 * start: when a filter is made, a relation this backend has not counted anything for
 * yet (a partition that no row has gone to, whose candidates were all read from the
 * index) starts being counted now, as its first count would start it (counts from then
 * on are all the filter needs); without it, such a partition kept the filter off.
 */
bool
target_writes(Oid relid, int64 *updated, int64 *inserted, int64 *deleted, bool start)
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
		*deleted = SIMHASH_TABSTAT_DELETED(st);
		for (struct PgStat_TableXactStatus *x = st->trans; x != NULL; x = x->upper)
		{
			*updated += x->tuples_updated;
			*inserted += x->tuples_inserted;
			*deleted += x->tuples_deleted;
		}
		ok = true;
	}
	RelationClose(rel);
	return ok;
}

/*
 * Whether the current user may learn which row is the near duplicate and how near it is:
 * its key columns, and the text and key columns its distance or similarity comes from,
 * are all readable (SELECT on the table, or on each of those columns), and the table has
 * no row-level security for this user (the trigger does not evaluate policies, so every
 * row then counts as hidden). Privileges on the table the caller writes to: a partition's
 * own do not count. Without a primary key, the row is named by its ctid, which needs
 * SELECT on the table.
 */
bool
may_read_near_duplicate(DedupeConfig *c)
{
	Oid			user = GetUserId();

	if (check_enable_rls(c->root, InvalidOid, true) == RLS_ENABLED)
		return false;
	if (pg_class_aclcheck(c->root, user, ACL_SELECT) == ACLCHECK_OK)
		return true;
	if (c->nkeys == 0 ||
		pg_attribute_aclcheck(c->root, c->root_text_attno, user, ACL_SELECT) != ACLCHECK_OK ||
		(c->root_fp_attno > 0 &&	/* none with a simhash_ops index on the text */
		 pg_attribute_aclcheck(c->root, c->root_fp_attno, user, ACL_SELECT) != ACLCHECK_OK))
		return false;
	for (int i = 0; i < c->nkeys; i++)
		if (pg_attribute_aclcheck(c->root, c->root_keys[i], user, ACL_SELECT) != ACLCHECK_OK)
			return false;
	return true;
}

bool
dedupe_key_before(DedupeConfig *c, Datum a, Datum b)
{
	return c->key_cmp_ok &&
		DatumGetInt32(FunctionCall2Coll(&c->key_cmp, c->key_collation, a, b)) < 0;
}

/*
 * The secret of the lock keys, from the extension's table simhash_lock_secret, read
 * directly (the writer may not read the table, and must not): see core/locks.hpp.
 */
void
load_lock_secret(DedupeConfig *c, Oid nsp)
{
	Oid			relid = get_relname_relid("simhash_lock_secret", nsp);
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		found = false;

	if (OidIsValid(relid))
	{
		rel = table_open(relid, AccessShareLock);
		scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
		tuple = systable_getnext(scan);
		if (HeapTupleIsValid(tuple))
		{
			bool		null0;
			bool		null1;
			Datum		k0 = heap_getattr(tuple, 1, RelationGetDescr(rel), &null0);
			Datum		k1 = heap_getattr(tuple, 2, RelationGetDescr(rel), &null1);

			if (!null0 && !null1)
			{
				c->lock_k0 = (uint64) DatumGetInt64(k0);
				c->lock_k1 = (uint64) DatumGetInt64(k1);
				found = true;
			}
		}
		systable_endscan(scan);
		table_close(rel, AccessShareLock);
	}
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("simhash_dedupe: the secret of the lock keys (table simhash_lock_secret) is missing"),
				 errhint("Reinstall the extension: DROP EXTENSION simhash CASCADE, then CREATE EXTENSION simhash.")));
}

/* True when triggers a and b run the same function with the same arguments. */
bool
same_arguments(const Trigger *a, const Trigger *b)
{
	bool		same = a->tgfoid == b->tgfoid && a->tgnargs == b->tgnargs;

	for (int i = 0; same && i < a->tgnargs; i++)
		same = strcmp(a->tgargs[i], b->tgargs[i]) == 0;
	return same;
}
