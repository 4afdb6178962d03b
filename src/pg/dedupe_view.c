/*
 * simhash_dedupe() as an INSTEAD OF INSERT trigger on a view (for Citus), and its statement
 * form that writes a statement's rows with all their lock keys taken at once
 * (docs/dedupe_internals.md, "Through a view").
 */
#include "postgres.h"

#include "access/heaptoast.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type_d.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"

#include "capi/search_capi.h"
#include "pg/citus.h"
#include "pg/dedupe.h"

static Oid	statement_form(Relation view, Trigger *tg);
static void check_statement_form(Relation view, Trigger *tg);

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

/*
 * The writer must have the rights the trigger's queries will use on the table, checked
 * before the trigger takes any lock (on the table or on lock keys): INSERT on every column
 * it inserts, and SELECT on the table (or on every column) for the search. Otherwise a
 * role that may only read the table could put the trigger on a view of its own (a TEMP
 * one will do) and, with skip or reject, which insert nothing, hold the table's locks
 * against its writers. The table trigger needs no such check: PostgreSQL has checked the
 * INSERT or UPDATE of the statement before the trigger fires.
 */
static void
check_view_writer(DedupeConfig *c, Relation view)
{
	Oid			user = GetUserId();
	TupleDesc	desc = RelationGetDescr(view);
	bool		may_insert = pg_class_aclcheck(c->root, user, ACL_INSERT) == ACLCHECK_OK;

	for (int i = 0; i < desc->natts && !may_insert; i++)
		if (!TupleDescAttr(desc, i)->attisdropped && c->to_base[i] > 0 &&
			get_attgenerated(c->root, c->to_base[i]) == '\0' &&
			pg_attribute_aclcheck(c->root, c->to_base[i], user, ACL_INSERT) != ACLCHECK_OK)
			aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(c->root));
	if (pg_class_aclcheck(c->root, user, ACL_SELECT) != ACLCHECK_OK &&
		pg_attribute_aclcheck_all(c->root, user, ACL_SELECT, ACLMASK_ALL) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(c->root));
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
 * The query that finds the near duplicates: their key columns, whether each is an original
 * (link), and its distance or similarity, in key order; view_search() picks the one the
 * policy acts on by offer(). $1 is the new fingerprint, or the new text with the keys
 * in $2 and the threshold in $3. Every function and operator is schema-qualified, and every
 * function of the extension is called with exactly its declared argument types (the text
 * column, which may be varchar or char, is cast to text; the key column is bigint), so no
 * overload that someone else created in the extension's schema can match better: see
 * docs/security.md, "Internal calls".
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
	if (c->metric->verifies)
		appendStringInfo(&sql,
						 "%s.simhash_jaccard(t.%s::pg_catalog.text, $1) FROM %s t"
						 " WHERE t.%s OPERATOR(pg_catalog.&&) $2"
						 " AND %s.simhash_jaccard(t.%s::pg_catalog.text, $1) OPERATOR(pg_catalog.>=) $3",
						 ext, body, quote_qualified_identifier(get_namespace_name(RelationGetNamespace(root)),
															   RelationGetRelationName(root)),
						 key, ext, body);
	else
		appendStringInfo(&sql,
						 "%s.hamming(t.%s, $1) FROM %s t WHERE %s.simhash_near(t.%s, $1, %d)",
						 ext, key, quote_qualified_identifier(get_namespace_name(RelationGetNamespace(root)),
															  RelationGetRelationName(root)),
						 ext, key, c->k);
	/* met in key order: of equally near rows, the first met (the smallest key) wins */
	for (int i = 0; i < view_key_columns(c); i++)
		appendStringInfo(&sql, "%s%d", i == 0 ? " ORDER BY " : ", ", i + 1);
	return sql.data;
}

/*
 * Parses the arguments of trigger tg on a view and finds its table, in the current memory
 * context. at_create: checked when the trigger is created (dedupe_check.c), by whoever
 * creates it: the checks of the writer, of where it runs and of the table's row-level
 * security are left to run time, as are the secret of the lock keys and the search query.
 */
