// libFuzzer target: shingle sets and their similarity (src/core/similarity.hpp, behind
// simhash_jaccard, simhash_containment, simhash_shingles, simhash_shingle_digest) and the
// MinHash LSH keys (src/core/minhash.hpp, behind simhash_lsh), through the C ABI where SQL
// goes through it.
//
// Input: byte 0 the mode and sizes; then either two texts (mode bit 0 clear: byte 1 says
// where the rest is cut in two; with mode bit 1, the second text is the first with a few
// bytes changed), or two lists of 64-bit values (mode bit 0 set: one byte each, small
// values so that lists overlap, or 8 bytes each when byte & 0xE0 == 0xE0), taken as they
// are (possibly unsorted, with repeats: what a caller may pass as bigint[]) and sorted.
//
// Checks, aborting on the first violation:
//  - a text's shingle set (built as the glue builds it: 'char' tokenizer, n = 5, 'binary',
//    simhash_text_distinct) is strictly ascending, equals core shingle_set(), and equals a
//    reference: reference tokens -> characters -> shingles of 5 -> std::set;
//  - simhash_shingle_overlap refuses exactly the lists that are not strictly ascending;
//    for sets, |A ∩ B| equals std::set_intersection's, is symmetric, and gives a Jaccard
//    similarity and containments in [0, 1], with Jaccard(A, A) = 1 for a non-empty A;
//  - simhash_lsh_keys gives SIMHASH_LSH_BANDS keys for a non-empty set and none for an
//    empty one, refuses a too-small key buffer, is deterministic, agrees with
//    lsh_keys(text); equal sets have equal keys and digests;
//  - the shingle counter (simhash_shingle_counter_*), fed the text in random pieces with a
//    random cap and a table grown only as asked: after every piece it has counted only
//    shingles of the whole text, never more than cap + 1; ended, it holds exactly the
//    shingle set when that fits within the cap, and is past the cap otherwise;
//  - MinHash signatures (any number of bins from 1 to 300) take every value from the set's
//    own mixed values (the signature of each one-element set) and contain the smallest of
//    them; a signature with bins < 1 is refused.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "capi/similarity_capi.h"
#include "capi/text_options_capi.h"
#include "core/minhash.hpp"
#include "core/similarity.hpp"
#include "fuzz_util.hpp"

