#!/usr/bin/env node
// simhash from application code, with node-postgres (npm: pg, pinned in package.json).
//
// Three things an application does with the extension, each checked against an answer
// known in advance, so that the program is also a test (exit status 1 on a wrong answer):
//
//   1. insert through the simhash_dedupe trigger (similarity threshold 0.8, policy reject)
//      and handle its 23505 by reading the existing row's key from the error's DETAIL;
//   2. search with a similarity threshold through a parameterized query (the LSH keys'
//      GIN index, then the exact simhash_jaccard);
//   3. a whole-table dedupe job with simhash_similar_clusters, its NOTICEs shown as they
//      arrive through the client's 'notice' event, keeping one row per cluster.
//
// Usage: node simhash_example.js [--families N] [--work-mem SIZE] [--expect-notice]
//   Connects through the PG* environment variables (PGHOST may be a socket directory) to
//   a database where the extension is installed (CREATE EXTENSION simhash), and replaces
//   its tables example_articles and example_crawl. See docs/examples.md.
'use strict';

const { Client } = require('pg');

const THRESHOLD = 0.8;
const TRIGGER = 'example_articles_dedupe';

// --- 1. Insert through the dedupe trigger ------------------------------------------------

// The DETAIL of the trigger's 23505 (src/pg/dedupe.c, reject()), with a threshold:
//   Key (<key columns>)=(<key values>) has similarity 0.948 to it, at or above the threshold 0.8 of trigger "<name>".
// and with a Hamming distance:
//   Key (<key columns>)=(<key values>) is at Hamming distance 2, within the 3 that trigger "<name>" allows.
// The columns are the primary key's (quoted as identifiers when they need it), the values
// their output text, each list joined with ", ", as in PostgreSQL's own unique-violation
// DETAIL. A caller who may not read the existing row gets "A row you cannot read ..."
// instead, with no key. We match the whole text or nothing, and read the values only for
// a single-column integer key (values are not quoted, so a text key holding ", " or ")"
// could not be split reliably). Keys are returned as strings: a bigint may not fit a
// JavaScript number (node-postgres returns bigint columns as strings too).
const DETAIL_RE = new RegExp(
  '^Key \\((?<columns>[^()]+)\\)=\\((?<values>.*)\\) ' +
  '(?:has similarity (?<similarity>[0-9]\\.[0-9]{3}) to it, at or above the threshold ' +
  '[0-9.e+-]+ of trigger "(?<triggerT>[^"]*)"' +
  '|is at Hamming distance (?<distance>[0-9]+), within the [0-9]+ that trigger ' +
  '"(?<triggerK>[^"]*)" allows)\\.$', 's');

// The trigger's DETAIL as {keyColumns, key, similarity, distance, trigger}, or null when
// it names no row (a row the caller cannot read) or is not the trigger's.
function parseNearDuplicate(detail) {
  const m = DETAIL_RE.exec(detail || '');
  if (m === null) return null;
  const g = m.groups;
  const columns = g.columns.split(',').map((c) => c.trim());
  return {
    keyColumns: columns,
    key: columns.length === 1 && /^-?[0-9]+$/.test(g.values) ? g.values : null,
    similarity: g.similarity !== undefined ? Number(g.similarity) : null,
    distance: g.distance !== undefined ? Number(g.distance) : null,
    trigger: g.similarity !== undefined ? g.triggerT : g.triggerK,
  };
}

// For the dedupe trigger's 23505: {key: the existing row's key, similarity}, both null when
// the caller may not read that row. null for any other error, a unique index's included:
// the trigger's error names the trigger as its constraint (and the table), so that is
// looked at before the DETAIL.
function nearDuplicate(e) {
  if (e.code !== '23505' || e.constraint !== TRIGGER) return null;
  const found = parseNearDuplicate(e.detail);
  return found ? { key: found.key, similarity: found.similarity } : { key: null, similarity: null };
}

// Inserts an article: {inserted: id} or {duplicateOf: existing id, similarity}.
async function addArticle(client, body) {
  try {
    const res = await client.query(
      'INSERT INTO example_articles (body) VALUES ($1::text) RETURNING id', [body]);
    return { inserted: res.rows[0].id };
  } catch (e) {
    const dup = nearDuplicate(e);
    if (dup === null) throw e;
    return { duplicateOf: dup.key, similarity: dup.similarity };
  }
}

const MIT = 'Permission is hereby granted, free of charge, to any person obtaining a copy of this ' +
  'software and associated documentation files (the "Software"), to deal in the Software ' +
  'without restriction, including without limitation the rights to use, copy, modify, ' +
  'merge, publish, distribute, sublicense, and/or sell copies of the Software, and to ' +
  'permit persons to whom the Software is furnished to do so, subject to the following ' +
  'conditions:';
