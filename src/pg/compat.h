/*
 * What differs between the PostgreSQL versions the glue compiles against (13 to 17): every
 * PG_VERSION_NUM test of the glue is here, so that the feature files read as code for the
 * newest API. scripts/check_pg_versions.sh compiles the glue against each version's
 * headers; only PostgreSQL 15 runs the tests here (see docs/testing.md).
 *
 * Some of the APIs we use came to older branches in a minor release, so the tests below
 * compare minor versions too (PG_VERSION_NUM is major * 10000 + minor).
 *
 * The replacements written here for what older versions lack would otherwise never run
 * in our tests: building with -DSIMHASH_FORCE_FALLBACKS (make clean; make PG_CPPFLAGS="-Isrc
 * -DSIMHASH_FORCE_FALLBACKS") uses them wherever the version at hand can run them too
 * (reading query rows through a cursor, the materialized-SRF set-up, the lock check), so
 * that the tests exercise them on PostgreSQL 15.
 */
#ifndef SIMHASH_PG_COMPAT_H
#define SIMHASH_PG_COMPAT_H

#include "postgres.h"

#include "fmgr.h"

#if PG_VERSION_NUM < 130000
#error "simhash needs PostgreSQL 13 or later"
#endif

/*
 * PostgreSQL 14 named the fmgroids.h macros after the functions' SQL names and arguments:
 * text(bpchar), the cast of char(n) to text, was F_RTRIM1 (after its C function) before.
 */
#if PG_VERSION_NUM < 140000
#define F_TEXT_BPCHAR F_RTRIM1
#endif

/* PostgreSQL 16 moved the varlena macros (VARDATA_ANY, VARSIZE_ANY_EXHDR) to varatt.h. */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * PostgreSQL 18 replaced the pg_attribute_noreturn() suffix with a pg_noreturn prefix;
 * SIMHASH_NORETURN goes before the declaration and works with both.
 */
#ifdef pg_noreturn
#define SIMHASH_NORETURN pg_noreturn
#else
#define SIMHASH_NORETURN pg_attribute_noreturn()
#endif

/*
 * The local transaction id of this backend: PostgreSQL 17 moved it into MyProc->vxid
 * (storage/proc.h).
 */
#if PG_VERSION_NUM >= 170000
#define SIMHASH_MY_LXID (MyProc->vxid.lxid)
#else
#define SIMHASH_MY_LXID (MyProc->lxid)
#endif

/*
 * The updates (inserts, deletes) a relation's table statistics count before they reach the
 * transaction's nesting levels (pgstat.h): PostgreSQL 16 renamed the fields of
 * PgStat_TableCounts.
 */
#if PG_VERSION_NUM >= 160000
#define SIMHASH_TABSTAT_UPDATED(st) ((st)->counts.tuples_updated)
#define SIMHASH_TABSTAT_INSERTED(st) ((st)->counts.tuples_inserted)
#define SIMHASH_TABSTAT_DELETED(st) ((st)->counts.tuples_deleted)
#else
#define SIMHASH_TABSTAT_UPDATED(st) ((st)->t_counts.t_tuples_updated)
#define SIMHASH_TABSTAT_INSERTED(st) ((st)->t_counts.t_tuples_inserted)
#define SIMHASH_TABSTAT_DELETED(st) ((st)->t_counts.t_tuples_deleted)
#endif

/*
 * Whether the current user owns (or is a member of the owner of) relation relid:
 * PostgreSQL 16 replaced pg_class_ownercheck() with object_ownercheck() (utils/acl.h,
 * catalog/pg_class.h).
 */
#if PG_VERSION_NUM >= 160000
#define simhash_relation_ownercheck(relid, roleid) \
	object_ownercheck(RelationRelationId, (relid), (roleid))
#else
#define simhash_relation_ownercheck(relid, roleid) pg_class_ownercheck((relid), (roleid))
#endif

/*
 * Sorts (utils/tuplesort.h): PostgreSQL 15 turned the last argument of tuplesort_begin_*
 * from "bool randomAccess" into option flags, and PostgreSQL 16 gave tuplesort_getdatum() a
 * "copy" argument (whether a by-reference value is copied out of the sort's memory; we only
 * sort bigints and read each one before fetching the next).
 */
