/*
 * Near-duplicate search: block keys, the radius predicate simhash_near(), and its planner
 * support function, which turns the predicate into lookups on B-tree indexes of block keys.
 *
 * A table's layout is a set of B-tree expression indexes on simhash_block(fp, blocks, i),
 * one per block i (simhash_create_index() makes them). When the planner simplifies
 * simhash_near(fp, q, k) with k a constant and fp a column of a table that has such
 * indexes, the support function replaces the call by the equivalent
 *
 *     simhash_within(fp, q, k)
 *     AND (simhash_block(fp, b, i) = ANY (simhash_block_probes(q, b, i, r_i)) OR ...)
 *
 * with radii r_i chosen by the core (plan_probes: multi-index hashing, sum(r_i + 1) >= k + 1,
 * so every row within k matches at least one arm). The planner then builds a BitmapOr of
 * index scans from the OR, parameterized by the other side in joins, and checks
 * simhash_within() on the rows found. Without a layout, the call stays as it is and is
 * evaluated row by row: always the same answer, only slower.
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_index.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type_d.h"
#include "fmgr.h"
#include "funcapi.h"
#include "storage/lmgr.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pathnodes.h"
#include "nodes/supportnodes.h"
#include "optimizer/optimizer.h"
#include "optimizer/plancat.h"
#include "parser/parse_func.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "capi/search_capi.h"
#include "pg/citus.h"
#include "pg/search.h"
#include "pg/simhash_pg.h"

/* At most this many probes for one block in simhash_block_probes(). */
#define MAX_PROBES_PER_CALL (1 << 20)

/*
 * The planner rewrites simhash_near() only when the index plan is expected to cost less
 * than reading the table: plan cost (in index descents) <= rows * SEQ_COST_PER_ROW, where
 * rows is at least MIN_ROWS, and never more than MAX_PLANNED_PROBES descents. One descent
 * costs about as much as reading and checking 50 rows sequentially (bench/bench_search.sh).
 * The floor keeps the rewrite for tables that are small now but filling up (a plan cached
 * while a table was empty must not scan it once it is large); on a table that really is
 * tiny, the index plan costs a few milliseconds at most.
 */
#define SEQ_COST_PER_ROW 0.02
#define MIN_ROWS 1e6
#define MAX_PLANNED_PROBES 50000

/* Table rows assumed when the statistics do not say (partitioned tables). */
#define DEFAULT_ROWS 1e6

static void
check_distance(int32 k)
{
	if (k < 0 || k > SIMHASH_FINGERPRINT_BITS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash: distance must be between 0 and 64, got %d", k)));
}

PG_FUNCTION_INFO_V1(simhash_block_int8);

/* simhash_block(fp bigint, blocks int, block int) -> integer: the bits of one block. */
Datum
simhash_block_int8(PG_FUNCTION_ARGS)
{
	uint64		fp = (uint64) PG_GETARG_INT64(0);
	int32		blocks = PG_GETARG_INT32(1);
	int32		block = PG_GETARG_INT32(2);
	uint32		value;
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	simhash_check_status(simhash_block_value(fp, blocks, block, &value, errbuf, sizeof(errbuf)), errbuf);
	/* Blocks have at most 32 bits; a 32-bit block maps onto integer by two's complement. */
	PG_RETURN_INT32((int32) value);
}

/*
 * The last probe array a call site made. Where simhash_near() was rewritten and the planner
 * reads the table instead (a hot bucket, a small table) or joins, the probe condition is a
 * filter evaluated for every row within the distance, nearly always with the same query
 * fingerprint: it is made once and copied after that.
 */
typedef struct ProbeCache
{
	uint64		q;
	int32		blocks;
	int32		block;
	int32		radius;
	ArrayType  *probes;			/* in fn_mcxt; NULL until the first call */
} ProbeCache;

static ArrayType *
make_probes(uint64 q, int32 blocks, int32 block, int32 radius, MemoryContext cxt)
{
	uint64		count;
	size_t		n;
	uint32	   *values;
	Datum	   *elems;
	ArrayType  *result;
	MemoryContext old;
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	if (radius < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash: radius must not be negative, got %d", radius)));
	simhash_check_status(simhash_block_probe_count(blocks, block, radius, &count, errbuf, sizeof(errbuf)),
				 errbuf);
	if (count > MAX_PROBES_PER_CALL)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("simhash: radius %d on block %d of %d makes " UINT64_FORMAT " probes, more than %d",
						radius, block, blocks, count, MAX_PROBES_PER_CALL)));
	values = palloc(sizeof(uint32) * count);
	simhash_check_status(simhash_block_probes(q, blocks, block, radius, values, count, &n,
									  errbuf, sizeof(errbuf)), errbuf);
	elems = palloc(sizeof(Datum) * n);
	for (size_t i = 0; i < n; i++)
		elems[i] = Int32GetDatum((int32) values[i]);
	old = MemoryContextSwitchTo(cxt);
	result = construct_array(elems, (int) n, INT4OID, sizeof(int32), true, TYPALIGN_INT);
	MemoryContextSwitchTo(old);
	pfree(elems);
	pfree(values);
	return result;
}

