/*
 * The simhash_layouts catalog: which block-index layout simhash_create_index made for a
 * fingerprint column (table, column, largest distance served, number of blocks).
 *
 * Security. Everyone may read the table; nobody but its owner (the superuser who created
 * the extension, or the bootstrap superuser after a trusted install) holds a write
 * privilege on it. Table owners record and forget the layouts of
 * their own tables through simhash_layout_record() and simhash_layout_forget(), which check
 * ownership as the caller and then write as the catalog's owner. Granting INSERT, UPDATE or
 * DELETE to PUBLIC instead (guarded by row-level security) let any role LOCK the table in
 * ACCESS EXCLUSIVE mode and hang every DROP TABLE of the database in the cleanup event
 * trigger.
 *
 * Every statement run here is immune to the caller's search_path: the dedupe trigger reads
 * the catalog with a plain heap scan (no SQL is parsed), and the writes parse their SQL with
 * search_path pinned to pg_catalog, pg_temp, schema-qualified names and operators. An
 * operator or function planted in a schema on the caller's search_path (such as public)
 * would otherwise match more exactly than the built-in one and run with the caller's
 * rights -- a superuser's, when one inserts into a table with the dedupe trigger.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "capi/search_capi.h"
#include "pg/compat.h"
#include "pg/layouts.h"

#define LAYOUTS_TABLE "simhash_layouts"

/* The catalog of the extension installed in schema nsp; raises an error without one. */
static Oid
layouts_relid(Oid nsp)
{
	Oid			relid = get_relname_relid(LAYOUTS_TABLE, nsp);

	if (!OidIsValid(relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("simhash: table %s.%s does not exist", get_namespace_name(nsp),
						LAYOUTS_TABLE)));
	return relid;
}

/* The attribute number of a column of the catalog. */
static AttrNumber
layouts_column(Relation rel, const char *name)
{
	AttrNumber	attno = get_attnum(RelationGetRelid(rel), name);

	if (attno <= 0)
		elog(ERROR, "simhash: column %s of %s is missing", name, LAYOUTS_TABLE);
	return attno;
}

bool
simhash_layout_lookup(Oid nsp, Oid relid, const char *col, int *max_distance, int *blocks)
{
	Relation	rel = table_open(layouts_relid(nsp), AccessShareLock);
	AttrNumber	tbl_attno = layouts_column(rel, "tbl");
	AttrNumber	col_attno = layouts_column(rel, "col");
	AttrNumber	distance_attno = layouts_column(rel, "max_distance");
	AttrNumber	blocks_attno = layouts_column(rel, "blocks");
	NameData	colname;
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tuple;
	bool		found = false;

	namestrcpy(&colname, col);
	ScanKeyInit(&keys[0], tbl_attno, BTEqualStrategyNumber, F_OIDEQ, ObjectIdGetDatum(relid));
	ScanKeyInit(&keys[1], col_attno, BTEqualStrategyNumber, F_NAMEEQ, NameGetDatum(&colname));
	/* A plain heap scan (the table holds one row per indexed column): no SQL, no operators. */
	scan = systable_beginscan(rel, InvalidOid, false, GetActiveSnapshot(), 2, keys);
	if (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		TupleDesc	desc = RelationGetDescr(rel);
		bool		isnull;
		Datum		d;

		d = heap_getattr(tuple, distance_attno, desc, &isnull);
		*max_distance = isnull ? -1 : DatumGetInt32(d);
		d = heap_getattr(tuple, blocks_attno, desc, &isnull);
		*blocks = isnull ? 0 : DatumGetInt32(d);
		found = true;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * Raises an error unless the current user owns (or is a member of the owner of) table
 * relid and col is one of its columns.
 */
static void
check_owned_column(Oid relid, const char *col)
{
	char	   *relname = get_rel_name(relid);

	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("simhash: relation with OID %u does not exist", relid)));
	if (!simhash_relation_ownercheck(relid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, get_relkind_objtype(get_rel_relkind(relid)), relname);
	if (get_attnum(relid, col) <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("simhash: column %s of %s does not exist", quote_identifier(col),
						quote_identifier(relname))));
}

