/*
 * All pairs of a table split into parts, the seeds' batch mode (Manku et al. 2007): the 64
 * bits are cut into max_distance + 1 blocks, so two fingerprints within max_distance bits
 * agree on at least one block (pigeonhole). Every row goes, once for each of its blocks, to
 * the part its (block, value) hashes to (simhash_pair_part()); the rows that agree on a
 * block meet in one part, where the aggregate simhash_part_pairs() finds the pairs among
 * its rows with the one-node engine (src/capi/pairs_capi.h) and keeps a pair only in the
 * part of the first block its two rows agree on, so each pair comes out of one part once.
 *
 * On Citus the parts are the distribution column of an intermediate table that
 * simhash_pairs(tbl, id_column, fp_column, max_distance) fills with INSERT ... SELECT
 * (Citus repartitions the rows between the workers) and groups by part, which Citus pushes
 * down: each worker runs the engine on its parts, and only the pairs travel to the
 * coordinator (src/sql/simhash--0.2.sql; docs/citus.md).
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/hsearch.h"
#include "utils/tuplestore.h"
#include "utils/builtins.h"
#include "port/pg_bitutils.h"
#include "utils/memutils.h"

#include "capi/pairs_capi.h"
#include "capi/search_capi.h"
#include "pg/simhash_pg.h"

/* Pairs asked of the engine per call, and its work budget per call (about a millisecond). */
#define PART_PAIRS_BATCH 1024
#define PART_PAIRS_WORK (1 << 20)

/* The blocks a distance is cut into: max_distance + 1, at least 2. */
static int
part_blocks(const char *fname, int max_distance)
{
	if (max_distance < 0 || max_distance + 1 > SIMHASH_MAX_BLOCKS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: max_distance must be from 0 to %d, got %d",
						fname, SIMHASH_MAX_BLOCKS - 1, max_distance)));
	return Max(2, max_distance + 1);
}

/* Checks a part number against the number of parts. */
static void
check_part(const char *fname, int32 part, int32 parts)
{
	if (parts < 1 || part < 0 || part >= parts)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s: parts must be at least 1 and part from 0 to parts - 1, got %d and %d",
						fname, part, parts)));
}

static uint32
block_of(uint64 fp, int blocks, int block)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	uint32		value;

	simhash_check_status(simhash_block_value(fp, blocks, block, &value, errbuf, sizeof(errbuf)),
						 errbuf);
	return value;
}

/* The part of block `block` of fp, of `parts` (a SplitMix64 finalizer of block and value). */
static int32
part_of(uint64 fp, int blocks, int block, int32 parts)
{
	uint64		x = ((uint64) block << 32 | block_of(fp, blocks, block)) + 0x9E3779B97F4A7C15ULL;

	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
	x ^= x >> 31;
	return (int32) (x % (uint64) parts);
}

PG_FUNCTION_INFO_V1(simhash_pair_part);

/* simhash_pair_part(fp, max_distance, block, parts): the part row goes to for block. */
Datum
simhash_pair_part(PG_FUNCTION_ARGS)
{
	uint64		fp = (uint64) PG_GETARG_INT64(0);
	int			blocks = part_blocks("simhash_pair_part", PG_GETARG_INT32(1));
	int32		block = PG_GETARG_INT32(2);
	int32		parts = PG_GETARG_INT32(3);

	if (block < 0 || block >= blocks || parts < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_pair_part: block must be from 0 to %d and parts at least 1, got %d and %d",
						blocks - 1, block, parts)));
	PG_RETURN_INT32(part_of(fp, blocks, block, parts));
}

/* The rows of one part, gathered by the aggregate. */
typedef struct PartRows
{
	int64	   *ids;
	uint64	   *fps;
	size_t		n;
	size_t		capacity;
	int			max_distance;
	int32		part;
	int32		parts;
} PartRows;

PG_FUNCTION_INFO_V1(simhash_part_pairs_step);