PG_FUNCTION_INFO_V1(simhash_block_probes_int8);

/*
 * simhash_block_probes(q bigint, blocks int, block int, radius int) -> integer[]: every
 * value within `radius` bits of q's block, in ascending order of the unsigned value.
 */
Datum
simhash_block_probes_int8(PG_FUNCTION_ARGS)
{
	uint64		q = (uint64) PG_GETARG_INT64(0);
	int32		blocks = PG_GETARG_INT32(1);
	int32		block = PG_GETARG_INT32(2);
	int32		radius = PG_GETARG_INT32(3);
	ProbeCache *cache = (ProbeCache *) fcinfo->flinfo->fn_extra;

	if (cache == NULL)
	{
		cache = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(ProbeCache));
		fcinfo->flinfo->fn_extra = cache;
	}
	if (cache->probes == NULL || cache->q != q || cache->blocks != blocks ||
		cache->block != block || cache->radius != radius)
	{
		ArrayType  *probes = make_probes(q, blocks, block, radius, fcinfo->flinfo->fn_mcxt);

		if (cache->probes != NULL)
			pfree(cache->probes);
		cache->probes = probes;
		cache->q = q;
		cache->blocks = blocks;
		cache->block = block;
		cache->radius = radius;
	}
	/* A copy: the caller owns what a function returns. */
	PG_RETURN_ARRAYTYPE_P(DatumGetArrayTypePCopy(PointerGetDatum(cache->probes)));
}

PG_FUNCTION_INFO_V1(simhash_near_int8);

/*
 * simhash_near(fp, q, k) and simhash_within(fp, q, k) -> boolean: hamming(fp, q) <= k.
 * The two differ only in their support functions (simhash_within is never rewritten).
 */
Datum
simhash_near_int8(PG_FUNCTION_ARGS)
{
	uint64		a = (uint64) PG_GETARG_INT64(0);
	uint64		b = (uint64) PG_GETARG_INT64(1);
	int32		k = PG_GETARG_INT32(2);

	check_distance(k);
	PG_RETURN_BOOL(simhash_hamming(a, b) <= k);
}

PG_FUNCTION_INFO_V1(simhash_layout_blocks);