static DedupeConfig *
view_config(Relation view, Trigger *tg, Oid nsp, bool at_create)
{
	DedupeConfig *c = palloc0(sizeof(DedupeConfig));
	Relation	root;

	split_arguments(c, tg, true);
	c->via_view = true;
	c->statement_form = TRIGGER_FOR_ROW(tg->tgtype) ? statement_form(view, tg) : InvalidOid;
	c->relid = RelationGetRelid(view);
	map_view_columns(c, view, tg);
	if (!at_create)
		check_view_writer(c, view);
	parse_arguments(c, view, nsp);
	c->root_text_attno = c->to_base[c->text_attno - 1];
	c->root_fp_attno = c->to_base[c->fp_attno - 1];

	if (!at_create)
		load_lock_secret(c, nsp);
	root = relation_open(c->root, AccessShareLock);
	if (!at_create)
	{
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
	}
	expect_same_column(c, view, root, c->text_attno);
	expect_same_column(c, view, root, c->fp_attno);
	if (TupleDescAttr(RelationGetDescr(root), c->to_base[c->fp_attno - 1] - 1)->attgenerated)
	{
		DedupeConfig on_table = *c;

		on_table.text_attno = c->to_base[c->text_attno - 1];
		on_table.fp_attno = c->to_base[c->fp_attno - 1];
		check_generated_fp(root, &on_table, nsp);
	}
	find_keys(c, view, root);
	if (c->policy == POLICY_LINK)
		expect_same_column(c, view, root, c->link_attno);
	if (!at_create)
	{
		check_layout(c, nsp, root);
		c->search_sql = view_search_sql(c, view, root, nsp);
	}
	relation_close(root, NoLock);
	return c;
}

/* Checks the arguments of trigger tg on a view when it is created (dedupe_check.c). */
void
check_view_trigger(Relation view, Trigger *tg, Oid nsp)
{
	(void) view_config(view, tg, nsp, true);
	if (!TRIGGER_FOR_ROW(tg->tgtype))
		check_statement_form(view, tg);
}

/* The configuration of the trigger on a view; once per statement. */
static DedupeConfig *
make_view_config(FunctionCallInfo fcinfo, TriggerData *td)
{
	MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);
	DedupeConfig *c = view_config(td->tg_relation, td->tg_trigger,
								  get_func_namespace(fcinfo->flinfo->fn_oid), false);

	MemoryContextSwitchTo(old);
	return c;
}

/* Rows of the view's search read at a time. */
#define VIEW_SEARCH_BATCH 256

/*
 * Offers a row of the search query (its key columns first) as the near duplicate, kept in
 * upper if it wins. The writer's own query found the row, so the writer may read its key.
 */
static void
view_offer(DedupeConfig *c, HeapTuple r, TupleDesc desc, MemoryContext upper, Found *found)
{
	int			nk = view_key_columns(c);
	bool		isnull;
	bool		is_original = DatumGetBool(SPI_getbinval(r, desc, nk + 1, &isnull));
	Datum		near = SPI_getbinval(r, desc, nk + 2, &isnull);
	Datum		key = c->policy == POLICY_LINK ? SPI_getbinval(r, desc, 1, &isnull) : (Datum) 0;
	MemoryContext spi = MemoryContextSwitchTo(upper);

	if (offer(c, found, is_original, c->metric->verifies ? 0 : DatumGetInt32(near),
			  c->metric->verifies ? DatumGetFloat8(near) : 0, key, TupleDescAttr(desc, 0)))
	{
		char	   *values[INDEX_MAX_KEYS];

		for (int i = 0; i < nk; i++)
			values[i] = SPI_getvalue(r, desc, i + 1);
		found->key_text = key_text(c, values);
	}
	MemoryContextSwitchTo(spi);
}

