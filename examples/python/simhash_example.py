#!/usr/bin/env python3
"""simhash from application code, with psycopg 3 (Debian: python3-psycopg).

Three things an application does with the extension, each checked against an answer
known in advance, so that the program is also a test (exit status 1 on a wrong answer):

  1. insert through the simhash_dedupe trigger (similarity threshold 0.8, policy reject)
     and handle its 23505 by reading the existing row's key from the error's DETAIL;
  2. search with a similarity threshold through a parameterized query (the LSH keys'
     GIN index, then the exact simhash_jaccard);
  3. a whole-table dedupe job with simhash_similar_clusters, its NOTICEs shown as they
     arrive through the connection's notice handler, keeping one row per cluster.

Usage: simhash_example.py [--dsn DSN] [--families N] [--work-mem SIZE] [--expect-notice]
  Connects with DSN (default: the PG* environment variables) to a database where the
  extension is installed (CREATE EXTENSION simhash), and replaces its tables
  example_articles and example_crawl. See docs/examples.md.
"""

import argparse
import re
import sys
import time

import psycopg
from psycopg import errors

THRESHOLD = 0.8
TRIGGER = "example_articles_dedupe"

# --- 1. Insert through the dedupe trigger ------------------------------------------------

# The DETAIL of the trigger's 23505 (src/pg/dedupe.c, reject()), with a threshold:
#   Key (<key columns>)=(<key values>) has similarity 0.948 to it, at or above the threshold 0.8 of trigger "<name>".
# and with a Hamming distance:
#   Key (<key columns>)=(<key values>) is at Hamming distance 2, within the 3 that trigger "<name>" allows.
# The columns are the primary key's (quoted as identifiers when they need it), the values
# their output text, each list joined with ", ", as in PostgreSQL's own unique-violation
# DETAIL. A caller who may not read the existing row gets "A row you cannot read ..."
# instead, with no key. We match the whole text or nothing, and read the values only for
# a single-column integer key (values are not quoted, so a text key holding ", " or ")"
# could not be split reliably).
DETAIL_RE = re.compile(
    r'Key \((?P<columns>[^()]+)\)=\((?P<values>.*)\) '
    r'(?:has similarity (?P<similarity>[0-9]\.[0-9]{3}) to it, at or above the threshold '
    r'[0-9.e+-]+ of trigger "(?P<trigger_t>[^"]*)"'
    r'|is at Hamming distance (?P<distance>[0-9]+), within the [0-9]+ that trigger '
    r'"(?P<trigger_k>[^"]*)" allows)\.')


def parse_near_duplicate(detail):
    """The trigger's DETAIL as a dict (key_columns, key, similarity, distance, trigger), or
    None when it names no row (a row the caller cannot read) or is not the trigger's."""
    m = DETAIL_RE.fullmatch(detail or "")
    if m is None:
        return None
    columns = [c.strip() for c in m["columns"].split(",")]
    key = None
    if len(columns) == 1 and re.fullmatch(r"-?[0-9]+", m["values"]):
        key = int(m["values"])
    return {
        "key_columns": columns,
        "key": key,
        "similarity": float(m["similarity"]) if m["similarity"] else None,
        "distance": int(m["distance"]) if m["distance"] else None,
        "trigger": m["trigger_t"] if m["similarity"] else m["trigger_k"],
    }


def near_duplicate(error):
    """For the dedupe trigger's 23505: (the existing row's key, similarity), both None when
    the caller may not read that row. None for any other error, a unique index's included:
    the trigger's error names the trigger as its constraint (and the table), so that is
    looked at before the DETAIL."""
    if not isinstance(error, errors.UniqueViolation) or error.diag.constraint_name != TRIGGER:
        return None
    found = parse_near_duplicate(error.diag.message_detail)
    return (found["key"], found["similarity"]) if found else (None, None)


def add_article(conn, body):
    """Inserts an article: ("inserted", new id) or ("duplicate", existing id, similarity)."""
    try:
        with conn.transaction():
            row = conn.execute(
                "INSERT INTO example_articles (body) VALUES (%s::text) RETURNING id", [body]
            ).fetchone()
        return ("inserted", row[0])
    except errors.UniqueViolation as e:
        dup = near_duplicate(e)
        if dup is None:
            raise
        return ("duplicate", *dup)


