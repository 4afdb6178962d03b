-- Hostile objects on the search_path cannot run inside the extension's own queries.
--
-- A role with CREATE on public plants operators and functions that match the argument types
-- of the extension's internal queries more exactly than the built-in ones (regclass = regclass,
-- oid <> integer, quote_ident(name), ...), and temporary tables that shadow catalogs. Every
-- entry point is then exercised (the similarity functions and the trigger with a threshold
-- too), as a superuser and as that role. Each planted object logs its
-- use in public.hijacks and raises a WARNING, so a hijack shows both in the output and in the
-- final count, which must be 0. (Before this test existed, the dedupe trigger's layout query
-- ran a planted `=` as the superuser who inserted the row.)
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

CREATE ROLE regress_simhash_mallory;
GRANT CREATE ON SCHEMA public TO regress_simhash_mallory;
SET ROLE regress_simhash_mallory;
CREATE TABLE public.hijacks (who name, what text);
GRANT INSERT ON public.hijacks TO PUBLIC;

-- Operators: for each pair of argument types, = <> < > <= >= that log, then compare as the
-- built-in operator would (after casting both sides to the third type).
DO $plant$
DECLARE
    t record;
    op record;
    fn text;
    n integer := 0;
BEGIN
    FOR t IN SELECT * FROM (VALUES
            ('regclass', 'regclass', 'oid'), ('oid', 'regclass', 'oid'), ('regclass', 'oid', 'oid'),
            ('regprocedure', 'oid', 'oid'), ('oid', 'regprocedure', 'oid'),
            ('regtype', 'regtype', 'oid'), ('oid', 'regtype', 'oid'), ('regtype', 'oid', 'oid'),
            ('oid', 'integer', 'oid'), ('integer', 'oid', 'oid'), ('regclass', 'integer', 'oid'),
            ('name', 'text', 'text'), ('text', 'name', 'text'), ('"char"', 'text', 'text'))
            AS v (l, r, c) LOOP
        FOR op IN SELECT * FROM (VALUES ('=', 'eq'), ('<>', 'ne'), ('<', 'lt'), ('>', 'gt'),
                                        ('<=', 'le'), ('>=', 'ge')) AS o (sym, nm) LOOP
            n := n + 1;
            fn := format('public.evil_%s_%s', op.nm, n);
            EXECUTE format($f$CREATE FUNCTION %s(a %s, b %s) RETURNS boolean LANGUAGE plpgsql AS $b$
                BEGIN
                    RAISE WARNING 'hijacked: operator %s(%s, %s) ran as %%', current_user;
                    INSERT INTO public.hijacks VALUES (current_user, '%s(%s, %s)');
                    RETURN a::%s OPERATOR(pg_catalog.%s) b::%s;
                END $b$$f$, fn, t.l, t.r, op.sym, t.l, t.r, op.sym, t.l, t.r, t.c, op.sym, t.c);
            EXECUTE format('CREATE OPERATOR public.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = %s)',
                           op.sym, t.l, t.r, fn);
        END LOOP;
    END LOOP;
END
$plant$;