/* Runs the search query (an SPI connection is open); the near duplicate into *found. */
static void
view_search(DedupeConfig *c, RowWork *w, MemoryContext upper, Found *found)
{
	Oid			types[3] = {INT8OID, INT8ARRAYOID, FLOAT8OID};
	Datum		values[3] = {Int64GetDatum((int64) w->fp), PointerGetDatum(w->lsh_array),
	Float8GetDatum(c->min_similarity)};
	int			nargs = 1;
	Portal		portal;

	if (c->metric->verifies)
	{
		types[0] = TEXTOID;
		values[0] = PointerGetDatum(w->new_text.body);
		nargs = 3;
	}
	/* read in batches: a family of near duplicates may be large */
	portal = SPI_cursor_open_with_args(NULL, c->search_sql, nargs, types, values, NULL, false, 0);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, VIEW_SEARCH_BATCH);
		if (SPI_processed == 0)
			break;
		for (uint64 i = 0; i < SPI_processed; i++)
			view_offer(c, SPI_tuptable->vals[i], SPI_tuptable->tupdesc, upper, found);
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
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

	if (c->metric->verifies || fp_null || generated)
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

/*
 * Writes one row of the view (its keys in *w): its lock keys (unless keys_held: the
 * statement form took them all), its search, the policy, and the insert into the table. The row as inserted, in the view's format, in upper; NULL
 * when the policy skips it.
 */
static HeapTuple
view_write(DedupeConfig *c, Relation view, Relation root, Trigger *tg, HeapTuple tuple,
		   RowWork *w, bool keys_held, MemoryContext upper)
{
	Found		found = {0};

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "simhash_dedupe: SPI_connect failed");
	if (w->search)
	{
		uint32		lock_keys[SIMHASH_MAX_LOCK_KEYS];

		if (!keys_held)
			serialize_writers(c, lock_keys,
							  c->metric->lock_keys(c, w->fp, w->lsh, w->nlsh, lock_keys));
		view_search(c, w, upper, &found);
	}
	if (!apply_policy(c, root, tg, &found, w))
		tuple = NULL;
	else
	{
		if (w->ncols > 0)
			tuple = heap_modify_tuple_by_cols(tuple, RelationGetDescr(view), w->ncols, w->cols,
											  w->values, w->nulls);
		tuple = view_insert(c, view, root, tuple, upper);
	}
	SPI_finish();
	return tuple;
}

/*
 * The rows kept by the row trigger for the statement form, until their statement ends: in
 * a context of the transaction, each with the statement trigger that will write it, the
 * command id of its statement (a statement nested in one of its rows keeps its own), and its
 * subtransaction (an aborted one drops its rows).
 */
typedef struct HeldRow
{
	Oid			writer;			/* the statement trigger */
	CommandId	statement;
	SubTransactionId subxid;
	HeapTuple	tuple;
} HeldRow;

static MemoryContext held_cxt = NULL;
static List *held_rows = NIL;
static bool held_callbacks = false;

static void
held_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_PRE_COMMIT || event == XACT_EVENT_PRE_PREPARE)
	{
		if (held_rows != NIL)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("simhash_dedupe: %d rows written to a view were never inserted",
							list_length(held_rows)),
					 errdetail("The statement form of the trigger did not run at the end of their statement.")));
		return;
	}
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_ABORT)
	{
		held_cxt = NULL;		/* freed with the transaction's context */
		held_rows = NIL;
	}
}

static void
held_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
					  SubTransactionId parentSubid, void *arg)
{
	List	   *kept = NIL;
	ListCell   *lc;
	MemoryContext old;

	if (event != SUBXACT_EVENT_ABORT_SUB || held_rows == NIL)
		return;
	/* subtransactions begun after mySubid, still open, are its children: aborted too */
	old = MemoryContextSwitchTo(held_cxt);
	foreach(lc, held_rows)
	{
		HeldRow    *r = lfirst(lc);

		if (r->subxid < mySubid)
			kept = lappend(kept, r);
		else
		{
			heap_freetuple(r->tuple);
			pfree(r);
		}
	}
	list_free(held_rows);
	held_rows = kept;
	MemoryContextSwitchTo(old);
}

/* The current statement's command id: that of its snapshot. */
static CommandId
statement_id(void)
{
	return ActiveSnapshotSet() ? GetActiveSnapshot()->curcid : GetCurrentCommandId(false);
}

