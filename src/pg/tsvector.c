/*
 * PostgreSQL text search as a tokenizer: simhash(tsvector, n, weighting, min_features), so
 * that stemming and stop words of any text search configuration can be used:
 * simhash(to_tsvector('english', body)).
 *
 *  - A tsvector whose lexemes all have positions is put back in text order (by position;
 *    lexemes at the same position in the tsvector's own lexeme order) and shingled n
 *    lexemes at a time, exactly as simhash(text) shingles words. Removed stop words leave
 *    gaps in the positions; the shingles run across them.
 *  - A tsvector with a lexeme without positions (strip(), or a tsvector typed in without
 *    them) is a bag of lexemes: each distinct lexeme is one feature, occurring once, and n
 *    does not apply.
 *
 * Lexemes are hashed as they are (converted to UTF-8): the text search configuration has
 * already normalized them. Weight labels (A-D) are ignored. PostgreSQL keeps at most 256
 * positions per lexeme and caps positions at 16383, so in very long documents the order
 * of the tail is approximate.
 */
#include "postgres.h"

#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "tsearch/ts_type.h"
#include "utils/builtins.h"

#include "pg/options_pg.h"

typedef struct LexemeAt
{
	uint16		pos;
	int			lexeme;			/* index into the tsvector's entries */
} LexemeAt;

static int
compare_lexeme_at(const void *a, const void *b)
{
	const LexemeAt *x = (const LexemeAt *) a;
	const LexemeAt *y = (const LexemeAt *) b;

	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	if (x->lexeme != y->lexeme)
		return x->lexeme < y->lexeme ? -1 : 1;
	return 0;
}

/*
 * Every lexeme of tsv in UTF-8, once, into utf8[i] / utf8_len[i]; returns whether every
 * lexeme has positions (otherwise the tsvector is a bag of lexemes).
 */
static bool
lexemes_utf8(TSVector tsv, const char ***utf8, size_t **utf8_len)
{
	WordEntry  *entries = ARRPTR(tsv);
	bool		positions = true;

	*utf8 = palloc(sizeof(const char *) * Max(tsv->size, 1));
	*utf8_len = palloc(sizeof(size_t) * Max(tsv->size, 1));
	for (int i = 0; i < tsv->size; i++)
	{
		(*utf8)[i] = simhash_bytes_utf8(STRPTR(tsv) + entries[i].pos, entries[i].len,
										&(*utf8_len)[i]);
		if (!entries[i].haspos)
			positions = false;
	}
	return positions;
}

/* Feeds one lexeme (UTF-8) as a token. */
static void
feed_lexeme(simhash_text_state *state, SimhashFeatureBuffer *buffer, const char *lexeme,
			size_t len)
{
	char		errbuf[SIMHASH_ERRBUF_SIZE];

	simhash_text_reserve(state, buffer, len + 2);
	simhash_check_status(simhash_text_token(state, lexeme, len, errbuf, sizeof(errbuf)), errbuf);
}

/* Feeds the lexemes of tsv in the order of their positions (a lexeme once per position). */
static void
feed_by_position(TSVector tsv, simhash_text_state *state, SimhashFeatureBuffer *buffer,
				 const char **utf8, const size_t *utf8_len)
{
	WordEntry  *entries = ARRPTR(tsv);
	LexemeAt   *order;
	int			total = 0;
	int			k = 0;

	for (int i = 0; i < tsv->size; i++)
		total += POSDATALEN(tsv, &entries[i]);
	order = palloc(sizeof(LexemeAt) * Max(total, 1));
	for (int i = 0; i < tsv->size; i++)
	{
		WordEntryPos *pos = POSDATAPTR(tsv, &entries[i]);

		for (int j = 0; j < POSDATALEN(tsv, &entries[i]); j++)
		{
			order[k].pos = WEP_GETPOS(pos[j]);
			order[k].lexeme = i;
			k++;
		}
	}
	qsort(order, total, sizeof(LexemeAt), compare_lexeme_at);
	for (k = 0; k < total; k++)
		feed_lexeme(state, buffer, utf8[order[k].lexeme], utf8_len[order[k].lexeme]);
	pfree(order);
}

PG_FUNCTION_INFO_V1(simhash_tsvector);

/* simhash(lexemes tsvector, n integer, weighting text, min_features integer) -> bigint. */
Datum
simhash_tsvector(PG_FUNCTION_ARGS)
{
	TSVector	tsv = PG_GETARG_TSVECTOR(0);
	simhash_text_options options;
	simhash_text_state state;
	SimhashFeatureBuffer buffer;
	const char **utf8;
	size_t	   *utf8_len;
	bool		positions;
	uint64		fp;

	options.tokenizer = SIMHASH_TOKENIZER_WORD;
	options.n = PG_GETARG_INT32(1);
	options.weighting = simhash_weighting_arg(PG_GETARG_TEXT_PP(2));
	options.min_features = PG_GETARG_INT32(3);
	positions = lexemes_utf8(tsv, &utf8, &utf8_len);

	/* Starting checks the options as given (22023), even where n does not apply. */
	simhash_pg_text_begin(&state, &options, true, &buffer);
	if (positions)
		feed_by_position(tsv, &state, &buffer, utf8, utf8_len);
	else
	{
		/* A bag of lexemes: every lexeme is a feature. */
		pfree(buffer.data);
		options.n = 1;
		simhash_pg_text_begin(&state, &options, true, &buffer);
		for (int i = 0; i < tsv->size; i++)
			feed_lexeme(&state, &buffer, utf8[i], utf8_len[i]);
	}
	CHECK_FOR_INTERRUPTS();
	if (!simhash_pg_text_end(&state, &buffer, NULL, 0, 0, &fp))
		PG_RETURN_NULL();
	PG_RETURN_INT64((int64) fp);
}
