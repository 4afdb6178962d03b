#include "core/tokenizer.hpp"

#include <utility>

namespace simhash::detail {

void canonical_reorder(unsigned char* bytes, std::size_t len) noexcept {
  // Decode; a token holds at most kMaxTokenBytes bytes, hence at most that many code points.
  char32_t cps[kMaxTokenBytes];
  std::uint8_t ccc[kMaxTokenBytes];
  std::size_t n = 0;
  // The buffer holds only UTF-8 the tokenizer wrote itself, so every sequence is valid.
  for (std::size_t i = 0; i < len && n < kMaxTokenBytes; ++n) {
    const unsigned k = utf8::sequence_length(bytes[i]);
    if (k == 1) {
      cps[n] = bytes[i];
      ccc[n] = 0;
    } else {
      cps[n] = utf8::decode(bytes + i, k);
      ccc[n] = unicode::lookup(cps[n]).ccc;
    }
    i += k;
  }
  // Stable insertion sort of each run of non-zero classes (runs are short).
  for (std::size_t i = 1; i < n; ++i) {
    if (ccc[i] == 0) continue;
    for (std::size_t j = i; j > 0 && ccc[j - 1] > ccc[j]; --j) {
      std::swap(ccc[j - 1], ccc[j]);
      std::swap(cps[j - 1], cps[j]);
    }
  }
  std::size_t out = 0;
  for (std::size_t i = 0; i < n; ++i) out += utf8::encode(cps[i], bytes + out);
}

}  // namespace simhash::detail