/* The owner of relation relid (which exists). */
static Oid
relation_owner(Oid relid)
{
	HeapTuple	classtup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner;

	if (!HeapTupleIsValid(classtup))
		elog(ERROR, "simhash: cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(classtup))->relowner;
	ReleaseSysCache(classtup);
	return owner;
}

/*
 * Raises an error unless column col of relation relid is a fingerprint column, as
 * simhash_check_column() says: a bigint column of a table, partitioned table or
 * materialized view. Written in C, not as a call of that SQL function: no name is resolved.
 */
static void
check_fingerprint_column(Oid relid, const char *col)
{
	char		relkind = get_rel_relkind(relid);
	HeapTuple	atttup;
	Oid			type;

	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE &&
		relkind != RELKIND_MATVIEW)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("simhash: %s is not a table or materialized view",
						quote_identifier(get_rel_name(relid)))));
	atttup = SearchSysCacheAttName(relid, col);
	if (!HeapTupleIsValid(atttup))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("simhash: column %s of %s does not exist", quote_identifier(col),
						quote_identifier(get_rel_name(relid)))));
	type = ((Form_pg_attribute) GETSTRUCT(atttup))->atttypid;
	ReleaseSysCache(atttup);
	if (type != INT8OID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("simhash: column %s of %s is of type %s, not bigint", quote_identifier(col),
						quote_identifier(get_rel_name(relid)), format_type_be(type)),
				 errdetail("Only fingerprint columns have a layout.")));
}

/*
 * Runs one statement on the catalog of schema nsp as the catalog's owner, with search_path
 * pinned to pg_catalog, pg_temp. The caller has checked that the current user may make
 * this change. Returns the number of rows processed; with a statement that returns rows,
 * the first column of the first row (a bigint) in *result when result is not NULL.
 */
static uint64
run_as_owner(Oid nsp, const char *statement_fmt, int nargs, Oid *argtypes, Datum *values,
			 int64 *result)
{
	Oid			relid = layouts_relid(nsp);
	Oid			owner;
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	char	   *sql;
	int			rc;
	uint64		processed;

	owner = relation_owner(relid);

	/* Every %s (or %1$s) of the statement is the catalog's qualified name. */
	sql = psprintf(statement_fmt, quote_qualified_identifier(get_namespace_name(nsp), LAYOUTS_TABLE));

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(owner, save_sec_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "simhash: SPI_connect failed");
	rc = SPI_execute_with_args(sql, nargs, argtypes, values, NULL, false, 0);
	if (rc < 0)
		elog(ERROR, "simhash: writing %s failed: %s", LAYOUTS_TABLE, SPI_result_code_string(rc));
	processed = SPI_processed;
	if (result != NULL)
	{
		bool		isnull = true;
		Datum		d = (Datum) 0;

		if (SPI_tuptable != NULL && SPI_processed > 0)
			d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
		*result = isnull ? 0 : DatumGetInt64(d);
	}
	SPI_finish();

	/* On an error, the transaction's abort restores the user and the setting. */
	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	return processed;
}

/* The schema of the extension: the schema of the SQL function being called. */
static Oid
extension_schema(FunctionCallInfo fcinfo)
{
	return get_func_namespace(fcinfo->flinfo->fn_oid);
}

PG_FUNCTION_INFO_V1(simhash_layout_record);

/*
 * simhash_layout_record(tbl regclass, col name, max_distance int, blocks int) -> void:
 * records (or replaces) the layout of tbl.col, a bigint column. Only the table's owners
 * may, and the table's owner may have at most SIMHASH_MAX_LAYOUTS_PER_ROLE layouts (54000
 * past them). Its layouts of tables or columns since gone are forgotten first: temporary
 * tables end with their session without the sql_drop event that forgets the others.
 */
