-- Every function of the extension: volatility, strictness, parallel safety, comment.
SELECT p.oid::regprocedure AS function,
       p.provolatile AS volatile,
       p.proisstrict AS strict,
       p.proparallel AS parallel,
       p.proleakproof AS leakproof,
       obj_description(p.oid, 'pg_proc') IS NOT NULL AS commented
FROM pg_depend d
JOIN pg_proc p ON p.oid = d.objid AND d.classid = 'pg_proc'::regclass
WHERE d.refclassid = 'pg_extension'::regclass
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'simhash')
ORDER BY 1::text;