/* simhash_part_pairs(id, fp, max_distance, part, parts), a row: kept (NULL fp: left out). */
Datum
simhash_part_pairs_step(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt;
	PartRows   *s = PG_ARGISNULL(0) ? NULL : (PartRows *) PG_GETARG_POINTER(0);

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "simhash_part_pairs_step called in non-aggregate context");
	if (s == NULL)
	{
		if (PG_ARGISNULL(3) || PG_ARGISNULL(4) || PG_ARGISNULL(5))
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("simhash_part_pairs: max_distance, part and parts must not be NULL")));
		s = MemoryContextAllocZero(aggcxt, sizeof(PartRows));
		s->max_distance = PG_GETARG_INT32(3);
		(void) part_blocks("simhash_part_pairs", s->max_distance);
		s->part = PG_GETARG_INT32(4);
		s->parts = PG_GETARG_INT32(5);
		check_part("simhash_part_pairs", s->part, s->parts);
		s->capacity = 1024;
		s->ids = MemoryContextAlloc(aggcxt, s->capacity * sizeof(int64));
		s->fps = MemoryContextAlloc(aggcxt, s->capacity * sizeof(uint64));
	}
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("simhash_part_pairs: ids must not be NULL")));
	if (PG_ARGISNULL(2))
		PG_RETURN_POINTER(s);
	if (s->n == s->capacity)
	{
		s->capacity *= 2;
		s->ids = repalloc_huge(s->ids, s->capacity * sizeof(int64));
		s->fps = repalloc_huge(s->fps, s->capacity * sizeof(uint64));
	}
	s->ids[s->n] = PG_GETARG_INT64(1);
	s->fps[s->n] = (uint64) PG_GETARG_INT64(2);
	s->n++;
	PG_RETURN_POINTER(s);
}

/* Row order for the final step: by id, then fingerprint. */
static int
compare_rows(const void *a, const void *b, void *arg)
{
	const PartRows *s = arg;
	size_t		x = *(const size_t *) a;
	size_t		y = *(const size_t *) b;

	if (s->ids[x] != s->ids[y])
		return s->ids[x] < s->ids[y] ? -1 : 1;
	return (s->fps[x] > s->fps[y]) - (s->fps[x] < s->fps[y]);
}

/*
 * The part's rows without those met again through another of their blocks (same id, same
 * fingerprint), into fresh arrays (*ids, *fps, *n): the aggregate's state is left as it is.
 * A second fingerprint under one id is an error, as in simhash_pairs(query).
 */
static void
unique_rows(const PartRows *s, int64 **ids_out, uint64 **fps_out, size_t *n_out)
{
	size_t	   *order = palloc(Max(s->n, 1) * sizeof(size_t));
	int64	   *ids = palloc(Max(s->n, 1) * sizeof(int64));
	uint64	   *fps = palloc(Max(s->n, 1) * sizeof(uint64));
	size_t		n = 0;

	for (size_t i = 0; i < s->n; i++)
		order[i] = i;
	qsort_arg(order, s->n, sizeof(size_t), compare_rows, (void *) s);
	for (size_t i = 0; i < s->n; i++)
	{
		int64		id = s->ids[order[i]];
		uint64		fp = s->fps[order[i]];

		if (n > 0 && ids[n - 1] == id)
		{
			if (fps[n - 1] != fp)
				ereport(ERROR,
						(errcode(ERRCODE_CARDINALITY_VIOLATION),
						 errmsg("simhash_part_pairs: id " INT64_FORMAT " has two fingerprints", id),
						 errhint("Ids name the rows in the result, so they must be unique.")));
			continue;
		}
		ids[n] = id;
		fps[n] = fp;
		n++;
	}
	pfree(order);
	*ids_out = ids;
	*fps_out = fps;
	*n_out = n;
}

/* True when this part is the one of the first block fingerprints a and b agree on. */
static bool
first_shared_block_here(const PartRows *s, uint64 a, uint64 b)
{
	int			blocks = part_blocks("simhash_part_pairs", s->max_distance);

	for (int block = 0; block < blocks; block++)
		if (block_of(a, blocks, block) == block_of(b, blocks, block))
			return part_of(a, blocks, block, s->parts) == s->part;
	return false;
}

/* What the final functions return: a flat array of (id1, id2, distance, fp1, fp2). */
typedef struct PairsOut
{
	Datum	   *v;
	size_t		n;
	size_t		capacity;
} PairsOut;