-- && on bigint[] (the LSH keys' overlap), exactly as the built-in one matches it.
CREATE FUNCTION public.evil_overlap(a bigint[], b bigint[]) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    RAISE WARNING 'hijacked: &&(bigint[], bigint[]) ran as %', current_user;
    INSERT INTO public.hijacks VALUES (current_user, '&&(bigint[], bigint[])');
    RETURN a OPERATOR(pg_catalog.&&) b;
END $$;
CREATE OPERATOR public.&& (LEFTARG = bigint[], RIGHTARG = bigint[], FUNCTION = public.evil_overlap);

-- || on names, and functions that take a name where the built-in one takes text.
CREATE FUNCTION public.evil_cat(a name, b text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    RAISE WARNING 'hijacked: ||(name, text) ran as %', current_user;
    INSERT INTO public.hijacks VALUES (current_user, '||(name, text)');
    RETURN pg_catalog.textcat(a::text, b);
END $$;
CREATE OPERATOR public.|| (LEFTARG = name, RIGHTARG = text, FUNCTION = public.evil_cat);
DO $plant$
DECLARE
    f record;
BEGIN
    FOR f IN SELECT * FROM (VALUES
            ('quote_ident', 'a name', 'text', 'pg_catalog.quote_ident(a::text)'),
            ('octet_length', 'a name', 'integer', 'pg_catalog.octet_length(a::text)'),
            ('length', 'a name', 'integer', 'pg_catalog.length(a::text)'),
            ('lower', 'a name', 'text', 'pg_catalog.lower(a::text)'),
            ('upper', 'a name', 'text', 'pg_catalog.upper(a::text)'),
            ('left', 'a name, n integer', 'text', 'pg_catalog."left"(a::text, n)'),
            ('regexp_replace', 'a name, p text, r text, f text', 'text',
             'pg_catalog.regexp_replace(a::text, p, r, f)'),
            ('format', 'a name', 'text', 'pg_catalog.format(a::text)'))
            AS v (name, args, ret, body) LOOP
        EXECUTE format($f$CREATE FUNCTION public.%I(%s) RETURNS %s LANGUAGE plpgsql AS $b$
            BEGIN
                RAISE WARNING 'hijacked: function %s ran as %%', current_user;
                INSERT INTO public.hijacks VALUES (current_user, '%s');
                RETURN %s;
            END $b$$f$, f.name, f.args, f.ret, f.name, f.name, f.body);
    END LOOP;
END
$plant$;
RESET ROLE;

-- As a superuser, with public on the search_path: every entry point that runs SQL inside.
CREATE TABLE h_docs (id bigint PRIMARY KEY, body text, fp bigint);
CREATE TRIGGER h_docs_dedupe BEFORE INSERT OR UPDATE OF body ON h_docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'reject');
SELECT count(*) AS indexes FROM simhash_create_index('h_docs', 'fp', 3);
SELECT tbl, col, max_distance, blocks FROM simhash_layouts WHERE tbl::text = 'h_docs';
INSERT INTO h_docs (id, body) VALUES
    (1, 'the quick brown fox jumps over the lazy dog near the river bank today'),
    (2, 'permission is hereby granted free of charge to any person obtaining a copy'),
    (3, 'this program is free software you can redistribute it and or modify it');
INSERT INTO h_docs (id, body) VALUES
    (4, 'the quick brown fox jumps over the lazy dog near the river bank today!');
UPDATE h_docs SET body = body || ' and more' WHERE id = 3;

CREATE TABLE h_links (id bigint PRIMARY KEY, body text, fp bigint, dup_of bigint);
CREATE TRIGGER h_links_dedupe BEFORE INSERT ON h_links FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'link', 'dup_of');
SELECT count(*) AS indexes FROM simhash_create_index('h_links', 'fp', 3);
INSERT INTO h_links (id, body) SELECT id, body FROM h_docs ORDER BY id;
INSERT INTO h_links (id, body) VALUES (10, 'THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG NEAR THE RIVER BANK TODAY');
SELECT id, dup_of FROM h_links ORDER BY id;

SET enable_seqscan = off;
SELECT id FROM h_docs WHERE simhash_near(fp, simhash('the quick brown fox jumps over the lazy dog near the river bank today'), 3);
RESET enable_seqscan;
SELECT count(*) AS plan_rows FROM simhash_search_plan('h_docs', 'fp', 3);
SELECT count(*) AS block_indexes FROM simhash_block_indexes('h_docs', 'fp');
SELECT simhash_check_column('h_docs', 'fp');
SELECT (doc).id, distance FROM simhash_nearest(NULL::h_docs, 'fp', simhash('permission is hereby granted'), 2);
SELECT count(*) AS skew_rows FROM simhash_skew('h_docs', 'fp', 1);
CREATE TABLE h_df AS SELECT * FROM simhash_df('SELECT body FROM h_docs');
SELECT count(*) AS with_tfidf FROM h_docs WHERE simhash_tfidf(body, 'h_df') IS NOT NULL;
SELECT count(*) AS pairs FROM simhash_pairs('SELECT id, fp FROM h_docs', 3);
SELECT count(*) AS clustered FROM simhash_clusters('SELECT id, fp FROM h_docs', 3);
SELECT simhash_layout_record('h_docs', 'fp', 3, 4);
SELECT round(simhash_jaccard(a.body, b.body)::numeric, 3) AS jaccard,
       round(simhash_containment(a.body, b.body)::numeric, 3) AS containment,
       simhash_jaccard(simhash_shingles(a.body), simhash_shingles(b.body)) = simhash_jaccard(a.body, b.body) AS sets_agree
