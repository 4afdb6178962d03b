/*
 * simhash_dedupe(): the row trigger that keeps near duplicates out of a table or links
 * them (docs/dedupe.md). One row: its keys, its locks, the memo or the search, the policy:
 * docs/dedupe_internals.md, "The trigger"; what the files share: dedupe.h.
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "access/xact.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "capi/search_capi.h"
#include "pg/dedupe.h"
#include "pg/similarity.h"
#include "pg/simhash_pg.h"

/*
 * Looks for the near duplicate the policy acts on, in every target: first the locks, then
 * a snapshot that sees what committed while we waited and the rows of this statement.
 */
static void
find_near_duplicate(DedupeConfig *c, Relation rel, HeapTuple old, RowWork *w, Found *found)
{
	Snapshot	snapshot;
	Snapshot	xact_snapshot = NULL;
	uint32		lock_keys[SIMHASH_MAX_LOCK_KEYS];

	serialize_writers(c, lock_keys, c->metric->lock_keys(c, w->fp, w->lsh, w->nlsh, lock_keys));
	CommandCounterIncrement();
	snapshot = RegisterSnapshot(GetLatestSnapshot());
	if (IsolationUsesXactSnapshot())
		xact_snapshot = GetTransactionSnapshot();
	for (int i = 0; i < c->ntargets; i++)
	{
		search_target(c, &c->targets[i], w->fp, w->lsh, w->nlsh, w->lsh_array, snapshot,
					  xact_snapshot, RelationGetRelid(rel), old ? &old->t_self : NULL,
					  &w->new_text, found);
		if (search_finished(c, found))
			break;
	}
	UnregisterSnapshot(snapshot);
}

/*
 * The near duplicate of a row (into *found): the statement memo answers what it knows
 * exactly (dedupe_memo.c), the search under the row's locks the rest.
 */
static void
answer_row(DedupeConfig *c, Relation rel, Trigger *tg, HeapTuple old, RowWork *w, Found *found)
{
	memo_row(c);
	if (!w->search || (old == NULL && memo_answer(c, w, found)))
		return;
	find_near_duplicate(c, rel, old, w, found);
	if (old == NULL)
		memo_searched(c, tg);
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
		c->metric->has_keys(c, &w, tuple, RelationGetDescr(rel)) &&
		leaves_partition(rel, tuple))
	{
		w.search = true;
		w.unchanged = false;
	}
	answer_row(c, rel, td->tg_trigger, old, &w, &found);
	if (!apply_policy(c, rel, td->tg_trigger, &found, &w))
		return PointerGetDatum(NULL);
	if (w.ncols > 0)
		tuple = heap_modify_tuple_by_cols(tuple, RelationGetDescr(rel), w.ncols, w.cols,
										  w.values, w.nulls);
	memo_written(c, rel, &w, tuple, !found.any, old == NULL);
	return PointerGetDatum(tuple);
}