const GPL2 = 'This program is free software; you can redistribute it and/or modify it under the ' +
  'terms of the GNU General Public License as published by the Free Software ' +
  'Foundation; either version 2 of the License, or (at your option) any later version.';
const GPL3 = GPL2.replace('; you', ': you').replace('; either version 2', ', either version 3');
const BSD = 'Redistribution and use in source and binary forms, with or without modification, ' +
  'are permitted provided that the following conditions are met:';

async function insertThroughTrigger(client, check) {
  console.log('== 1. insert through the dedupe trigger (threshold 0.8, policy reject)');
  await client.query(`
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
        EXECUTE FUNCTION simhash_dedupe('body', 'lsh', 'similarity=0.8', 'reject')`);
  const ids = {};
  for (const [name, body, dupOf] of [
    ['MIT', MIT, null],
    ['GPL-2', GPL2, null],
    ['MIT in capitals, no punctuation', MIT.toUpperCase().replace(/[^\w\s]/g, ' '), 'MIT'],
    ["MIT without 'sublicense'", MIT.replace('sublicense, ', ''), 'MIT'],
    ['GPL-3 notice', GPL3, 'GPL-2'],
    ['BSD', BSD, null],
  ]) {
    const result = await addArticle(client, body);
    if (result.inserted !== undefined) {
      console.log(`  ${name}: inserted as id ${result.inserted}`);
      ids[name] = result.inserted;
      check(dupOf === null, `${name} was expected to be rejected`);
      continue;
    }
    const { duplicateOf: key, similarity } = result;
    const shown = similarity === null ? '?' : similarity.toFixed(3);
    console.log(`  ${name}: rejected, a near duplicate of id ${key} (similarity ${shown})`);
    if (!(check(dupOf !== null, `${name} was rejected, but it is no near duplicate`) &&
      check(key === ids[dupOf], `${name}: key ${key}, expected ${ids[dupOf]}`))) continue;
    const exact = (await client.query(
      'SELECT simhash_jaccard($1::text, body) AS j FROM example_articles WHERE id = $2::bigint',
      [body, key])).rows[0].j;
    check(exact !== null && similarity !== null &&
      Math.abs(exact - similarity) <= 0.0005 && similarity >= THRESHOLD,
      `${name}: DETAIL says similarity ${similarity}, simhash_jaccard says ${exact}`);
  }
  const count = (await client.query('SELECT count(*)::integer AS n FROM example_articles')).rows[0].n;
  check(count === 3, `example_articles holds ${count} rows, expected 3`);

  // A 23505 of the primary key is no near duplicate (addArticle lets it through).
  try {
    await client.query('INSERT INTO example_articles (id, body) OVERRIDING SYSTEM VALUE ' +
      "VALUES ($1::bigint, 'an unrelated text')", [ids.MIT]);
    check(false, 'a duplicate primary key was accepted');
  } catch (e) {
    check(e.code === '23505' && e.constraint === 'example_articles_pkey' && nearDuplicate(e) === null,
    `the primary key's 23505 looks like the trigger's: ${e.detail}`);
  }

  // The parser on the other forms of the DETAIL.
  const hamming = parseNearDuplicate(
    'Key (id)=(42) is at Hamming distance 2, within the 3 that trigger "t" allows.');
  check(hamming !== null && hamming.key === '42' && hamming.distance === 2 && hamming.trigger === 't',
    `the Hamming DETAIL parsed as ${JSON.stringify(hamming)}`);
  const two = parseNearDuplicate('Key (a, b)=(1, 2) has similarity 0.900 to it, at or above the ' +
    'threshold 0.8 of trigger "t".');
  check(two !== null && JSON.stringify(two.keyColumns) === '["a","b"]' && two.key === null,
    `a two-column key parsed as ${JSON.stringify(two)}`);
  check(parseNearDuplicate('A row you cannot read has a similarity at or above the ' +
    'threshold 0.8 of trigger "t".') === null, 'a hidden row');
}

// --- Test data: families of near duplicates -------------------------------------------------
// The same generator as examples/python: a 32-bit integer hash, so that both programs write
// the same texts. Each family has an original text of 60 pseudo-words and 0 to 3 near
// duplicates of it (similarity well above 0.8), and every fifth family a rewrite that
// shares less than half of its words (similarity far below 0.8).

function mix32(x) {
  x = (x ^ (x >>> 16)) >>> 0;
  x = Math.imul(x, 0x7feb352d) >>> 0;
  x = (x ^ (x >>> 15)) >>> 0;
  x = Math.imul(x, 0x846ca68b) >>> 0;
  return (x ^ (x >>> 16)) >>> 0;
}

