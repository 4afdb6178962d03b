// Candidate keys for verified near duplicates: MinHash locality-sensitive hashing of a
// text's shingle set (Broder 1997; Indyk & Motwani 1998), the exact-match keys that let a
// B-tree or GIN index find the texts that may share 80 % of their shingles with one lookup
// per key, where a SimHash radius of 14 bits would need thousands.
//
//   shingle set (similarity.hpp) -> MinHash signature of kLshBands * kLshRows values
//   -> kLshBands band keys, each a 64-bit hash of kLshRows consecutive values.
//
// Signature. One permutation hashing (Li, Owen & Zhang 2012): each shingle hash is mixed
// once; its high bits pick one of the bins, and a bin keeps the smallest mixed value it is
// given. Bins no shingle reached (texts with fewer shingles than bins) are filled by optimal
// densification (Shrivastava 2017): empty bin i copies the value of the first non-empty bin
// on a probe sequence fixed by i alone, the same for every text. Two sets with Jaccard
// similarity J then agree on each value of the signature with probability J.
//
// Keys. Two texts share band key b when their signatures agree on all kLshRows values of
// band b: with J, probability J^r per band, and they share at least one of the bands with
// probability 1 - (1 - J^r)^b (treating the bands as independent; measured on real text in
// bench/eval_natural.cpp). With r = 5, b = 20: 0.9996 at J = 0.8, 0.975 at 0.7, 0.47 at 0.5,
// 0.05 at 0.3. A band key also hashes its band number and kLshVersion, so keys of different
// bands or formats never meet.
//
// Stored keys never change meaning: kLshVersion, the mixing constants, the bin and probe
// rules and the shingles are part of the format, pinned by golden values in
// test/core/minhash_test.cpp. A change means a new version and new keys.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/no_postgres.hpp"

namespace simhash {

inline constexpr int kLshBands = 20;
inline constexpr int kLshRows = 5;
inline constexpr int kLshVersion = 1;
// The smallest Jaccard threshold the keys serve with candidate recall >= 0.97 (measured).
inline constexpr double kLshMinSimilarity = 0.7;

// The MinHash signature of a shingle set (ascending, distinct hashes; see shingle_set) in
// `bins` values; empty for an empty set. Throws std::invalid_argument when bins < 1.
std::vector<std::uint64_t> minhash_signature(const std::uint64_t* set, std::size_t n, int bins);

// The band keys of a signature of bands * rows values: one key per band. Throws
// std::invalid_argument when the signature's size is not bands * rows.
std::vector<std::int64_t> lsh_band_keys(const std::vector<std::uint64_t>& signature, int bands,
                                        int rows);

// The kLshBands keys of a shingle set (none for an empty set).
std::vector<std::int64_t> lsh_keys(const std::uint64_t* set, std::size_t n);

// lsh_keys of a set given in pieces (a minimum does not care how its input is cut), so
// that a caller can check for interrupts between pieces of a set of tens of millions of
// shingles. Trivially copyable, never allocates: the C ABI keeps it in caller memory.
class LshSketch {
 public:
  LshSketch() noexcept = default;
  // The next piece of the set (no order required; a shingle given twice changes nothing).
  void add(const std::uint64_t* set, std::size_t n) noexcept;
  // The keys of everything added: kLshBands of them, none when nothing was added.
  std::vector<std::int64_t> keys() const;
  // The same keys into keys[0..kLshBands), without allocating; false (nothing written)
  // when nothing was added.
  bool keys_into(std::int64_t* keys) const noexcept;

 private:
  static constexpr int kBins = kLshBands * kLshRows;
  std::uint64_t sig_[kBins] = {};
  bool filled_[kBins] = {};
  bool any_ = false;
};

// The keys of a UTF-8 text: lsh_keys of shingle_set(text).
std::vector<std::int64_t> lsh_keys(std::string_view text);

}  // namespace simhash