namespace {

using simhash::fuzz::FeatureBuffer;
using simhash::fuzz::Input;
using simhash::fuzz::Rng;
using Set = std::vector<std::uint64_t>;

// The shingle set of a text as src/pg/similarity.c builds it.
Set shingles_capi(std::string_view text, Rng& rng) {
  simhash_text_options o{SIMHASH_TOKENIZER_CHAR, SIMHASH_SIMILARITY_SHINGLE,
                         SIMHASH_WEIGHTING_BINARY, 1};
  simhash_text_state state;
  char err[256];
  FUZZ_CHECK(simhash_text_begin(&state, &o, 1, err, sizeof err) == SIMHASH_OK);
  FeatureBuffer buffer(&state);
  buffer.feed(text, rng, 1 + rng.below(500));
  buffer.reserve(0);
  std::vector<std::uint64_t> counts(buffer.capacity() + 1);
  std::size_t distinct = 0;
  FUZZ_CHECK(simhash_text_distinct(&state, counts.data(), buffer.capacity(), &distinct, err,
                                   sizeof err) == SIMHASH_OK);
  return Set(buffer.data(), buffer.data() + distinct);
}

Set shingles_reference(std::string_view text) {
  const std::vector<std::uint64_t> f = simhash::reference::features(
      simhash::fuzz::units(simhash::reference::tokens(text, false), true),
      SIMHASH_SIMILARITY_SHINGLE);
  const std::set<std::uint64_t> s(f.begin(), f.end());
  return Set(s.begin(), s.end());
}

bool strictly_ascending(const Set& s) {
  for (std::size_t i = 1; i < s.size(); ++i) {
    if (s[i] <= s[i - 1]) return false;
  }
  return true;
}

std::vector<std::int64_t> lsh(const Set& s, std::size_t cap) {
  std::vector<std::int64_t> keys(cap);
  std::size_t n = 99;
  char err[64];
  const simhash_status st = simhash_lsh_keys(s.data(), s.size(), keys.data(), cap, &n, err, sizeof err);
  const std::size_t want = s.empty() ? 0 : SIMHASH_LSH_BANDS;
  if (cap < want) {
    FUZZ_CHECK(st == SIMHASH_INVALID_ARGUMENT);
    return {};
  }
  FUZZ_CHECK(st == SIMHASH_OK && n == want);
  keys.resize(n);
  return keys;
}

void check_pair(const Set& a, const Set& b) {
  std::uint64_t ab = 0, ba = 0;
  char err[64];
  FUZZ_CHECK(simhash_shingle_overlap(a.data(), a.size(), b.data(), b.size(), &ab, nullptr, err,
                                     sizeof err) == SIMHASH_OK);
  FUZZ_CHECK(simhash_shingle_overlap(b.data(), b.size(), a.data(), a.size(), &ba, nullptr, err,
                                     sizeof err) == SIMHASH_OK);
  Set common;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
  FUZZ_CHECK(ab == common.size() && ba == ab);

  const simhash::Overlap o{ab, a.size(), b.size()};
  const double j = simhash::jaccard(o);
  if (a.empty() && b.empty()) {
    FUZZ_CHECK(j < 0);
  } else {
    FUZZ_CHECK(j >= 0 && j <= 1);
    FUZZ_CHECK(j <= simhash::jaccard_bound(a.size(), b.size()));
  }
  const double c = simhash::containment(o);
  FUZZ_CHECK(a.empty() ? c < 0 : (c >= 0 && c <= 1));

  std::uint64_t self = 0;
  FUZZ_CHECK(simhash_shingle_overlap(a.data(), a.size(), a.data(), a.size(), &self, nullptr,
                                     err, sizeof err) == SIMHASH_OK);
  FUZZ_CHECK(self == a.size());
  if (!a.empty()) FUZZ_CHECK(simhash::jaccard(simhash::Overlap{self, a.size(), a.size()}) == 1.0);

  const auto ka = lsh(a, SIMHASH_LSH_BANDS), kb = lsh(b, SIMHASH_LSH_BANDS);
  FUZZ_CHECK(ka == lsh(a, SIMHASH_LSH_BANDS + 3));
  (void)lsh(a, a.size() % SIMHASH_LSH_BANDS);  // too small unless a is empty: refused
  if (a == b) {
    FUZZ_CHECK(ka == kb);
    FUZZ_CHECK(simhash_shingle_digest(a.data(), a.size()) == simhash_shingle_digest(b.data(), b.size()));
  }
}

void check_signature(const Set& s, int bins) {
  try {
    (void)simhash::minhash_signature(s.data(), s.size(), 0);
    FUZZ_CHECK(false);
  } catch (const std::invalid_argument&) {
  }
  const std::vector<std::uint64_t> sig = simhash::minhash_signature(s.data(), s.size(), bins);
  if (s.empty()) {
    FUZZ_CHECK(sig.empty());
    return;
  }
  FUZZ_CHECK(sig.size() == static_cast<std::size_t>(bins));
  std::set<std::uint64_t> values;
  for (std::uint64_t x : s) {
    const std::vector<std::uint64_t> one = simhash::minhash_signature(&x, 1, 1);
    FUZZ_CHECK(one.size() == 1);
    values.insert(one[0]);
  }
  for (std::uint64_t v : sig) FUZZ_CHECK(values.count(v) == 1);
  FUZZ_CHECK(std::find(sig.begin(), sig.end(), *values.begin()) != sig.end());
}

void check_counter(std::string_view text, const Set& whole, Rng& rng) {
  const std::uint64_t cap = rng.below(whole.size() + 3);
  simhash_shingle_counter state;
  char err[128];
  std::vector<std::vector<std::uint64_t>> tables(
      1, std::vector<std::uint64_t>(SIMHASH_SHINGLE_COUNTER_MIN_TABLE));
  FUZZ_CHECK(simhash_shingle_counter_begin(&state, cap, tables.back().data(), tables.back().size(),
                                           err, sizeof err) == SIMHASH_OK);
  const auto room = [&](std::size_t len) {
    const std::size_t need = simhash_shingle_counter_table_before(&state, len);
    if (need > simhash_shingle_counter_table_size(&state)) {
      tables.emplace_back(need);
      FUZZ_CHECK(simhash_shingle_counter_grow(&state, tables.back().data(), need, nullptr, err,
                                              sizeof err) == SIMHASH_OK);
    }
  };
  std::uint64_t count = 0;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t len = std::min<std::size_t>(1 + rng.below(300), text.size() - at);
    room(len);
    FUZZ_CHECK(simhash_shingle_counter_feed(&state, text.data() + at, len, &count, err,
                                            sizeof err) == SIMHASH_OK);
    FUZZ_CHECK(count <= cap + 1 && count <= whole.size());
    for (const std::uint64_t h : tables.back()) {
      FUZZ_CHECK(h == 0 || std::binary_search(whole.begin(), whole.end(), h));
    }
    at += len;
  }
  room(0);
  FUZZ_CHECK(simhash_shingle_counter_end(&state, &count, err, sizeof err) == SIMHASH_OK);
  Set out(whole.size() + 1);
  std::size_t n = 0;
  const simhash_status st =
      simhash_shingle_counter_set(&state, out.data(), out.size(), &n, nullptr, err, sizeof err);
  if (whole.size() <= cap) {
    FUZZ_CHECK(st == SIMHASH_OK && count == whole.size());
    out.resize(n);
    FUZZ_CHECK(out == whole);
  } else {
    FUZZ_CHECK(st == SIMHASH_INVALID_ARGUMENT && count == cap + 1);
  }
}

