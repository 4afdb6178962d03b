-- simhash(tsvector, n, weighting, min_features): PostgreSQL text search as the tokenizer,
-- so that stemming and stop words of any configuration apply.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- lexemes go back in position order and are shingled n at a time, like words
SELECT to_tsvector('english', 'The quick brown foxes jumped over the lazy dogs') AS tsv;
SELECT simhash(to_tsvector('english', 'The quick brown foxes jumped over the lazy dogs'), n => 1)
     = simhash(ARRAY['quick', 'brown', 'fox', 'jump', 'lazi', 'dog']) AS unigrams_are_lexemes,
       simhash(to_tsvector('english', 'The quick brown foxes jumped over the lazy dogs'))
     = simhash('quick brown fox jump lazi dog') AS trigrams_across_stop_word_gaps,
       simhash(to_tsvector('simple', 'The quick brown fox')) = simhash('the quick brown fox') AS simple_config;

-- stemming and stop words make inflected variants equal
SELECT simhash(to_tsvector('english', 'The foxes were jumping over the dogs'))
     = simhash(to_tsvector('english', 'A fox jumps over a dog')) AS stemmed_equal,
       simhash('The foxes were jumping over the dogs')
     = simhash('A fox jumps over a dog') AS plain_text_differs;

-- golden values
SELECT simhash(to_tsvector('english', 'The quick brown foxes jumped over the lazy dogs')) AS english,
       simhash('quick:1 brown:2 fox:3'::tsvector, 2, 'binary') AS typed;

-- a tsvector without positions (strip()) is a bag of lexemes: one feature each, n does
-- not apply
SELECT simhash(strip(to_tsvector('english', 'The quick brown foxes jumped over the lazy dogs')))
     = simhash(ARRAY['brown', 'dog', 'fox', 'jump', 'lazi', 'quick']) AS bag_of_lexemes,
       simhash(strip(to_tsvector('english', 'dogs and dogs and dogs and cats')), 3)
     = simhash(ARRAY['dog', 'cat']) AS repetition_gone,
       simhash('b a c'::tsvector) = simhash('a:1 b c:2'::tsvector) AS any_lexeme_without_position;

-- repeated lexemes at several positions; same position: tsvector order
SELECT simhash('a:1,3 b:2'::tsvector, 1) = simhash('a b a', 'word', 1) AS positions_counted,
       simhash('a:1 b:2 c:3'::tsvector) = simhash('a b c') AS three_in_order,
       simhash('c:1 a:2 b:2'::tsvector) = simhash('c a b') AS ties_in_lexeme_order;

-- weightings, minimum, empty
SELECT simhash('a:1,2,3,4 b:5'::tsvector, 1, 'binary') = simhash(ARRAY['a', 'b']) AS binary,
       simhash(to_tsvector('english', 'one two three four five'), min_features => 3) IS NOT NULL AS three,
       simhash(to_tsvector('english', 'one two three four five'), min_features => 4) IS NULL AS not_four,
       simhash(''::tsvector) IS NULL AS empty,
       simhash(to_tsvector('english', 'the and of')) IS NULL AS only_stop_words;

-- Chinese with the simple configuration (no segmentation: whole runs are lexemes)
SELECT to_tsvector('simple', '自由软件 基金会 发布了 新版本') AS zh,
       simhash(to_tsvector('simple', '自由软件 基金会 发布了 新版本'), 1) = simhash(ARRAY['自由软件', '基金会', '发布了', '新版本']) AS zh_lexemes;

-- strict, and errors (22023)
SELECT simhash(NULL::tsvector) IS NULL AS null_tsvector,
       simhash('a:1'::tsvector, NULL) IS NULL AS null_n;
SELECT simhash('a:1'::tsvector, 9);
SELECT simhash('a:1'::tsvector, weighting => 'nope');
SELECT simhash('a:1'::tsvector, min_features => -1);
SELECT simhash('a b'::tsvector, 9);
\set VERBOSITY sqlstate
SELECT simhash('a:1'::tsvector, 9);
SELECT simhash('a:1'::tsvector, weighting => 'nope');
\set VERBOSITY terse

-- in an expression index (IMMUTABLE with a fixed configuration)
CREATE TABLE ts_docs (id integer, body text);
INSERT INTO ts_docs VALUES (1, 'The foxes were jumping over the dogs'), (2, 'Something else entirely');
CREATE INDEX ts_docs_fp ON ts_docs (simhash(to_tsvector('english'::regconfig, body)));
SET enable_seqscan = off;
SELECT id FROM ts_docs WHERE simhash(to_tsvector('english'::regconfig, body)) = simhash(to_tsvector('english', 'A fox jumps over a dog'));
RESET enable_seqscan;
DROP TABLE ts_docs;
