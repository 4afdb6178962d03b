/*
 * What the files of the simhash_dedupe() trigger share (nothing else includes this). The
 * path of a row written, and the file of each step:
 *
 *   trigger arguments -> DedupeConfig, once per statement: the columns,     dedupe_config.c
 *     the limit, the policy, the primary key, the relations searched (the
 *     table, or each leaf partition: DedupeTarget) with their block-index
 *     layout or GIN index; the advice NOTICE; the Citus refusal
 *     and the metric, chosen once: distance or threshold, a table of        dedupe_metric.c
 *     functions (row keys, lock keys, keys near, closeness, messages)
 *   row -> RowWork: its fingerprint or LSH keys, the columns it gets        dedupe_row.c
 *   keys -> lock keys -> advisory locks, or the table lock once one         dedupe_locks.c
 *     transaction has taken many
 *   answer_row(): the statement memo first, which answers what it knows     dedupe.c
 *     exactly (a filter of fingerprints or an index of keys and sets,       dedupe_memo.c
 *     seeded from the table by a long statement under the table lock or
 *     by a load's search of its distinct texts; one guard);
 *   else a snapshot taken after the locks -> each target searched (block    dedupe_search.c
 *     indexes, GIN index of the keys or simhash_ops of the text, or the
 *     whole table) -> candidates checked -> Found, the near duplicate the
 *     policy acts on
 *   which one wins: candidate_wins(), on src/core/dedupe_rule.hpp;          dedupe_policy.c
 *     Found -> policy: reject | skip | link
 *
 * On a view (INSTEAD OF INSERT, for Citus) the same steps, with an SPI     dedupe_view.c
 * query for the candidates and an INSERT into the table.
 * CREATE TRIGGER ... simhash_dedupe(...): the arguments checked at once,   dedupe_check.c
 * by an event trigger, with the same functions as at run time.
 * simhash_dedupe_insert(table, query): a bulk load that takes all its      dedupe_bulk.c
 * rows' lock keys at once in one order, seeds the memo, then inserts them
 * with one INSERT (the trigger checks each row, its keys already held).
 *
 * Every path against the plain search, row for row: the pg_regress file
 * simhash_dedupe_equivalence.
 */
#ifndef SIMHASH_PG_DEDUPE_H
#define SIMHASH_PG_DEDUPE_H

#include "postgres.h"

#include "access/htup.h"
#include "access/tupdesc.h"
#include "commands/trigger.h"
#include "executor/tuptable.h"
#include "fmgr.h"
#include "storage/itemptr.h"
#include "utils/hsearch.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"
#include "utils/tuplestore.h"

#include "capi/similarity_capi.h"
#include "pg/search.h"
#include "pg/similarity.h"

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
	AttrNumber	sets_attno;		/* 0 without 'sets=column' */
	AttrNumber	key_attnos[INDEX_MAX_KEYS];
	SimhashSearchPlan plan;		/* blocks = 0: read the whole relation */
	Oid			indexes[SIMHASH_MAX_BLOCKS];
	bool		has_fingerprint[SIMHASH_MAX_BLOCKS];	/* (block, fp) index */
	Oid			gin_index;		/* with a threshold: GIN index on the keys, or none */
	bool		gin_on_text;	/* it is a simhash_ops index on the text (no keys column) */
	bool		gin_pending;	/* it collects new entries in a pending list (fastupdate) */
} DedupeTarget;

typedef struct DedupeConfig DedupeConfig;
typedef struct Found Found;
typedef struct RowWork RowWork;

/*
 * A metric, chosen once from the trigger's limit (dedupe_metric.c): a Hamming distance k
 * between fingerprints, or a similarity threshold between shingle sets (LSH keys).
 */
typedef struct DedupeMetric
{
	bool		verifies;		/* candidates are confirmed by their shingle sets */
	const char *key_function;	/* what the keys column holds: simhash | simhash_lsh */
	Oid			key_type;		/* its type: bigint | bigint[] */
	const char *key_type_name;
	const char *key_what;		/* "fingerprint" | "keys", in messages */
	/* the keys of a row whose text w->new_text.body is read (same_text: an UPDATE kept it) */
	void		(*row_keys) (DedupeConfig *c, HeapTuple tuple, HeapTuple old, TupleDesc desc,
							 RowWork *w, bool same_text);
	/* a row's lock keys, keyed, sorted, distinct (SIMHASH_MAX_LOCK_KEYS at most); the bound */
	size_t		(*lock_keys) (const DedupeConfig *c, uint64 fp, const int64 *lsh, int nlsh,
							  uint32 *keys);
	uint64		(*lock_key_bound) (const DedupeConfig *c);
	/* the row has keys (after row_keys(), whether or not it is to be searched) */
	bool		(*has_keys) (const DedupeConfig *c, const RowWork *w, HeapTuple tuple,
							 TupleDesc desc);
	/* a candidate's keys column value d is near the new row's keys (its *distance) */
	bool		(*keys_near) (const DedupeConfig *c, uint64 fp, const int64 *lsh, int nlsh,
							  Datum d, int *distance);
	double		(*closeness) (int distance, double similarity);	/* larger: closer */
	bool		(*exact) (const Found *found);	/* nothing can be nearer */
	bool		(*indexed) (const DedupeTarget *t); /* the target's search has its index */
	int			(*detail) (const DedupeConfig *c, const Found *found, const char *tgname);
	int			(*late_detail) (DedupeConfig *c, int distance);
} DedupeMetric;

