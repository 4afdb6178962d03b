// A growing set of fingerprints that answers "could a fingerprint have a member within k
// bits?" with no false "no": the dedupe trigger's statement memo with a distance
// (src/pg/dedupe_memo.c: a long statement's whole table, or a bulk load's rows).
//
// The 64 bits are cut into k + 1 blocks (core/blocks.hpp): two fingerprints within k bits
// agree on at least one block (pigeonhole). Members live in two tiers:
// - the settled ones, for each block one array of the members rotated so that the block's
//   bits come first, sorted (so the members sharing a block value lie side by side, as in
//   a block index), with a table of where each value of the block's first bits starts:
//   a query reads one short run per block, from contiguous memory;
// - the recent ones (added since the last merge), for each block a hash table from its
//   value to the newest member with that value, and one chain per block and value.
// The recent tier is merged into the settled one once it holds an eighth of it (at least
// kMinRecent members), so adding n members costs O(n) in all (each merge sorts the recent
// ones by radix and grows the settled tier by an eighth: a member is copied about nine times);
// while merging, one block's settled array is held twice, beside two buffers of the
// members being merged.
//
// may_have_within() answers true at the first member within k; it also answers true
// ("maybe") once it has followed max_walk chain links, or read 16 max_walk settled
// members, without deciding, so a skewed block (many members sharing a value) costs a
// bounded amount per query instead of a scan. A "maybe" is never wrong for the caller: it
// then runs its exact search.
//
// Memory: 8 (k + 1) bytes a settled member plus, a block, a start table of at most 2^16
// + 1 entries of 4 bytes; the recent tier 8 + 4 (k + 1) bytes a member plus its hash
// tables (16 bytes a slot, at most half full): bytes() is what it holds.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/no_postgres.hpp"

namespace simhash {

class NearFilter {
 public:
  // k: the Hamming radius, 0..16 (std::invalid_argument otherwise). max_walk >= 1.
  explicit NearFilter(int k, std::size_t max_walk = 64);

  // Adds a member (a fingerprint may be added more than once). On failure (bad_alloc,
  // length_error) fp may be missing; every member added before is still answered for.
  void add(std::uint64_t fp);

  // add(), for a caller with a budget: false when the filter now holds more than budget
  // bytes (looked at once every 1024 members, bytes() adding up every block's arrays).
  bool add_within(std::uint64_t fp, std::size_t budget);

  // The most fingerprints a filter at distance k may be made with at once (add_many())
  // within budget bytes: while it is made it holds k + 1 sorted copies, the array given
  // and the merge's two buffers with the radix sort's counts: 8 (k + 4) bytes each, plus
  // the start tables. 0: none; at most 2^31 - 1.
  static std::size_t max_members(std::size_t budget, int k) noexcept;

  // Adds fps[0..n) at once, settled in one merge (what a filter made from a whole table
  // does): much cheaper than n add()s. On failure some of fps[] may answer "maybe"; every
  // member added before is still answered for.
  void add_many(const std::uint64_t* fps, std::size_t n);

  // add_many() in k + 2 steps, so that a caller can check for interrupts between them (a
  // step sorts one block's copy of every member; millions of members take a while):
  // step = 0, 1, ..., k + 1 in order, each with the same fps and n, and no other add
  // between them; steps 0..k merge one block each, step k + 1 ends. Between steps, or
  // when the caller stops before the end, the filter is as after a failed add_many():
  // every member added before is answered for, some of fps[] may answer "maybe", and
  // nothing but a new filter completes it. std::invalid_argument for a step out of range.
  void add_many_step(const std::uint64_t* fps, std::size_t n, int step);

  // False only when no member is within k bits of fp.
  bool may_have_within(std::uint64_t fp) const;

  std::size_t size() const noexcept { return settled_size_ + recent_.size(); }
  std::size_t bytes() const noexcept;
  int k() const noexcept { return k_; }

 private:
  struct Slot {
    std::uint64_t value;
    std::int32_t head;  // newest recent member with this value, -1: empty slot
  };
  struct Table {
    std::vector<Slot> slots;  // power-of-two size
    std::size_t used = 0;
  };
  // One block's settled members: rotated (block bits first), sorted; start[v] is the first
  // whose top prefix_bits bits are v (start has 2^prefix_bits + 1 entries).
  struct Settled {
    std::vector<std::uint64_t> rotated;
    std::vector<std::uint32_t> start;
    int prefix_bits = 0;
  };

  std::uint64_t block_key(std::uint64_t fp, int block) const noexcept;
  std::uint64_t rotate(std::uint64_t fp, int block) const noexcept;
  Slot& find_slot(Table& t, std::uint64_t value);
  const Slot* find_slot(const Table& t, std::uint64_t value) const;
  void grow(Table& t);
  void merge(const std::uint64_t* more, std::size_t n);
  void merge_block(int block, const std::uint64_t* more, std::size_t n);
  void end_merge(std::size_t n);
  bool settled_may_have(std::uint64_t q, int block, std::size_t from, std::size_t to,
                        std::size_t& scanned) const;

  int k_;
  int blocks_;
  std::size_t max_walk_;
  std::vector<int> low_;    // per block: its first bit
  std::vector<int> width_;  // per block: its number of bits
  std::vector<Settled> settled_;
  std::size_t settled_size_ = 0;
  std::vector<std::uint64_t> recent_;
  std::vector<std::vector<std::int32_t>> next_;  // per block: the previous recent member with its value
  std::vector<Table> tables_;
};

}  // namespace simhash