Datum
simhash_layout_record(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Name		col = PG_GETARG_NAME(1);
	int32		max_distance = PG_GETARG_INT32(2);
	int32		blocks = PG_GETARG_INT32(3);
	Oid			argtypes[4] = {REGCLASSOID, NAMEOID, INT4OID, INT4OID};
	Datum		values[4];
	Oid			nsp = extension_schema(fcinfo);
	Oid			owner;
	int64		others = 0;

	check_owned_column(relid, NameStr(*col));
	check_fingerprint_column(relid, NameStr(*col));
	if (max_distance < 0 || max_distance > SIMHASH_MAX_LOCK_DISTANCE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash: max_distance must be between 0 and %d, got %d",
						SIMHASH_MAX_LOCK_DISTANCE, max_distance)));
	if (blocks < 2 || blocks > SIMHASH_MAX_BLOCKS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("simhash: blocks must be between 2 and %d, got %d",
						SIMHASH_MAX_BLOCKS, blocks)));

	/*
	 * The cap: the rows charged to the table's owner, but for the one this call replaces.
	 * Both statements read that role's rows alone, through the index on owner. (Concurrent
	 * calls for one role may each pass the count before the others insert.)
	 */
	owner = relation_owner(relid);
	{
		Oid			types[3] = {OIDOID, REGCLASSOID, NAMEOID};
		Datum		args[3] = {ObjectIdGetDatum(owner), ObjectIdGetDatum(relid), NameGetDatum(col)};

		(void) run_as_owner(nsp,
							"DELETE FROM %1$s AS l WHERE l.ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
							"SELECT x.ctid FROM %1$s AS x WHERE x.owner OPERATOR(pg_catalog.=) $1 "
							"AND NOT EXISTS (SELECT FROM pg_catalog.pg_attribute a "
							"WHERE a.attrelid OPERATOR(pg_catalog.=) x.tbl "
							"AND a.attname OPERATOR(pg_catalog.=) x.col AND NOT a.attisdropped) "
							"FOR UPDATE SKIP LOCKED))",
							1, types, args, NULL);
		(void) run_as_owner(nsp,
							"SELECT pg_catalog.count(*) FROM %1$s AS l "
							"WHERE l.owner OPERATOR(pg_catalog.=) $1 "
							"AND NOT (l.tbl OPERATOR(pg_catalog.=) $2 AND l.col OPERATOR(pg_catalog.=) $3)",
							3, types, args, &others);
	}
	if (others >= SIMHASH_MAX_LAYOUTS_PER_ROLE)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("simhash: role %s already has %lld recorded layouts, the most one role may have is %d",
						quote_identifier(GetUserNameFromId(owner, false)), (long long) others,
						SIMHASH_MAX_LAYOUTS_PER_ROLE),
				 errhint("Drop the block indexes of columns no longer searched with simhash_drop_index().")));

	values[0] = ObjectIdGetDatum(relid);
	values[1] = NameGetDatum(col);
	values[2] = Int32GetDatum(max_distance);
	values[3] = Int32GetDatum(blocks);
	(void) run_as_owner(nsp,
						"INSERT INTO %s AS l (tbl, col, max_distance, blocks) VALUES ($1, $2, $3, $4) "
						"ON CONFLICT (tbl, col) DO UPDATE SET max_distance = EXCLUDED.max_distance, "
						"blocks = EXCLUDED.blocks, created = pg_catalog.now(), owner = EXCLUDED.owner",
						4, argtypes, values, NULL);
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(simhash_layout_forget);

/*
 * simhash_layout_forget(tbl regclass, col name) -> boolean: forgets the layout of tbl.col;
 * true when there was one. Only the table's owners may.
 */
Datum
simhash_layout_forget(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Name		col = PG_GETARG_NAME(1);
	Oid			argtypes[2] = {REGCLASSOID, NAMEOID};
	Datum		values[2];

	check_owned_column(relid, NameStr(*col));
	values[0] = ObjectIdGetDatum(relid);
	values[1] = NameGetDatum(col);
	PG_RETURN_BOOL(run_as_owner(extension_schema(fcinfo),
								"DELETE FROM %s AS l WHERE l.tbl OPERATOR(pg_catalog.=) $1 "
								"AND l.col OPERATOR(pg_catalog.=) $2",
								2, argtypes, values, NULL) > 0);
}
