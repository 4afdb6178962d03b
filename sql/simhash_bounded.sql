-- Bounded costs (issue 21, findings 6 and 8): what one role can record in simhash_layouts,
-- what a DROP reads there, and what a threshold trigger reads of a huge candidate.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
DROP ROLE IF EXISTS regress_simhash_temp;
DROP DATABASE IF EXISTS regress_simhash_eucjp;
RESET client_min_messages;
\set VERBOSITY default

-- == Layouts: fingerprint columns only, at most 1000 a role ==================================
-- A role with nothing but TEMP (which PUBLIC has) records layouts for its temporary tables.
CREATE ROLE regress_simhash_temp;
SET ROLE regress_simhash_temp;
CREATE TEMP TABLE lc_t (id bigint, body text, v varchar, fp bigint, i4 integer);
CREATE TEMP VIEW lc_v AS SELECT fp FROM lc_t;
-- not a fingerprint column: 42804; not a table: 42809; no such column: 42703
SELECT simhash_layout_record('lc_t', 'body', 3, 4);
SELECT simhash_layout_record('lc_t', 'v', 3, 4);
SELECT simhash_layout_record('lc_t', 'i4', 3, 4);
SELECT simhash_layout_record('lc_v', 'fp', 3, 4);
SELECT simhash_layout_record('lc_t', 'nope', 3, 4);
SELECT simhash_layout_record('lc_t', 'fp', 3, 4);
-- 999 more layouts reach the cap of 1000; the next one is refused with 54000
DO $$
BEGIN
    EXECUTE (SELECT format('CREATE TEMP TABLE lc_wide (%s)', string_agg(format('c%s bigint', i), ', '))
             FROM generate_series(1, 1000) i);
END
$$;
SELECT count(simhash_layout_record('lc_wide', 'c' || i, 3, 4)) AS recorded
FROM generate_series(1, 999) i;
SELECT simhash_layout_record('lc_wide', 'c1000', 3, 4);
-- recording one of its layouts again replaces it
SELECT simhash_layout_record('lc_wide', 'c1', 2, 3);
-- dropping a table forgets its layouts, which makes room
DROP TABLE lc_t CASCADE;
SELECT simhash_layout_record('lc_wide', 'c1000', 3, 4);
RESET ROLE;
SELECT count(*) AS rows_of_the_role, max(blocks) FILTER (WHERE col = 'c1') AS c1_blocks
FROM simhash_layouts WHERE owner = 'regress_simhash_temp'::regrole;

-- == DROP reads the rows of the tables it drops, not the others' ============================
-- The session ends: its temporary tables go without the sql_drop event, their layouts stay.
\c -
DO $$
BEGIN
    FOR i IN 1 .. 300 LOOP   -- the old session's temporary tables are gone within 30 s
        EXIT WHEN NOT EXISTS (SELECT FROM simhash_layouts l JOIN pg_class c ON c.oid = l.tbl
                              WHERE l.owner = 'regress_simhash_temp'::regrole);
        PERFORM pg_sleep(0.1);
    END LOOP;
END
$$;
-- A DROP elsewhere does not read them (it used to scan the whole table).
CREATE TABLE lc_other (fp bigint);
DROP TABLE lc_other;
SELECT count(*) AS stale_rows_left_by_drop FROM simhash_layouts
WHERE owner = 'regress_simhash_temp'::regrole;
-- The role's next layout sweeps its stale rows (through the index on owner) first.
SET ROLE regress_simhash_temp;
CREATE TEMP TABLE lc_again (fp bigint);
SELECT simhash_layout_record('lc_again', 'fp', 3, 4);
RESET ROLE;
SELECT count(*) AS rows_of_the_role FROM simhash_layouts
WHERE owner = 'regress_simhash_temp'::regrole;
-- A restored row is charged to its table's owner, whatever it says.
CREATE TABLE lc_mine (fp bigint);
INSERT INTO simhash_layouts (tbl, col, max_distance, blocks, owner) VALUES ('lc_mine', 'fp', 3, 4, 1);
SELECT owner = (SELECT relowner FROM pg_class WHERE oid = 'lc_mine'::regclass) AS charged_to_owner
FROM simhash_layouts WHERE tbl = 'lc_mine'::regclass;
DROP TABLE lc_mine;
SELECT count(*) AS lc_mine_rows FROM simhash_layouts WHERE col = 'fp' AND tbl::text = 'lc_mine';

-- == A huge candidate is read only as far as it matters ======================================
-- A 2 KB text A, and a candidate sharing its LSH keys (planted with the trigger off).
CREATE TABLE lc_docs (id integer PRIMARY KEY, body text, lsh bigint[]);
CREATE INDEX lc_docs_lsh ON lc_docs USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER lc_dedupe BEFORE INSERT OR UPDATE OF body, lsh ON lc_docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', '0.8', 'reject');
CREATE TABLE lc_a AS
SELECT string_agg(md5(i::text), ' ' ORDER BY i) AS body FROM generate_series(1, 60) i;
SELECT octet_length(body) AS a_bytes, cardinality(simhash_shingles(body)) AS a_shingles FROM lc_a;
-- 3.3 MB that do not repeat: ruled out after its first 64 kB (more shingles than 1916 / 0.8)
ALTER TABLE lc_docs DISABLE TRIGGER lc_dedupe;
INSERT INTO lc_docs
SELECT 1, string_agg(md5('big' || i), ' ' ORDER BY i), (SELECT simhash_lsh(body) FROM lc_a)
FROM generate_series(1, 100000) i;
ALTER TABLE lc_docs ENABLE TRIGGER lc_dedupe;
SET client_min_messages = debug1;
INSERT INTO lc_docs (id, body) SELECT 2, body FROM lc_a;
RESET client_min_messages;
SELECT id, octet_length(body) AS bytes FROM lc_docs ORDER BY id;

