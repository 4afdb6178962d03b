/*
 * The C ABI of all near-duplicate pairs and clusters (src/core/near_pairs.hpp,
 * src/core/clusters.hpp), under the rules of simhash_capi.h: noexcept, a status plus a
 * message in the caller's buffer, and no heap memory crossing the line. The caller owns
 * every array and every state object; the core never allocates here and never calls back,
 * so the caller may check for interrupts and report progress between calls, and an error
 * that unwinds the caller between calls leaks nothing (there is nothing to free).
 *
 * All pairs, resumably:
 *   simhash_pair_plan_init()       cut the 64 bits into blocks for n rows and distance k
 *   simhash_pair_workspace_bytes() how much workspace a finder over n rows needs
 *   simhash_pair_iter_begin()      start over caller arrays of fingerprints
 *   simhash_pair_iter_next()       a bounded amount of work; pairs into a caller buffer
 * A finder can be restricted to a range of tables: with simhash_pair_table_keys() a caller
 * that cannot hold every row at once partitions the rows of one table by key and runs one
 * finder per partition (rows with equal keys land in the same partition).
 *
 * Clusters: a union-find over one uint32 per row (simhash_clusters_init / _unite /
 * _label), then each row's cluster (simhash_clusters_lookup) and each cluster's
 * representative, the member with the smallest id (simhash_clusters_collect).
 */
#ifndef SIMHASH_PAIRS_CAPI_H
#define SIMHASH_PAIRS_CAPI_H

#include <stddef.h>
#include <stdint.h>

#include "capi/simhash_capi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest max_distance supported. */
#define SIMHASH_MAX_PAIR_DISTANCE 16

/* Largest number of rows simhash_clusters_init() accepts (2^31 - 1). */
#define SIMHASH_MAX_CLUSTER_ROWS 2147483647U

/* simhash_clusters_lookup() of a row that has no near duplicate. */
#define SIMHASH_NO_CLUSTER 0xFFFFFFFFU

/* A near pair: row numbers i < j (positions in the arrays given) and their distance. */
typedef struct simhash_pair {
  uint32_t i;
  uint32_t j;
  int32_t distance;
} simhash_pair;

/* A block layout; fixed size, plain data, copy it freely. */
#define SIMHASH_PAIR_PLAN_WORDS 72
typedef struct simhash_pair_plan {
  uint64_t words[SIMHASH_PAIR_PLAN_WORDS];
} simhash_pair_plan;

/* A finder's state; fixed size, plain data. */
#define SIMHASH_PAIR_ITER_WORDS 128
typedef struct simhash_pair_iter {
  uint64_t words[SIMHASH_PAIR_ITER_WORDS];
} simhash_pair_iter;

/* A cluster's representative: its smallest id and that row's fingerprint. */
typedef struct simhash_cluster_rep {
  int64_t id;
  uint64_t fp;
} simhash_cluster_rep;

/*
 * The layout for `rows` fingerprints (the whole input, also when it is processed in
 * partitions) and pairs within max_distance bits. SIMHASH_INVALID_ARGUMENT when
 * max_distance is outside 0..SIMHASH_MAX_PAIR_DISTANCE.
 */
