// Verification of near duplicates: the real resemblance of two texts, measured on their sets
// of shingles (Broder 1997), for the candidate pairs that SimHash finds.
//
//   text -> normalized characters (the 'char' tokenizer: case-folded, Unicode-normalized,
//   white space and punctuation left out) -> shingles of kSimilarityShingle consecutive
//   characters -> 64-bit hashes -> a sorted set -> |A ∩ B| by a merge.
//
// Jaccard(A, B) = |A ∩ B| / |A ∪ B|; containment(A, B) = |A ∩ B| / |A| (how much of A is
// inside B). Shingles are compared by their 64-bit hashes: two different shingles of a pair
// of texts share a hash with probability below |A| |B| / 2^64, so for texts under 1 MB the
// result differs from the exact one with probability below 10^-7.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/no_postgres.hpp"

namespace simhash {

// Characters per shingle of the similarity functions: Broder's w = 5 characters.
inline constexpr int kSimilarityShingle = 5;

// The sizes of two shingle sets and of their intersection.
struct Overlap {
  std::uint64_t common = 0;
  std::uint64_t left = 0;
  std::uint64_t right = 0;
};

// |A ∩ B| of two sets given as ascending, distinct hashes. Throws std::invalid_argument
// when either is not strictly ascending.
Overlap overlap(const std::uint64_t* a, std::size_t na, const std::uint64_t* b, std::size_t nb);

// |A ∩ B| / |A ∪ B|; negative (undefined) when both sets are empty.
inline double jaccard(const Overlap& o) noexcept {
  const std::uint64_t united = o.left + o.right - o.common;
  return united == 0 ? -1.0 : static_cast<double>(o.common) / static_cast<double>(united);
}

// |A ∩ B| / |A|; negative (undefined) when A is empty.
inline double containment(const Overlap& o) noexcept {
  return o.left == 0 ? -1.0 : static_cast<double>(o.common) / static_cast<double>(o.left);
}

// The largest Jaccard similarity two sets of these sizes can have: min / max. A pair whose
// sizes allow less than a threshold cannot reach it, whatever its shingles.
inline double jaccard_bound(std::uint64_t left, std::uint64_t right) noexcept {
  const std::uint64_t lo = left < right ? left : right;
  const std::uint64_t hi = left < right ? right : left;
  return hi == 0 ? -1.0 : static_cast<double>(lo) / static_cast<double>(hi);
}

// A 64-bit digest of a shingle set (ascending, distinct hashes): equal sets have equal
// digests; different sets collide with probability about 2^-64.
std::uint64_t set_digest(const std::uint64_t* set, std::size_t n) noexcept;

// The shingle set of a UTF-8 text: ascending, distinct hashes of its shingles of n
// normalized characters (a text of fewer than n characters has one shingle of them all; a
// text without characters has none). The same features as simhash(text, 'char', n).
std::vector<std::uint64_t> shingle_set(std::string_view text, int n = kSimilarityShingle);

}  // namespace simhash
