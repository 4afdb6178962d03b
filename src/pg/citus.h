/*
 * What the glue needs to know about Citus (src/pg/citus.c), found in Citus's catalogs
 * without its headers: whether a table is distributed, whether a relation is one of its
 * shards, whether this node is the coordinator.
 */
#ifndef SIMHASH_PG_CITUS_H
#define SIMHASH_PG_CITUS_H

#include "postgres.h"

/* Whether the citus extension is installed in this database. */
extern bool simhash_citus_installed(void);

/*
 * The partition method of Citus table relid: 'h' (hash-distributed), 'r' (range), 'a'
 * (append), 'n' (reference or single-shard: every copy holds all rows); 0 for a table
 * Citus does not manage (or when Citus is not installed).
 */
extern char simhash_citus_partition_method(Oid relid);

/* Whether relid's rows are spread over shards on several nodes ('h', 'r' or 'a'). */
extern bool simhash_citus_is_distributed(Oid relid);

/* The Citus table that relation relid is a shard of (same schema), or InvalidOid. */
extern Oid	simhash_citus_shard_of(Oid relid);

/* Whether this node is Citus's coordinator (group 0), or Citus is not installed. */
extern bool simhash_citus_is_coordinator(void);

/*
 * The number of shards of Citus table relid and their rows, by the shards' own statistics
 * (read on the workers); false when they cannot be read. Cached for the transaction.
 */
extern bool simhash_citus_shard_rows(Oid relid, double *shards, double *rows);

#endif							/* SIMHASH_PG_CITUS_H */