static void
out_pair(PairsOut *o, int64 id1, int64 id2, int distance, uint64 fp1, uint64 fp2)
{
	if (o->n + 5 > o->capacity)
	{
		if (o->capacity * 2 > MaxArraySize)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("simhash_part_pairs: more than %zu pairs in one part",
							(size_t) MaxArraySize / 5),
					 errhint("Give the intermediate table more parts: raise citus.shard_count, or use the query form of simhash_pairs.")));
		o->capacity *= 2;
		o->v = repalloc_huge(o->v, o->capacity * sizeof(Datum));
	}
	o->v[o->n++] = Int64GetDatum(id1);
	o->v[o->n++] = Int64GetDatum(id2);
	o->v[o->n++] = Int64GetDatum(distance);
	o->v[o->n++] = Int64GetDatum((int64) fp1);
	o->v[o->n++] = Int64GetDatum((int64) fp2);
}

/* The root of row i in a union-find forest (halving the path as it goes). */
static uint32
root_of(uint32 *parent, uint32 i)
{
	while (parent[i] != i)
	{
		parent[i] = parent[parent[i]];
		i = parent[i];
	}
	return i;
}

/*
 * The pairs of the part's rows within max_distance whose first shared block is this
 * part's, id1 < id2 (the fingerprints serve the clusters' distances); NULL for none. With
 * forest, only the pairs that join two components of the pairs kept so far: a spanning
 * forest of the part's pairs, whose components are theirs (all the clusters need).
 */