Set read_list(Input& in, std::size_t n) {
  Set out;
  for (std::size_t i = 0; i < n && !in.empty(); ++i) {
    const std::uint8_t b = in.byte();
    out.push_back((b & 0xE0) == 0xE0 ? in.u64() : b);
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  const std::uint8_t mode = in.byte();
  const int bins = 1 + (mode >> 2) % 300;

  if (mode & 1) {
    const std::size_t na = in.byte() % 64;
    Set a = read_list(in, na);
    Set b = read_list(in, 255);
    // As given: refused exactly when not strictly ascending.
    std::uint64_t common = 0;
    char err[64];
    const simhash_status st =
        simhash_shingle_overlap(a.data(), a.size(), b.data(), b.size(), &common, nullptr, err,
                                sizeof err);
    FUZZ_CHECK(st == (strictly_ascending(a) && strictly_ascending(b) ? SIMHASH_OK
                                                                      : SIMHASH_INVALID_ARGUMENT));
    // simhash_lsh(bigint[]) takes the list as it is: never a crash, keys as for the set.
    const auto raw_keys = lsh(a, SIMHASH_LSH_BANDS);
    for (Set* s : {&a, &b}) {
      std::sort(s->begin(), s->end());
      s->erase(std::unique(s->begin(), s->end()), s->end());
    }
    FUZZ_CHECK(raw_keys == lsh(a, SIMHASH_LSH_BANDS));
    check_pair(a, b);
    check_signature(a, bins);
    return 0;
  }

  const std::uint8_t at = in.byte();
  const std::string_view rest = in.rest();
  const std::size_t cut = (std::size_t{at} * rest.size()) / 256;
  std::string ta(rest.substr(0, cut)), tb(rest.substr(cut));
  Rng rng(mode ^ (std::uint64_t{size} << 8));
  if (mode & 2) {  // the second text: the first with a few bytes changed
    tb = ta;
    for (int e = 0; e < 3 && !tb.empty(); ++e) tb[rng.below(tb.size())] = static_cast<char>(rng.next());
  }

  const Set a = shingles_capi(ta, rng), b = shingles_capi(tb, rng);
  FUZZ_CHECK(strictly_ascending(a) && strictly_ascending(b));
  FUZZ_CHECK(a == shingles_reference(ta) && b == shingles_reference(tb));
  FUZZ_CHECK(a == simhash::shingle_set(ta));
  check_counter(ta, a, rng);
  const std::vector<std::int64_t> text_keys = simhash::lsh_keys(ta);
  FUZZ_CHECK(text_keys == lsh(a, SIMHASH_LSH_BANDS));
  check_pair(a, b);
  check_signature(a, bins);
  return 0;
}
