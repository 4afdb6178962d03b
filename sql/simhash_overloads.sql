-- Planted overloads cannot run inside the extension's own calls (issue 21, finding 1).
--
-- A role that may create functions in the extension's schema (here public: the database
-- owner under PostgreSQL 15, anyone where public still grants CREATE to PUBLIC) plants
-- overloads of the extension's internal callees whose argument types match a caller's
-- value more exactly than the declared ones: the table's row type, varchar, char, a domain
-- over text, int4 and int2 and a domain in place of bigint, a shorter signature without
-- the defaulted arguments, and generic ones (record, anycompatible) that would make the
-- calls "not unique". Functions of the same names in pg_temp too. Each logs its use in
-- public.overload_hijacks and raises a WARNING; the count at the end must be 0, and the
-- planting role must still not be a superuser (each trap tries to make it one).
-- test/hostile/run.sh plants more kinds, for every function, under the whole suite.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

CREATE ROLE regress_simhash_planter;
CREATE ROLE regress_simhash_victim;
GRANT CREATE ON SCHEMA public TO regress_simhash_planter;
GRANT CREATE ON SCHEMA public TO regress_simhash_victim;

-- The tables the traps are typed after: a text column of each kind.
CREATE TABLE public.o_docs (id bigint PRIMARY KEY, body text, vbody varchar, cbody char(80),
                            fp bigint, lsh bigint[]);
INSERT INTO public.o_docs (id, body)
SELECT i, CASE WHEN i % 2 = 0 THEN 'permission is hereby granted free of charge to any person obtaining a copy of this software ' || (i / 2)
               ELSE 'this program is free software you can redistribute it and or modify it under the terms ' || (i / 2) END
FROM generate_series(1, 12) i;
UPDATE public.o_docs SET vbody = body, cbody = left(body, 80), fp = simhash(body), lsh = simhash_lsh(body);
SELECT count(*) AS indexes FROM simhash_create_index('public.o_docs', 'fp', 3);
GRANT SELECT ON public.o_docs TO PUBLIC;
CREATE DOMAIN public.o_text AS text;
CREATE DOMAIN public.o_int8 AS bigint;

SET ROLE regress_simhash_planter;
CREATE TABLE public.overload_hijacks (who name, what text);
GRANT INSERT ON public.overload_hijacks TO PUBLIC;
DO $plant$
DECLARE
    f record;