/* Keeps a row for statement trigger writer. */
static void
hold_row(Oid writer, HeapTuple tuple, TupleDesc desc)
{
	MemoryContext old;
	HeldRow    *r;

	if (!held_callbacks)
	{
		RegisterXactCallback(held_xact_callback, NULL);
		RegisterSubXactCallback(held_subxact_callback, NULL);
		held_callbacks = true;
	}
	if (held_cxt == NULL)
		held_cxt = AllocSetContextCreate(TopTransactionContext, "simhash_dedupe held rows",
										 ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(held_cxt);
	r = palloc(sizeof(HeldRow));
	r->writer = writer;
	r->statement = statement_id();
	r->subxid = GetCurrentSubTransactionId();
	/* the values themselves: a TOAST pointer could outlive what it points to */
	r->tuple = toast_flatten_tuple(tuple, desc);
	held_rows = lappend(held_rows, r);
	MemoryContextSwitchTo(old);
}

/* Takes the rows held for statement trigger writer in the current statement, in order. */
static List *
take_rows(Oid writer)
{
	CommandId	statement = statement_id();
	List	   *mine = NIL;
	List	   *rest = NIL;
	ListCell   *lc;
	MemoryContext old = MemoryContextSwitchTo(held_cxt != NULL ? held_cxt : CurrentMemoryContext);

	foreach(lc, held_rows)
	{
		HeldRow    *r = lfirst(lc);

		if (r->writer == writer && r->statement == statement)
			mine = lappend(mine, r);
		else
			rest = lappend(rest, r);
	}
	list_free(held_rows);
	held_rows = rest;
	MemoryContextSwitchTo(old);
	return mine;
}

/*
 * The statement form of row trigger tg on view: an AFTER INSERT ... FOR EACH STATEMENT
 * trigger running simhash_dedupe with tg's arguments, without WHEN, fired whenever tg is;
 * InvalidOid when there is none.
 */
static Oid
statement_form(Relation view, Trigger *tg)
{
	TriggerDesc *desc = view->trigdesc;

	for (int i = 0; desc != NULL && i < desc->numtriggers; i++)
	{
		Trigger    *s = &desc->triggers[i];

		if (same_arguments(s, tg) && s->tgenabled == tg->tgenabled && s->tgqual == NULL &&
			TRIGGER_FOR_AFTER(s->tgtype) && !TRIGGER_FOR_ROW(s->tgtype) &&
			TRIGGER_FOR_INSERT(s->tgtype))
			return s->tgoid;
	}
	return InvalidOid;
}

/*
 * At CREATE TRIGGER: the statement form tg needs a row trigger with the same arguments,
 * written the same way ('3' and 'k=3' mean the same, but only equal text pairs them), or
 * the rows would be written one at a time after all, and silently so.
 */
static void
check_statement_form(Relation view, Trigger *tg)
{
	TriggerDesc *desc = view->trigdesc;

	for (int i = 0; desc != NULL && i < desc->numtriggers; i++)
		if (TRIGGER_FOR_ROW(desc->triggers[i].tgtype) && statement_form(view, &desc->triggers[i]) == tg->tgoid)
			return;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
			 errmsg("simhash_dedupe: statement trigger \"%s\" on view \"%s\" has no row trigger with the same arguments",
					tg->tgname, RelationGetRelationName(view)),
			 errdetail("The statement form writes the rows that an INSTEAD OF INSERT ... FOR EACH ROW trigger with exactly these arguments holds."),
			 errhint("Create the row trigger first, and write the arguments of both the same way (no WHEN clause).")));
}

/*
 * The statement form at the end of its statement: every lock key of the rows held for it
 * at once, in one order, then each row written. On a view of a distributed table, all on
 * the coordinator.
 */
