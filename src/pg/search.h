/*
 * The block-index layouts of a fingerprint column, as the planner support function of
 * simhash_near() and the simhash_dedupe() trigger see them (src/pg/search.c).
 */
#ifndef SIMHASH_PG_SEARCH_H
#define SIMHASH_PG_SEARCH_H

#include "postgres.h"

#include "nodes/nodes.h"
#include "storage/lockdefs.h"

#include "capi/search_capi.h"

/* One B-tree index of block i of a layout of b blocks on the column being searched. */
typedef struct SimhashBlockIndex
{
	Oid			index;			/* InvalidOid: no index for this block */
	Node	   *key;			/* its expression, simhash_block(column, b, i), varno 1 */
	bool		has_fingerprint;	/* the column is the index's second key column */
} SimhashBlockIndex;

typedef struct SimhashLayouts
{
	/* by[b][i]: block i of the layout of b blocks */
	SimhashBlockIndex by[SIMHASH_MAX_BLOCKS + 1][SIMHASH_MAX_BLOCKS];
	double		rows;			/* estimated rows of the table */
} SimhashLayouts;

/* The layout and radii chosen for one search, or blocks = 0 when none is worth it. */
typedef struct SimhashSearchPlan
{
	int			blocks;
	simhash_probe_plan probes;
} SimhashSearchPlan;

/*
 * The extension's function `name(argtypes)` in namespace nsp (exact types), or InvalidOid;
 * looked up by OID, with no privilege check on the schema.
 */
extern Oid	simhash_extension_function(Oid nsp, const char *name, int nargs,
									   const Oid *argtypes);

/* OID of the extension's simhash_block(bigint, int, int) in namespace nsp, or InvalidOid. */
extern Oid	simhash_block_function(Oid nsp);

/*
 * The valid, non-partial B-tree indexes on simhash_block(column attno, b, i) [, column]
 * of relation relid (locked already by the caller), and its estimated rows. The indexes
 * are locked with lockmode.
 */
extern void simhash_find_layouts(Oid relid, AttrNumber attno, Oid block_fn, LOCKMODE lockmode,
								 SimhashLayouts *layouts);

/*
 * The cheapest layout and probe radii for distance k, if index lookups are worth it (with
 * always_index, whenever a layout serves k within the probe limit); candidate_cost: what
 * checking one candidate costs, in index descents (1 for a row read through a bitmap heap
 * scan).
 */
extern SimhashSearchPlan simhash_choose_search(const SimhashLayouts *layouts, int k,
											   double candidate_cost, bool always_index);

#endif							/* SIMHASH_PG_SEARCH_H */
