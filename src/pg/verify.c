/*
 * Whether a stored text reaches a similarity threshold with a shingle set: the check that
 * confirms a candidate, for the dedupe trigger's search (dedupe_search.c) and for the
 * operator %~ (similarity_ops.c), at a bounded cost. The text is read in growing slices
 * (a toasted text is not detoasted whole) and its distinct shingles counted, up to the
 * most a text reaching the threshold may have (simhash_shingle_cap): a text past it is
 * ruled out without reading the rest. A text counted whole is compared by one probe of
 * the counter's table for each shingle of the set (its own set is never sorted, unless
 * the caller keeps it). The answer is simhash_shingle_jaccard() of the two whole sets
 * against the threshold. Memory: the counter's table, at most 16 bytes a shingle of the
 * cap, and one slice.
 */
#include "postgres.h"

#include <math.h>

#include "access/detoast.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/memutils.h"

#include "capi/similarity_capi.h"
#include "pg/simhash_pg.h"
#include "pg/similarity.h"

/* A cap past any text's shingles (a set holds at most 2^26), that counters still accept. */
#define SIMHASH_NO_SHINGLE_CAP (UINT64CONST(1) << 58)

/* Bytes of a text read at first, and at most at a time from a plain one. */
#define CANDIDATE_FIRST_READ (64 * 1024)
#define CANDIDATE_MAX_READ (1024 * 1024)
/* Bytes fed to the shingle counter at a time: its table grows between feeds. */
#define CANDIDATE_FEED 4096

/*
 * The most distinct shingles a candidate may have and still reach threshold t with a new
 * text of na distinct shingles: the largest m with na / m >= t, computed as the similarity
 * is (in double). Jaccard(A, B) = |A ∩ B| / |A ∪ B| <= |A| / |B|, and the computed
 * similarity common / (na + nb - common) is, rounding included, at most na / nb: a
 * candidate with more than this many shingles is below the threshold, whatever they are.
 */
uint64
simhash_shingle_cap(uint64 na, double t)
{
	uint64		m;

	if (na == 0)
		return 0;
	/* a tiny t (the setting of %~ goes down to 1e-300): no cap any text can reach */
	if (!((double) na / t < (double) SIMHASH_NO_SHINGLE_CAP))
		return SIMHASH_NO_SHINGLE_CAP;
	m = (uint64) floor((double) na / t);
	while (m > 0 && (double) na / (double) m < t)
		m--;
	while ((double) na / (double) (m + 1) >= t)
		m++;
	return m;
}

/* The shingle counter of one candidate, its table growing in the current context. */
typedef struct CandidateCounter
{
	simhash_shingle_counter state;
	uint64	   *table;
	uint64		count;
	uint64		cap;
} CandidateCounter;

/* Makes room in the table for len more bytes (or the end of the text, len 0). */
static void
counter_room(CandidateCounter *cc, size_t len)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	size_t		need = simhash_shingle_counter_table_before(&cc->state, len);

	if (need > simhash_shingle_counter_table_size(&cc->state))
	{
		uint64	   *table = palloc_extended(sizeof(uint64) * need, MCXT_ALLOC_HUGE);

		simhash_check_status(simhash_shingle_counter_grow(&cc->state, table, need,
														  &simhash_pg_interrupt, errbuf,
														  sizeof(errbuf)),
							 errbuf);
		pfree(cc->table);
		cc->table = table;
	}
}

