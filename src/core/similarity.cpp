#include "core/similarity.hpp"

#include <memory>
#include <stdexcept>

#include "core/mix.hpp"
#include "core/text_options.hpp"

namespace simhash {

namespace {

void check_ascending(const std::uint64_t* s, std::size_t n, const char* which) {
  for (std::size_t i = 1; i < n; i++) {
    if (s[i] <= s[i - 1]) {
      throw std::invalid_argument(std::string("shingle set ") + which +
                                  " is not ascending and distinct");
    }
  }
}

// Number of elements of the shorter set found in the longer one, by galloping: a step
// doubles until it passes the value, then a binary search. Close to a plain merge for sets
// of similar size, much faster for very different sizes.
std::uint64_t count_common(const std::uint64_t* small, std::size_t ns, const std::uint64_t* large,
                           std::size_t nl) noexcept {
  std::uint64_t common = 0;
  std::size_t j = 0;
  for (std::size_t i = 0; i < ns && j < nl; i++) {
    const std::uint64_t v = small[i];
    if (large[j] < v) {
      std::size_t step = 1;
      std::size_t lo = j;
      while (j + step < nl && large[j + step] < v) {
        lo = j + step;
        step *= 2;
      }
      std::size_t hi = j + step < nl ? j + step : nl;  // large[hi] >= v, or hi = nl
      // large[lo] < v: search (lo, hi].
      while (lo + 1 < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if (large[mid] < v) {
          lo = mid;
        } else {
          hi = mid;
        }
      }
      j = hi;
    }
    if (j < nl && large[j] == v) {
      common++;
      j++;
    }
  }
  return common;
}

}  // namespace

Overlap overlap(const std::uint64_t* a, std::size_t na, const std::uint64_t* b, std::size_t nb) {
  if ((a == nullptr && na > 0) || (b == nullptr && nb > 0)) {
    throw std::invalid_argument("null shingle set");
  }
  check_ascending(a, na, "A");
  check_ascending(b, nb, "B");
  Overlap o;
  o.left = na;
  o.right = nb;
  o.common = na <= nb ? count_common(a, na, b, nb) : count_common(b, nb, a, na);
  return o;
}

std::uint64_t set_digest(const std::uint64_t* set, std::size_t n) noexcept {
  std::uint64_t h = mix64(0x243F6A8885A308D3ULL ^ n);
  for (std::size_t i = 0; i < n; ++i) h = mix64(h ^ set[i]) + 0x13198A2E03707344ULL;
  return mix64(h);
}

std::vector<std::uint64_t> shingle_set(std::string_view text, int n) {
  TextOptions options;
  options.tokenizer = TokenizerKind::Char;
  options.n = n;
  options.weighting = Weighting::Binary;
  TextFingerprinter fp(options, /*collect=*/true);
  // Bounds, not sizes: left uninitialized (the bound is 18 features a byte).
  const std::size_t capacity = fp.capacity_for(text.size());
  std::unique_ptr<std::uint64_t[]> buffer(new std::uint64_t[capacity]);
  std::unique_ptr<std::uint64_t[]> counts(new std::uint64_t[capacity]);
  fp.set_buffer(buffer.get(), capacity);
  fp.feed(text.data(), text.size());
  const std::size_t distinct = fp.distinct(counts.get(), capacity);
  return std::vector<std::uint64_t>(buffer.get(), buffer.get() + distinct);
}

}  // namespace simhash