function word(n) {
  const h = mix32(n);
  let w = '';
  for (let i = 0; i < 3 + (h % 6); i++) w += String.fromCharCode(97 + (mix32((h + i) >>> 0) % 26));
  return w;
}

function textWords(seed, count = 60) {
  const words = [];
  for (let j = 0; j < count; j++) words.push(word((mix32(seed) ^ mix32(j + 1)) >>> 0));
  return words;
}

// [[kind, body]] of one family: the original first, then its variants.
function familyRows(family) {
  const words = textWords(family);
  const original = words.join(' ');
  const variants = [
    ['capitals', original.toUpperCase().replace(' ', ', ') + '.'],
    ['word_deleted', words.slice(0, 20).concat(words.slice(21)).join(' ')],
    ['word_changed', words.slice(0, 40).concat([word(family + 7000000)], words.slice(41)).join(' ')],
  ];
  const rows = [['original', original]].concat(variants.slice(0, mix32(family) % 4));
  if (family % 5 === 0) {
    const rewrite = words.map((w, j) => (j % 2 ? w : word((mix32(family) + j) >>> 0)));
    rows.push(['rewrite', rewrite.join(' ')]);
  }
  return rows;
}

async function loadCrawl(client, families) {
  await client.query(`
    DROP TABLE IF EXISTS example_crawl;
    CREATE TABLE example_crawl (
        id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        family integer NOT NULL,
        kind   text NOT NULL,
        body   text NOT NULL,
        lsh    bigint[] GENERATED ALWAYS AS (simhash_lsh(body)) STORED
    )`);
  const fam = [];
  const kinds = [];
  const bodies = [];
  for (let f = 1; f <= families; f++) {
    for (const [kind, body] of familyRows(f)) {
      fam.push(f);
      kinds.push(kind);
      bodies.push(body);
    }
  }
  // One statement, the rows as three arrays (no trigger on this table).
  await client.query('INSERT INTO example_crawl (family, kind, body) ' +
    'SELECT * FROM unnest($1::integer[], $2::text[], $3::text[])', [fam, kinds, bodies]);
  await client.query('CREATE INDEX example_crawl_lsh ON example_crawl USING gin (lsh) ' +
    'WITH (fastupdate = off)');
  await client.query('ANALYZE example_crawl');
  return bodies.length;
}

// --- 2. Search with a threshold ------------------------------------------------------------

const SEARCH = `
    SELECT id, simhash_jaccard(body, $1::text) AS similarity
    FROM example_crawl
    WHERE lsh && simhash_lsh($1::text)                   -- candidates: the GIN index
      AND simhash_jaccard(body, $1::text) >= $2::float8  -- the exact similarity
    ORDER BY similarity DESC, id
    LIMIT $3::integer`;

async function search(client, check, families) {
  console.log(`== 2. search with a threshold (${THRESHOLD}), a parameterized query`);
  for (const family of [1, 5, families]) {
    const words = textWords(family);
    const query = words.slice(0, 10).concat(words.slice(11)).join(' '); // a word left out
    const hits = (await client.query(SEARCH, [query, THRESHOLD, 10])).rows;
    console.log(`  a text of family ${family}: ` +
      hits.map((h) => `id ${h.id} (${h.similarity.toFixed(3)})`).join(', '));
    // The same answer by brute force: simhash_jaccard on every row.
    const expected = (await client.query(
      'SELECT id, simhash_jaccard(body, $1::text) AS similarity FROM example_crawl ' +
      'WHERE simhash_jaccard(body, $1::text) >= $2::float8 ' +
      'ORDER BY similarity DESC, id LIMIT 10', [query, THRESHOLD])).rows;
    check(JSON.stringify(hits) === JSON.stringify(expected),
      `family ${family}: search ${JSON.stringify(hits)}, brute force ${JSON.stringify(expected)}`);
    const found = (await client.query('SELECT array_agg(DISTINCT family) AS f FROM example_crawl ' +
      'WHERE id = ANY($1::bigint[])', [hits.map((h) => h.id)])).rows[0].f;
    check(JSON.stringify(found) === JSON.stringify([family]),
      `family ${family}: hits from families ${JSON.stringify(found)}`);
  }
  const plan = (await client.query('EXPLAIN (COSTS OFF) ' + SEARCH, ['some text', THRESHOLD, 10]))
    .rows.map((r) => r['QUERY PLAN']).join('\n');
  check(plan.includes('example_crawl_lsh'), `the search does not use the GIN index:\n${plan}`);
}

// --- 3. A whole-table dedupe job -----------------------------------------------------------