/* Feeds bytes to the counter, a few KB at a time; false once past the cap. */
static bool
counter_feed(CandidateCounter *cc, const char *data, size_t len)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	for (size_t at = 0; at < len && cc->count <= cc->cap; at += CANDIDATE_FEED)
	{
		size_t		n = Min((size_t) CANDIDATE_FEED, len - at);

		if ((at & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		counter_room(cc, n);
		simhash_check_status(simhash_shingle_counter_feed(&cc->state, data + at, n, &cc->count,
														  errbuf, sizeof(errbuf)),
							 errbuf);
	}
	return cc->count <= cc->cap;
}

/*
 * Feeds text in the database encoding, converted to UTF-8 as simhash_text_shingles
 * converts it (the data must end on a character boundary); false once past the cap.
 */
static bool
counter_feed_server(CandidateCounter *cc, const char *data, size_t len)
{
	size_t		utf8_len;
	const char *utf8 = simhash_bytes_utf8(data, (int) len, &utf8_len);
	bool		within = counter_feed(cc, utf8, utf8_len);

	if (utf8 != data)
		pfree((void *) utf8);
	return within;
}

/*
 * The candidate's text d fed to the shingle counter cc, in growing slices (a toasted text
 * is not detoasted whole): false as soon as it has more distinct shingles than cc.cap.
 */
static bool
feed_candidate(CandidateCounter *cc, Datum d, Size total)
{
	struct varlena *attr = (struct varlena *) DatumGetPointer(d);
	bool		within = true;

	/*
	 * A compressed text is decompressed from its start for every slice: slices double, so
	 * the bytes decompressed stay under twice those read, and the last one is the whole
	 * text. A plain one is fetched a slice (at most 1 MB) at a time.
	 */
	bool		compressed = VARATT_IS_COMPRESSED(attr);
	int			encoding = GetDatabaseEncoding();

	/*
	 * Converted to UTF-8 (other than under UTF8 and SQL_ASCII), a slice must end on a
	 * character boundary of a multibyte encoding: it is cut there, and the next slice
	 * starts with the rest. (UTF-8 may be cut anywhere: the tokenizer waits for the rest
	 * of a sequence.)
	 */
	bool		clip = encoding != PG_UTF8 && encoding != PG_SQL_ASCII &&
		pg_database_encoding_max_length() > 1;
	Size		offset = 0;

	if (!VARATT_IS_EXTERNAL(attr) && !VARATT_IS_COMPRESSED(attr))
		return counter_feed_server(cc, VARDATA_ANY(attr), VARSIZE_ANY_EXHDR(attr));
	if (VARATT_IS_EXTERNAL_ONDISK(attr))
	{
		struct varatt_external toast_pointer;

		VARATT_EXTERNAL_GET_POINTER(toast_pointer, attr);
		compressed = VARATT_EXTERNAL_IS_COMPRESSED(toast_pointer);
	}
	while (within && offset < total)
	{
		Size		len = Max(offset, (Size) CANDIDATE_FIRST_READ);
		struct varlena *slice;

		if (!compressed)
			len = Min(len, (Size) CANDIDATE_MAX_READ);
		else if (len >= total - offset)
		{
			/* The last slice: the whole text once, not a prefix and a copy of a slice. */
			struct varlena *whole = detoast_attr(attr);

			within = counter_feed_server(cc, VARDATA_ANY(whole) + offset,
										 VARSIZE_ANY_EXHDR(whole) - offset);
			pfree(whole);
			offset = total;
			break;
		}
		len = Min(len, total - offset);
		slice = detoast_attr_slice(attr, (int32) offset, (int32) len);
		len = VARSIZE_ANY_EXHDR(slice);
		if (clip && offset + len < total)
			len = pg_mbcliplen(VARDATA_ANY(slice), (int) len, (int) len);
		if (len == 0)
			elog(ERROR, "simhash: cannot read a stored text at byte %zu of %zu",
				 (size_t) offset, (size_t) total);
		within = counter_feed_server(cc, VARDATA_ANY(slice), len);
		pfree(slice);
		offset += len;
	}
	if (!within)
		elog(DEBUG1, "simhash: a text of %zu bytes has more than %llu distinct shingles after %zu bytes: below the threshold",
			 (size_t) total, (unsigned long long) cc->cap, (size_t) offset);
	return within;
}

/*
 * The text d counted into *cc, read only as far as it can matter (see
 * simhash_text_reaches()); false when it is past the cap of a text whose set has a_size
 * shingles at threshold t. The caller frees cc->table when true.
 */
static bool
counted(Datum d, size_t a_size, double t, CandidateCounter *cc)
{
	Size		total = toast_raw_datum_size(d) - VARHDRSZ;
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	size_t		table_size;
	bool		within;

	cc->cap = simhash_shingle_cap(a_size, t);
	cc->count = 0;
	/* Sized at once for the first feed (or the whole of a short text), within the cap. */
	table_size = simhash_shingle_counter_table_for(
		Min(cc->cap, (uint64) Min(total, (Size) CANDIDATE_FEED) * 18 + 256));
	if (table_size == 0)
		elog(ERROR, "simhash: no shingle table for a cap of " UINT64_FORMAT, cc->cap);
	cc->table = palloc_extended(sizeof(uint64) * table_size, MCXT_ALLOC_HUGE);
	simhash_check_status(simhash_shingle_counter_begin(&cc->state, cc->cap, cc->table,
													   table_size, errbuf, sizeof(errbuf)),
						 errbuf);
	within = feed_candidate(cc, d, total);
	if (within)
	{
		counter_room(cc, 0);
		simhash_check_status(simhash_shingle_counter_end(&cc->state, &cc->count, errbuf,
														 sizeof(errbuf)),
							 errbuf);
		within = cc->count <= cc->cap;
	}
	if (!within)
		pfree(cc->table);
	return within;
}

/* The set cc counted, ascending (palloc'd). */
static SimhashShingleSet
counted_set(CandidateCounter *cc)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	uint64	   *data = palloc(sizeof(uint64) * Max(cc->count, 1));
	size_t		n = 0;
	SimhashShingleSet set;

	simhash_check_status(simhash_shingle_counter_set(&cc->state, data, Max(cc->count, 1), &n,
													 &simhash_pg_interrupt,
													 errbuf, sizeof(errbuf)),
						 errbuf);
	set.data = data;
	set.size = n;
	return set;
}

