// A growing set of fingerprints that answers "could a fingerprint have a member within k
// bits?" with no false "no": the in-memory side of a bulk load that dedupes its rows
// against each other (simhash_dedupe_insert(), src/pg/dedupe_bulk.c).
//
// The 64 bits are cut into k + 1 blocks (core/blocks.hpp): two fingerprints within k bits
// agree on at least one block (pigeonhole). Each block has a hash table from its value to
// the newest member with that value, and the members form one chain per block and value
// (next_[block][member]). may_have_within() walks the chains of the k + 1 blocks of its
// fingerprint and answers true at the first member within k; it also answers true ("maybe")
// once it has looked at max_walk members without deciding, so a skewed block (many members
// sharing a value) costs a bounded amount per query instead of a scan. A "maybe" is never
// wrong for the caller: it then runs its exact search.
//
// Memory: 8 + 4 (k + 1) bytes a member, plus the tables (16 bytes a slot, at most half
// full): bytes() is what it holds.
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

  // Adds a member (a fingerprint may be added more than once).
  void add(std::uint64_t fp);

  // False only when no member is within k bits of fp.
  bool may_have_within(std::uint64_t fp) const;

  std::size_t size() const noexcept { return fps_.size(); }
  std::size_t bytes() const noexcept;
  int k() const noexcept { return k_; }

 private:
  struct Slot {
    std::uint64_t value;
    std::int32_t head;  // newest member with this value, -1: empty slot
  };
  struct Table {
    std::vector<Slot> slots;  // power-of-two size
    std::size_t used = 0;
  };

  std::uint64_t block_key(std::uint64_t fp, int block) const noexcept;
  Slot& find_slot(Table& t, std::uint64_t value);
  const Slot* find_slot(const Table& t, std::uint64_t value) const;
  void grow(Table& t);

  int k_;
  int blocks_;
  std::size_t max_walk_;
  std::vector<std::uint64_t> fps_;
  std::vector<std::vector<std::int32_t>> next_;  // per block: the previous member with its value
  std::vector<Table> tables_;
};

}  // namespace simhash
