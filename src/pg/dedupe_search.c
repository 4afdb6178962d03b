/*
 * The search of the simhash_dedupe() trigger (see dedupe.c): the near duplicates of a new
 * row in one relation, through its block indexes (one B-tree probe per block value), the
 * GIN index of its LSH keys (one bitmap scan), or the whole relation; each candidate
 * checked (its distance, or its similarity with a threshold), the transaction's snapshot
 * enforced, and the row the policy prefers kept.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_type_d.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "nodes/tidbitmap.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "capi/search_capi.h"
#include "capi/similarity_capi.h"
#include "pg/dedupe.h"
#include "pg/similarity.h"
#include "pg/simhash_pg.h"


/* "(id)=(42)" for the key of the row in slot, or NULL when the caller may not read it. */
static char *
describe_key(DedupeConfig *c, DedupeTarget *t, TupleTableSlot *slot)
{
	char	   *values[INDEX_MAX_KEYS];

	if (!may_read_near_duplicate(c))
		return NULL;
	if (c->nkeys == 0)
		values[0] = psprintf("(%u,%u)", ItemPointerGetBlockNumber(&slot->tts_tid),
							 ItemPointerGetOffsetNumber(&slot->tts_tid));
	for (int i = 0; i < c->nkeys; i++)
	{
		bool		isnull;
		Datum		d = slot_getattr(slot, t->key_attnos[i], &isnull);
		Oid			out;
		bool		varlena;

		getTypeOutputInfo(TupleDescAttr(slot->tts_tupleDescriptor, t->key_attnos[i] - 1)->atttypid,
						  &out, &varlena);
		values[i] = isnull ? NULL : OidOutputFunctionCall(out, d);
	}
	return key_text(c, values);
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
	Datum		key = (Datum) 0;
	Form_pg_attribute key_att = NULL;

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
					 c->metric->late_detail(c, distance),
					 errhint("The transaction might succeed if retried.")));
	}
	if (c->policy == POLICY_LINK)
	{
		bool		isnull;

		(void) slot_getattr(slot, t->link_attno, &isnull);
		is_original = isnull;
		key = slot_getattr(slot, t->key_attnos[0], &isnull);
		key_att = TupleDescAttr(slot->tts_tupleDescriptor, t->key_attnos[0] - 1);
	}
	if (offer(c, found, is_original, distance, similarity, key, key_att))
		found->key_text = describe_key(c, t, slot);
}

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
	List	   *linked;			/* link: candidates linked elsewhere, verified last */
	Found	   *found;
	bool		exact_keys;		/* the row came from a simhash_ops index that matched a key */
} Search;

/*
 * Skip needs one near duplicate, in either mode, and so does reject with a threshold: the
 * search stops at the first (with a distance, the rest of the k + 1 index probes of a
 * skipped row are not made). Reject with a distance goes on to name the nearest row in its
 * message. Link reads every candidate: even past an original that no row can be nearer
 * than (similarity 1, or distance 0), an original as near with a smaller key wins.
 */
bool
search_finished(const DedupeConfig *c, const Found *found)
{
	if (!found->any || c->policy == POLICY_LINK)
		return false;
	return c->metric->verifies || c->policy == POLICY_SKIP;
}

static bool
search_done(Search *s)
{
	return search_finished(s->c, s->found);
}

/*
 * The shingle sets of candidates, kept for the statement (in the configuration's context)
 * so that a row that is a candidate of many new rows (the original of a family of near
 * duplicates, under link) is shingled once. A set is kept only when it was counted whole,
 * so the answer from it is the one a fresh count gives; within work_mem in all. The key is
 * the row version: its relation, TID, xmin and command id (a TID is reused only after the
 * row is removed, and a row removed while the statement runs was inserted by another
 * transaction than the one reusing its TID, or by an aborted subtransaction).
 */
typedef struct CachedSetKey
{
	Oid			relid;
	ItemPointerData tid;
	TransactionId xmin;
	CommandId	cid;
} CachedSetKey;

typedef struct CachedSet
{
	CachedSetKey key;
	uint64	   *set;
	size_t		n;
} CachedSet;

/* The key of the candidate in s->slot; false when it has none (not a heap tuple). */
static bool
cached_set_key(Search *s, CachedSetKey *key)
{
	bool		should_free;
	HeapTuple	tuple;

	if (!TTS_IS_BUFFERTUPLE(s->slot) && !TTS_IS_HEAPTUPLE(s->slot))
		return false;
	tuple = ExecFetchSlotHeapTuple(s->slot, false, &should_free);
	if (should_free || tuple->t_data == NULL || !ItemPointerIsValid(&tuple->t_self))
	{
		if (should_free)
			heap_freetuple(tuple);
		return false;
	}
	memset(key, 0, sizeof(*key));
	key->relid = s->t->relid;
	key->tid = tuple->t_self;
	key->xmin = HeapTupleHeaderGetRawXmin(tuple->t_data);
	key->cid = HeapTupleHeaderGetRawCommandId(tuple->t_data);
	return true;
}