/* simhash_layout_blocks(max_distance int, rows float8) -> integer: blocks of a layout. */
Datum
simhash_layout_blocks(PG_FUNCTION_ARGS)
{
	int32		max_distance = PG_GETARG_INT32(0);
	float8		rows = PG_GETARG_FLOAT8(1);
	int32		blocks;
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	if (isnan(rows) || rows < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash: rows must be a non-negative number")));
	simhash_check_status(simhash_choose_blocks(max_distance, rows, &blocks, errbuf, sizeof(errbuf)),
				 errbuf);
	PG_RETURN_INT32(blocks);
}

/*
 * Selectivity of hamming(fp, q) <= k for independent random fingerprints:
 * sum of C(64, d) / 2^64 for d = 0..k. Near duplicates make real data denser than that,
 * but the estimate has the right order for the unrelated rows that dominate a table.
 */
static Selectivity
within_selectivity(List *args)
{
	Node	   *k_arg = lthird(args);
	double		term = 1.0;
	double		sum = 0.0;
	int			k;

	if (!IsA(k_arg, Const) || ((Const *) k_arg)->constisnull)
		return 1e-6;
	k = DatumGetInt32(((Const *) k_arg)->constvalue);
	if (k < 0)
		return 0.0;
	if (k >= SIMHASH_FINGERPRINT_BITS)
		return 1.0;
	for (int d = 0; d <= k; d++)
	{
		if (d > 0)
			term = term * (SIMHASH_FINGERPRINT_BITS - d + 1) / d;
		sum += term;
	}
	return Min(1.0, ldexp(sum, -SIMHASH_FINGERPRINT_BITS));
}

/*
 * Looked up in the catalog cache by namespace OID, name and exact argument types (the
 * unique key of pg_proc: no other overload can match), with no privilege check. A lookup
 * by qualified name (LookupFuncName) checks USAGE on the schema as the current user, so
 * with the extension in a schema other roles may not use, the event trigger made every
 * other role's CREATE TRIGGER fail ("permission denied for schema"), whatever function or
 * table it named, and so did their inserts into tables with a dedupe trigger and their
 * queries planned through simhash_near's support function.
 */
Oid
simhash_extension_function(Oid nsp, const char *name, int nargs, const Oid *argtypes)
{
	oidvector  *args = buildoidvector(argtypes, nargs);
	Oid			oid = GetSysCacheOid3(PROCNAMEARGSNSP, Anum_pg_proc_oid, CStringGetDatum(name),
									  PointerGetDatum(args), ObjectIdGetDatum(nsp));

	pfree(args);
	return oid;
}

/*
 * If expr is simhash_block(<column attno>, <b>, <i>) with constant b and i, stores b and i.
 */
static bool
is_block_key(Node *expr, Oid block_fn, AttrNumber attno, int *b, int *i)
{
	FuncExpr   *f;
	Node	   *col,
			   *bn,
			   *in;

	if (!IsA(expr, FuncExpr))
		return false;
	f = (FuncExpr *) expr;
	if (f->funcid != block_fn || list_length(f->args) != 3)
		return false;
	col = linitial(f->args);
	bn = lsecond(f->args);
	in = lthird(f->args);
	if (!IsA(col, Var) || ((Var *) col)->varattno != attno || ((Var *) col)->varlevelsup != 0)
		return false;
	if (!IsA(bn, Const) || ((Const *) bn)->constisnull ||
		!IsA(in, Const) || ((Const *) in)->constisnull)
		return false;
	*b = DatumGetInt32(((Const *) bn)->constvalue);
	*i = DatumGetInt32(((Const *) in)->constvalue);
	return *b >= 2 && *b <= SIMHASH_MAX_BLOCKS && *i >= 0 && *i < *b;
}

/*
 * Finds the valid, non-partial, single-column B-tree indexes on simhash_block(column, b, i)
 * of relation relid, column attno, and estimates the relation's rows. The relation must
 * be locked already; its indexes are locked with lockmode, as the planner does.
 */
void
simhash_find_layouts(Oid relid, AttrNumber attno, Oid block_fn, LOCKMODE lockmode, SimhashLayouts *layouts)
{
	Relation	rel = table_open(relid, NoLock);
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;

	memset(layouts, 0, sizeof(*layouts));
	foreach(lc, indexes)
	{
		Relation	ind = index_open(lfirst_oid(lc), lockmode);
		Form_pg_index form = ind->rd_index;
		int			b,
					i;

		/*
		 * A block index has simhash_block(column, b, i) as its first key column and,
		 * optionally, the fingerprint column itself as its second, which lets the
		 * dedupe trigger check candidates without reading the table.
		 */
		if (form->indisvalid && form->indkey.values[0] == 0 &&
			(form->indnatts == 1 ||
			 (form->indnatts == 2 && form->indnkeyatts == 2 && form->indkey.values[1] == attno)) &&
			ind->rd_rel->relam == BTREE_AM_OID && RelationGetIndexPredicate(ind) == NIL)
		{
			Node	   *key = linitial(RelationGetIndexExpressions(ind));

			if (is_block_key(key, block_fn, attno, &b, &i) &&
				(!OidIsValid(layouts->by[b][i].index) ||
				 (form->indnatts == 2 && !layouts->by[b][i].has_fingerprint)))
			{
				layouts->by[b][i].index = RelationGetRelid(ind);
				layouts->by[b][i].key = key;
				layouts->by[b][i].has_fingerprint = form->indnatts == 2;
			}
		}
		index_close(ind, NoLock);
	}

	layouts->rows = DEFAULT_ROWS;
	if (rel->rd_rel->reltuples >= 0)
		layouts->rows = rel->rd_rel->reltuples;
	else if (RELKIND_HAS_STORAGE(rel->rd_rel->relkind))
	{
		BlockNumber pages;
		double		tuples,
					allvisfrac;

		estimate_rel_size(rel, NULL, &pages, &tuples, &allvisfrac);
		layouts->rows = tuples;
	}
	table_close(rel, NoLock);
}

/* The cheapest layout and radii for distance k, if index lookups are worth it. */
SimhashSearchPlan
simhash_choose_search(const SimhashLayouts *layouts, int k, double candidate_cost,
					  bool always_index)
{
	SimhashSearchPlan	best = {0};
	double		rows = Max(layouts->rows, 1.0);

	for (int b = 2; b <= SIMHASH_MAX_BLOCKS; b++)
	{
		uint32		present = 0;
		simhash_probe_plan plan;
		char		errbuf[SIMHASH_ERRBUF_SIZE];

		for (int i = 0; i < b; i++)
			if (OidIsValid(layouts->by[b][i].index))
				present |= 1U << i;
		if (present == 0)
			continue;
		if (simhash_plan_probes(b, present, k, rows, candidate_cost, &plan, errbuf,
								sizeof(errbuf)) != SIMHASH_OK ||
			!plan.feasible)
			continue;
		if (plan.probes > MAX_PLANNED_PROBES ||
			(!always_index && plan.cost > Max(rows, MIN_ROWS) * SEQ_COST_PER_ROW))
			continue;
		if (best.blocks == 0 || plan.cost < best.probes.cost)
		{
			best.blocks = b;
			best.probes = plan;
		}
	}
	return best;
}

Oid
simhash_block_function(Oid nsp)
{
	Oid			args[3] = {INT8OID, INT4OID, INT4OID};

	return simhash_extension_function(nsp, "simhash_block", 3, args);
}

/*
 * The index condition for `var` (a column with a layout) against `other`: an OR of one arm
 * per probed block, or NULL when no layout makes index lookups worth it.
 */
static Node *
index_condition(RangeTblEntry *rte, Var *var, Node *other, int k, Oid nsp)
{
	Oid			probe_args[4] = {INT8OID, INT4OID, INT4OID, INT4OID};
	Oid			block_fn = simhash_block_function(nsp);
	Oid			probes_fn = simhash_extension_function(nsp, "simhash_block_probes", 4, probe_args);
	SimhashLayouts		layouts;
	SimhashSearchPlan	plan;
	List	   *arms = NIL;

	if (!OidIsValid(block_fn) || !OidIsValid(probes_fn))
		return NULL;
	simhash_find_layouts(rte->relid, var->varattno, block_fn, rte->rellockmode, &layouts);
	plan = simhash_choose_search(&layouts, k, 1.0, false);
	if (plan.blocks == 0)
		return NULL;

	for (int i = 0; i < plan.blocks; i++)
	{
		int			r = plan.probes.radius[i];
		Node	   *key;
		List	   *block_of_other;

		if (r < 0)
			continue;
		/* Index expressions use varno 1; the query has its own. */
		key = copyObject(layouts.by[plan.blocks][i].key);
		ChangeVarNodes(key, 1, var->varno, 0);
		block_of_other = list_make3(copyObject(other),
									makeConst(INT4OID, -1, InvalidOid, sizeof(int32),
											  Int32GetDatum(plan.blocks), false, true),
									makeConst(INT4OID, -1, InvalidOid, sizeof(int32),
											  Int32GetDatum(i), false, true));
		if (r == 0)
		{
			/* simhash_block(column, b, i) = simhash_block(other, b, i) */
			OpExpr	   *eq = (OpExpr *) make_opclause(Int4EqualOperator, BOOLOID, false,
													  (Expr *) key,
													  (Expr *) makeFuncExpr(block_fn, INT4OID,
																			block_of_other,
																			InvalidOid, InvalidOid,
																			COERCE_EXPLICIT_CALL),
													  InvalidOid, InvalidOid);

			eq->opfuncid = F_INT4EQ;
			arms = lappend(arms, eq);
		}
		else
		{
			/* simhash_block(column, b, i) = ANY (simhash_block_probes(other, b, i, r)) */
			ScalarArrayOpExpr *any = makeNode(ScalarArrayOpExpr);

			any->opno = Int4EqualOperator;
			any->opfuncid = F_INT4EQ;
			/* hashfuncid and negfuncid (14, 15), zeroed by makeNode: no hashed lookup. */
			any->useOr = true;
			any->inputcollid = InvalidOid;
			any->args = list_make2(key,
								   makeFuncExpr(probes_fn, INT4ARRAYOID,
												lappend(block_of_other,
														makeConst(INT4OID, -1, InvalidOid,
																  sizeof(int32),
																  Int32GetDatum(r), false,
																  true)),
												InvalidOid, InvalidOid,
												COERCE_EXPLICIT_CALL));
			any->location = -1;
			arms = lappend(arms, any);
		}
	}
	return list_length(arms) == 1 ? linitial(arms) : (Node *) makeBoolExpr(OR_EXPR, arms, -1);
}

/*
 * If node is a column of a plain table of this query level that `other` does not refer to,
 * returns its range table entry.
 */
static RangeTblEntry *
searchable_column(PlannerInfo *root, Node *node, Node *other)
{
	Var		   *var;
	RangeTblEntry *rte;

	if (!IsA(node, Var))
		return NULL;
	var = (Var *) node;
	if (var->varlevelsup != 0 || var->varattno <= 0 || var->vartype != INT8OID ||
		var->varno < 1 || var->varno > list_length(root->parse->rtable))
		return NULL;
	rte = rt_fetch(var->varno, root->parse->rtable);
	if (rte->rtekind != RTE_RELATION)
		return NULL;
	/*
	 * A Citus table: the coordinator's "shell" holds no rows and no statistics, and Citus
	 * ships the predicate to each shard as it is, where the shard's own planner rewrites it
	 * with the shard's statistics (its rows, its indexes).
	 */
	if (simhash_citus_installed() && simhash_citus_partition_method(rte->relid) != 0)
		return NULL;
	if (bms_is_member(var->varno, simhash_pull_varnos(root, other)))
		return NULL;
	return rte;
}

/* The Simplify request of simhash_near(): see the comment at the top of the file. */
static Node *
near_simplify(SupportRequestSimplify *req)
{
	FuncExpr   *call = req->fcall;
	PlannerInfo *root = req->root;
	Node	   *args[2];
	Node	   *k_arg;
	int			k;
	Oid			nsp;
	Oid			within_args[3] = {INT8OID, INT8OID, INT4OID};
	Oid			within_fn;
	List	   *conjuncts = NIL;

	if (root == NULL || root->parse == NULL || list_length(call->args) != 3)
		return NULL;
	args[0] = linitial(call->args);
	args[1] = lsecond(call->args);
	k_arg = lthird(call->args);
	if (!IsA(k_arg, Const) || ((Const *) k_arg)->constisnull)
		return NULL;
	k = DatumGetInt32(((Const *) k_arg)->constvalue);
	if (k < 0 || k > SIMHASH_FINGERPRINT_BITS)
		return NULL;			/* the function itself reports the error */
	/* The other side is evaluated once per index scan: it must not be volatile. */
	if (contain_volatile_functions(args[0]) || contain_volatile_functions(args[1]))
		return NULL;

	nsp = get_func_namespace(call->funcid);
	within_fn = simhash_extension_function(nsp, "simhash_within", 3, within_args);
	if (!OidIsValid(within_fn))
		return NULL;

	/*
	 * Either side may be the indexed column; in a join both may be, and which one the
	 * planner should look up depends on the join order it picks, so both get a condition
	 * (each is implied by the distance check, so the result does not change).
	 */
	for (int side = 0; side < 2; side++)
	{
		RangeTblEntry *rte = searchable_column(root, args[side], args[1 - side]);
		Node	   *cond;

		if (rte == NULL)
			continue;
		cond = index_condition(rte, (Var *) args[side], args[1 - side], k, nsp);
		if (cond != NULL)
			conjuncts = lappend(conjuncts, cond);
	}
	if (conjuncts == NIL)
		return NULL;

	/* The distance check first: in a target list, AND stops at the first false. */
	conjuncts = lcons(makeFuncExpr(within_fn, BOOLOID, copyObject(call->args), InvalidOid,
								   call->inputcollid, COERCE_EXPLICIT_CALL),
					  conjuncts);
	return (Node *) makeBoolExpr(AND_EXPR, conjuncts, -1);
}

/* schema.table, quoted where needed (the form the SQL functions print regclass in). */
static const char *
qualified_name(Oid relid)
{
	char	   *name = get_rel_name(relid);

	if (name == NULL)
		return psprintf("%u", relid);
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)), name);
}