-- Same answers as the whole sets give, around the threshold. Candidates repeat (part of) A
-- with a tail of m new words 40 times, so they are long (toasted, read in slices) while
-- their similarity to A goes from 1 down through 0.8; each is alone in the table when A is
-- inserted, and the trigger's verdict is compared with simhash_jaccard.
CREATE TABLE lc_verdicts (drop_words integer, m integer, bytes integer, similarity float8,
                          rejected boolean);
DO $$
DECLARE
    a text := (SELECT body FROM lc_a);
    b text;
    rejected boolean;
BEGIN
    FOR d IN 0 .. 2 LOOP
        FOR m IN 0 .. 24 LOOP
            b := repeat((SELECT string_agg(md5(i::text), ' ' ORDER BY i) FROM generate_series(1 + d, 60) i)
                        || coalesce((SELECT ' ' || string_agg(md5('tail' || j), ' ' ORDER BY j)
                                     FROM generate_series(1, m) j), '') || E'\n', 40);
            TRUNCATE lc_docs;
            ALTER TABLE lc_docs DISABLE TRIGGER lc_dedupe;
            INSERT INTO lc_docs VALUES (1, b, simhash_lsh(a));
            ALTER TABLE lc_docs ENABLE TRIGGER lc_dedupe;
            BEGIN
                INSERT INTO lc_docs (id, body) VALUES (2, a);
                rejected := false;
            EXCEPTION WHEN unique_violation THEN
                rejected := true;
            END;
            INSERT INTO lc_verdicts VALUES (d, m, octet_length(b), simhash_jaccard(a, b), rejected);
        END LOOP;
    END LOOP;
END
$$;
SELECT count(*) AS candidates, min(bytes) > 65536 AS all_longer_than_one_slice,
       count(*) FILTER (WHERE similarity >= 0.8) AS at_or_above,
       count(*) FILTER (WHERE similarity BETWEEN 0.75 AND 0.85) AS near_threshold,
       count(*) FILTER (WHERE rejected <> (similarity >= 0.8)) AS wrong_verdicts
FROM lc_verdicts;
SELECT drop_words, m, round(similarity::numeric, 4) AS similarity, rejected
FROM lc_verdicts WHERE similarity BETWEEN 0.77 AND 0.83 ORDER BY drop_words, m;

DROP TABLE lc_docs, lc_a, lc_verdicts, lc_again;
DROP ROLE regress_simhash_temp;

-- The same in a multibyte database encoding: slices are cut on character boundaries and
-- converted to UTF-8, as simhash_jaccard converts the whole text. Words of hiragana (two
-- bytes each in EUC_JP), candidates of 200 kB.
\set home :DBNAME
CREATE DATABASE regress_simhash_eucjp TEMPLATE template0 ENCODING 'EUC_JP'
    LC_COLLATE 'C' LC_CTYPE 'C';
\c regress_simhash_eucjp
SET client_min_messages = warning;
CREATE EXTENSION simhash;
RESET client_min_messages;
CREATE FUNCTION hiragana_word(i integer, seed text) RETURNS text LANGUAGE sql AS $$
    SELECT convert_from(decode(string_agg('e381' || to_hex(129 + get_byte(decode(md5(seed || i || '/' || j), 'hex'), 0) % 30), '' ORDER BY j), 'hex'), 'UTF8')
    FROM generate_series(1, 8) j
$$;
CREATE TABLE e_docs (id integer PRIMARY KEY, body text, lsh bigint[]);
CREATE INDEX e_docs_lsh ON e_docs USING gin (lsh) WITH (fastupdate = off);
CREATE TRIGGER e_dedupe BEFORE INSERT ON e_docs FOR EACH ROW
    EXECUTE FUNCTION simhash_dedupe('body', 'lsh', '0.8', 'reject');
CREATE TABLE e_verdicts (m integer, bytes integer, similarity float8, rejected boolean);
DO $$
DECLARE
    a text := (SELECT string_agg(hiragana_word(i, 'a'), ' ' ORDER BY i) FROM generate_series(1, 60) i);
    b text;
    rejected boolean;
BEGIN
    FOR m IN 0 .. 24 LOOP
        b := repeat(a || coalesce((SELECT ' ' || string_agg(hiragana_word(j, 'tail'), ' ' ORDER BY j)
                                   FROM generate_series(1, m) j), '') || E'\n', 200);
        TRUNCATE e_docs;
        ALTER TABLE e_docs DISABLE TRIGGER e_dedupe;
        INSERT INTO e_docs VALUES (1, b, simhash_lsh(a));
        ALTER TABLE e_docs ENABLE TRIGGER e_dedupe;
        BEGIN
            INSERT INTO e_docs (id, body) VALUES (2, a);
            rejected := false;
        EXCEPTION WHEN unique_violation THEN
            rejected := true;
        END;
        INSERT INTO e_verdicts VALUES (m, octet_length(b), simhash_jaccard(a, b), rejected);
    END LOOP;
END
$$;
SELECT current_setting('server_encoding') AS encoding, count(*) AS candidates,
       min(bytes) > 65536 AS all_longer_than_one_slice,
       count(*) FILTER (WHERE similarity >= 0.8) AS at_or_above,
       count(*) FILTER (WHERE similarity BETWEEN 0.75 AND 0.85) AS near_threshold,
       count(*) FILTER (WHERE rejected <> (similarity >= 0.8)) AS wrong_verdicts
FROM e_verdicts;
\c :home
DROP DATABASE regress_simhash_eucjp;