BEGIN
    FOR f IN SELECT * FROM (VALUES
            -- simhash_nearest, simhash_similar_nearest -> simhash_check_rows(rel, lim)
            ('simhash_check_rows', 'rel public.o_docs, lim integer', 'regclass', '''public.o_docs''::regclass'),
            ('simhash_check_rows', 'rel record, lim integer', 'regclass', '''public.o_docs''::regclass'),
            ('simhash_check_rows', 'rel anycompatible, lim integer', 'regclass', '''public.o_docs''::regclass'),
            -- simhash_similar_nearest and the trigger on a view -> simhash_jaccard(col, $1)
            ('simhash_jaccard', 'a varchar, b text', 'double precision', '1.0'),
            ('simhash_jaccard', 'a char, b text', 'double precision', '1.0'),
            ('simhash_jaccard', 'a public.o_text, b text', 'double precision', '1.0'),
            ('simhash_jaccard', 'a anycompatible, b anycompatible', 'double precision', '1.0'),
            -- simhash_df -> simhash_features(q.body, tokenizer, n)
            ('simhash_features', 'a varchar, b text, c integer, OUT feature bigint, OUT count bigint', 'SETOF record', NULL),
            ('simhash_features', 'a char, b text, c integer, OUT feature bigint, OUT count bigint', 'SETOF record', NULL),
            ('simhash_features', 'a text, b varchar, c integer, OUT feature bigint, OUT count bigint', 'SETOF record', NULL),
            -- the fingerprint helpers, with int4, int2 and a domain for bigint
            ('hamming', 'a integer, b bigint', 'integer', '0'),
            ('hamming', 'a bigint, b integer', 'integer', '0'),
            ('hamming', 'a smallint, b bigint', 'integer', '0'),
            ('hamming', 'a public.o_int8, b bigint', 'integer', '0'),
            ('simhash_near', 'a bigint, b integer, c integer', 'boolean', 'true'),
            ('simhash_near', 'a public.o_int8, b bigint, c integer', 'boolean', 'true'),
            ('simhash_block', 'a bigint, b smallint, c integer', 'integer', '0'),
            ('simhash_layout_blocks', 'a integer, b numeric', 'integer', '2'),
            ('simhash_check_column', 'a regclass, b text', 'smallint', '1'),
            -- simhash_create_index, simhash_create_index_statements -> simhash_index_layout
            ('simhash_index_layout', 'a regclass, b text, c integer, d integer, e boolean, OUT nsp name, OUT nblocks integer, OUT index_names text[]', 'record', NULL),
            ('simhash_index_layout', 'a regclass, b name, c integer, d integer, e text, OUT nsp name, OUT nblocks integer, OUT index_names text[]', 'record', NULL),
            ('simhash_index_layout', 'a regclass, b name, c integer, d integer, OUT nsp name, OUT nblocks integer, OUT index_names text[]', 'record', NULL),
            ('simhash_lsh', 'a varchar', 'bigint[]', '''{}''::bigint[]'),
            ('simhash_shingle_summary', 'a varchar, OUT digest bigint, OUT keys bigint[]', 'record', NULL),
            -- a shorter signature than the one with defaults: the call that leaves the
            -- defaulted arguments out would be "not unique"
            ('simhash', 'a text, b text, c integer, d text', 'bigint', '0'),
            ('simhash_pairs', 'a varchar, b integer, OUT id1 bigint, OUT id2 bigint, OUT distance integer', 'SETOF record', NULL))
            AS v (name, args, ret, result) LOOP
        -- (test/hostile/run.sh may have planted the same signature already: then its
        -- trap stands in for this one)
        BEGIN
        EXECUTE format($f$CREATE FUNCTION public.%I(%s) RETURNS %s LANGUAGE plpgsql AS $b$
            BEGIN
                RAISE WARNING 'hijacked: %s(%s) ran as %%', current_user;
                INSERT INTO public.overload_hijacks VALUES (current_user, '%s(%s)');
                BEGIN
                    ALTER ROLE regress_simhash_planter SUPERUSER;
                EXCEPTION WHEN insufficient_privilege THEN NULL;
                END;
                %s
            END $b$$f$, f.name, f.args, f.ret, f.name, f.args, f.name, f.args,
            CASE WHEN f.result IS NULL THEN 'RETURN;' ELSE 'RETURN ' || f.result || ';' END);
        EXCEPTION WHEN duplicate_function THEN NULL;
        END;
    END LOOP;
END
$plant$;
-- Functions in pg_temp are never looked up by name unless written pg_temp.name.
CREATE FUNCTION pg_temp.simhash_jaccard(a text, b text) RETURNS double precision
    LANGUAGE sql AS $$ INSERT INTO public.overload_hijacks VALUES (current_user, 'pg_temp.simhash_jaccard') RETURNING 1.0::float8 $$;
CREATE FUNCTION pg_temp.simhash_check_rows(rel regtype, lim integer) RETURNS regclass
    LANGUAGE sql AS $$ INSERT INTO public.overload_hijacks VALUES (current_user, 'pg_temp.simhash_check_rows') RETURNING 'public.o_docs'::regclass $$;
-- A view with the dedupe trigger with a threshold, over a varchar column.
CREATE TABLE public.o_vdocs (id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                             body varchar, lsh bigint[]);
CREATE INDEX ON public.o_vdocs USING gin (lsh);
CREATE VIEW public.o_vdocs_in AS SELECT * FROM public.o_vdocs;
CREATE TRIGGER o_vdocs_dedupe INSTEAD OF INSERT ON public.o_vdocs_in FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', '0.8', 'skip');
GRANT ALL ON public.o_vdocs, public.o_vdocs_in TO PUBLIC;
RESET ROLE;

-- As a superuser: every entry point with a call the traps were typed for.
SELECT (d.doc).id, d.distance FROM simhash_nearest(NULL::public.o_docs, 'fp', simhash('permission is hereby granted free of charge to any person obtaining a copy of this software 1'), 3) AS d
ORDER BY 2, 1;
SELECT (s.doc).id, round(s.similarity::numeric, 3) AS similarity
FROM simhash_similar_nearest(NULL::public.o_docs, 'vbody', 'lsh',
                             'permission is hereby granted free of charge to any person obtaining a copy of this software 1', 3) s;
SELECT (s.doc).id, round(s.similarity::numeric, 3) AS similarity
FROM simhash_similar_nearest(NULL::public.o_docs, 'cbody', 'lsh',
                             'permission is hereby granted free of charge to any person obtaining a copy of this software 1', 3) s;
SELECT count(*) AS features, max(docs) AS docs FROM simhash_df('SELECT vbody FROM public.o_docs');
SELECT count(*) AS features, max(docs) AS docs FROM simhash_df('SELECT cbody FROM public.o_docs');
SELECT count(*) AS pairs FROM simhash_similar_pairs('SELECT id, vbody FROM public.o_docs', 0.8);
SELECT count(*) AS pairs FROM simhash_similar_pairs('SELECT id, cbody FROM public.o_docs', 0.5);
SELECT count(*) AS clusters FROM simhash_similar_clusters('SELECT id, vbody FROM public.o_docs', 0.8);
SELECT count(*) AS indexes FROM simhash_create_index('public.o_docs', 'fp', 2);
SELECT count(*) AS statements FROM simhash_create_index_statements('public.o_docs', 'fp', 2);
SELECT block, rows FROM simhash_skew('public.o_docs', 'fp', 1) ORDER BY block LIMIT 2;
-- the trigger on the view: a superuser's plain INSERT, no simhash function called
INSERT INTO public.o_vdocs_in (body)
SELECT vbody FROM public.o_docs WHERE id <= 4 ORDER BY id;
INSERT INTO public.o_vdocs_in (body)
SELECT vbody || ' again' FROM public.o_docs WHERE id <= 4 ORDER BY id;
SELECT count(*) AS kept FROM public.o_vdocs;

-- As another role, on its own table: nothing of hers reaches the planter.
SET ROLE regress_simhash_victim;
CREATE TABLE public.o_private (id bigint PRIMARY KEY, body varchar, lsh bigint[]);
INSERT INTO public.o_private SELECT id, vbody, lsh FROM public.o_docs;
SELECT count(*) AS found FROM simhash_similar_nearest(NULL::public.o_private, 'body', 'lsh',
                             'this program is free software you can redistribute it and or modify it under the terms 1', 5);
SELECT count(*) AS found FROM simhash_nearest(NULL::public.o_private, 'id', 1, 1);
DROP TABLE public.o_private;
RESET ROLE;

-- Types too (finding 9): the functions that keep the caller's search_path (they run its
-- query) name pg_catalog's types, variables included, so a public.text domain whose CHECK
-- logs its use never runs inside them, even for a caller whose search_path puts public
-- before pg_catalog.
SET ROLE regress_simhash_planter;
CREATE FUNCTION public.o_text_check(v pg_catalog.text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    RAISE WARNING 'hijacked: the CHECK of domain public.text ran as %', current_user;
    INSERT INTO public.overload_hijacks VALUES (current_user, 'domain public.text');
    RETURN true;
END $$;
CREATE DOMAIN public.text AS pg_catalog.text CHECK (public.o_text_check(VALUE));
RESET ROLE;
SET search_path = public, pg_catalog;
SELECT count(*) AS features FROM simhash_df('SELECT vbody FROM public.o_docs');
SET work_mem = '64kB';
SELECT count(*) AS pairs FROM simhash_similar_pairs('SELECT id, vbody FROM public.o_docs', 0.8);
SELECT count(*) AS pairs FROM simhash_similar_pairs('SELECT id, vbody FROM public.o_docs', 0.5);
SELECT count(*) AS rows FROM simhash_similar_clusters('SELECT id, vbody FROM public.o_docs', 0.8);
RESET work_mem;
RESET search_path;
DROP DOMAIN public.text;
DROP FUNCTION public.o_text_check(pg_catalog.text);

-- None of the traps ran, and the planter is still not a superuser.
SELECT count(*) AS hijacks FROM public.overload_hijacks;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_simhash_planter';

-- The rule that makes this hold (docs/security.md, "Internal calls"): no function the
-- extension calls from SQL is polymorphic or takes a type a caller's value could have
-- instead of an exact one. Every function named schema-qualified in the install script's
-- SQL, with its argument types: none is polymorphic.
SELECT p.oid::regprocedure AS polymorphic_internal_callee
FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'simhash')
  AND EXISTS (SELECT FROM pg_proc caller JOIN pg_depend cd ON cd.objid = caller.oid
              WHERE cd.refobjid = d.refobjid AND cd.deptype = 'e'
                AND caller.prosrc LIKE '%public.' || p.proname || '(%')
  AND EXISTS (SELECT FROM unnest(p.proargtypes) t
              JOIN pg_type ty ON ty.oid = t WHERE ty.typtype = 'p')
ORDER BY 1;

DO $drop$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid FROM pg_proc p WHERE p.proowner = 'regress_simhash_planter'::regrole LOOP
        EXECUTE format('DROP FUNCTION %s', f);
    END LOOP;
END
$drop$;
DROP VIEW public.o_vdocs_in;
DROP TABLE public.o_vdocs, public.o_docs, public.overload_hijacks;
DROP DOMAIN public.o_text, public.o_int8;
REVOKE CREATE ON SCHEMA public FROM regress_simhash_planter, regress_simhash_victim;
DROP ROLE regress_simhash_planter;
DROP ROLE regress_simhash_victim;