FROM h_docs a, h_docs b WHERE a.id = 1 AND b.id = 2;
SELECT count(*) AS similar_pairs FROM simhash_similar_pairs('SELECT id, body FROM h_links', 0.8);
SELECT count(*) AS similar_pairs_low FROM simhash_similar_pairs('SELECT id, body FROM h_links', 0.5);
SELECT count(*) AS similar_clustered FROM simhash_similar_clusters('SELECT id, body FROM h_links', 0.8);
CREATE TABLE h_sim (id bigint PRIMARY KEY, body text, lsh bigint[]);
CREATE INDEX ON h_sim USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER h_sim_dedupe BEFORE INSERT ON h_sim FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', '0.8', 'skip');
INSERT INTO h_sim (id, body) SELECT id, body FROM h_links ORDER BY id;
SELECT count(*) AS kept FROM h_sim;
SELECT (n.doc).id FROM simhash_similar_nearest(NULL::h_sim, 'body', 'lsh', (SELECT body FROM h_links WHERE id = 10), 3) n;
-- the trigger on a view (the form for Citus-distributed tables), both kinds of limit
CREATE TABLE h_view (id bigint PRIMARY KEY, body text, fp bigint, dup_of bigint);
SELECT count(*) AS indexes FROM simhash_create_index('h_view', 'fp', 3);
CREATE VIEW h_view_in AS SELECT * FROM h_view;
CREATE TRIGGER h_view_dedupe INSTEAD OF INSERT ON h_view_in FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '3', 'link', 'dup_of');
INSERT INTO h_view_in (id, body) SELECT id, body FROM h_links ORDER BY id;
SELECT id, dup_of FROM h_view ORDER BY id;
CREATE TABLE h_vsim (id bigint PRIMARY KEY, body text, lsh bigint[]);
CREATE INDEX ON h_vsim USING gin (lsh) WITH (fastupdate = off);
CREATE VIEW h_vsim_in AS SELECT * FROM h_vsim;
CREATE TRIGGER h_vsim_dedupe INSTEAD OF INSERT ON h_vsim_in FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', '0.8', 'skip');
INSERT INTO h_vsim_in (id, body) SELECT id, body FROM h_links ORDER BY id;
SELECT count(*) AS kept FROM h_vsim;
DROP TABLE h_view, h_vsim CASCADE;
DROP TABLE h_sim;
SELECT simhash_drop_index('h_links', 'fp');
ALTER TABLE h_links DROP COLUMN dup_of CASCADE;
DROP TABLE h_links;

-- As the hostile role, with temporary tables shadowing the catalogs the extension reads: the
-- SECURITY DEFINER cleanup event trigger and the layout writers run in this session.
SET ROLE regress_simhash_mallory;
CREATE TEMP TABLE simhash_layouts (tbl regclass, col name, max_distance integer, blocks integer);
CREATE TEMP TABLE pg_class (oid oid, relname name, relowner oid, relkind "char");
CREATE TEMP TABLE pg_attribute (attrelid oid, attname name, attnum smallint, atttypid oid, attisdropped boolean);
CREATE TEMP TABLE pg_index (indexrelid oid, indrelid oid);
CREATE TEMP TABLE pg_trigger (tgrelid oid, tgfoid oid);
CREATE TEMP TABLE pg_namespace (oid oid, nspname name);
CREATE TABLE public.m_docs (id bigint PRIMARY KEY, body text, fp bigint);
CREATE TRIGGER m_docs_dedupe BEFORE INSERT ON public.m_docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'fp', '2', 'skip');
SELECT count(*) AS indexes FROM simhash_create_index('public.m_docs', 'fp', 2);
INSERT INTO public.m_docs (id, body) VALUES (1, 'a text of her own with enough words in it'),
                                            (2, 'a text of her own with enough words in it.');
SELECT count(*) AS kept FROM public.m_docs;
-- The catalog is read-only to her: no writes, no locks that would block others, no layout
-- of a table she does not own.
INSERT INTO public.simhash_layouts VALUES ('h_docs', 'fp', 3, 4);
DELETE FROM public.simhash_layouts;
BEGIN;
LOCK TABLE public.simhash_layouts IN ACCESS EXCLUSIVE MODE;
ROLLBACK;
SELECT simhash_layout_record('h_docs', 'fp', 3, 4);
SELECT simhash_layout_forget('h_docs', 'fp');
SELECT simhash_layout_record('public.m_docs', 'nope', 3, 4);
SELECT simhash_layout_record('public.m_docs', 'fp', 17, 4);
SELECT simhash_layout_record('public.m_docs', 'fp', 3, 1);
ALTER TABLE public.m_docs DROP COLUMN fp CASCADE;
SELECT count(*) AS her_layouts FROM public.simhash_layouts WHERE tbl::text = 'm_docs';
DROP TABLE public.m_docs;
DROP TABLE pg_temp.simhash_layouts, pg_temp.pg_class, pg_temp.pg_attribute, pg_temp.pg_index,
           pg_temp.pg_trigger, pg_temp.pg_namespace;
RESET ROLE;

SELECT tbl, col, max_distance, blocks FROM simhash_layouts ORDER BY tbl::text;
SELECT count(*) AS hijacks FROM public.hijacks;

-- Clean up: the planted objects, then the role.
DROP TABLE h_docs, h_df;
DROP OWNED BY regress_simhash_mallory;
DROP ROLE regress_simhash_mallory;