/* Keeps a copy of set[0..n) for key, within work_mem for the statement. */
static void
cache_set(DedupeConfig *c, const CachedSetKey *key, const uint64 *set, size_t n)
{
	Size		bytes = sizeof(uint64) * Max(n, 1) + sizeof(CachedSet) + 64;
	MemoryContext cxt = GetMemoryChunkContext(c);
	CachedSet  *e;
	bool		found;

	if (c->set_cache_bytes + bytes > (Size) work_mem * 1024)
		return;
	if (c->set_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(CachedSetKey);
		ctl.entrysize = sizeof(CachedSet);
		ctl.hcxt = cxt;
		c->set_cache = hash_create("simhash_dedupe candidate shingle sets", 256, &ctl,
								   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	e = hash_search(c->set_cache, key, HASH_ENTER, &found);
	if (found)
		return;
	e->set = MemoryContextAlloc(cxt, sizeof(uint64) * Max(n, 1));
	memcpy(e->set, set, sizeof(uint64) * n);
	e->n = n;
	c->set_cache_bytes += bytes;
}

/*
 * The candidate's stored set ('sets=column'), when it has a well-formed one: it decides,
 * even for a byte-identical text (a value written while the trigger did not fire is used
 * as it is, as docs/dedupe.md says and the table index does). Only a well-formed stored
 * set is believed (stored_set_of()); whatever else the column holds (another first byte,
 * hashes not ascending, a longer value) leaves the candidate to its text (false), even
 * when its size is past the cap. *similar: whether it reaches the threshold.
 */
static bool
stored_set_decides(Search *s, double *similarity, bool *similar)
{
	SimhashShingleSet a = s->new_text->set;
	bool		isnull;
	Datum		sd;
	SimhashShingleSet other;

	if (s->t->sets_attno == 0)
		return false;
	sd = slot_getattr(s->slot, s->t->sets_attno, &isnull);
	if (isnull || !stored_set_of(sd, &other))
		return false;
	/* More distinct shingles than the threshold allows: ruled out. */
	*similar = other.size <= simhash_shingle_cap(a.size, s->c->min_similarity) &&
		simhash_shingle_jaccard(a, other, similarity) && *similarity >= s->c->min_similarity;
	pfree((void *) other.data);
	return true;
}

/*
 * The similarity of the new text to a candidate's stored text d (not NULL), false when
 * it is below the threshold (or undefined): its stored set, else its set kept by this
 * statement, else simhash_text_reaches() (verify.c), its set kept when a later row of the
 * statement may meet it again.
 */
static bool
candidate_similar(Search *s, Datum d, double *similarity)
{
	SimhashShingleSet a = s->new_text->set;
	SimhashShingleSet other;
	bool		similar;
	CachedSetKey key;
	bool		keyed;

	if (stored_set_decides(s, similarity, &similar))
		return similar;
	keyed = cached_set_key(s, &key);
	if (keyed && s->c->set_cache != NULL)
	{
		CachedSet  *e = hash_search(s->c->set_cache, &key, HASH_FIND, NULL);

		if (e != NULL)
		{
			other.data = e->set;
			other.size = e->n;
			return simhash_shingle_jaccard(a, other, similarity) &&
				*similarity >= s->c->min_similarity;
		}
	}
	similar = simhash_text_reaches(d, s->new_text->body, a, s->c->min_similarity, similarity,
								   keyed && s->c->searches > 1 ? &other : NULL);
	if (keyed && s->c->searches > 1 && other.data != NULL)
	{
		cache_set(s->c, &key, other.data, other.size);
		pfree((void *) other.data);
	}
	return similar;
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

	if (isnull)
		return false;
	return candidate_similar(s, d, similarity);
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
	/* (with a threshold a row is met once: a bitmap or a sequential scan, no blocks) */
	if (s->c->metric->verifies)
	{
		/*
		 * link prefers originals: a row linked elsewhere wins only when no original is
		 * near, so it is verified after every original (verify_linked()), if at all.
		 */
		if (s->c->policy == POLICY_LINK)
		{
			bool		linked_isnull;
			bool		key_isnull;

			/* past an original nothing is nearer than, only a smaller key can win */
			if (s->found->any && s->found->is_original && s->c->metric->exact(s->found) &&
				!dedupe_key_before(s->c, slot_getattr(s->slot, s->t->key_attnos[0], &key_isnull),
								   s->found->key))
				return;
			(void) slot_getattr(s->slot, s->t->link_attno, &linked_isnull);
			if (!linked_isnull)
			{
				ItemPointer tid = palloc(sizeof(ItemPointerData));

				*tid = s->slot->tts_tid;
				s->linked = lappend(s->linked, tid);
				return;
			}
		}
		if (!similar_enough(s, &similarity))
			return;
	}
	consider(s->c, s->t, s->rel, s->slot, distance, similarity, s->xact_snapshot, s->found);
}

/*
 * link, when no original is near: the candidates linked elsewhere that check_candidate()
 * put aside, each read again as the snapshot sees it and verified.
 */
static void
verify_linked(Search *s, Snapshot snapshot)
{
	ListCell   *lc;

	if (s->found->any && s->found->is_original)
		return;
	foreach(lc, s->linked)
	{
		double		similarity;

		CHECK_FOR_INTERRUPTS();
		if (table_tuple_fetch_row_version(s->rel, (ItemPointer) lfirst(lc), snapshot, s->slot) &&
			similar_enough(s, &similarity))
			consider(s->c, s->t, s->rel, s->slot, 0, similarity, s->xact_snapshot, s->found);
	}
}

/*
 * Without a keys column (a simhash_ops index on the text): true when the text in s->slot
 * has an LSH key of the new row's, computed from the text as the index computed it.
 */
static bool
text_shares_lsh_key(Search *s)
{
	bool		isnull;
	Datum		d = slot_getattr(s->slot, s->t->text_attno, &isnull);
	SimhashShingleSet set;
	int64		keys[SIMHASH_LSH_BANDS];
	int			n;
	bool		shared = false;

	if (isnull || s->nlsh != SIMHASH_LSH_BANDS)
		return false;
	set = simhash_text_shingles(DatumGetTextPP(d));
	n = simhash_shingle_lsh_keys(set, keys);
	for (int i = 0; i < n && i < s->nlsh && !shared; i++)
		shared = keys[i] == s->lsh[i];
	if (set.data != NULL)
		pfree((void *) set.data);
	return shared;
}

/* Checks the row in s->slot, reading its fingerprint or keys there. */
static void
check_slot(Search *s)
{
	bool		isnull;
	Datum		d;
	int			distance;

	if (s->t->fp_attno == 0)
	{
		/* an exact match of the index shares a key; any other row is checked */
		if (s->exact_keys || text_shares_lsh_key(s))
			check_candidate(s, 0);
		return;
	}
	d = slot_getattr(s->slot, s->t->fp_attno, &isnull);

	if (isnull)
		return;
	if (s->c->metric->keys_near(s->c, s->fp, s->lsh, s->nlsh, d, &distance))
		check_candidate(s, distance);
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
 * bitmap scan for keys && new keys (or, with simhash_ops on the text, text %~ new text:
 * its keys are the text's), then each row fetched as an index scan would (one visible
 * version of a HOT chain; on a lossy page, every line pointer is tried, and those that do
 * not start a chain find nothing). A row of an exact page of a simhash_ops scan shares a
 * key (the index's keys are those of the very row version at that TID); under
 * simhash.similarity_threshold 0.7 that scan reads the whole index, and every row's keys
 * are checked.
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
	bool		exact = s->t->gin_on_text && simhash_similarity_threshold >= SIMHASH_LSH_MIN_SIMILARITY;

	if (s->t->gin_on_text)
		ScanKeyEntryInitialize(&key, 0, 1, SIMHASH_SIMILAR_STRATEGY, TEXTOID,
							   ind->rd_indcollation[0], InvalidOid,
							   PointerGetDatum(s->new_text->body));
	else
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
		s->exact_keys = exact && page->ntuples >= 0;
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
	s->exact_keys = false;
	tbm_end_iterate(it);
	table_index_fetch_end(fetch);
	tbm_free(tbm);
}

/*
 * Looks for near duplicates in target t visible to snapshot: rows within k of fp, or with a
 * threshold, rows sharing one of the keys lsh[0..nlsh) (also given as the array lsh_array)
 * and similar enough.
 */
void
search_target(DedupeConfig *c, DedupeTarget *t, uint64 fp, const int64 *lsh, int nlsh,
			  ArrayType *lsh_array, Snapshot snapshot, Snapshot xact_snapshot, Oid old_relid,
			  ItemPointer old_tid, NewText *new_text, Found *found)
{
	Search		s = {c, t, NULL, NULL, fp, lsh, nlsh, xact_snapshot, old_relid, old_tid, new_text,
		NIL, found};
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	c->searches++;
	s.rel = table_open(t->relid, AccessShareLock);
	s.slot = table_slot_create(s.rel, NULL);
	if (OidIsValid(t->gin_index))
		probe_gin(&s, snapshot, lsh_array);
	else if (t->plan.blocks == 0)
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
	verify_linked(&s, snapshot);
	list_free_deep(s.linked);
	ExecDropSingleTupleTableSlot(s.slot);
	table_close(s.rel, NoLock);
}
