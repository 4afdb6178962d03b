-- simhash(features text[] [, weights float8[]], min_features): caller-supplied features,
-- hashed as given (no normalization), for people who segment text themselves.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- normalized tokens with unit weights give the fingerprint of the text with n = 1
SELECT simhash(ARRAY['the', 'quick', 'brown', 'fox']) = simhash('The quick, brown fox!', 'word', 1) AS tokens_as_features,
       simhash(ARRAY['the', 'quick', 'brown', 'fox'], ARRAY[1, 1, 1, 1]::float8[]) = simhash(ARRAY['the', 'quick', 'brown', 'fox']) AS unit_weights;

-- features are hashed as given: case, punctuation and spaces matter
SELECT simhash(ARRAY['Quick']) <> simhash(ARRAY['quick']) AS case_kept,
       simhash(ARRAY['new york', 'city']) <> simhash(ARRAY['new', 'york', 'city']) AS spaces_kept;

-- order does not matter; repetition is weight
SELECT simhash(ARRAY['a', 'b', 'c']) = simhash(ARRAY['c', 'a', 'b']) AS order_free,
       simhash(ARRAY['a', 'b', 'c'], ARRAY[2, 0.5, 1]) = simhash(ARRAY['c', 'a', 'b'], ARRAY[1, 2, 0.5]) AS weights_follow_features,
       simhash(ARRAY['a', 'b', 'c'], ARRAY[2, 0.5, 1]) = simhash(ARRAY['a', 'b', 'c'], ARRAY[8, 2, 4]) AS scale_free;

-- golden values
SELECT simhash(ARRAY['自由', '软件', '基金会', '发布', '了', '新版本']) AS zh_segmented,
       simhash(ARRAY['alpha', 'beta', 'gamma'], ARRAY[0.5, 2, 1.25]) AS weighted;

-- Chinese segmented by the caller (as jieba would): near duplicates stay near
WITH t(name, words) AS (VALUES
  ('a', ARRAY['自由', '软件', '基金会', '发布', '了', '新版本', '的', '通用', '公共', '许可证', '允许', '用户', '自由', '地', '复制', '修改', '和', '分发', '软件']),
  ('b', ARRAY['自由', '软件', '基金会', '发布', '了', '新版本', '的', '通用', '公共', '许可证', '允许', '用户', '自由', '地', '复制', '修改', '和', '再', '分发', '软件']),
  ('c', ARRAY['今天', '天气', '很', '好', '我们', '去', '公园', '散步', '看到', '很多', '人', '在', '放', '风筝', '和', '野餐']))
SELECT a.name, b.name, hamming(simhash(a.words), simhash(b.words)) <= 10 AS near
FROM t a JOIN t b ON a.name < b.name ORDER BY 1, 2;

-- weights: a heavy feature pulls the fingerprint towards its own hash
SELECT hamming(simhash(ARRAY['x', 'y', 'z'], ARRAY[100, 1, 1]), simhash(ARRAY['x'])) = 0 AS heavy_wins,
       simhash(ARRAY['x', 'y', 'z'], ARRAY[1, 1, 0]) = simhash(ARRAY['x', 'y']) AS zero_weight_left_out;

-- no features, or fewer than min_features of positive weight: NULL
SELECT simhash(ARRAY[]::text[]) IS NULL AS empty,
       simhash(ARRAY[]::text[], ARRAY[]::float8[]) IS NULL AS empty_weighted,
       simhash(ARRAY['a', 'b'], ARRAY[0, 0]::float8[]) IS NULL AS all_zero,
       simhash(ARRAY['a', 'b'], min_features => 2) IS NOT NULL AS two_of_two,
       simhash(ARRAY['a', 'b'], min_features => 3) IS NULL AS two_of_three,
       simhash(ARRAY['a', 'b', 'c'], ARRAY[1, 0, 1], min_features => 3) IS NULL AS zero_not_counted,
       simhash(ARRAY[''])  IS NOT NULL AS empty_string_is_a_feature;

-- strict
SELECT simhash(NULL::text[]) IS NULL AS null_array,
       simhash(ARRAY['a'], NULL::float8[]) IS NULL AS null_weights,
       simhash(ARRAY['a'], NULL::integer) IS NULL AS null_min;

-- a text literal still means simhash(text)
SELECT simhash('{a,b}') = simhash('a b') AS literal_is_text;

-- errors: NULL elements 22004, shapes 2202E, weights 22023
SELECT simhash(ARRAY['a', NULL]);
SELECT simhash(ARRAY['a', 'b'], ARRAY[1, NULL]::float8[]);
SELECT simhash(ARRAY['a', 'b'], ARRAY[1]::float8[]);
SELECT simhash(ARRAY[['a', 'b'], ['c', 'd']]);
SELECT simhash(ARRAY['a', 'b'], ARRAY[[1, 2]]::float8[]);
SELECT simhash(ARRAY['a', 'b'], ARRAY[1, 'NaN']::float8[]);
SELECT simhash(ARRAY['a', 'b'], ARRAY['Infinity', 1]::float8[]);
SELECT simhash(ARRAY['a', 'b'], ARRAY[1, -0.5]::float8[]);
SELECT simhash(ARRAY['a'], min_features => 0);
\set VERBOSITY default
SELECT simhash(ARRAY['a', 'b', 'c'], ARRAY[1, 2]::float8[]);
\set VERBOSITY sqlstate
SELECT simhash(ARRAY['a', NULL]);
SELECT simhash(ARRAY['a', 'b'], ARRAY[1, NULL]::float8[]);
SELECT simhash(ARRAY['a', 'b'], ARRAY[1]::float8[]);
SELECT simhash(ARRAY[['a', 'b'], ['c', 'd']]);
SELECT simhash(ARRAY['a', 'b'], ARRAY[1, 'NaN']::float8[]);
SELECT simhash(ARRAY['a', 'b'], ARRAY[1, -0.5]::float8[]);
SELECT simhash(ARRAY['a'], min_features => 0);
\set VERBOSITY terse

-- the same features give the same fingerprint in a LATIN1 database
SELECT simhash(ARRAY['straße', 'café'], ARRAY[1, 2]) AS utf8_fp \gset
CREATE DATABASE simhash_features_latin1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
\c simhash_features_latin1
SET client_encoding = UTF8;
CREATE EXTENSION simhash;
SELECT simhash(ARRAY['straße', 'café'], ARRAY[1, 2]) = :utf8_fp AS same_in_latin1;
\c contrib_regression
DROP DATABASE simhash_features_latin1;
