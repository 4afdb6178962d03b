/*
 * The simhash_layouts catalog (src/pg/layouts.c): the block-index layout recorded for a
 * fingerprint column by simhash_create_index.
 */
#ifndef SIMHASH_PG_LAYOUTS_H
#define SIMHASH_PG_LAYOUTS_H

#include "postgres.h"

/*
 * The most layouts one role may have recorded (rows charged to it, those of tables since
 * gone included): simhash_layout_record refuses more with 54000.
 */
#define SIMHASH_MAX_LAYOUTS_PER_ROLE 1000

/*
 * The layout recorded for column col of relation relid in the catalog of the extension
 * installed in schema nsp: true and its largest distance and number of blocks, or false
 * when there is none. Parses no SQL, so the caller's search_path cannot change it.
 */
extern bool simhash_layout_lookup(Oid nsp, Oid relid, const char *col, int *max_distance,
								  int *blocks);

#endif							/* SIMHASH_PG_LAYOUTS_H */
