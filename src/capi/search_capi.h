/*
 * C ABI of near-duplicate search: block keys, probes, and the choice of probe radii
 * (src/core/blocks.hpp). Same rules as simhash_capi.h: noexcept, status plus a message in a
 * caller-owned buffer, no heap memory crossing.
 */
#ifndef SIMHASH_SEARCH_CAPI_H
#define SIMHASH_SEARCH_CAPI_H

#include "capi/simhash_capi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest number of blocks a layout may have; a block has at least 64 / this many bits. */
#define SIMHASH_MAX_BLOCKS 16

/* Value of block `block` (0-based) of a layout of `blocks` blocks. */
simhash_status simhash_block_value(uint64_t fp, int32_t blocks, int32_t block, uint32_t *value,
                                   char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/* Number of probes of block `block` at `radius` (0 for radius < 0, saturating). */
simhash_status simhash_block_probe_count(int32_t blocks, int32_t block, int32_t radius,
                                         uint64_t *count, char *errbuf,
                                         size_t errcap) SIMHASH_NOEXCEPT;

/*
 * Every value within `radius` bits of q's block `block`, ascending, into out[0..cap).
 * *count receives their number; SIMHASH_INVALID_ARGUMENT when it exceeds cap.
 */
simhash_status simhash_block_probes(uint64_t q, int32_t blocks, int32_t block, int32_t radius,
                                    uint32_t *out, size_t cap, size_t *count, char *errbuf,
                                    size_t errcap) SIMHASH_NOEXCEPT;

/* The cheapest probe radii for distance k (see plan_probes in core/blocks.hpp). */
typedef struct simhash_probe_plan {
  int32_t radius[SIMHASH_MAX_BLOCKS]; /* per block, -1: not probed */
  uint64_t probes;                    /* index descents */
  double candidates;                  /* expected rows fetched, random fingerprints */
  double cost;                        /* in units of one index descent */
  int32_t feasible;                   /* 0: the blocks present cannot cover k */
} simhash_probe_plan;

/*
 * present_mask: bit i set when block i has an index. rows: estimated table rows.
 * candidate_cost: what checking one candidate row costs, in index descents (about 1 when
 * the row is read from the table, much less when the index holds the fingerprint).
 */
simhash_status simhash_plan_probes(int32_t blocks, uint32_t present_mask, int32_t k, double rows,
                                   double candidate_cost, simhash_probe_plan *plan, char *errbuf,
                                   size_t errcap) SIMHASH_NOEXCEPT;

/* The number of blocks for a layout serving distances up to max_distance on ~rows rows. */
simhash_status simhash_choose_blocks(int32_t max_distance, double rows, int32_t *blocks,
                                     char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/* Most lock keys of one fingerprint (see core/locks.hpp). */
#define SIMHASH_MAX_LOCK_KEYS 160

/* Largest distance the lock keys serve: the largest k of the dedupe trigger and of a layout. */
#define SIMHASH_MAX_LOCK_DISTANCE 16

/*
 * The serialisation keys of fp for writers of near duplicates within k bits (0..16):
 * sorted, distinct, into out[0..cap); *count receives their number.
 */
simhash_status simhash_lock_keys(uint64_t fp, int32_t k, uint32_t *out, size_t cap, size_t *count,
                                 char *errbuf, size_t errcap) SIMHASH_NOEXCEPT;

/* The most lock keys of a fingerprint at distance k (0..16) into *bound. */
simhash_status simhash_lock_key_bound(int32_t k, uint64_t *bound, char *errbuf,
                                      size_t errcap) SIMHASH_NOEXCEPT;

/* What a row's lock keys are keyed with: its table (OID) and the database's secret. */
typedef struct simhash_lock_secret {
  uint32_t table;
  uint64_t k0;
  uint64_t k1;
} simhash_lock_secret;

/*
 * The lock keys a row of the dedupe trigger takes under distance k (0..16): those of its
 * fingerprint fp, keyed with the secret (see simhash_key_lock_keys), ascending and
 * distinct, into out[0..cap); *count receives their number.
 */
simhash_status simhash_row_lock_keys(uint64_t fp, int32_t k, const simhash_lock_secret *secret,
                                     uint32_t *out, size_t cap, size_t *count, char *errbuf,
                                     size_t errcap) SIMHASH_NOEXCEPT;

/*
 * The lock keys a row takes under a threshold: its LSH keys lsh[0..n), each folded to 32
 * bits (rows that share an LSH key share a lock key), keyed, ascending and distinct, into
 * out[0..n); returns their number.
 */
size_t simhash_lsh_row_lock_keys(const int64_t *lsh, size_t n, const simhash_lock_secret *secret,
                                 uint32_t *out) SIMHASH_NOEXCEPT;

/* Sorts keys[0..n) and drops repeats (a statement's lock keys); returns how many are left. */
size_t simhash_sort_distinct_keys(uint32_t *keys, size_t n) SIMHASH_NOEXCEPT;

/*
 * Keys the lock keys keys[0..n) of one table (its OID) with a secret (k0, k1), in place, by
 * SipHash-2-4 (src/core/siphash.hpp): every role can read lock keys in pg_locks, and a
 * key that is a plain function of a fingerprint would tell a row's fingerprint (and so
 * its text, to whoever can guess it) before the row is even committed. Equal keys stay
 * equal; the order does not (sort again).
 */
void simhash_key_lock_keys(uint32_t *keys, size_t n, uint32_t table, uint64_t k0,
                           uint64_t k1) SIMHASH_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* SIMHASH_SEARCH_CAPI_H */