/* The trigger's arguments, split by split_arguments(): column names, as written. */
typedef struct DedupeArgs
{
	const char *tgname;
	const char *text;
	const char *keys;			/* "" when left out (a simhash_ops index on the text) */
	const char *limit;
	const char *policy;
	const char *link;			/* the fifth argument, or NULL */
	const char *sets;			/* the column of 'sets=column', or NULL */
} DedupeArgs;

/* The trigger's arguments, checked, and what it searches; made once per statement. */
struct DedupeConfig
{
	Oid			tgoid;
	DedupeArgs	args;
	Oid			relid;			/* the relation the trigger fired on */
	Oid			root;			/* the table, or the root of its partition tree */
	AttrNumber	text_attno;
	AttrNumber	fp_attno;
	AttrNumber	link_attno;
	const DedupeMetric *metric; /* distance or threshold */
	int			k;				/* with a distance */
	double		min_similarity; /* with a threshold */
	DedupePolicy policy;
	AttrNumber	sets_attno;		/* 'sets=column': the stored shingle sets, or 0 */
	int			nkeys;			/* primary key columns of root; 0: none (ctid is shown) */
	AttrNumber	root_keys[INDEX_MAX_KEYS];	/* their numbers in root */
	AttrNumber	root_text_attno;	/* the text and key columns, numbered in root: what */
	AttrNumber	root_fp_attno;	/* a distance or similarity in a message comes from */
	char	   *key_names;		/* "id" or "a, b", for messages */
	int			ntargets;
	DedupeTarget *targets;
	bool		indexed;		/* every target has a usable layout */
	/* Through a view (INSTEAD OF INSERT; docs/dedupe_internals.md, "Through a view"): */
	bool		via_view;
	AttrNumber *to_base;		/* view column i + 1 is column to_base[i] of root */
	Oid			statement_form; /* the row trigger only holds rows for this trigger */
	char	   *search_sql;		/* the query that finds the near duplicate */
	uint64		lock_k0;		/* the secret that keys the lock keys */
	uint64		lock_k1;
	/*
	 * link: the order of the primary key's index (its btree comparison and collation),
	 * which breaks a tie between equally near candidates: the smallest key wins.
	 */
	bool		key_cmp_ok;
	FmgrInfo	key_cmp;
	Oid			key_collation;
	/* With a threshold: shingle sets of candidates already read in this statement. */
	HTAB	   *set_cache;
	Size		set_cache_bytes;
	uint64		searches;		/* search_target() calls of this statement */
};

/* The near duplicate the policy acts on. */
struct Found
{
	bool		any;
	int			distance;
	double		similarity;		/* with a similarity threshold */
	bool		is_original;	/* its link column is NULL (policy link) */
	Datum		key;			/* its primary key (single column, policy link) */
	char	   *key_text;		/* "(id)=(42)", or NULL when the caller may not read it */
};

/* The text of the row being written and, with a threshold, its shingle set (row_keys). */
typedef struct NewText
{
	text	   *body;
	SimhashShingleSet set;
} NewText;

/* A row being written: its keys, and the columns the trigger sets in it. */
struct RowWork
{
	uint64		fp;				/* with a distance */
	int64		lsh[SIMHASH_LSH_BANDS]; /* with a threshold: lsh[0..nlsh) */
	int			nlsh;
	ArrayType  *lsh_array;
	NewText		new_text;
	bool		search;			/* false: no near duplicate to look for */
	bool		unchanged;		/* an UPDATE that cannot make a new near duplicate */
	int			ncols;
	int			cols[3];
	Datum		values[3];
	bool		nulls[3];
};

/*
 * The functions below are shared by the trigger's files only. Hidden, as they were when
 * they were static: simhash.so exports none of them, and no library loaded into the server
 * can stand in for one (the names are short and common: reject(), set_column()).
 */
#pragma GCC visibility push(hidden)

/* dedupe_metric.c: the two metrics */
extern const DedupeMetric dedupe_distance_metric;
extern const DedupeMetric dedupe_similarity_metric;

/* dedupe_config.c: the trigger's arguments */
extern DedupeConfig *make_config(FunctionCallInfo fcinfo, TriggerData *td);
extern void check_table_trigger(Relation rel, Trigger *tg, Oid nsp);
extern DedupeConfig *bulk_config(Relation rel, Trigger *tg, Oid nsp);
/* on_view: refuses the forms a view does not take */
extern void split_arguments(DedupeConfig *c, Trigger *tg, bool on_view);
/* after split_arguments(): the text column, the limit, the key column, the policy */
extern void parse_arguments(DedupeConfig *c, Relation rel, Oid nsp);
extern void check_generated_fp(Relation rel, DedupeConfig *c, Oid nsp);
extern void find_keys(DedupeConfig *c, Relation rel, Relation root);
extern void check_layout(DedupeConfig *c, Oid nsp, Relation root);
extern bool target_writes(Oid relid, int64 *updated, int64 *inserted, int64 *deleted,
						  bool start);
