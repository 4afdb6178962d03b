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
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "capi/pairs_capi.h"
#include "capi/search_capi.h"
#include "pg/simhash_pg.h"

/* Pairs asked of the engine per call, and its work budget per call (about a millisecond). */
#define PART_PAIRS_BATCH 1024
#define PART_PAIRS_WORK (1 << 20)

/* The blocks a distance is cut into: max_distance + 1, at least 2. */
static int
part_blocks(int max_distance)
{
	if (max_distance < 0 || max_distance + 1 > SIMHASH_MAX_BLOCKS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash_pair_part: max_distance must be from 0 to %d, got %d",
						SIMHASH_MAX_BLOCKS - 1, max_distance)));
	return Max(2, max_distance + 1);
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
	int			blocks = part_blocks(PG_GETARG_INT32(1));
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
		(void) part_blocks(s->max_distance);
		s->part = PG_GETARG_INT32(4);
		s->parts = PG_GETARG_INT32(5);
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
 * Drops a row met again through another of its blocks (same id, same fingerprint); a
 * second fingerprint under one id is an error, as in simhash_pairs(query).
 */
static void
unique_rows(PartRows *s)
{
	size_t	   *order = palloc(Max(s->n, 1) * sizeof(size_t));
	int64	   *ids = palloc(Max(s->n, 1) * sizeof(int64));
	uint64	   *fps = palloc(Max(s->n, 1) * sizeof(uint64));
	size_t		n = 0;

	for (size_t i = 0; i < s->n; i++)
		order[i] = i;
	qsort_arg(order, s->n, sizeof(size_t), compare_rows, s);
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
	s->ids = ids;
	s->fps = fps;
	s->n = n;
}

/* True when this part is the one of the first block fingerprints a and b agree on. */
static bool
first_shared_block_here(const PartRows *s, uint64 a, uint64 b)
{
	int			blocks = part_blocks(s->max_distance);

	for (int block = 0; block < blocks; block++)
		if (block_of(a, blocks, block) == block_of(b, blocks, block))
			return part_of(a, blocks, block, s->parts) == s->part;
	return false;
}

PG_FUNCTION_INFO_V1(simhash_part_pairs_final);

/*
 * The pairs of the part's rows within max_distance whose first shared block is this
 * part's, as a flat bigint[] of (id1, id2, distance) triples, id1 < id2; NULL for none.
 */
Datum
simhash_part_pairs_final(PG_FUNCTION_ARGS)
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
	Datum	   *out;
	size_t		nout = 0;
	size_t		out_capacity = 3 * 1024;

	if (s == NULL || s->n < 2)
		PG_RETURN_NULL();
	unique_rows(s);
	simhash_check_status(simhash_pair_plan_init(&plan, s->n, s->max_distance, errbuf, sizeof(errbuf)),
						 errbuf);
	simhash_pair_plan_shape(&plan, &tables, NULL, NULL);
	simhash_check_status(simhash_pair_workspace_bytes(&plan, s->n, 0, tables, &bytes, errbuf,
													  sizeof(errbuf)), errbuf);
	workspace = MemoryContextAllocHuge(CurrentMemoryContext, bytes);
	simhash_check_status(simhash_pair_iter_begin(&iter, &plan, s->fps, s->n, 0, tables,
												 workspace, bytes, errbuf, sizeof(errbuf)), errbuf);
	out = palloc(out_capacity * sizeof(Datum));
	while (!finished)
	{
		size_t		count;

		simhash_check_status(simhash_pair_iter_next(&iter, batch, PART_PAIRS_BATCH, PART_PAIRS_WORK,
													&count, &finished, errbuf, sizeof(errbuf)),
							 errbuf);
		CHECK_FOR_INTERRUPTS();
		for (size_t p = 0; p < count; p++)
		{
			size_t		i = batch[p].i;
			size_t		j = batch[p].j;

			if (!first_shared_block_here(s, s->fps[i], s->fps[j]))
				continue;
			if (nout + 3 > out_capacity)
			{
				out_capacity *= 2;
				out = repalloc_huge(out, out_capacity * sizeof(Datum));
			}
			out[nout++] = Int64GetDatum(Min(s->ids[i], s->ids[j]));
			out[nout++] = Int64GetDatum(Max(s->ids[i], s->ids[j]));
			out[nout++] = Int64GetDatum(batch[p].distance);
		}
	}
	pfree(workspace);
	if (nout == 0)
		PG_RETURN_NULL();
	PG_RETURN_ARRAYTYPE_P(construct_array(out, (int) nout, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}
