/*
 * Similarity and conversions of fingerprints.
 *
 * PostgreSQL's bigint is signed: the extension stores the unsigned 64-bit fingerprint by
 * two's complement (bit 63 is the sign bit), so about half of all fingerprints are
 * negative in SQL while other SimHash libraries print the unsigned value. These functions
 * convert between the stored bits and the unsigned forms:
 *   simhash_to_hex / simhash_from_hex          16 hexadecimal digits (unsigned)
 *   simhash_to_numeric / simhash_from_numeric  unsigned decimal, 0 .. 2^64 - 1
 * bigint::bit(64) and bit(64)::bigint are built into PostgreSQL and keep the bits as they
 * are (bit 0 of the fingerprint is the rightmost bit of the bit string).
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/numeric.h"

#include "capi/text_options_capi.h"
#include "pg/simhash_pg.h"

PG_FUNCTION_INFO_V1(simhash_similarity_int8);

/* simhash_similarity(bigint, bigint) -> float8: the share of equal bits, 1 - hamming / 64. */
Datum
simhash_similarity_int8(PG_FUNCTION_ARGS)
{
	uint64		a = (uint64) PG_GETARG_INT64(0);
	uint64		b = (uint64) PG_GETARG_INT64(1);

	PG_RETURN_FLOAT8(1.0 - (double) simhash_hamming(a, b) / SIMHASH_FINGERPRINT_BITS);
}

PG_FUNCTION_INFO_V1(simhash_to_hex_int8);

/* simhash_to_hex(bigint) -> text: 16 lower-case hex digits of the unsigned value. */
Datum
simhash_to_hex_int8(PG_FUNCTION_ARGS)
{
	char		out[16];

	simhash_format_hex((uint64) PG_GETARG_INT64(0), out);
	PG_RETURN_TEXT_P(cstring_to_text_with_len(out, 16));
}

PG_FUNCTION_INFO_V1(simhash_from_hex_text);

/* simhash_from_hex(text) -> bigint: 1 to 16 hex digits (optionally after 0x); 22P02. */
Datum
simhash_from_hex_text(PG_FUNCTION_ARGS)
{
	text	   *t = PG_GETARG_TEXT_PP(0);
	uint64		v = 0;

	if (simhash_parse_hex(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), &v) != SIMHASH_PARSE_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("simhash: invalid hexadecimal fingerprint: \"%s\"", text_to_cstring(t)),
				 errhint("A fingerprint in hex is 1 to 16 hexadecimal digits, optionally after 0x.")));
	PG_RETURN_INT64((int64) v);
}

PG_FUNCTION_INFO_V1(simhash_to_numeric_int8);

/* simhash_to_numeric(bigint) -> numeric: the unsigned value, 0 .. 2^64 - 1. */
Datum
simhash_to_numeric_int8(PG_FUNCTION_ARGS)
{
	char		digits[21];
	size_t		n = simhash_format_decimal((uint64) PG_GETARG_INT64(0), digits);

	digits[n] = '\0';
	PG_RETURN_DATUM(DirectFunctionCall3(numeric_in, CStringGetDatum(digits),
										ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1)));
}

PG_FUNCTION_INFO_V1(simhash_from_numeric_numeric);

/*
 * simhash_from_numeric(numeric) -> bigint: an integer in 0 .. 2^64 - 1 back to the stored
 * bits; anything else (negative, too large, a fraction, NaN, infinity) 22003.
 */
Datum
simhash_from_numeric_numeric(PG_FUNCTION_ARGS)
{
	Numeric		num = PG_GETARG_NUMERIC(0);
	char	   *s = DatumGetCString(DirectFunctionCall1(numeric_out, NumericGetDatum(num)));
	uint64		v = 0;

	if (simhash_parse_decimal(s, strlen(s), &v) != SIMHASH_PARSE_OK)
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("simhash: %s is not an integer between 0 and 18446744073709551615", s)));
	PG_RETURN_INT64((int64) v);
}