MIT = ('Permission is hereby granted, free of charge, to any person obtaining a copy of this '
       'software and associated documentation files (the "Software"), to deal in the Software '
       'without restriction, including without limitation the rights to use, copy, modify, '
       'merge, publish, distribute, sublicense, and/or sell copies of the Software, and to '
       'permit persons to whom the Software is furnished to do so, subject to the following '
       'conditions:')
GPL2 = ('This program is free software; you can redistribute it and/or modify it under the '
        'terms of the GNU General Public License as published by the Free Software '
        'Foundation; either version 2 of the License, or (at your option) any later version.')
GPL3 = GPL2.replace("; you", ": you").replace("; either version 2", ", either version 3")
BSD = ('Redistribution and use in source and binary forms, with or without modification, '
       'are permitted provided that the following conditions are met:')


def insert_through_trigger(conn, check):
    print("== 1. insert through the dedupe trigger (threshold 0.8, policy reject)")
    conn.execute("""
        DROP TABLE IF EXISTS example_articles;
        CREATE TABLE example_articles (
            id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            body text NOT NULL,
            lsh  bigint[] GENERATED ALWAYS AS (simhash_lsh(body)) STORED
        );
        CREATE INDEX example_articles_lsh ON example_articles USING gin (lsh)
            WITH (fastupdate = off);
        CREATE TRIGGER example_articles_dedupe
            BEFORE INSERT OR UPDATE OF body ON example_articles FOR EACH ROW
            EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'reject')""")
    ids = {}
    for name, body, dup_of in [
        ("MIT", MIT, None),
        ("GPL-2", GPL2, None),
        ("MIT in capitals, no punctuation", re.sub(r"[^\w\s]", " ", MIT.upper()), "MIT"),
        ("MIT without 'sublicense'", MIT.replace("sublicense, ", ""), "MIT"),
        ("GPL-3 notice", GPL3, "GPL-2"),
        ("BSD", BSD, None),
    ]:
        result = add_article(conn, body)
        if result[0] == "inserted":
            print(f"  {name}: inserted as id {result[1]}")
            ids[name] = result[1]
            check(dup_of is None, f"{name} was expected to be rejected")
            continue
        _, key, similarity = result
        shown = "?" if similarity is None else f"{similarity:.3f}"
        print(f"  {name}: rejected, a near duplicate of id {key} (similarity {shown})")
        if not (check(dup_of is not None, f"{name} was rejected, but it is no near duplicate")
                and check(key == ids[dup_of], f"{name}: key {key}, expected {ids[dup_of]}")):
            continue
        exact = conn.execute(
            "SELECT simhash_jaccard(%s::text, body) FROM example_articles WHERE id = %s::bigint",
            [body, key]).fetchone()[0]
        check(exact is not None and similarity is not None
              and abs(exact - similarity) <= 0.0005 and similarity >= THRESHOLD,
              f"{name}: DETAIL says similarity {similarity}, simhash_jaccard says {exact}")
    count = conn.execute("SELECT count(*) FROM example_articles").fetchone()[0]
    check(count == 3, f"example_articles holds {count} rows, expected 3")

    # A 23505 of the primary key is no near duplicate (add_article lets it through).
    try:
        with conn.transaction():
            conn.execute("INSERT INTO example_articles (id, body) OVERRIDING SYSTEM VALUE "
                         "VALUES (%s::bigint, 'an unrelated text')", [ids["MIT"]])
        check(False, "a duplicate primary key was accepted")
    except errors.UniqueViolation as e:
        check(e.diag.constraint_name == "example_articles_pkey" and near_duplicate(e) is None,
              f"the primary key's 23505 looks like the trigger's: {e.diag.message_detail}")

    # The parser on the other forms of the DETAIL.
    hamming = parse_near_duplicate(
        'Key (id)=(42) is at Hamming distance 2, within the 3 that trigger "t" allows.')
    check(hamming is not None and (hamming["key"], hamming["distance"], hamming["trigger"]) == (42, 2, "t"),
          f"the Hamming DETAIL parsed as {hamming}")
    two = parse_near_duplicate('Key (a, b)=(1, 2) has similarity 0.900 to it, at or above the '
                               'threshold 0.8 of trigger "t".')
    check(two is not None and (two["key_columns"], two["key"]) == (["a", "b"], None),
          f"a two-column key parsed as {two}")
    check(parse_near_duplicate('A row you cannot read has a similarity at or above the '
                               'threshold 0.8 of trigger "t".') is None, "a hidden row")