/* the secret that keys the lock keys */
extern void load_lock_secret(DedupeConfig *c, Oid nsp);
/* whether the caller may read a near duplicate's key (link, messages) */
extern bool may_read_near_duplicate(DedupeConfig *c);
/* triggers a and b run the same function with the same arguments */
extern bool same_arguments(const Trigger *a, const Trigger *b);
/* a < b in the primary key's order (link's tie-break; false without one) */
extern bool dedupe_key_before(DedupeConfig *c, Datum a, Datum b);

/* dedupe_row.c: what a row is to the trigger: its text, keys, stored set */
extern text *row_text(HeapTuple tuple, TupleDesc desc, AttrNumber attno);
extern void set_column(RowWork *w, AttrNumber attno, Datum value, bool isnull);
extern void row_keys(DedupeConfig *c, HeapTuple tuple, HeapTuple old, TupleDesc desc,
					 RowWork *w);
extern bytea *stored_set_bytes(SimhashShingleSet set);
extern bool stored_set_of(Datum sd, SimhashShingleSet *set);
/* the band keys of a keys column value, as the search reads them */
extern bool lsh_band_keys(Datum d, int64 *keys);

/* dedupe_policy.c: which near duplicate wins, and reject | skip | link; table and view alike */
extern void reject(DedupeConfig *c, Relation rel, Trigger *tg, const Found *found);
extern bool offer(DedupeConfig *c, Found *found, bool is_original, int distance,
				  double similarity, Datum key, Form_pg_attribute key_att);
extern char *key_text(const DedupeConfig *c, char *const *values);
extern bool apply_policy(DedupeConfig *c, Relation rel, Trigger *tg, const Found *found,
						 RowWork *w);

/* dedupe_locks.c: taking a row's lock keys (c->metric->lock_keys()) */
extern void serialize_writers(DedupeConfig *c, const uint32 *keys, size_t n);
/* the lock keys of a statement's rows, taken at once by serialize_bulk() */
typedef struct KeySet
{
	uint32	   *keys;
	size_t		n;
	size_t		capacity;
} KeySet;
extern void add_keys(KeySet *ks, const uint32 *keys, size_t n);
extern void serialize_bulk(DedupeConfig *c, KeySet *ks);
extern bool holds_table(DedupeConfig *c);
extern bool may_read_table_whole(DedupeConfig *c);
extern bool bulk_takes_table(DedupeConfig *c, uint64 max_keys);
extern Oid	set_bulk_root(Oid root);

/*
 * dedupe_memo.c: the statement memo, what a statement knows of the table. memo_row()
 * first for every row (its guard); memo_answer(): true when it answers a new row's search
 * (into *found); memo_searched(): after the trigger's search of a new row; memo_written():
 * the row is let through. A load (simhash_dedupe_insert) makes one with memo_load_begin(),
 * memo_load_add() a row, memo_load_search() under its locks, and makes it the statement's
 * from memo_load_start() to memo_load_end().
 */
typedef struct DedupeMemo DedupeMemo;
extern void memo_row(DedupeConfig *c);
extern bool memo_answer(DedupeConfig *c, RowWork *w, Found *found);
extern void memo_searched(DedupeConfig *c, Trigger *tg);
extern void memo_written(DedupeConfig *c, Relation rel, RowWork *w, HeapTuple tuple,
						 bool original, bool insert);
extern DedupeMemo *memo_load_begin(DedupeConfig *c, Trigger *tg, uint64 nrows);
extern void memo_load_add(DedupeMemo *m, uint64 row, uint64 fp, const text *body);
extern void memo_load_search(DedupeMemo *m, DedupeConfig *c, Tuplestorestate *rows,
							 TupleTableSlot *slot, AttrNumber q_text);
extern DedupeMemo *memo_load_start(DedupeMemo *m, DedupeConfig *c);
extern void memo_load_end(DedupeMemo *m, DedupeMemo *previous, const char *table,
						  uint64 nrows);

/* dedupe_search.c: the near duplicates of a row in one target; whether none can win over found */
extern bool search_finished(const DedupeConfig *c, const Found *found);
extern void search_target(DedupeConfig *c, DedupeTarget *t, uint64 fp, const int64 *lsh,
						  int nlsh, ArrayType *lsh_array, Snapshot snapshot,
						  Snapshot xact_snapshot, Oid old_relid, ItemPointer old_tid,
						  NewText *new_text, Found *found);

/* dedupe_view.c: the trigger on a view */
extern Datum dedupe_through_view(FunctionCallInfo fcinfo, TriggerData *td);
extern void check_view_trigger(Relation view, Trigger *tg, Oid nsp);

#pragma GCC visibility pop

#endif							/* SIMHASH_PG_DEDUPE_H */
