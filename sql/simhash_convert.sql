-- simhash_similarity() and conversions. bigint is signed: the unsigned fingerprint is
-- stored by two's complement (bit 63 is the sign bit).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- similarity: the share of equal bits, 1 - hamming / 64
SELECT simhash_similarity(0, 0) AS same,
       simhash_similarity(0, -1) AS opposite,
       simhash_similarity(0, 1) AS one_bit,
       simhash_similarity(x'F0F0'::bigint, x'0F0F'::bigint) AS sixteen_bits,
       simhash_similarity(123, 456) = 1 - hamming(123, 456) / 64.0 AS definition,
       simhash_similarity(NULL, 1) IS NULL AS strict;

-- hex: 16 digits of the unsigned value, zero-padded (to_hex drops leading zeros, and
-- shows the same two's complement digits for negative values)
SELECT fp, simhash_to_hex(fp) AS hex, to_hex(fp) AS to_hex
FROM (VALUES (0::bigint), (1), (255), (-1), (-9223372036854775808), (9223372036854775807),
             (1452126894350703229)) AS t(fp);
SELECT simhash_to_hex(simhash('The quick brown fox jumps over the lazy dog')) AS fox;
SELECT simhash_from_hex('1426fdb77a909a7d') = simhash('The quick brown fox jumps over the lazy dog') AS fox_back,
       simhash_from_hex('FFFFFFFFFFFFFFFF') AS all_ones,
       simhash_from_hex('0x8000000000000000') AS sign_bit,
       simhash_from_hex('ff') AS short_form,
       simhash_from_hex(to_hex(-42::bigint)) AS from_to_hex;
SELECT count(*) AS round_trips
FROM (SELECT simhash('document ' || i) AS fp FROM generate_series(1, 1000) i) s
WHERE simhash_from_hex(simhash_to_hex(fp)) = fp;

-- unsigned decimal, as other SimHash libraries print a uint64
SELECT fp, simhash_to_numeric(fp) AS unsigned
FROM (VALUES (0::bigint), (1), (-1), (-9223372036854775808), (9223372036854775807)) AS t(fp);
SELECT simhash_from_numeric(18446744073709551615) AS max,
       simhash_from_numeric(9223372036854775808) AS sign_bit,
       simhash_from_numeric(42.000) AS trailing_zeros,
       simhash_from_numeric(0) AS zero;
SELECT count(*) AS round_trips
FROM (SELECT simhash('document ' || i) AS fp FROM generate_series(1, 1000) i) s
WHERE simhash_from_numeric(simhash_to_numeric(fp)) = fp
  AND simhash_to_numeric(fp) = ('x' || simhash_to_hex(fp))::bit(64)::bigint::numeric
        + CASE WHEN fp < 0 THEN 18446744073709551616 ELSE 0 END;

-- bit(64) casts are built into PostgreSQL and keep the bits (bit 0 = rightmost)
SELECT 5::bigint::bit(64) AS five,
       (-1)::bigint::bit(64) = ~ 0::bigint::bit(64) AS all_ones,
       B'0000000000000000000000000000000000000000000000000000000000000101'::bigint AS back,
       length(replace(simhash('hello')::bit(64)::text, '0', '')) = hamming(simhash('hello'), 0) AS ones_agree,
       simhash('hello')::bit(64) = ('x' || simhash_to_hex(simhash('hello')))::bit(64) AS hex_agrees;

-- errors: bad text 22P02, out of range 22003
SELECT simhash_from_hex('');
SELECT simhash_from_hex('0x');
SELECT simhash_from_hex('12345678901234567');
SELECT simhash_from_hex('xyz');
SELECT simhash_from_hex(' ff');
SELECT simhash_from_hex('-1');
SELECT simhash_from_numeric(18446744073709551616);
SELECT simhash_from_numeric(-1);
SELECT simhash_from_numeric(1.5);
SELECT simhash_from_numeric('NaN');
SELECT simhash_from_numeric('Infinity');
\set VERBOSITY default
SELECT simhash_from_hex('ggg');
\set VERBOSITY sqlstate
SELECT simhash_from_hex('xyz');
SELECT simhash_from_hex('12345678901234567');
SELECT simhash_from_numeric(-1);
SELECT simhash_from_numeric(1.5);
SELECT simhash_from_numeric('NaN');
\set VERBOSITY terse
