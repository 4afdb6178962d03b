/*
 * simhash_dedupe_insert(target regclass, query text): a bulk load that takes all its rows'
 * lock keys at once, then inserts them with one INSERT (why and how, in three phases:
 * docs/dedupe_internals.md, "The bulk load").
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

#include "access/tableam.h"
#include "access/table.h"
#include "access/xact.h"
#include "storage/proc.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/snapmgr.h"

#include "pg/similarity.h"
#include "pg/compat.h"
#include "pg/dedupe.h"
#include "pg/search.h"
#include "pg/simhash_pg.h"

/* Rows fetched from the query at a time. */
#define BULK_FETCH_ROWS 1000

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
 * take enough keys for it (their keys are then not needed). Then the load's memo (m, or
 * NULL): the table searched once for each distinct fingerprint or text of the rows.
 */
static void
lock_rows(BulkLoad *l, DedupeMemo *m)
{
	DedupeConfig *c = l->c;
	bool		table_locked = bulk_takes_table(c, l->nrows * c->metric->lock_key_bound(c));
	KeySet		ks = {0};
	MemoryContext row_cxt = AllocSetContextCreate(CurrentMemoryContext, "simhash_dedupe_insert row",
												  ALLOCSET_DEFAULT_SIZES);
	TupleDesc	desc = RelationGetDescr(l->rel);
	Datum	   *values = palloc(desc->natts * sizeof(Datum));
	bool	   *nulls = palloc(desc->natts * sizeof(bool));
	TupleTableSlot *slot = MakeSingleTupleTableSlot(l->qdesc, &TTSOpsMinimalTuple);

	for (uint64 j = 0; (m != NULL || !table_locked) &&
		 tuplestore_gettupleslot(l->rows, true, false, slot); j++)
	{
		MemoryContext old = MemoryContextSwitchTo(row_cxt);
		RowWork		w = {0};
		bool		isnull;
		Datum		body = slot_getattr(slot, l->q_text, &isnull);

		CHECK_FOR_INTERRUPTS();
		/* the keys, unless only the memo needs the row: then its text will do */
		if (!table_locked || !c->metric->verifies)
			load_row_keys(l, slot, values, nulls, &w);
		/* the text's digest here: a detoasted copy goes with the row's context */
		if (c->metric->verifies ? !isnull : w.search)
			memo_load_add(m, j, w.fp, c->metric->verifies ? DatumGetTextPP(body) : NULL);
		MemoryContextSwitchTo(old);
		if (w.search && !table_locked)
		{
			uint32		keys[SIMHASH_MAX_LOCK_KEYS];

			add_keys(&ks, keys, c->metric->lock_keys(c, w.fp, w.lsh, w.nlsh, keys));
		}
		MemoryContextReset(row_cxt);
	}
	tuplestore_rescan(l->rows);
	if (!table_locked)
	{
		serialize_bulk(c, &ks);
	}
	if (m != NULL)
		memo_load_search(m, c, l->rows, slot, l->q_text);
	ExecDropSingleTupleTableSlot(slot);
}

/*
 * 3. The rows, each checked by the trigger with its keys held: one INSERT ... SELECT from
 * the tuplestore (insert_rows()), with the load's memo as the statement's. The rows
 * inserted.
 */
static uint64
write_rows(BulkLoad *l, DedupeMemo *m)
{
	Oid			previous = set_bulk_root(l->c->root);
	DedupeMemo *previous_memo = memo_load_start(m, l->c);
	uint64		inserted = 0;

	PG_TRY();
	{
		inserted = insert_rows(l->rel, l->qdesc, l->rows, l->nrows);
	}
	PG_CATCH();
	{
		set_bulk_root(previous);
		memo_load_end(m, previous_memo, NULL, 0);
		PG_RE_THROW();
	}
	PG_END_TRY();
	set_bulk_root(previous);
	memo_load_end(m, previous_memo, RelationGetRelationName(l->rel), l->nrows);
	return inserted;
}

PG_FUNCTION_INFO_V1(simhash_dedupe_insert);

/* simhash_dedupe_insert(target, query): the rows inserted (see the top of the file). */
Datum
simhash_dedupe_insert(PG_FUNCTION_ARGS)
{
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(1));
	Oid			nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	BulkLoad	l = {0};
	DedupeMemo *m = NULL;
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
	l.c = bulk_config(l.rel, tg, nsp);
	/* a copy: rel's triggers may be rebuilt while the query runs */
	tg = &CopyTriggerDesc(l.rel->trigdesc)->triggers[tg - l.rel->trigdesc->triggers];

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "simhash_dedupe_insert: SPI_connect failed");
	read_rows(&l, query);
	if (!l.rel->rd_islocaltemp)
		PreventCommandIfReadOnly("simhash_dedupe_insert()");

	/*
	 * With a threshold, no memo on a table with row-level security: which rows the caller
	 * may see (a link to a row it cannot read is refused, a reject names no key) is the
	 * search's to decide.
	 */
	if (!l.c->metric->verifies ||
		check_enable_rls(RelationGetRelid(l.rel), InvalidOid, false) != RLS_ENABLED)
		m = memo_load_begin(l.c, tg, l.nrows);
	lock_rows(&l, m);
	inserted = write_rows(&l, m);
	tuplestore_end(l.rows);
	SPI_finish();
	relation_close(l.rel, NoLock);
	PG_RETURN_INT64((int64) inserted);
}