/*
 * simhash_shingle_jaccard(a, the set cc counted), the common shingles found by a probe of
 * the counter's table for each of a's (no sort of the candidate's set); false when
 * undefined.
 */
static bool
counted_jaccard(CandidateCounter *cc, SimhashShingleSet a, double *similarity)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	uint64		common;

	if (a.size == 0 && cc->count == 0)
		return false;
	simhash_check_status(simhash_shingle_counter_common(&cc->state, a.data, a.size, &common,
														errbuf, sizeof(errbuf)),
						 errbuf);
	*similarity = (double) common / (double) (a.size + cc->count - common);
	return true;
}

/*
 * Whether the stored text d (a text Datum as a row holds it: toasted or not) reaches
 * similarity t (> 0) with the set a of a text a_body (NULL: not given): its similarity
 * into *similarity; false below t or undefined. A text byte-identical to a_body has
 * similarity 1 without being read twice. With set_out, the text's set (ascending,
 * palloc'd) when it was counted whole, else set_out->data NULL.
 */
bool
simhash_text_reaches(Datum d, const text *a_body, SimhashShingleSet a, double t,
					 double *similarity, SimhashShingleSet *set_out)
{
	Size		total = toast_raw_datum_size(d) - VARHDRSZ;
	CandidateCounter cc;
	bool		defined;

	if (set_out != NULL)
		set_out->data = NULL;
	/* A byte-identical text (common: licences, boilerplate) needs no shingling. */
	if (a_body != NULL && a.size > 0 && total == VARSIZE_ANY_EXHDR(a_body))
	{
		text	   *body = DatumGetTextPP(d);
		bool		same = memcmp(VARDATA_ANY(body), VARDATA_ANY(a_body), total) == 0;

		if ((Pointer) body != DatumGetPointer(d))
			pfree(body);
		if (same)
		{
			*similarity = 1.0;
			return 1.0 >= t;
		}
	}
	if (!counted(d, a.size, t, &cc))
		return false;
	if (set_out != NULL)
	{
		*set_out = counted_set(&cc);
		defined = simhash_shingle_jaccard(a, *set_out, similarity);
	}
	else
		defined = counted_jaccard(&cc, a, similarity);
	pfree(cc.table);
	return defined && *similarity >= t;
}
