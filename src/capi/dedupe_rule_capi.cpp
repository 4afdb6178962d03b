// The C ABI of the dedupe trigger's winner rule (src/core/dedupe_rule.hpp).
#include "capi/dedupe_rule_capi.h"

#include "core/dedupe_rule.hpp"

extern "C" int simhash_dedupe_prefer(int a_original, double a_closeness, int b_original,
                                     double b_closeness) noexcept {
  return static_cast<int>(simhash::prefer({a_original != 0, a_closeness},
                                          {b_original != 0, b_closeness}));
}