#if PG_VERSION_NUM >= 150000
#define SIMHASH_TUPLESORT_NONE TUPLESORT_NONE
#else
#define SIMHASH_TUPLESORT_NONE false
#endif
#if PG_VERSION_NUM >= 160000
#define simhash_tuplesort_getdatum(state, forward, val, isnull) \
	tuplesort_getdatum((state), (forward), false, (val), (isnull), NULL)
#else
#define simhash_tuplesort_getdatum(state, forward, val, isnull) \
	tuplesort_getdatum((state), (forward), (val), (isnull), NULL)
#endif

/* PostgreSQL 14 gave pull_varnos() the PlannerInfo (optimizer/optimizer.h). */
#if PG_VERSION_NUM >= 140000
#define simhash_pull_varnos(root, node) pull_varnos((root), (node))
#else
#define simhash_pull_varnos(root, node) pull_varnos(node)
#endif

/*
 * SPI: SPI_prepare_extended() and SPI_execute_plan_extended(), which send the rows of a
 * query to our own DestReceiver, are PostgreSQL 14; their must_return_tuples option came
 * in 14.1. PostgreSQL 13 reads the rows through a cursor instead (pairs.c).
 */
#if PG_VERSION_NUM >= 140000 && !defined(SIMHASH_FORCE_FALLBACKS)
#define SIMHASH_HAVE_SPI_EXECUTE_EXTENDED 1
#endif
#if PG_VERSION_NUM >= 140001
#define SIMHASH_HAVE_SPI_MUST_RETURN_TUPLES 1
#endif

/*
 * A set-returning function in materialize mode: its tuplestore and tuple descriptor set
 * in fcinfo->resultinfo. InitMaterializedSRF() is PostgreSQL 15.1 (15.0 called it
 * SetSingleFuncCall()); before, simhash_pg.c does the same steps.
 */
#if PG_VERSION_NUM >= 150001 && !defined(SIMHASH_FORCE_FALLBACKS)
#include "funcapi.h"
#define simhash_init_materialized_srf(fcinfo) InitMaterializedSRF((fcinfo), 0)
#else
extern void simhash_init_materialized_srf(FunctionCallInfo fcinfo);
#endif

/*
 * The largest number of elements of an array (utils/array.h from 13.13, 14.10, 15.5 and
 * 16.1; private to the server before).
 */
#include "utils/array.h"
#include "utils/memutils.h"
#ifndef MaxArraySize
#define MaxArraySize ((Size) (MaxAllocSize / sizeof(Datum)))
#endif

/*
 * Whether this transaction holds a lock of mode lockmode or stronger on relation relid.
 * CheckRelationOidLockedByMe() came to 13.16, 14.13, 15.8 and 16.4 (and 17.0); before,
 * the same question is asked of the lock manager one mode at a time (the tables of the
 * dedupe trigger are never shared catalogs, so the lock tag names this database).
 * The betas of 17 before 17beta3 have neither and are not supported.
 */
#if ((PG_VERSION_NUM >= 130016 && PG_VERSION_NUM < 140000) || \
	 (PG_VERSION_NUM >= 140013 && PG_VERSION_NUM < 150000) || \
	 (PG_VERSION_NUM >= 150008 && PG_VERSION_NUM < 160000) || \
	 PG_VERSION_NUM >= 160004) && \
	!(defined(SIMHASH_FORCE_FALLBACKS) && PG_VERSION_NUM < 170000)
#include "storage/lmgr.h"
#define simhash_relation_locked_by_me(relid, lockmode) \
	CheckRelationOidLockedByMe((relid), (lockmode), true)
#else
#include "miscadmin.h"
#include "storage/lock.h"
static inline bool
simhash_relation_locked_by_me(Oid relid, LOCKMODE lockmode)
{
	LOCKTAG		tag;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
	for (LOCKMODE mode = lockmode; mode <= MaxLockMode; mode++)
		if (LockHeldByMe(&tag, mode))
			return true;
	return false;
}
#endif

#endif							/* SIMHASH_PG_COMPAT_H */
