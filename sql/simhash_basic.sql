-- simhash(text) and hamming(bigint, bigint): values, NULL handling, the bigint mapping.
-- (IF NOT EXISTS: the hostile-schema test mode's second round installs it beforehand.)
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS simhash;
RESET client_min_messages;
\set VERBOSITY terse

-- strict: NULL in, NULL out
SELECT simhash(NULL) IS NULL AS null_text,
       hamming(NULL, 1) IS NULL AS null_a,
       hamming(1, NULL) IS NULL AS null_b;

-- texts without any token have no fingerprint (NULL), so they cannot pile up in one
-- index bucket
SELECT simhash('') IS NULL AS empty,
       simhash(E' \t\n ') IS NULL AS whitespace,
       simhash('... !!! -- $ + =') IS NULL AS punctuation,
       simhash('──── → ■') IS NULL AS symbols_only;

-- short texts get distinct fingerprints, not a shared constant
SELECT count(DISTINCT simhash(w)) AS distinct_fps, count(*) AS words
FROM unnest(ARRAY['a', 'b', 'hello', 'world', 'x1', '1', '2', 'yes', 'no']) AS w;

-- golden values: the fingerprint is an on-disk format and must never change
SELECT simhash('The quick brown fox jumps over the lazy dog') AS fox,
       to_hex(simhash('The quick brown fox jumps over the lazy dog')) AS fox_hex,
       simhash('hello') AS hello;

-- the unsigned fingerprint maps onto bigint by two's complement: bit 63 is the sign
SELECT count(*) FILTER (WHERE fp < 0) > 0 AS some_negative,
       count(*) FILTER (WHERE fp > 0) > 0 AS some_positive
FROM (SELECT simhash('document number ' || i) AS fp FROM generate_series(1, 200) i) s;

-- hamming
SELECT hamming(0, 0) AS same,
       hamming(0, -1) AS all_bits,
       hamming(0, 1) AS one,
       hamming(-9223372036854775808, 0) AS sign_bit,
       hamming(x'F0F0'::bigint, x'0F0F'::bigint) AS sixteen,
       hamming(123456789, 987654321) = hamming(987654321, 123456789) AS symmetric;

-- near duplicates are close, unrelated texts are far
WITH t(name, body) AS (VALUES
  ('mit',  'Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated documentation files (the "Software"), to deal in the Software without restriction, including without limitation the rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the Software.'),
  ('mit2', 'Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated documentation files (the "Software"), to deal in the Software without restriction, including without limitation the rights to use, copy, modify, merge, publish, distribute and/or sell copies of the Software.'),
  ('gpl',  'This program is free software; you can redistribute it and/or modify it under the terms of the GNU General Public License as published by the Free Software Foundation; either version 2 of the License, or (at your option) any later version.'))
SELECT a.name, b.name, hamming(simhash(a.body), simhash(b.body)) <= 8 AS near
FROM t a JOIN t b ON a.name < b.name
ORDER BY 1, 2;

-- wrong argument types are refused by the catalog
SELECT simhash(42);
SELECT hamming(1);
SELECT hamming('a', 'b');
