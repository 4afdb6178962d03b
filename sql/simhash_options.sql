-- simhash(body, tokenizer, n, weighting, min_features) and simhash_features(): options as
-- arguments, every combination IMMUTABLE; errors name the allowed values (22023).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- the defaults of the options function are simhash(text), bit for bit, on every text
CREATE TEMP TABLE texts AS
SELECT i, body FROM (VALUES
  (1, 'The quick brown fox jumps over the lazy dog'),
  (2, 'hello'),
  (3, ''),
  (4, '... !!!'),
  (5, 'Straße STRASSE straße café naïve Ｆｉｌｅ ﬁle'),
  (6, '自由软件基金会发布了新版本的通用公共许可证，允许用户自由地复制、修改和分发软件。'),
  (7, '日本語のテキストには空白がない。カタカナとひらがな'),
  (8, 'ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ'),
  (9, 'Unicode 😀 テスト test 中文 mixed 123'),
  (10, repeat('lorem ipsum dolor sit amet ', 2000))) AS t(i, body)
UNION ALL
SELECT 100 + g, 'document ' || g || ' says ' || repeat('word' || (g % 7) || ' ', g % 5) FROM generate_series(1, 200) g;
SELECT count(*) AS texts,
       count(*) FILTER (WHERE simhash(body, 'word') IS NOT DISTINCT FROM simhash(body)) AS word_equals_default,
       count(*) FILTER (WHERE simhash(body, tokenizer => 'word', n => 3, weighting => 'tf', min_features => 1)
                              IS NOT DISTINCT FROM simhash(body)) AS explicit_defaults_equal
FROM texts;

-- golden values: fingerprints with options are an on-disk format too
SELECT simhash('The quick brown fox jumps over the lazy dog', 'word', n => 1) AS word1,
       simhash('The quick brown fox jumps over the lazy dog', 'char') AS char5,
       simhash('The quick brown fox jumps over the lazy dog', 'char', n => 4) AS char4,
       simhash('The quick brown fox jumps over the lazy dog', 'word', 2, 'binary') AS word2_binary,
       simhash('The quick brown fox jumps over the lazy dog', 'word', 1, 'log') AS word1_log;

-- the char tokenizer: normalized letters and digits, white space and punctuation gone,
-- n-grams across words; n = 0 is the default (5)
SELECT simhash('hello world', 'char') = simhash('Hello-World!', 'char') AS punctuation_and_case,
       simhash('hello world', 'char') = simhash('helloworld', 'char') AS spaces,
       simhash('hello world', 'char') <> simhash('world hello', 'char') AS order_matters,
       simhash('hello world', 'char') = simhash('hello world', 'char', 5) AS default_n_is_5,
       simhash('hello world', 'char', 0) = simhash('hello world', 'char', 5) AS zero_is_default,
       simhash('Straße', 'char') = simhash('STRASSE', 'char') AS unicode_folding;

-- Chinese, Japanese, Thai and mixed text get features with both tokenizers; near
-- duplicates (one character inserted into 40) are closer than an unrelated sentence
WITH t(name, body) AS (VALUES
  ('zh1', '自由软件基金会发布了新版本的通用公共许可证，允许用户自由地复制、修改和分发软件。'),
  ('zh2', '自由软件基金会发布了新版本的通用公共许可证，允许用户自由地复制、修改和再分发软件。'),
  ('zh3', '今天天气很好，我们去公园散步，看到很多人在放风筝和野餐。'))
SELECT a.name, b.name,
       hamming(simhash(a.body, 'word'), simhash(b.body, 'word')) AS word,
       hamming(simhash(a.body, 'char'), simhash(b.body, 'char')) AS char,
       hamming(simhash(a.body, 'char', 5, 'binary'), simhash(b.body, 'char', 5, 'binary')) AS char_binary,
       hamming(simhash(a.body, 'word', 3, 'binary'), simhash(b.body, 'word', 3, 'binary')) AS word_binary
FROM t a JOIN t b ON a.name < b.name
ORDER BY 1, 2;
SELECT tokenizer,
       simhash('日本語のテキストには空白がない', tokenizer) IS NOT NULL AS japanese,
       simhash('ภาษาไทยไม่มีการเว้นวรรค', tokenizer) IS NOT NULL AS thai,
       simhash('Unicode 😀 テスト test 中文', tokenizer) IS NOT NULL AS mixed,
       (SELECT count(*) FROM simhash_features('中文 mixed text', tokenizer, 1)) AS unigrams
FROM (VALUES ('word'), ('char')) AS t(tokenizer);

-- weightings: binary counts each distinct feature once, log damps repetition
SELECT simhash('spam spam spam spam eggs', 'word', 1, 'binary') = simhash('spam eggs', 'word', 1, 'binary') AS binary_ignores_repeats,
       simhash('spam spam spam spam eggs', 'word', 1, 'tf') <> simhash('spam eggs', 'word', 1, 'tf') AS tf_counts_them,
       simhash('a b c d e f g h', 'word', 2, 'binary') = simhash('a b c d e f g h', 'word', 2, 'tf') AS no_repeats_binary_is_tf;