static Datum
part_pairs(FunctionCallInfo fcinfo, bool forest)
{
	PartRows   *s = PG_ARGISNULL(0) ? NULL : (PartRows *) PG_GETARG_POINTER(0);
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	simhash_pair_plan plan;
	simhash_pair_iter iter;
	simhash_pair batch[PART_PAIRS_BATCH];
	uint32		tables;
	size_t		bytes;
	void	   *workspace;
	int32		finished = 0;
	PairsOut	out = {NULL, 0, 5 * 1024};
	int64	   *ids;
	uint64	   *fps;
	uint32	   *parent = NULL;
	size_t		n;

	if (s == NULL || s->n < 2)
		PG_RETURN_NULL();
	unique_rows(s, &ids, &fps, &n);
	simhash_check_status(simhash_pair_plan_init(&plan, n, s->max_distance, errbuf, sizeof(errbuf)),
						 errbuf);
	simhash_pair_plan_shape(&plan, &tables, NULL, NULL);
	simhash_check_status(simhash_pair_workspace_bytes(&plan, n, 0, tables, &bytes, errbuf,
													  sizeof(errbuf)), errbuf);
	workspace = MemoryContextAllocHuge(CurrentMemoryContext, bytes);
	simhash_check_status(simhash_pair_iter_begin(&iter, &plan, fps, n, 0, tables,
												 workspace, bytes, errbuf, sizeof(errbuf)), errbuf);
	out.v = palloc(out.capacity * sizeof(Datum));
	if (forest)
	{
		parent = MemoryContextAllocHuge(CurrentMemoryContext, n * sizeof(uint32));
		for (size_t i = 0; i < n; i++)
			parent[i] = (uint32) i;
	}
	while (!finished)
	{
		size_t		count;

		simhash_check_status(simhash_pair_iter_next(&iter, batch, PART_PAIRS_BATCH, PART_PAIRS_WORK,
													&count, &finished, errbuf, sizeof(errbuf)),
							 errbuf);
		CHECK_FOR_INTERRUPTS();
		for (size_t p = 0; p < count; p++)
		{
			uint32		i = batch[p].i;
			uint32		j = batch[p].j;

			if (!first_shared_block_here(s, fps[i], fps[j]))
				continue;
			if (forest)
			{
				uint32		a = root_of(parent, i);
				uint32		b = root_of(parent, j);

				if (a == b)
					continue;
				parent[a] = b;
			}
			if (ids[i] > ids[j])
				out_pair(&out, ids[j], ids[i], batch[p].distance, fps[j], fps[i]);
			else
				out_pair(&out, ids[i], ids[j], batch[p].distance, fps[i], fps[j]);
		}
	}
	pfree(workspace);
	if (out.n == 0)
		PG_RETURN_NULL();
	PG_RETURN_ARRAYTYPE_P(construct_array(out.v, (int) out.n, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

PG_FUNCTION_INFO_V1(simhash_part_pairs_final);

/* simhash_part_pairs: every pair of the part, as a flat bigint[] (part_pairs()). */
Datum
simhash_part_pairs_final(PG_FUNCTION_ARGS)
{
	return part_pairs(fcinfo, false);
}

PG_FUNCTION_INFO_V1(simhash_part_forest_final);

/* simhash_part_forest: a spanning forest of the part's pairs (part_pairs()). */
Datum
simhash_part_forest_final(PG_FUNCTION_ARGS)
{
	return part_pairs(fcinfo, true);
}

/* The rows met in the pairs of simhash_clusters_of_pairs(): ids, fingerprints, by id. */
typedef struct PairRows
{
	HTAB	   *index;			/* id -> row number */
	int64	   *ids;
	uint64	   *fps;
	size_t		n;
	size_t		capacity;
	simhash_pair *pairs;
	size_t		npairs;
	size_t		pairs_capacity;
} PairRows;

typedef struct RowNumber
{
	int64		id;
	uint32		row;
} RowNumber;

/* The row number of id (fp its fingerprint), added when new. */
static uint32
row_number_of(PairRows *r, int64 id, uint64 fp)
{
	bool		found;
	RowNumber  *e = hash_search(r->index, &id, HASH_ENTER, &found);

	if (found && r->fps[e->row] != fp)
		ereport(ERROR,
				(errcode(ERRCODE_CARDINALITY_VIOLATION),
				 errmsg("simhash_clusters_of_pairs: id " INT64_FORMAT " has two fingerprints", id),
				 errhint("Ids name the rows in the result, so they must be unique.")));
	if (found)
		return e->row;
	if (r->n == r->capacity)
	{
		r->capacity *= 2;
		r->ids = repalloc_huge(r->ids, r->capacity * sizeof(int64));
		r->fps = repalloc_huge(r->fps, r->capacity * sizeof(uint64));
	}
	if (r->n >= SIMHASH_MAX_CLUSTER_ROWS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("simhash_clusters_of_pairs: more than %u rows have a near duplicate",
						(unsigned) SIMHASH_MAX_CLUSTER_ROWS)));
	e->row = (uint32) r->n;
	r->ids[r->n] = id;
	r->fps[r->n] = fp;
	return (uint32) r->n++;
}

/* Reads the pairs of query (id1, id2, fp1, fp2, all bigint) through a cursor. */
static void
read_pairs(PairRows *r, const char *query)
{
	HASHCTL		ctl = {0};
	Portal		portal;

	ctl.keysize = sizeof(int64);
	ctl.entrysize = sizeof(RowNumber);
	ctl.hcxt = CurrentMemoryContext;
	r->index = hash_create("simhash_clusters_of_pairs rows", 1024, &ctl,
						   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	r->capacity = r->pairs_capacity = 1024;
	r->ids = palloc(r->capacity * sizeof(int64));
	r->fps = palloc(r->capacity * sizeof(uint64));
	r->pairs = palloc(r->pairs_capacity * sizeof(simhash_pair));
	portal = SPI_cursor_open_with_args(NULL, query, 0, NULL, NULL, NULL, false, 0);
	for (;;)
	{
		SPI_cursor_fetch(portal, true, 1000);
		if (SPI_tuptable == NULL || SPI_tuptable->tupdesc->natts != 4)
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("simhash_clusters_of_pairs: the query must return id1, id2, fp1, fp2")));
		for (int c = 0; c < 4; c++)
			if (TupleDescAttr(SPI_tuptable->tupdesc, c)->atttypid != INT8OID)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("simhash_clusters_of_pairs: column %d of the query must be bigint", c + 1)));
		if (SPI_processed == 0)
			break;
		for (uint64 t = 0; t < SPI_processed; t++)
		{
			Datum		v[4];
			bool		isnull[4];

			for (int c = 0; c < 4; c++)
			{
				v[c] = SPI_getbinval(SPI_tuptable->vals[t], SPI_tuptable->tupdesc, c + 1, &isnull[c]);
				if (isnull[c])
					ereport(ERROR,
							(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
							 errmsg("simhash_clusters_of_pairs: the query returned a NULL")));
			}
			if (r->npairs == r->pairs_capacity)
			{
				r->pairs_capacity *= 2;
				r->pairs = repalloc_huge(r->pairs, r->pairs_capacity * sizeof(simhash_pair));
			}
			r->pairs[r->npairs].i = row_number_of(r, DatumGetInt64(v[0]), (uint64) DatumGetInt64(v[2]));
			r->pairs[r->npairs].j = row_number_of(r, DatumGetInt64(v[1]), (uint64) DatumGetInt64(v[3]));
			r->pairs[r->npairs].distance = 0;
			r->npairs++;
		}
		SPI_freetuptable(SPI_tuptable);
		CHECK_FOR_INTERRUPTS();
	}
	SPI_cursor_close(portal);
}