simhash_status simhash_pair_plan_init(simhash_pair_plan *plan, uint64_t rows, int32_t max_distance,
                                      char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/* Number of tables of a plan, blocks the 64 bits are cut into, and blocks that must agree. */
void simhash_pair_plan_shape(const simhash_pair_plan *plan, uint32_t *tables, int32_t *blocks,
                             int32_t *agree) SIMHASH_NOEXCEPT;

/* Width in bits of table t's key (0 when t is out of range). */
int32_t simhash_pair_table_key_bits(const simhash_pair_plan *plan, uint32_t table) SIMHASH_NOEXCEPT;

/* keys[i] = table t's key of fps[i] (key_bits wide). */
simhash_status simhash_pair_table_keys(const simhash_pair_plan *plan, uint32_t table,
                                       const uint64_t *fps, size_t n, uint64_t *keys, char *errbuf,
                                       size_t errcap) SIMHASH_NOEXCEPT;

/*
 * Bytes of workspace a finder over `rows` fingerprints and tables [table_begin, table_end)
 * needs: 16 per row plus 4 per bucket of a counting sort (at most 2 per row), so at
 * most 24 bytes a row. SIMHASH_INVALID_ARGUMENT for a bad range or more than UINT32_MAX rows.
 */
simhash_status simhash_pair_workspace_bytes(const simhash_pair_plan *plan, size_t rows,
                                            uint32_t table_begin, uint32_t table_end, size_t *bytes,
                                            char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/*
 * Starts a finder over fps[0..rows) and tables [table_begin, table_end). fps and the
 * workspace (8-byte aligned) must stay valid and unchanged until the finder is done.
 */
simhash_status simhash_pair_iter_begin(simhash_pair_iter *iter, const simhash_pair_plan *plan,
                                       const uint64_t *fps, size_t rows, uint32_t table_begin,
                                       uint32_t table_end, void *workspace, size_t workspace_bytes,
                                       char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/*
 * Writes up to `capacity` pairs into out, *count of them, after about `work` units of work
 * at most (a comparison, or the bucketing of one row into a table; bucketing a table is
 * never split). *finished becomes 1 once every pair has been written.
 */
simhash_status simhash_pair_iter_next(simhash_pair_iter *iter, simhash_pair *out, size_t capacity,
                                      size_t work, size_t *count, int32_t *finished, char *errbuf,
                                      size_t errcap) SIMHASH_NOEXCEPT;

/* Progress: the table being processed and the fraction of it done (0..1). */
void simhash_pair_iter_progress(const simhash_pair_iter *iter, uint32_t *table,
                                double *fraction) SIMHASH_NOEXCEPT;

/* Bytes of workspace simhash_find_duplicate_id() needs for n ids (16 per id + 8 kB). */
size_t simhash_duplicate_id_workspace_bytes(size_t n) SIMHASH_NOEXCEPT;

/*
 * Looks for an id that appears twice in ids[0..n): *found = 1 and *duplicate = the
 * smallest such id, or *found = 0. Does not change ids.
 */
simhash_status simhash_find_duplicate_id(const int64_t *ids, size_t n, void *workspace,
                                         size_t workspace_bytes, int32_t *found, int64_t *duplicate,
                                         char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/* Every row alone: parent[i] = i. SIMHASH_INVALID_ARGUMENT above SIMHASH_MAX_CLUSTER_ROWS. */
simhash_status simhash_clusters_init(uint32_t *parent, size_t n, char *errbuf,
                                     size_t errcap) SIMHASH_NOEXCEPT;

/*
 * Merges the clusters of each pair. With row_of == NULL a pair's i and j are rows of the
 * union-find; otherwise its rows are row_of[i] and row_of[j] (a partition's local numbers
 * mapped back to whole-input rows).
 */
simhash_status simhash_clusters_unite(uint32_t *parent, size_t n, const simhash_pair *pairs,
                                      size_t count, const uint64_t *row_of, char *errbuf,
                                      size_t errcap) SIMHASH_NOEXCEPT;

/*
 * After the last unite: rewrites parent[] into labels in place and sets *clusters to the
 * number of clusters of two or more rows. Only simhash_clusters_lookup() and
 * simhash_clusters_collect() may use the array afterwards.
 */
simhash_status simhash_clusters_label(uint32_t *parent, size_t n, size_t *clusters, char *errbuf,
                                      size_t errcap) SIMHASH_NOEXCEPT;

/* cluster_out[r] = cluster of row first + r (0..clusters-1), or SIMHASH_NO_CLUSTER. */
simhash_status simhash_clusters_lookup(const uint32_t *labels, size_t n, size_t first, size_t count,
                                       uint32_t *cluster_out, char *errbuf,
                                       size_t errcap) SIMHASH_NOEXCEPT;

/*
 * Takes rows first..first+count-1, with ids[r] and fps[r] for row first + r, into their
 * clusters' representatives. With first == 0 the representatives are reset first, so a
 * pass over all rows in order, in batches, leaves each cluster's smallest id in reps[].
 */
simhash_status simhash_clusters_collect(const uint32_t *labels, size_t n, size_t first,
                                        const int64_t *ids, const uint64_t *fps, size_t count,
                                        simhash_cluster_rep *reps, size_t clusters, char *errbuf,
                                        size_t errcap) SIMHASH_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* SIMHASH_PAIRS_CAPI_H */
