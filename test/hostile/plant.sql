-- The hostile-schema test mode's traps (test/hostile/run.sh runs this before the
-- regression suite, as a role that may create functions in the extension's schema and in
-- public, but is not a superuser).
--
-- For every function of the extension that takes arguments, it plants in the extension's
-- schema and in public overloads whose argument types are more specific than the declared
-- ones, the types a caller's column or expression may have:
--   text -> varchar, name, a domain over text;  double precision -> numeric;
--   bigint[] -> integer[];  text[] -> varchar[]
-- one argument type at a time, in every non-empty subset of the positions of that type, at
-- every arity the function's defaults allow (so no planted overload has defaults of its
-- own). Not planted here: text in place of name (the suite's own calls pass names as
-- literals, which would then resolve to the planted text overload, and its errors would
-- show one more CONTEXT line), char (bpchar), and integer types, domains or real in place of
-- bigint, integer and double precision. With those, the suite's own calls with a NULL or
-- an integer literal (hamming(NULL, 1), simhash_pairs('...', 3)) become "not unique" and
-- its char(n) tables' generated columns resolve to the planted function, so the suite
-- could not run as written; sql/simhash_hostile.sql plants them (bpchar, int4 and int2 and
-- a domain for bigint, the table's row type, record, anycompatible, pg_temp) against every
-- internal call it drives, with calls whose types it controls.
--
-- A planted overload called from the top level (the test's own call: its context has no
-- other frame) passes its arguments, cast to the declared types, to the extension's
-- function and returns what it returns, so that the suite's expected output holds. Called
-- inside the extension (a frame of one of its functions, or an SQL statement that names
-- one of them schema-qualified, as every internal query does), it logs a WARNING with
-- current_user and raises an error: scripts that grep the server log and the diffs find it.
--
-- psql variables: ext_schema (the extension's schema), also_public (on/off).
\set ON_ERROR_STOP on
SET client_min_messages = warning;

SELECT pg_catalog.set_config('simhash_hostile.ext_schema', :'ext_schema', false);
SELECT pg_catalog.set_config('simhash_hostile.also_public', :'also_public', false);

CREATE DOMAIN public.simhash_hostile_text AS pg_catalog.text CHECK (VALUE IS NOT NULL OR true);

DO $plant$
DECLARE
    ext_schema pg_catalog.name := pg_catalog.current_setting('simhash_hostile.ext_schema');
    schemas pg_catalog.name[] := ARRAY[ext_schema];
    f record;
    v record;
    types pg_catalog.text[];
    positions integer[];
    subset integer;
    arity integer;
    sig pg_catalog.text;
    args pg_catalog.text;
    call_args pg_catalog.text;
    outs pg_catalog.text;
    result pg_catalog.text;
    body pg_catalog.text;
    target pg_catalog.name;
    planted integer := 0;
    skipped integer := 0;
    ext_names pg_catalog.text;
BEGIN
    IF pg_catalog.current_setting('simhash_hostile.also_public')::boolean AND ext_schema <> 'public' THEN
        schemas := schemas || 'public'::pg_catalog.name;
    END IF;
    -- The names of the extension's functions, for the test of "inside the extension".
    SELECT pg_catalog.string_agg(DISTINCT p.proname, '|') INTO ext_names
    FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_proc p ON p.oid = d.objid
    WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.deptype = 'e'
      AND d.refobjid = (SELECT e.oid FROM pg_catalog.pg_extension e WHERE e.extname = 'simhash');

    FOR f IN
        SELECT p.oid, p.proname, p.pronargs, p.pronargdefaults, p.proretset, p.provolatile,
               p.proparallel, p.prorettype,
               pg_catalog.string_to_array(pg_catalog.oidvectortypes(p.proargtypes), ', ') AS intypes,
               -- the same, schema-qualified, for the delegate's casts (a caller's
               -- search_path may hold a look-alike text domain)
               ARRAY(SELECT pg_catalog.format('%I.%I', n.nspname, t.typname)
                     FROM pg_catalog.unnest(p.proargtypes::pg_catalog.oid[]) WITH ORDINALITY a (typ, ord)
                     JOIN pg_catalog.pg_type t ON t.oid = a.typ
                     JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
                     ORDER BY a.ord) AS qualtypes,
               (SELECT pg_catalog.string_agg(pg_catalog.format('OUT %I %s', p.proargnames[i],
                                                               pg_catalog.format_type(p.proallargtypes[i], NULL)), ', ' ORDER BY i)
                FROM pg_catalog.generate_subscripts(p.proargmodes, 1) i
                WHERE p.proargmodes[i] = 'o') AS out_args,
               pg_catalog.pg_get_function_result(p.oid) AS declared_result
        FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_proc p ON p.oid = d.objid
        WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.deptype = 'e'
          AND d.refobjid = (SELECT e.oid FROM pg_catalog.pg_extension e WHERE e.extname = 'simhash')
          AND p.pronargs > 0 AND p.prokind = 'f'
          AND NOT EXISTS (SELECT FROM pg_catalog.unnest(p.proargtypes) t
                          WHERE t IN ('pg_catalog.internal'::pg_catalog.regtype))
        ORDER BY p.proname, p.oid
    LOOP
        outs := CASE WHEN f.out_args IS NULL THEN '' ELSE ', ' || f.out_args END;
        result := CASE WHEN f.out_args IS NULL THEN f.declared_result
                       WHEN f.proretset THEN 'SETOF record' ELSE 'record' END;
        FOR arity IN f.pronargs - f.pronargdefaults .. f.pronargs LOOP
            FOR v IN SELECT * FROM (VALUES
                    ('text', 'character varying'), ('text', 'name'),
                    ('text', 'public.simhash_hostile_text'),
                    ('double precision', 'numeric'),
                    ('bigint[]', 'integer[]'), ('text[]', 'character varying[]')) AS x (declared, planted)
            LOOP
                SELECT pg_catalog.array_agg(i ORDER BY i) INTO positions
                FROM pg_catalog.generate_series(1, arity) i WHERE f.intypes[i] = v.declared;
                CONTINUE WHEN positions IS NULL;
                FOR subset IN 1 .. (1 << pg_catalog.cardinality(positions)) - 1 LOOP
                    types := f.intypes[1:arity];
                    FOR i IN 1 .. pg_catalog.cardinality(positions) LOOP
                        IF subset & (1 << (i - 1)) <> 0 THEN
                            types[positions[i]] := v.planted;
                        END IF;
                    END LOOP;
                    SELECT pg_catalog.string_agg(pg_catalog.format('a%s %s', i, types[i]), ', ' ORDER BY i),
                           pg_catalog.string_agg(pg_catalog.format('a%s::%s', i, f.qualtypes[i]), ', ' ORDER BY i),
                           pg_catalog.string_agg(types[i], ',' ORDER BY i)
                    INTO args, call_args, sig
                    FROM pg_catalog.generate_series(1, arity) i;
                    FOREACH target IN ARRAY schemas LOOP
                        -- The body: delegate at the top level, log and raise inside.
                        body := pg_catalog.format($b$
DECLARE
    ctx pg_catalog.text;
BEGIN
    GET DIAGNOSTICS ctx = PG_CONTEXT;
    IF ctx OPERATOR(pg_catalog.~) %L THEN
        RAISE WARNING 'simhash-hostile: planted %%.%%(%%) ran as %% (session %%) inside: %%',
            %L, %L, %L, current_user, session_user, ctx;
        RAISE EXCEPTION 'simhash-hostile: planted %%.%%(%%) ran as %%', %L, %L, %L, current_user;
    END IF;
    %s
END$b$,
                            -- a frame of an extension function, or an SQL statement naming one
                            -- schema-qualified
                            pg_catalog.format('\n(PL/pgSQL function (%1$s\.)?(%2$s)\(|SQL function "(%2$s)"|SQL statement ".*(%1$s)\.(%2$s)\()',
                                              pg_catalog.quote_ident(ext_schema), ext_names),
                            target, f.proname, sig, target, f.proname, sig,
                            CASE
                                WHEN f.proretset THEN pg_catalog.format('RETURN QUERY SELECT * FROM %I.%I(%s); RETURN;', ext_schema, f.proname, call_args)
                                WHEN f.prorettype = 'pg_catalog.void'::pg_catalog.regtype THEN pg_catalog.format('PERFORM %I.%I(%s); RETURN;', ext_schema, f.proname, call_args)
                                WHEN f.out_args IS NOT NULL THEN pg_catalog.format('SELECT * INTO %s FROM %I.%I(%s); RETURN;',
                                    (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(n), ', ') FROM pg_catalog.unnest(
                                        (SELECT p.proargnames[p.pronargs + 1:] FROM pg_catalog.pg_proc p WHERE p.oid = f.oid)) n),
                                    ext_schema, f.proname, call_args)
                                ELSE pg_catalog.format('RETURN %I.%I(%s);', ext_schema, f.proname, call_args)
                            END);
                        BEGIN
                            EXECUTE pg_catalog.format('CREATE FUNCTION %I.%I(%s%s) RETURNS %s LANGUAGE plpgsql %s PARALLEL %s AS %L',
                                target, f.proname, args, outs, result,
                                CASE f.provolatile WHEN 'i' THEN 'IMMUTABLE' WHEN 's' THEN 'STABLE' ELSE 'VOLATILE' END,
                                CASE f.proparallel WHEN 's' THEN 'SAFE' WHEN 'r' THEN 'RESTRICTED' ELSE 'UNSAFE' END,
                                body);
                            planted := planted + 1;
                        EXCEPTION WHEN duplicate_function OR invalid_function_definition THEN
                            -- the same signature as another function of the extension
                            skipped := skipped + 1;
                        END;
                    END LOOP;
                END LOOP;
            END LOOP;
        END LOOP;
    END LOOP;
    RAISE WARNING 'simhash-hostile: % overloads planted in %, % signatures left out (taken)',
        planted, pg_catalog.array_to_string(schemas, ', '), skipped;
END
$plant$;