PG_FUNCTION_INFO_V1(simhash_clusters_of_pairs);

/*
 * simhash_clusters_of_pairs(query) -> setof (id, cluster_id, distance): the connected
 * components of the pairs a query returns (id1, id2, fp1, fp2), as simhash_clusters()
 * gives them: each row of a pair, its component's smallest id, the Hamming distance of its
 * fingerprint to that row's. What the coordinator does with the pairs the workers found:
 * its memory is that of the pairs and their rows, not the table's.
 */
Datum
simhash_clusters_of_pairs(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *query = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	PairRows	r = {0};
	uint32	   *parent;
	uint32	   *cluster;
	size_t		clusters;
	simhash_cluster_rep *reps;
	MemoryContext upper = CurrentMemoryContext;

	InitMaterializedSRF(fcinfo, 0);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "simhash_clusters_of_pairs: SPI_connect failed");
	MemoryContextSwitchTo(upper);	/* the arrays outlive SPI_finish() */
	read_pairs(&r, query);
	SPI_finish();
	MemoryContextSwitchTo(upper);
	parent = palloc(Max(r.n, 1) * sizeof(uint32));
	cluster = palloc(Max(r.n, 1) * sizeof(uint32));
	simhash_check_status(simhash_clusters_init(parent, r.n, errbuf, sizeof(errbuf)), errbuf);
	simhash_check_status(simhash_clusters_unite(parent, r.n, r.pairs, r.npairs, NULL, errbuf,
												sizeof(errbuf)), errbuf);
	simhash_check_status(simhash_clusters_label(parent, r.n, &clusters, errbuf, sizeof(errbuf)), errbuf);
	reps = palloc(Max(clusters, 1) * sizeof(simhash_cluster_rep));
	simhash_check_status(simhash_clusters_collect(parent, r.n, 0, r.ids, r.fps, r.n, reps, clusters,
												  errbuf, sizeof(errbuf)), errbuf);
	simhash_check_status(simhash_clusters_lookup(parent, r.n, 0, r.n, cluster, errbuf, sizeof(errbuf)),
						 errbuf);
	for (size_t i = 0; i < r.n; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		if (cluster[i] == SIMHASH_NO_CLUSTER)
			continue;
		values[0] = Int64GetDatum(r.ids[i]);
		values[1] = Int64GetDatum(reps[cluster[i]].id);
		values[2] = Int32GetDatum(pg_popcount64(r.fps[i] ^ reps[cluster[i]].fp));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(simhash_lsh_first_shared);

/*
 * simhash_lsh_first_shared(a bigint[], b bigint[]) -> integer: the first band (1-based) in
 * which two rows' simhash_lsh keys are equal, NULL when none is. The verified table forms
 * keep a candidate pair only in the part of that band's key, so that it comes out once.
 */
Datum
simhash_lsh_first_shared(PG_FUNCTION_ARGS)
{
	ArrayType  *a = PG_GETARG_ARRAYTYPE_P(0);
	ArrayType  *b = PG_GETARG_ARRAYTYPE_P(1);
	int			n;
	const int64 *x;
	const int64 *y;

	if (ARR_NDIM(a) == 0 || ARR_NDIM(b) == 0)
		PG_RETURN_NULL();		/* an empty array: no band */
	if (ARR_NDIM(a) != 1 || ARR_NDIM(b) != 1 || ARR_ELEMTYPE(a) != INT8OID ||
		ARR_ELEMTYPE(b) != INT8OID || array_contains_nulls(a) || array_contains_nulls(b))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_lsh_first_shared: the keys must be one-dimensional bigint arrays without NULL")));
	n = Min(ARR_DIMS(a)[0], ARR_DIMS(b)[0]);
	x = (const int64 *) ARR_DATA_PTR(a);
	y = (const int64 *) ARR_DATA_PTR(b);
	for (int i = 0; i < n; i++)
		if (x[i] == y[i])
			PG_RETURN_INT32(i + 1);
	PG_RETURN_NULL();
}
