// All pairs of fingerprints within Hamming distance k, without comparing every pair.
//
// Split the 64 bits into m = k + r blocks. Two fingerprints that differ in at most k bits
// differ in at most k blocks, so at least r blocks agree exactly (pigeonhole). For every
// choice of r blocks out of m (a "table") the fingerprints are sorted by those blocks, and
// only fingerprints with equal keys are compared. A pair that agrees on several choices is
// reported only by the first of them in lexicographic order, so each pair comes out once.
// r trades the number of tables, C(m, r), against the size of the groups compared; it is
// chosen by a cost model from n and k (or given).
//
// The work is resumable: a NearPairFinder does a bounded amount of work per next() call and
// writes pairs into a caller's buffer, so a caller (the PostgreSQL glue) can check for
// interrupts and report progress between calls. It owns no memory: its state is trivially
// copyable and its arrays live in a workspace the caller provides, workspace_bytes() long.
// A finder may also be restricted to a range of tables: the glue processes a table larger
// than memory one table and one key-space partition at a time (rows with equal keys always
// land in the same partition, so each pair is still found exactly once).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/no_postgres.hpp"

namespace simhash {

inline constexpr int kMaxPairDistance = 16;
inline constexpr int kMaxAgreeingBlocks = 8;
// At most this many tables (choices of r blocks out of m) in a layout.
inline constexpr std::uint32_t kMaxPairTables = 100000;

// How the 64 bits are cut into blocks. Trivially copyable (it lives in C ABI structs).
struct PairLayout {
  int k = 0;                           // largest distance reported
  int agree = 1;                       // r: blocks that must agree
  int blocks = 1;                      // m = k + r, contiguous bit ranges in ascending order
  std::uint32_t tables = 1;            // C(m, r)
  std::uint64_t block_masks[64] = {};  // bits of each block
};

// The layout with the smallest estimated cost for n random fingerprints. Throws
// std::invalid_argument when k is outside 0..kMaxPairDistance.
PairLayout choose_pair_layout(std::size_t n, int k);

// The layout for k with r agreeing blocks. Throws std::invalid_argument when out of range
// (agree outside 1..kMaxAgreeingBlocks, k + agree > 64, or more than kMaxPairTables tables).
PairLayout make_pair_layout(int k, int agree);

// The blocks of table t (0 <= t < layout.tables), in ascending order, the t-th combination
// of layout.agree blocks out of layout.blocks in lexicographic order. Writes layout.agree
// values into blocks_out.
void table_blocks(const PairLayout& layout, std::uint32_t t, int* blocks_out);

// Width in bits of table t's key.
int table_key_bits(const PairLayout& layout, std::uint32_t t);

// keys[i] = table t's key of fps[i]: the bits of its blocks packed together, lowest block
// lowest. Fingerprints with equal keys agree on every block of the table.
void table_keys(const PairLayout& layout, std::uint32_t t, const std::uint64_t* fps, std::size_t n,
                std::uint64_t* keys);

// One near pair: row indices i < j and their Hamming distance. Same layout as the C ABI's
// simhash_pair.
struct NearPair {
  std::uint32_t i;
  std::uint32_t j;
  std::int32_t distance;
};

// Finds all pairs within layout.k of fps[0..n) whose first agreeing table lies in
// [table_begin, table_end), a bounded amount of work at a time.
class NearPairFinder {
 public:
  // Bytes of workspace needed for n fingerprints and tables [table_begin, table_end): 16
  // per row, plus 4 per bucket of a counting sort (at most 2 buckets per row).
  // Throws std::invalid_argument for a bad range or n > UINT32_MAX.
  static std::size_t workspace_bytes(const PairLayout& layout, std::size_t n,
                                     std::uint32_t table_begin, std::uint32_t table_end);

  // Starts over fps[0..n), which must stay valid and unchanged until the finder is done,
  // like the workspace (at least workspace_bytes() bytes, 8-byte aligned).
  NearPairFinder(const PairLayout& layout, const std::uint64_t* fps, std::size_t n,
                 std::uint32_t table_begin, std::uint32_t table_end, void* workspace,
                 std::size_t workspace_bytes);

  // Writes up to capacity pairs into out and returns how many. Returns early, possibly with
  // none, after about `work` units of work (one unit is a comparison of two fingerprints
  // or the bucketing of one fingerprint into a table; a table's bucketing is never split).
  // Returns 0 with done() true when every pair has been written.
  std::size_t next(NearPair* out, std::size_t capacity, std::size_t work);

  bool done() const noexcept { return table_ >= table_end_; }
  // Progress: the table being processed and the fraction of its fingerprints walked.
  std::uint32_t table() const noexcept { return table_; }
  double table_fraction() const noexcept;

 private:
  void bucket_table();
  bool next_group(std::size_t& work, std::size_t budget);
  std::size_t compare_group(NearPair* out, std::size_t capacity, std::size_t& work,
                            std::size_t budget);

  PairLayout layout_;
  const std::uint64_t* fps_;
  std::size_t n_;
  std::uint32_t table_;
  std::uint32_t table_end_;
  int combo_[kMaxAgreeingBlocks];
  unsigned char* workspace_;
  std::size_t workspace_bytes_;
  // After bucket_table(): the rows grouped by key, as row numbers (order_) and their
  // fingerprints in the same order (sorted_fps_), so that a group is compared from
  // contiguous memory; a group is a run of fingerprints equal under key_mask_.
  bool bucketed_;
  std::uint32_t* order_;
  std::uint64_t* sorted_fps_;
  std::uint64_t key_mask_;
  // The walk: the position where the next group may start, the current group [lo_, hi_)
  // and the next pair (a_, b_) to compare in it.
  std::size_t cursor_;
  std::size_t lo_, hi_, a_, b_;
};

// Calls emit(i, j, distance) with i < j for every pair of fps[] within layout.k bits,
// each pair exactly once. Identical fingerprints are pairs at distance 0.
void for_each_near_pair(const std::uint64_t* fps, std::size_t n, const PairLayout& layout,
                        const std::function<void(std::size_t, std::size_t, int)>& emit);

}  // namespace simhash
