/*
 * The simhash_dedupe trigger's policies, one place for every path (the trigger on a table,
 * dedupe.c, and on a view, dedupe_view.c): given the near duplicate the search or a
 * shortcut found (which one wins: src/core/dedupe_rule.hpp), reject raises 23505, skip
 * drops the row, link names the near duplicate's key in the link column; a message or a
 * link shows a key only to a caller who may read it.
 */
#include "postgres.h"

#include "commands/trigger.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/rel.h"

#include "capi/dedupe_rule_capi.h"
#include "pg/dedupe.h"

/*
 * Whether a candidate (an original or not, its distance or similarity, its key for link)
 * beats the near duplicate found so far: the trigger's one rule (src/core/dedupe_rule.hpp:
 * originals first, then the nearest or most similar), then for link the smallest key, so
 * that the same row wins whatever order the rows are met in.
 */
static bool
candidate_wins(DedupeConfig *c, const Found *found, bool is_original, int distance,
			   double similarity, Datum key)
{
	int			preference;

	if (!found->any)
		return true;
	preference = simhash_dedupe_prefer(is_original, c->metric->closeness(distance, similarity),
									   found->is_original,
									   c->metric->closeness(found->distance, found->similarity));
	return preference < 0 ||
		(preference == 0 && c->policy == POLICY_LINK && dedupe_key_before(c, key, found->key));
}

/*
 * A candidate met by the search of a table or the view's: kept as *found when it wins,
 * its key (link; of type key_att) copied in the current memory context. True when it won
 * and its key is to be named (not skip): the caller then sets found->key_text.
 */
bool
offer(DedupeConfig *c, Found *found, bool is_original, int distance, double similarity,
	  Datum key, Form_pg_attribute key_att)
{
	if (!candidate_wins(c, found, is_original, distance, similarity, key))
		return false;
	found->any = true;
	found->distance = distance;
	found->similarity = similarity;
	found->is_original = is_original;
	if (c->policy == POLICY_LINK)
		found->key = datumCopy(key, key_att->attbyval, key_att->attlen);
	return c->policy != POLICY_SKIP;
}

/* "(id)=(42)" from the text of each key column (NULL: null), or "(ctid)=((0,1))" without. */
char *
key_text(const DedupeConfig *c, char *const *values)
{
	StringInfoData buf;

	initStringInfo(&buf);
	appendStringInfo(&buf, "(%s)=(", c->nkeys > 0 ? c->key_names : "ctid");
	for (int i = 0; i < Max(c->nkeys, 1); i++)
		appendStringInfo(&buf, "%s%s", i > 0 ? ", " : "", values[i] ? values[i] : "null");
	appendStringInfoChar(&buf, ')');
	return buf.data;
}

/*
 * Policy link would write into the caller's row the key of a row the caller may not read
 * (row-level security, or no SELECT on its key, text or key column; see
 * may_read_near_duplicate()): refused, as a reject would be, telling no more than that
 * such a row exists (what a unique index tells).
 */
static void
refuse_hidden_link(DedupeConfig *c, Relation rel, Trigger *tg)
{
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("new row for relation \"%s\" is a near duplicate of a row the current user cannot read",
					RelationGetRelationName(rel)),
			 errdetail("Trigger \"%s\" would link the new row to that row's key.", tg->tgname),
			 errhint("Grant SELECT on the columns %s, %s and %s (without row-level security on the table), or use policy reject or skip.",
					 c->key_names, quote_identifier(c->args.text),
					 quote_identifier(c->fp_attno > 0 ? c->args.keys : c->args.text))));
}

/* Policy reject: 23505, naming the near duplicate's key if the caller may read it. */
void
reject(DedupeConfig *c, Relation rel, Trigger *tg, const Found *found)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("new row for relation \"%s\" is a near duplicate of an existing row",
					RelationGetRelationName(rel)),
			 c->metric->detail(c, found, tg->tgname),
			 errtableconstraint(rel, tg->tgname)));
}

/*
 * The policy for a row whose near duplicate is *found (found->any false: none): reject
 * raises 23505; skip returns false (drop the row); link sets the link column in w, or
 * refuses to name a row the caller cannot read. True: write the row.
 */
bool
apply_policy(DedupeConfig *c, Relation rel, Trigger *tg, const Found *found, RowWork *w)
{
	if (found->any && c->policy == POLICY_REJECT)
		reject(c, rel, tg, found);
	if (found->any && c->policy == POLICY_SKIP)
		return false;
	if (c->policy == POLICY_LINK && !w->unchanged)
	{
		if (found->any && found->key_text == NULL)
			refuse_hidden_link(c, rel, tg);
		set_column(w, c->link_attno, found->any ? found->key : (Datum) 0, !found->any);
	}
	return true;
}