# --- Test data: families of near duplicates -------------------------------------------------
# The same generator as examples/node: a 32-bit integer hash, so that both programs write
# the same texts. Each family has an original text of 60 pseudo-words and 0 to 3 near
# duplicates of it (similarity well above 0.8), and every fifth family a rewrite that
# shares less than half of its words (similarity far below 0.8).

MASK = 0xFFFFFFFF


def mix32(x):
    x ^= x >> 16
    x = (x * 0x7FEB352D) & MASK
    x ^= x >> 15
    x = (x * 0x846CA68B) & MASK
    x ^= x >> 16
    return x


def word(n):
    h = mix32(n)
    return "".join(chr(97 + mix32((h + i) & MASK) % 26) for i in range(3 + h % 6))


def text_words(seed, count=60):
    return [word(mix32(seed) ^ mix32(j + 1)) for j in range(count)]


def family_rows(family):
    """[(kind, body)] of one family: the original first, then its variants."""
    words = text_words(family)
    original = " ".join(words)
    variants = [
        ("capitals", original.upper().replace(" ", ", ", 1) + "."),
        ("word_deleted", " ".join(words[:20] + words[21:])),
        ("word_changed", " ".join(words[:40] + [word(family + 7_000_000)] + words[41:])),
    ]
    rows = [("original", original)] + variants[: mix32(family) % 4]
    if family % 5 == 0:
        rewrite = [w if j % 2 else word((mix32(family) + j) & MASK) for j, w in enumerate(words)]
        rows.append(("rewrite", " ".join(rewrite)))
    return rows


def load_crawl(conn, families):
    conn.execute("""
        DROP TABLE IF EXISTS example_crawl;
        CREATE TABLE example_crawl (
            id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            family integer NOT NULL,
            kind   text NOT NULL,
            body   text NOT NULL,
            lsh    bigint[] GENERATED ALWAYS AS (simhash_lsh(body)) STORED
        )""")
    fam, kinds, bodies = [], [], []
    for f in range(1, families + 1):
        for kind, body in family_rows(f):
            fam.append(f)
            kinds.append(kind)
            bodies.append(body)
    # One statement, the rows as three arrays (no trigger on this table).
    conn.execute("INSERT INTO example_crawl (family, kind, body) "
                 "SELECT * FROM unnest(%s::integer[], %s::text[], %s::text[])",
                 [fam, kinds, bodies])
    conn.execute("CREATE INDEX example_crawl_lsh ON example_crawl USING gin (lsh) "
                 "WITH (fastupdate = off)")
    conn.execute("ANALYZE example_crawl")
    return len(bodies)


# --- 2. Search with a threshold ------------------------------------------------------------

SEARCH = """
    SELECT id, simhash_jaccard(body, %(q)s::text) AS similarity
    FROM example_crawl
    WHERE lsh && simhash_lsh(%(q)s::text)                  -- candidates: the GIN index
      AND simhash_jaccard(body, %(q)s::text) >= %(t)s::float8  -- the exact similarity
    ORDER BY similarity DESC, id
    LIMIT %(n)s::integer"""


def search(conn, check, families):
    print(f"== 2. search with a threshold ({THRESHOLD}), a parameterized query")
    for family in (1, 5, families):
        words = text_words(family)
        query = " ".join(words[:10] + words[11:])  # the original with a word left out
        hits = conn.execute(SEARCH, {"q": query, "t": THRESHOLD, "n": 10}).fetchall()
        print(f"  a text of family {family}: "
              + ", ".join(f"id {i} ({s:.3f})" for i, s in hits))
        # The same answer by brute force: simhash_jaccard on every row.
        expected = conn.execute(
            "SELECT id, simhash_jaccard(body, %(q)s::text) AS similarity FROM example_crawl "
            "WHERE simhash_jaccard(body, %(q)s::text) >= %(t)s::float8 "
            "ORDER BY similarity DESC, id LIMIT 10", {"q": query, "t": THRESHOLD}).fetchall()
        check(hits == expected, f"family {family}: search {hits}, brute force {expected}")
        kinds = conn.execute("SELECT array_agg(DISTINCT family) FROM example_crawl "
                             "WHERE id = ANY(%s::bigint[])", [[i for i, _ in hits]]).fetchone()[0]
        check(kinds == [family], f"family {family}: hits from families {kinds}")
    plan = "\n".join(r[0] for r in conn.execute(
        "EXPLAIN (COSTS OFF) " + SEARCH, {"q": "some text", "t": THRESHOLD, "n": 10}))
    check("example_crawl_lsh" in plan, f"the search does not use the GIN index:\n{plan}")


