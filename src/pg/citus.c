/*
 * Citus's catalogs, read without its headers (see citus.h). A distributed table's rows
 * live in shards, tables named <table>_<shardid> on the workers; the coordinator holds an
 * empty "shell" table under the table's own name. Citus's catalogs live in pg_catalog:
 * pg_dist_partition (one row per Citus table: logicalrelid, partmethod), pg_dist_shard
 * (one row per shard: shardid, logicalrelid) and pg_dist_local_group (this node's group;
 * 0 on the coordinator). Shards are recognised as Citus's own RelationIsAKnownShard() does.
 */
#include "postgres.h"

#include <errno.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type_d.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "storage/proc.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "pg/citus.h"
#include "pg/compat.h"

bool
simhash_citus_installed(void)
{
	return OidIsValid(get_extension_oid("citus", true));
}

/*
 * Column value_col of the row of Citus catalog `catalog` (in pg_catalog) whose key_col
 * equals key (by eq), by a scan; false when the catalog, the columns or the row are missing
 * or the value is NULL.
 */
static bool
citus_catalog_value(const char *catalog, const char *key_col, RegProcedure eq, Datum key,
					const char *value_col, Datum *value)
{
	Oid			relid = get_relname_relid(catalog, PG_CATALOG_NAMESPACE);
	AttrNumber	key_att = OidIsValid(relid) ? get_attnum(relid, key_col) : InvalidAttrNumber;
	AttrNumber	value_att = OidIsValid(relid) ? get_attnum(relid, value_col) : InvalidAttrNumber;
	bool		found = false;
	Relation	rel;
	SysScanDesc scan;
	ScanKeyData skey;
	HeapTuple	tuple;

	if (key_att <= 0 || value_att <= 0)
		return false;
	rel = table_open(relid, AccessShareLock);
	ScanKeyInit(&skey, key_att, BTEqualStrategyNumber, eq, key);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 1, &skey);
	if ((tuple = systable_getnext(scan)) != NULL)
	{
		bool		isnull;

		*value = heap_getattr(tuple, value_att, RelationGetDescr(rel), &isnull);
		found = !isnull;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/* The partition method of a Citus table ('h', 'r', 'a', 'n'), or 0 for another table. */
char
simhash_citus_partition_method(Oid relid)
{
	Datum		method;

	return citus_catalog_value("pg_dist_partition", "logicalrelid", F_OIDEQ,
							   ObjectIdGetDatum(relid), "partmethod", &method)
		? DatumGetChar(method) : 0;
}

/*
 * Whether name is the name Citus gives the shard with suffix "_<shardid>" of table
 * `table`: table's name and the suffix, or, when that would not fit in a name, the start
 * of table's name, a hash and the suffix (Citus's AppendShardIdToName()).
 */
static bool
is_shard_name(const char *name, const char *table, const char *suffix)
{
	size_t		len;

	if (table == NULL)
		return false;
	len = strlen(table);
	if (len + strlen(suffix) < NAMEDATALEN)
		return strncmp(name, table, len) == 0 && strcmp(name + len, suffix) == 0;
	/* Shortened: compare a prefix that any shortening keeps. */
	return strncmp(name, table, Min(len, (size_t) 20)) == 0;
}

/* The distributed table relid is a shard of (same schema), or InvalidOid. */
Oid
simhash_citus_shard_of(Oid relid)
{
	char	   *name = get_rel_name(relid);
	char	   *digits = name ? strrchr(name, '_') : NULL;
	Datum		table;
	int64		shardid;
	char	   *end;

	if (digits == NULL || digits[1] == '\0' ||
		strspn(digits + 1, "0123456789") != strlen(digits + 1))
		return InvalidOid;
	errno = 0;
	shardid = strtoll(digits + 1, &end, 10);
	if (errno != 0 ||
		!citus_catalog_value("pg_dist_shard", "shardid", F_INT8EQ, Int64GetDatum(shardid),
							 "logicalrelid", &table) ||
		DatumGetObjectId(table) == relid ||
		get_rel_namespace(DatumGetObjectId(table)) != get_rel_namespace(relid) ||
		!is_shard_name(name, get_rel_name(DatumGetObjectId(table)), digits))
		return InvalidOid;
	return DatumGetObjectId(table);
}

bool
simhash_citus_is_distributed(Oid relid)
{
	char		method;

	if (!simhash_citus_installed())
		return false;
	method = simhash_citus_partition_method(relid);
	return method == 'h' || method == 'r' || method == 'a';
}

bool
simhash_citus_is_coordinator(void)
{
	Oid			relid;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		coordinator = true;

	if (!simhash_citus_installed())
		return true;
	relid = get_relname_relid("pg_dist_local_group", PG_CATALOG_NAMESPACE);
	if (!OidIsValid(relid) || get_attnum(relid, "groupid") <= 0)
		return true;
	rel = table_open(relid, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	if ((tuple = systable_getnext(scan)) != NULL)
	{
		bool		isnull;
		Datum		group = heap_getattr(tuple, get_attnum(relid, "groupid"),
										 RelationGetDescr(rel), &isnull);

		coordinator = isnull || DatumGetInt32(group) == 0;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return coordinator;
}

/*
 * The number of shards of Citus table relid and their rows, by their own statistics
 * (reltuples, read on the workers through run_command_on_shards); false when they cannot
 * be read. Remembered for the rest of the transaction: callers such as simhash_nearest
 * ask once per radius.
 */
bool
simhash_citus_shard_rows(Oid relid, double *shards, double *rows)
{
	static Oid	cached_relid = InvalidOid;
	static LocalTransactionId cached_lxid = InvalidLocalTransactionId;
	static double cached_shards;
	static double cached_rows;
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		args[1] = {ObjectIdGetDatum(relid)};
	bool		ok = false;

	if (cached_relid == relid && cached_lxid == SIMHASH_MY_LXID)
	{
		*shards = cached_shards;
		*rows = cached_rows;
		return true;
	}
	if (SPI_connect() != SPI_OK_CONNECT)
		return false;
	if (SPI_execute_with_args("SELECT pg_catalog.count(*)::pg_catalog.float8,"
							  " pg_catalog.sum(GREATEST(pg_catalog.float8in(pg_catalog.textout(result)), 0::pg_catalog.float8))"
							  " FROM pg_catalog.run_command_on_shards($1,"
							  " 'SELECT reltuples FROM pg_catalog.pg_class WHERE oid OPERATOR(pg_catalog.=) ''%s''::pg_catalog.regclass')"
							  " WHERE success",
							  1, argtypes, args, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		bool		shards_null;
		bool		rows_null;
		Datum		s = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &shards_null);
		Datum		r = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2, &rows_null);

		if (!shards_null && !rows_null && DatumGetFloat8(s) > 0)
		{
			*shards = DatumGetFloat8(s);
			*rows = DatumGetFloat8(r);
			ok = true;
		}
	}
	SPI_finish();
	if (ok)
	{
		cached_relid = relid;
		cached_lxid = SIMHASH_MY_LXID;
		cached_shards = *shards;
		cached_rows = *rows;
	}
	return ok;
}
