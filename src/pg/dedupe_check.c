/*
 * simhash_dedupe_check_trigger(): the event trigger that checks a simhash_dedupe trigger's
 * arguments when it is created, with the run-time checks (its security:
 * docs/dedupe_internals.md, "The check at CREATE TRIGGER").
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type_d.h"
#include "commands/event_trigger.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "pg/dedupe.h"
#include "pg/search.h"

/* The kind of trigger simhash_dedupe() runs as, on the relation it is created on. */
static void
check_trigger_kind(Relation rel, Trigger *tg)
{
	int16		type = tg->tgtype;

	if (rel->rd_rel->relkind == RELKIND_VIEW)
	{
		/* the row trigger, or its statement form (dedupe_view.c) */
		if (!(TRIGGER_FOR_ROW(type) ? TRIGGER_FOR_INSTEAD(type) : TRIGGER_FOR_AFTER(type)) ||
			(type & (TRIGGER_TYPE_UPDATE | TRIGGER_TYPE_DELETE | TRIGGER_TYPE_TRUNCATE)) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("simhash_dedupe: trigger \"%s\" on a view must be INSTEAD OF INSERT ... FOR EACH ROW, or AFTER INSERT ... FOR EACH STATEMENT",
							tg->tgname)));
		return;
	}
	if (!TRIGGER_FOR_ROW(type) || !TRIGGER_FOR_BEFORE(type) ||
		(type & (TRIGGER_TYPE_DELETE | TRIGGER_TYPE_TRUNCATE)) != 0 ||
		(type & (TRIGGER_TYPE_INSERT | TRIGGER_TYPE_UPDATE)) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("simhash_dedupe: trigger \"%s\" must be BEFORE INSERT OR UPDATE ... FOR EACH ROW",
						tg->tgname)));
}

/* Checks trigger trigoid if it runs dedupe_fn. */
static void
check_created_trigger(Oid trigoid, Oid dedupe_fn, Oid nsp)
{
	Relation	tgrel = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			relid = InvalidOid;
	Relation	rel;
	TriggerDesc *desc;

	ScanKeyInit(&key, Anum_pg_trigger_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(trigoid));
	scan = systable_beginscan(tgrel, TriggerOidIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple) && ((Form_pg_trigger) GETSTRUCT(tuple))->tgfoid == dedupe_fn)
		relid = ((Form_pg_trigger) GETSTRUCT(tuple))->tgrelid;
	systable_endscan(scan);
	table_close(tgrel, AccessShareLock);
	if (!OidIsValid(relid))
		return;

	/* CREATE TRIGGER holds SHARE ROW EXCLUSIVE on the relation already. */
	rel = relation_open(relid, AccessShareLock);
	desc = rel->trigdesc;
	for (int i = 0; desc != NULL && i < desc->numtriggers; i++)
	{
		Trigger    *tg = &desc->triggers[i];

		if (tg->tgoid != trigoid)
			continue;
		check_trigger_kind(rel, tg);
		if (rel->rd_rel->relkind == RELKIND_VIEW)
			check_view_trigger(rel, tg, nsp);
		else
			check_table_trigger(rel, tg, nsp);
	}
	relation_close(rel, NoLock);
}

PG_FUNCTION_INFO_V1(simhash_dedupe_check_trigger);

/* Event trigger: checks every simhash_dedupe trigger the command created (see above). */
Datum
simhash_dedupe_check_trigger(PG_FUNCTION_ARGS)
{
	Oid			nsp;
	Oid			dedupe_fn;
	Oid			argtypes[1] = {OIDOID};
	Datum		args[1] = {ObjectIdGetDatum(TriggerRelationId)};
	List	   *triggers = NIL;
	ListCell   *lc;
	MemoryContext upper = CurrentMemoryContext;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("simhash_dedupe_check_trigger: not called as an event trigger")));
	nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	dedupe_fn = simhash_extension_function(nsp, "simhash_dedupe", 0, NULL);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "simhash_dedupe_check_trigger: SPI_connect failed");
	if (SPI_execute_with_args("SELECT c.objid FROM pg_catalog.pg_event_trigger_ddl_commands() c"
							  " WHERE c.classid OPERATOR(pg_catalog.=) $1",
							  1, argtypes, args, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "simhash_dedupe_check_trigger: reading the commands failed");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
		{
			MemoryContext spi = MemoryContextSwitchTo(upper);	/* outlives SPI_finish() */

			triggers = lappend_oid(triggers, DatumGetObjectId(d));
			MemoryContextSwitchTo(spi);
		}
	}
	SPI_finish();

	foreach(lc, triggers)
		check_created_trigger(lfirst_oid(lc), dedupe_fn, nsp);
	PG_RETURN_VOID();
}
