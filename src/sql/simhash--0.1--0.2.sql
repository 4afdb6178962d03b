-- simhash 0.1 -> 0.2. CREATE EXTENSION simhash installs 0.1 (simhash--0.1.sql, frozen)
-- and then runs this script, so it is also the install script of everything new in 0.2.
-- Hand-edited, one section per feature; never changed once 0.2 is released.
\echo Use "ALTER EXTENSION simhash UPDATE TO '0.2'" to load this file. \quit

-- == Fingerprint options, weights, IDF and conversions (issue 3) ==========================


-- == Near-duplicate search: block keys, simhash_near, index layouts (issue 4) ============


-- == Dedupe on insert: the simhash_dedupe() trigger (issue 5) ============================


-- == All pairs and clusters of a table (issue 6) =========================================

