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

#include "core/interrupt.hpp"
#include "core/no_postgres.hpp"
#include "core/text_options.hpp"
#include "core/tokenizer.hpp"

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
// when either is not strictly ascending. With a poll, asks it as it goes (every element
// checked or stepped over counts one unit) and throws Interrupted when it says stop: two
// sets of 134 million shingles (bigint[] arguments of 1 GB) take seconds when their values
// interleave at random.
Overlap overlap(const std::uint64_t* a, std::size_t na, const std::uint64_t* b, std::size_t nb,
                Poll* poll = nullptr);

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

// jaccard() of sets of na and nb elements with `common` in common.
double jaccard_of(std::uint64_t common, std::uint64_t na, std::uint64_t nb) noexcept;

// The smallest |A ∩ B| that gives a Jaccard of at least t for sets of na and nb elements
// (computed as jaccard() computes it), or na + nb + 1 when none does.
std::uint64_t common_needed(std::uint64_t na, std::uint64_t nb, double t) noexcept;

// |A ∩ B| of two ascending, distinct sets by a merge that gives up (returns a value below
// `need`) as soon as `need` common elements are out of reach.
std::uint64_t common_at_least(const std::uint64_t* a, std::size_t na, const std::uint64_t* b,
                              std::size_t nb, std::uint64_t need) noexcept;

// A 64-bit digest of a shingle set (ascending, distinct hashes): equal sets have equal
// digests; different sets collide with probability about 2^-64.
std::uint64_t set_digest(const std::uint64_t* set, std::size_t n) noexcept;

// set_digest in pieces, for a caller that checks for interrupts between them:
// set_digest_end(set_digest_add(set_digest_begin(n), set, n)) == set_digest(set, n), and a
// set cut into consecutive pieces gives the same value.
std::uint64_t set_digest_begin(std::size_t n) noexcept;
std::uint64_t set_digest_add(std::uint64_t state, const std::uint64_t* piece,
                             std::size_t m) noexcept;
std::uint64_t set_digest_end(std::uint64_t state) noexcept;

// The shingle set of a UTF-8 text: ascending, distinct hashes of its shingles of n
// normalized characters (a text of fewer than n characters has one shingle of them all; a
// text without characters has none). The same features as simhash(text, 'char', n).
// The most features shingle_set() collects from one text (512 MB of them, the limit of the
// SQL functions too); beyond, std::length_error. With a poll, asks it as it goes (about every
// 64 kB of text and 64 K features sorted; throws Interrupted).
inline constexpr std::size_t kMaxSetFeatures = std::size_t{1} << 26;
std::vector<std::uint64_t> shingle_set(std::string_view text, int n = kSimilarityShingle,
                                       Poll* poll = nullptr);

// The distinct shingles of a text read piece by piece (cut anywhere, even inside a UTF-8
// sequence), counted up to a cap, in a table the caller owns: O(cap) memory whatever the
// length of the text.
//
// Before end(), only the shingles the pieces fed so far fully determine are counted: the
// tokenizer holds back a token (a word, a character with its combining marks, a code point
// cut in two) until what follows shows it complete, and a shingle is counted once its last
// character belongs to a complete token. So every shingle counted after feeding a prefix of
// a text is a shingle of the whole text, and count() of a prefix is at most the size of the
// text's shingle set: once count() passes the cap, so does the whole text's set. After
// end(), the counted set is exactly shingle_set(text, n) (while within the cap).
//
// The table grows with the count, never past what the cap needs: before feed(size) (or
// end(), size 0) it must have table_size_before(size) entries; grow() moves the shingles
// into a larger one. Trivially copyable: it can live in memory the caller owns and never
// allocates.
class ShingleCounter {
 public:
  // The table entries a count of `distinct` shingles needs: the smallest power of two
  // holding 2 (distinct + 1) entries, at least 16. Throws std::invalid_argument when that
  // does not fit in memory.
  static std::size_t table_size_for(std::uint64_t distinct);

  // table: table_size entries (a power of two, at least 16), overwritten. Throws
  // std::invalid_argument for another size or an invalid n.
  ShingleCounter(std::uint64_t cap, std::uint64_t* table, std::size_t table_size,
                 int n = kSimilarityShingle);

  // The table entries needed before feeding `bytes` more bytes: room for every shingle
  // they can add (kMaxFeaturesPerByte a byte, plus a pending token), up to cap + 1.
  std::size_t table_size_before(std::size_t bytes) const noexcept;
  std::size_t table_size() const noexcept { return static_cast<std::size_t>(mask_ + 1); }
  // Moves the shingles counted into a new table of table_size entries (a power of two, at
  // least table_size()); the old one is no longer used. std::invalid_argument otherwise.
  // With a poll, asks it as it goes (throws Interrupted: the counter is then only to be
  // dropped).
  void grow(std::uint64_t* table, std::size_t table_size, Poll* poll = nullptr);

  // Feeds the next piece of UTF-8 text; does nothing once over the cap or after end().
  // Throws std::logic_error when the table is smaller than table_size_before(size).
  void feed(const char* data, std::size_t size);
  // The text ends here (the last token, and the one shingle of a text of fewer than n
  // characters, are counted). Idempotent. Needs table_size_before(0) entries.
  void end();

  // Distinct shingles counted so far; at most cap + 1.
  std::uint64_t count() const noexcept { return count_; }
  // More than cap distinct shingles: counting stopped.
  bool over() const noexcept { return count_ > cap_; }
  bool ended() const noexcept { return ended_; }
  // The shingles counted, ascending as unsigned values, into out[0..count()); returns
  // count(). Throws std::logic_error when over the cap and std::invalid_argument when
  // out_cap < count(). With a poll, asks it as it goes (throws Interrupted).
  std::size_t sorted(std::uint64_t* out, std::size_t out_cap, Poll* poll = nullptr) const;
  // |A ∩ counted| for a set A of n distinct hashes (any order), without sorting what was
  // counted: one probe of the table an element. Throws std::logic_error when over the cap.
  std::uint64_t common(const std::uint64_t* set, std::size_t n) const;

  // The tokenizer's sink (public for the tokenizer only): characters -> shingles -> table.
  struct Sink {
    ShingleCounter* owner;
    void token(const unsigned char* bytes, std::size_t len) noexcept;
  };

 private:
  void drain() noexcept;
  void insert(std::uint64_t h) noexcept;
  void place(std::uint64_t h) noexcept;
  void set_table(std::uint64_t* table, std::size_t table_size);

  std::uint64_t cap_;
  std::uint64_t* table_;
  std::uint64_t mask_;
  unsigned shift_;
  std::uint64_t count_ = 0;
  bool has_zero_ = false;  // 0 marks a free slot: the shingle 0 is counted apart
  bool ended_ = false;
  detail::ShingleCollector collector_;
  // A token of at most kMaxTokenBytes bytes has at most that many characters: its shingles
  // fit, and are moved to the table after each token.
  std::uint64_t buffer_[kMaxTokenBytes + 8];
  Tokenizer<Sink> tokenizer_;
};

}  // namespace simhash