PG_FUNCTION_INFO_V1(simhash_search_plan);

/*
 * simhash_search_plan(tbl regclass, col name, k int) -> TABLE(index regclass, blocks int,
 * block int, radius int, probes bigint, candidates float8): what the planner does with
 * simhash_near(col, q, k) on tbl: one row per index it looks up, with the radius and the
 * number of probes; no row when it would read the table instead.
 */
Datum
simhash_search_plan(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			relid = PG_GETARG_OID(0);
	Name		col = PG_GETARG_NAME(1);
	int32		k = PG_GETARG_INT32(2);
	char		relkind;
	AttrNumber	attno;
	Oid			block_fn;
	SimhashLayouts		layouts;
	SimhashSearchPlan	plan;
	double		rows;
	double		shards;

	check_distance(k);
	simhash_init_materialized_srf(fcinfo);
	LockRelationOid(relid, AccessShareLock);
	relkind = get_rel_relkind(relid);
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE &&
		relkind != RELKIND_MATVIEW)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("simhash: %s is not a table or materialized view", qualified_name(relid))));
	attno = get_attnum(relid, NameStr(*col));
	if (attno <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("simhash: column %s of %s does not exist",
						quote_identifier(NameStr(*col)), qualified_name(relid))));
	if (get_atttype(relid, attno) != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("simhash: column %s of %s is of type %s, not bigint",
						quote_identifier(NameStr(*col)), qualified_name(relid),
						format_type_be(get_atttype(relid, attno)))));

	block_fn = simhash_block_function(get_func_namespace(fcinfo->flinfo->fn_oid));
	if (!OidIsValid(block_fn))
		return (Datum) 0;
	simhash_find_layouts(relid, attno, block_fn, AccessShareLock, &layouts);
	rows = layouts.rows;
	/*
	 * A Citus table: each shard plans simhash_near with its own statistics (see
	 * searchable_column()), so plan for a shard of average size; candidates over all.
	 */
	if (simhash_citus_installed() && simhash_citus_partition_method(relid) != 0 &&
		simhash_citus_shard_rows(relid, &shards, &rows))
		layouts.rows = rows / shards;
	plan = simhash_choose_search(&layouts, k, 1.0, false);
	for (int i = 0; i < plan.blocks; i++)
	{
		Datum		values[6];
		bool		nulls[6] = {false};
		uint64		probes;
		char		errbuf[SIMHASH_ERRBUF_SIZE];

		if (plan.probes.radius[i] < 0)
			continue;
		simhash_check_status(simhash_block_probe_count(plan.blocks, i, plan.probes.radius[i], &probes,
											   errbuf, sizeof(errbuf)), errbuf);
		values[0] = ObjectIdGetDatum(layouts.by[plan.blocks][i].index);
		values[1] = Int32GetDatum(plan.blocks);
		values[2] = Int32GetDatum(i);
		values[3] = Int32GetDatum(plan.probes.radius[i]);
		values[4] = Int64GetDatum((int64) probes);
		values[5] = Float8GetDatum(ldexp((double) probes * Max(rows, 0.0),
										 -(SIMHASH_FINGERPRINT_BITS * (i + 1) / plan.blocks - SIMHASH_FINGERPRINT_BITS * i / plan.blocks)));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(simhash_near_support);

/* Planner support of simhash_near(): index rewriting (Simplify) and selectivity. */
Datum
simhash_near_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);

	if (IsA(rawreq, SupportRequestSimplify))
		PG_RETURN_POINTER(near_simplify((SupportRequestSimplify *) rawreq));
	if (IsA(rawreq, SupportRequestSelectivity))
	{
		SupportRequestSelectivity *req = (SupportRequestSelectivity *) rawreq;

		req->selectivity = within_selectivity(req->args);
		PG_RETURN_POINTER(req);
	}
	PG_RETURN_POINTER(NULL);
}

PG_FUNCTION_INFO_V1(simhash_within_support);

/* Planner support of simhash_within(): selectivity only. */
Datum
simhash_within_support(PG_FUNCTION_ARGS)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);

	if (IsA(rawreq, SupportRequestSelectivity))
	{
		SupportRequestSelectivity *req = (SupportRequestSelectivity *) rawreq;

		req->selectivity = within_selectivity(req->args);
		PG_RETURN_POINTER(req);
	}
	PG_RETURN_POINTER(NULL);
}