static void
write_held_rows(DedupeConfig *c, Relation view, Trigger *tg)
{
	List	   *rows = take_rows(tg->tgoid);
	int			n = list_length(rows);
	RowWork    *works;
	KeySet		ks = {0};
	Relation	root;
	MemoryContext row_cxt;

	if (n == 0)
		return;
	works = palloc0(sizeof(RowWork) * n);
	/* the keys of every row first; no ROW EXCLUSIVE on the table before its lock keys */
	root = relation_open(c->root, AccessShareLock);
	for (int i = 0; i < n; i++)
	{
		HeldRow    *r = list_nth(rows, i);

		CHECK_FOR_INTERRUPTS();
		view_row_keys(c, root, r->tuple, RelationGetDescr(view), &works[i]);
		if (works[i].new_text.set.data != NULL)
			pfree((void *) works[i].new_text.set.data);		/* the view verifies in SQL */
		works[i].new_text.set.data = NULL;
		if (works[i].search)
		{
			uint32		keys[SIMHASH_MAX_LOCK_KEYS];

			add_keys(&ks, keys,
					 c->metric->lock_keys(c, works[i].fp, works[i].lsh, works[i].nlsh, keys));
		}
	}
	serialize_bulk(c, &ks);
	relation_close(root, NoLock);
	root = table_open(c->root, RowExclusiveLock);
	row_cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash_dedupe held row",
									ALLOCSET_DEFAULT_SIZES);
	for (int i = 0; i < n; i++)
	{
		HeldRow    *r = list_nth(rows, i);

		CHECK_FOR_INTERRUPTS();
		(void) view_write(c, view, root, tg, r->tuple, &works[i], true, row_cxt);
		MemoryContextReset(row_cxt);
		heap_freetuple(r->tuple);
		pfree(r);
	}
	MemoryContextDelete(row_cxt);
	table_close(root, NoLock);
	list_free(rows);
	if (held_rows == NIL && held_cxt != NULL)
	{
		MemoryContextDelete(held_cxt);	/* nothing held: the memory goes back now */
		held_cxt = NULL;
	}
}

/* The trigger's kind on a view: INSTEAD OF INSERT ... FOR EACH ROW, or the statement form. */
static bool
fired_as_view_trigger(TriggerData *td)
{
	if (!TRIGGER_FIRED_BY_INSERT(td->tg_event))
		return false;
	return TRIGGER_FIRED_FOR_ROW(td->tg_event)
		? TRIGGER_FIRED_INSTEAD(td->tg_event)
		: TRIGGER_FIRED_AFTER(td->tg_event);
}

/* simhash_dedupe() as a trigger on a view: see "Through a view" and "The statement form". */
Datum
dedupe_through_view(FunctionCallInfo fcinfo, TriggerData *td)
{
	Relation	view = td->tg_relation;
	DedupeConfig *c = (DedupeConfig *) fcinfo->flinfo->fn_extra;
	MemoryContext upper = CurrentMemoryContext;
	HeapTuple	tuple = td->tg_trigtuple;
	RowWork		w = {0};
	Relation	root;

	if (!fired_as_view_trigger(td))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("simhash_dedupe: trigger \"%s\" on a view must be INSTEAD OF INSERT ... FOR EACH ROW, or AFTER INSERT ... FOR EACH STATEMENT",
						td->tg_trigger->tgname)));
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("simhash_dedupe: trigger \"%s\" on view \"%s\" needs READ COMMITTED",
						td->tg_trigger->tgname, RelationGetRelationName(view)),
				 errdetail("Its search must see the rows that committed while it waited for its locks.")));
	if (c == NULL || c->tgoid != td->tg_trigger->tgoid || c->relid != RelationGetRelid(view))
		fcinfo->flinfo->fn_extra = c = make_view_config(fcinfo, td);
	else
		check_view_writer(c, view);

	if (!TRIGGER_FIRED_FOR_ROW(td->tg_event))
	{
		write_held_rows(c, view, td->tg_trigger);
		return PointerGetDatum(NULL);
	}
	if (OidIsValid(c->statement_form))
	{
		hold_row(c->statement_form, tuple, RelationGetDescr(view));
		return PointerGetDatum(tuple);
	}
	root = table_open(c->root, RowExclusiveLock);
	view_row_keys(c, root, tuple, RelationGetDescr(view), &w);
	tuple = view_write(c, view, root, td->tg_trigger, tuple, &w, false, upper);
	table_close(root, NoLock);
	return PointerGetDatum(tuple);
}
