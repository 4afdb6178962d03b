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

PG_FUNCTION_INFO_V1(simhash_tsvector);

/* simhash(lexemes tsvector, n integer, weighting text, min_features integer) -> bigint. */
Datum
simhash_tsvector(PG_FUNCTION_ARGS)
{
	TSVector	tsv = PG_GETARG_TSVECTOR(0);
	WordEntry  *entries = ARRPTR(tsv);
	simhash_text_options options;
	simhash_text_state state;
	SimhashFeatureBuffer buffer;
	const char **utf8;
	size_t	   *utf8_len;
	bool		positions = true;
	int			encoding = GetDatabaseEncoding();
	int			i;
	uint64		fp;
	bool		found;
	char		errbuf[SIMHASH_ERRBUF_SIZE];
	simhash_status status;

	options.tokenizer = SIMHASH_TOKENIZER_WORD;
	options.n = PG_GETARG_INT32(1);
	options.weighting = simhash_weighting_arg(PG_GETARG_TEXT_PP(2));
	options.min_features = PG_GETARG_INT32(3);

	/* Every lexeme in UTF-8, once. */
	utf8 = palloc(sizeof(const char *) * Max(tsv->size, 1));
	utf8_len = palloc(sizeof(size_t) * Max(tsv->size, 1));
	for (i = 0; i < tsv->size; i++)
	{
		const char *lexeme = STRPTR(tsv) + entries[i].pos;
		int			len = entries[i].len;

		if (encoding != PG_UTF8 && encoding != PG_SQL_ASCII)
		{
			const char *converted = pg_server_to_any(lexeme, len, PG_UTF8);

			if (converted != lexeme)
				len = strlen(converted);
			lexeme = converted;
		}
		utf8[i] = lexeme;
		utf8_len[i] = (size_t) len;
		if (!entries[i].haspos)
			positions = false;
	}

	/* Starting checks the options as given (22023), even where n does not apply. */
	simhash_pg_text_begin(&state, &options, true, &buffer);
	if (!positions)
	{
		/* A bag of lexemes: every lexeme is a feature. */
		pfree(buffer.data);
		options.n = 1;
		simhash_pg_text_begin(&state, &options, true, &buffer);
	}

	if (positions)
	{
		LexemeAt   *order;
		int			total = 0;
		int			k = 0;

		for (i = 0; i < tsv->size; i++)
			total += POSDATALEN(tsv, &entries[i]);
		order = palloc(sizeof(LexemeAt) * Max(total, 1));
		for (i = 0; i < tsv->size; i++)
		{
			WordEntryPos *pos = POSDATAPTR(tsv, &entries[i]);
			int			j;

			for (j = 0; j < POSDATALEN(tsv, &entries[i]); j++)
			{
				order[k].pos = WEP_GETPOS(pos[j]);
				order[k].lexeme = i;
				k++;
			}
		}
		qsort(order, total, sizeof(LexemeAt), compare_lexeme_at);
		for (k = 0; k < total; k++)
		{
			int			lx = order[k].lexeme;

			simhash_text_reserve(&state, &buffer, utf8_len[lx] + 2);
			status = simhash_text_token(&state, utf8[lx], utf8_len[lx], errbuf, sizeof(errbuf));
			if (status != SIMHASH_OK)
				simhash_raise_status(status, errbuf);
		}
		pfree(order);
	}
	else
	{
		for (i = 0; i < tsv->size; i++)
		{
			simhash_text_reserve(&state, &buffer, utf8_len[i] + 2);
			status = simhash_text_token(&state, utf8[i], utf8_len[i], errbuf, sizeof(errbuf));
			if (status != SIMHASH_OK)
				simhash_raise_status(status, errbuf);
		}
	}
	CHECK_FOR_INTERRUPTS();

	found = simhash_pg_text_end(&state, &buffer, NULL, 0, 0, &fp);
	if (!found)
		PG_RETURN_NULL();
	PG_RETURN_INT64((int64) fp);
}