-- degenerate input: NULL below min_features features (a text has one feature per shingle,
-- or one in all when it has fewer tokens than n)
SELECT simhash('one two three four five', 'word', min_features => 3) IS NOT NULL AS three_trigrams,
       simhash('one two three four five', 'word', min_features => 4) IS NULL AS not_four,
       simhash('hello', 'word', min_features => 1) = simhash('hello') AS short_text,
       simhash('hello', 'word', min_features => 2) IS NULL AS short_text_null,
       simhash('abcdef', 'char', min_features => 2) IS NOT NULL AS two_char_5grams,
       simhash('', 'char') IS NULL AS empty,
       simhash('?!', 'word', 1, 'log') IS NULL AS punctuation;

-- strict: a NULL argument gives NULL
SELECT simhash(NULL, 'word') IS NULL AS null_body,
       simhash('x', NULL) IS NULL AS null_tokenizer,
       simhash('x', 'word', NULL::integer) IS NULL AS null_n,
       simhash('x', 'word', 3, NULL) IS NULL AS null_weighting,
       simhash('x', 'word', 3, 'tf', NULL) IS NULL AS null_min;

-- errors (22023) name the allowed values
SELECT simhash('x', 'words');
SELECT simhash('x', 'Word');
SELECT simhash('x', '');
SELECT simhash('x', 'word', 9);
SELECT simhash('x', 'char', -1);
SELECT simhash('x', 'word', weighting => 'bm25');
SELECT simhash('x', 'word', weighting => 'idf');
SELECT simhash('x', 'word', min_features => 0);
SELECT * FROM simhash_features('x', 'chars');
SELECT * FROM simhash_features('x', 'word', 100);
\set VERBOSITY default
SELECT simhash('x', 'word', weighting => 'TF');
\set VERBOSITY sqlstate
SELECT simhash('x', 'words');
SELECT simhash('x', 'word', 9);
SELECT simhash('x', 'word', weighting => 'idf');
SELECT simhash('x', 'word', min_features => 0);
SELECT * FROM simhash_features('x', 'chars');
\set VERBOSITY terse

-- simhash_features: distinct feature hashes and their counts; with n = 1 and the word
-- tokenizer a feature is the hash of a normalized token, which simhash(text[]) also uses
SELECT count(*) AS distinct_features, sum(count) AS occurrences
FROM simhash_features('the cat and the hat and the bat', 'word', 1);
SELECT (SELECT array_agg(feature ORDER BY feature) FROM simhash_features('b a b', 'word', 1))
     = (SELECT array_agg(feature ORDER BY feature) FROM simhash_features('A, B!', 'word', 1)) AS same_tokens;
SELECT count(*) AS char_5grams FROM simhash_features('abcdefg', 'char');
SELECT count(*) AS no_features FROM simhash_features('', 'char');

-- options work in generated columns and expression indexes (IMMUTABLE)
CREATE TABLE opt_docs (
    id   integer PRIMARY KEY,
    body text NOT NULL,
    fp   bigint GENERATED ALWAYS AS (simhash(body, 'char', 5, 'binary')) STORED
);
CREATE INDEX opt_docs_word2 ON opt_docs (simhash(body, 'word', n => 2));
INSERT INTO opt_docs SELECT i, body FROM texts;
SELECT count(*) FILTER (WHERE fp IS NOT DISTINCT FROM simhash(body, 'char', 5, 'binary')) AS stored_equal FROM opt_docs;
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM opt_docs WHERE simhash(body, 'word', n => 2) = simhash('hello', 'word', n => 2);
SELECT id FROM opt_docs WHERE simhash(body, 'word', n => 2) = simhash('HELLO!', 'word', n => 2);
RESET enable_seqscan;
DROP TABLE opt_docs;

-- long texts: fed in chunks through a growing feature buffer (char 1-grams of 3 MB)
SELECT simhash(repeat('abc def ', 400000), 'char', 1, 'binary') = simhash('abcdef', 'char', 1, 'binary') AS long_binary,
       simhash(repeat('lorem ipsum dolor sit amet ', 40000), 'char', 3, 'log') IS NOT NULL AS one_megabyte;

-- the same options give the same fingerprint in a LATIN1 database
SELECT simhash('Straße café naïve', 'char', 3, 'log') AS utf8_fp \gset
CREATE DATABASE simhash_options_latin1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
\c simhash_options_latin1
SET client_encoding = UTF8;
CREATE EXTENSION simhash;
SELECT simhash('Straße café naïve', 'char', 3, 'log') = :utf8_fp AS same_in_latin1;
\c contrib_regression
DROP DATABASE simhash_options_latin1;

-- a long text on the collecting path is cancellable too (interrupt checks between chunks)
CREATE TEMP TABLE big_opt AS SELECT repeat('lorem ipsum dolor sit amet ', 1000000) AS body;
SET statement_timeout = '30ms';
SELECT simhash(body, 'word', 3, 'binary') FROM big_opt;
RESET statement_timeout;
DROP TABLE big_opt;

-- Collecting features has a bound: U+FDFA expands to 18 characters, so 5 million of them
-- are about 75 million features, more than the 2^26 collected at most (54000); 'tf'
-- streams and takes the same text.
\set VERBOSITY default
SELECT simhash(repeat(chr(65018), 5000000), 'char', 1, 'binary');
\set VERBOSITY terse
SELECT simhash(repeat(chr(65018), 5000000), 'char', 1, 'tf') IS NOT NULL AS tf_streams;
