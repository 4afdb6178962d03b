/*
 * The C ABI of the dedupe trigger's rule for which near duplicate wins
 * (src/core/dedupe_rule.hpp): originals first, then the closest; a tie is broken by the
 * caller (policy link: the smaller key).
 */
#ifndef SIMHASH_DEDUPE_RULE_CAPI_H
#define SIMHASH_DEDUPE_RULE_CAPI_H

#include "capi/simhash_capi.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * -1 when near duplicate a wins over b, 1 when b wins, 0 on a tie. original: the row is
 * not itself linked to another; closeness: its similarity, or minus its Hamming distance.
 */
int simhash_dedupe_prefer(int a_original, double a_closeness, int b_original,
                          double b_closeness) SIMHASH_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif
