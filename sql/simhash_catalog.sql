-- Every function of the extension: volatility, strictness, parallel safety, leakproofness,
-- security definer, comment.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
SELECT p.oid::regprocedure AS function,
       p.provolatile AS volatile,
       p.proisstrict AS strict,
       p.proparallel AS parallel,
       p.proleakproof AS leakproof,
       p.prosecdef AS secdef,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented
FROM pg_depend d
JOIN pg_proc p ON p.oid = d.objid AND d.classid = 'pg_proc'::regclass
WHERE d.refclassid = 'pg_extension'::regclass
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'simhash')
ORDER BY p.oid::regprocedure::text;

-- Every table of the extension is dumped by pg_dump with the users' data.
SELECT c.oid::regclass AS config_table
FROM pg_extension e, unnest(e.extconfig) AS c(oid)
WHERE e.extname = 'simhash' ORDER BY 1::text;
