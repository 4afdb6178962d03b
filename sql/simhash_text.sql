-- Unicode handling, scripts without spaces, invalid and huge input, cancellation.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- case folding is full and locale-independent: ß = ss, fullwidth = ASCII, ligatures split
SELECT simhash('Straße') = simhash('STRASSE') AS eszett,
       simhash('Ｆｕｌｌｗｉｄｔｈ ＴＥＸＴ') = simhash('fullwidth text') AS fullwidth,
       simhash('ﬁle') = simhash('file') AS ligature,
       simhash('ΣΊΣΥΦΟΣ') = simhash('σίσυφος') AS greek;

-- precomposed and decomposed accents agree; accents still matter
SELECT simhash(U&'caf\00E9') = simhash(U&'cafe\0301') AS nfd_equals_nfc,
       simhash(U&'caf\00E9') <> simhash('cafe') AS accent_kept;

-- punctuation, spacing and case do not change the fingerprint
SELECT simhash('Hello, World!') = simhash('  hello   world ') AS punctuation;

-- Chinese and Japanese without spaces get real features (character bigrams)
SELECT simhash('中文文本没有空格') IS NOT NULL AS chinese,
       simhash('中文文本没有空格') <> simhash('中文文本没有空') AS chinese_differs,
       simhash('日本語のテキストには空白がない') IS NOT NULL AS japanese,
       simhash('が') = simhash(U&'\304B\3099') AS kana_voiced,
       simhash('ｶﾀｶﾅ') = simhash('カタカナ') AS halfwidth_kana;

WITH t(name, body) AS (VALUES
  ('zh1', '自由软件基金会发布了新版本的通用公共许可证，允许用户自由地复制、修改和分发软件。'),
  ('zh2', '自由软件基金会发布了新版本的通用公共许可证，允许用户自由地复制、修改和再分发软件。'),
  ('zh3', '今天天气很好，我们去公园散步，看到很多人在放风筝和野餐。'))
SELECT a.name, b.name, hamming(simhash(a.body), simhash(b.body)) <= 10 AS near
FROM t a JOIN t b ON a.name < b.name
ORDER BY 1, 2;

-- mixed scripts, emoji, combining characters, ignorable characters
SELECT simhash('Unicode 😀 テスト test') IS NOT NULL AS mixed,
       simhash('😀👍🏽') IS NOT NULL AS emoji_only,
       simhash('❤️') = simhash('❤') AS variation_selector,
       simhash(U&'soft\00ADhyphen') = simhash('softhyphen') AS soft_hyphen,
       simhash(U&'Z\0351\0358\0300a\0300\0301lgo') IS NOT NULL AS zalgo,
       simhash('signal ──────────── ■ → value') = simhash('signal value') AS box_drawing_ignored;

-- a very long word and long texts
SELECT simhash(repeat('x', 100000)) IS NOT NULL AS long_word,
       simhash(repeat('lorem ipsum dolor sit amet ', 40000)) IS NOT NULL AS one_megabyte;

-- the same text gives the same fingerprint in a LATIN1 database
SELECT simhash('Straße café naïve') AS utf8_fp \gset
CREATE DATABASE simhash_latin1 ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
\c simhash_latin1
SET client_encoding = UTF8;
CREATE EXTENSION simhash;
SELECT simhash('Straße café naïve') = :utf8_fp AS same_in_latin1;
\c contrib_regression
DROP DATABASE simhash_latin1;

-- the extension installs in multi-byte encodings too (its scripts are ASCII: a character
-- such as ∩ in a comment made CREATE EXTENSION fail in EUC_CN, found by the SQL fuzzer),
-- and CJK text gives the same fingerprint there
SELECT simhash('自由软件基金会 近似重复') AS zh_fp, simhash('ほぼ同じ文書を探します') AS ja_fp \gset
CREATE DATABASE simhash_euc_cn ENCODING 'EUC_CN' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
\c simhash_euc_cn
SET client_encoding = UTF8;
CREATE EXTENSION simhash;
SELECT simhash('自由软件基金会 近似重复') = :zh_fp AS same_in_euc_cn;
\c contrib_regression
DROP DATABASE simhash_euc_cn;
CREATE DATABASE simhash_euc_jp ENCODING 'EUC_JP' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0;
\c simhash_euc_jp
SET client_encoding = UTF8;
CREATE EXTENSION simhash;
SELECT simhash('ほぼ同じ文書を探します') = :ja_fp AS same_in_euc_jp;
\c contrib_regression
DROP DATABASE simhash_euc_jp;

-- 100 MB of text: fingerprinted, and cancellable by statement_timeout
CREATE TEMP TABLE big AS SELECT repeat('lorem ipsum dolor sit amet ', 3900000) AS body;
SELECT octet_length(body) AS bytes, simhash(body) IS NOT NULL AS fingerprinted FROM big;
SET statement_timeout = '20ms';
SELECT simhash(body) FROM big;
RESET statement_timeout;