# --- 3. A whole-table dedupe job -----------------------------------------------------------

JOB = """
    DELETE FROM example_crawl d
    USING simhash_similar_clusters('SELECT id, body FROM example_crawl', %s::float8) c
    WHERE d.id = c.id AND c.id <> c.cluster_id   -- keep the smallest id of each cluster"""


def dedupe_job(conn, check, work_mem, expect_notice):
    print(f"== 3. whole-table dedupe job (simhash_similar_clusters, {THRESHOLD})")
    # The answer known in advance: a family's near duplicates form one cluster, whose
    # smallest id is its original (written first); the rewrites are alone.
    expected = dict(conn.execute(
        "SELECT kind IN ('original', 'rewrite'), count(*) FROM example_crawl GROUP BY 1"))
    notices = []
    start = time.monotonic()

    def on_notice(diag):
        # Called while the statement runs, as each NOTICE arrives.
        notices.append(diag.message_primary)
        print(f"  [{time.monotonic() - start:5.1f} s] {diag.severity}: {diag.message_primary}",
              flush=True)
        if diag.message_hint:
            print(f"           HINT: {diag.message_hint}", flush=True)

    conn.add_notice_handler(on_notice)
    try:
        with conn.transaction():
            # work_mem bounds the job's memory: beyond it the shingle sets go on in temporary
            # files. It NOTICEs its progress every 5 s, and at client_min_messages = debug1
            # it ends with a summary (rows, distinct texts, rows returned, its peak memory).
            conn.execute("SELECT set_config('work_mem', %s::text, true)", [work_mem])
            conn.execute("SELECT set_config('client_min_messages', 'debug1', true)")
            deleted = conn.execute(JOB, [THRESHOLD]).rowcount
    finally:
        conn.remove_notice_handler(on_notice)
    print(f"  deleted {deleted} rows in {time.monotonic() - start:.1f} s "
          f"(work_mem {work_mem}), {len(notices)} messages")

    check(deleted == expected.get(False, 0), f"deleted {deleted}, expected {expected.get(False, 0)}")
    left = dict(conn.execute("SELECT kind, count(*) FROM example_crawl GROUP BY kind"))
    check(set(left) <= {"original", "rewrite"} and sum(left.values()) == expected[True],
          f"rows left by kind: {left}")
    if expect_notice:
        check(any(m.startswith("simhash_similar_clusters: ") for m in notices),
              "no message of simhash_similar_clusters reached the notice handler")
    again = conn.execute(JOB, [THRESHOLD]).rowcount
    check(again == 0, f"a second run deleted {again} rows")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dsn", default="", help="libpq connection string (default: PG* variables)")
    parser.add_argument("--families", type=int, default=1000, help="families of the dedupe job's table")
    parser.add_argument("--work-mem", default="256MB", help="work_mem of the dedupe job")
    parser.add_argument("--expect-notice", action="store_true",
                        help="fail unless the job's NOTICEs reach the notice handler")
    args = parser.parse_args()
    if args.families < 5:
        parser.error("--families: at least 5")

    failures = []

    def check(ok, message):
        if not ok:
            failures.append(message)
            print(f"  WRONG: {message}", flush=True)
        return ok

    with psycopg.connect(args.dsn, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'simhash'").fetchone() is None:
            sys.exit("the extension is not installed in this database: CREATE EXTENSION simhash")
        insert_through_trigger(conn, check)
        rows = load_crawl(conn, args.families)
        print(f"== loaded {rows} rows of {args.families} families into example_crawl")
        search(conn, check, args.families)
        dedupe_job(conn, check, args.work_mem, args.expect_notice)

    if failures:
        print(f"FAILED: {len(failures)} wrong answers")
        return 1
    print("OK: every answer as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