const JOB = `
    DELETE FROM example_crawl d
    USING simhash_similar_clusters('SELECT id, body FROM example_crawl', $1::float8) c
    WHERE d.id = c.id AND c.id <> c.cluster_id   -- keep the smallest id of each cluster`;

async function dedupeJob(client, check, workMem, expectNotice) {
  console.log(`== 3. whole-table dedupe job (simhash_similar_clusters, ${THRESHOLD})`);
  // The answer known in advance: a family's near duplicates form one cluster, whose
  // smallest id is its original (written first); the rewrites are alone.
  const expected = (await client.query(
    "SELECT count(*) FILTER (WHERE kind NOT IN ('original', 'rewrite'))::integer AS deleted, " +
    "count(*) FILTER (WHERE kind IN ('original', 'rewrite'))::integer AS kept FROM example_crawl"))
    .rows[0];
  const notices = [];
  const start = process.hrtime.bigint();
  const seconds = () => Number(process.hrtime.bigint() - start) / 1e9;
  // Emitted while the statement runs, as each NOTICE arrives.
  const onNotice = (msg) => {
    notices.push(msg.message);
    console.log(`  [${seconds().toFixed(1).padStart(5)} s] ${msg.severity}: ${msg.message}`);
    if (msg.hint) console.log(`           HINT: ${msg.hint}`);
  };
  client.on('notice', onNotice);
  let deleted;
  try {
    await client.query('BEGIN');
    // work_mem bounds the job's memory: beyond it the shingle sets go on in temporary
    // files. It NOTICEs its progress every 5 s, and at client_min_messages = debug1 it
    // ends with a summary (rows, distinct texts, rows returned, its peak memory).
    await client.query("SELECT set_config('work_mem', $1::text, true)", [workMem]);
    await client.query("SELECT set_config('client_min_messages', 'debug1', true)");
    deleted = (await client.query(JOB, [THRESHOLD])).rowCount;
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK');
    throw e;
  } finally {
    client.off('notice', onNotice);
  }
  console.log(`  deleted ${deleted} rows in ${seconds().toFixed(1)} s ` +
    `(work_mem ${workMem}), ${notices.length} messages`);

  check(deleted === expected.deleted, `deleted ${deleted}, expected ${expected.deleted}`);
  const left = (await client.query('SELECT kind, count(*)::integer AS n FROM example_crawl GROUP BY kind')).rows;
  check(left.every((r) => r.kind === 'original' || r.kind === 'rewrite') &&
    left.reduce((s, r) => s + r.n, 0) === expected.kept, `rows left by kind: ${JSON.stringify(left)}`);
  if (expectNotice) {
    check(notices.some((m) => m.startsWith('simhash_similar_clusters: ')),
      'no message of simhash_similar_clusters reached the notice handler');
  }
  const again = (await client.query(JOB, [THRESHOLD])).rowCount;
  check(again === 0, `a second run deleted ${again} rows`);
}

function parseArgs(argv) {
  const args = { families: 1000, workMem: '256MB', expectNotice: false };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--families') args.families = Number(argv[++i]);
    else if (argv[i] === '--work-mem') args.workMem = argv[++i];
    else if (argv[i] === '--expect-notice') args.expectNotice = true;
    else {
      console.error('usage: node simhash_example.js [--families N] [--work-mem SIZE] [--expect-notice]');
      process.exit(2);
    }
  }
  if (!Number.isInteger(args.families) || args.families < 5) {
    console.error('--families: an integer, at least 5');
    process.exit(2);
  }
  return args;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const failures = [];
  const check = (ok, message) => {
    if (!ok) {
      failures.push(message);
      console.log(`  WRONG: ${message}`);
    }
    return ok;
  };
  const client = new Client(); // PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD
  await client.connect();
  try {
    const ext = await client.query("SELECT 1 FROM pg_extension WHERE extname = 'simhash'");
    if (ext.rowCount === 0) {
      console.error('the extension is not installed in this database: CREATE EXTENSION simhash');
      return 1;
    }
    await insertThroughTrigger(client, check);
    const rows = await loadCrawl(client, args.families);
    console.log(`== loaded ${rows} rows of ${args.families} families into example_crawl`);
    await search(client, check, args.families);
    await dedupeJob(client, check, args.workMem, args.expectNotice);
  } finally {
    await client.end();
  }
  if (failures.length > 0) {
    console.log(`FAILED: ${failures.length} wrong answers`);
    return 1;
  }
  console.log('OK: every answer as expected');
  return 0;
}

main().then((status) => { process.exitCode = status; }, (e) => {
  console.error(e);
  process.exitCode = 1;
});
