// The shingle sets of a table in memory, found by their MinHash LSH band keys: what the
// dedupe trigger with a similarity threshold asks a table for each new row (is a row sharing
// a band key with it, in the same band, at least this similar?), answered without an index
// search or a heap fetch. The table index of src/pg/dedupe_table_filter.c holds one during a
// long statement that keeps other writers out of the table.
//
//   row -> its kLshBands band keys, its shingle set (ascending, distinct 64-bit hashes)
//       -> one node a band in a chained hash table on (band, key), newest first (two
//          tables: originals, and rows that are not)
//   query -> the rows sharing a key in the same band, each once -> sizes that cannot
//       reach the threshold ruled out -> a merge that stops once it cannot -> the answer.
//
// Exact: a row is found when its Jaccard similarity (computed as simhash_jaccard computes
// it) is at least the threshold, and no other row is. A row may be added without its set
// (over the caller's memory, or too large): a query that would have to verify such a row
// answers kUnknown, and the caller asks the table instead.
//
// A row's set may not be its text's own (a stored set that the caller believes, written by
// someone else): the caller's search calls a byte-identical text similar (1.0) before it
// looks at any set, so such a row carries its text's identity (TextId), and a query whose
// text may be that text gets kUnknown unless the sets are equal too. Link's search stops at
// the first original of similarity 1 it meets, in an order this index does not know: two
// originals at 1 make best() answer kUnknown.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/no_postgres.hpp"

namespace simhash {

class SetIndex {
 public:
  // What a query finds: kNone (no row at or above the threshold), kFound (`hit` says which),
  // kUnknown (a row added without its set might decide it).
  enum class Answer { kNone, kFound, kUnknown };

  struct Hit {
    std::int64_t tag = 0;  // the caller's value of the row (its key)
    bool original = true;
    double similarity = 0;
  };

  // The identity of a text: its length in bytes and, when `hashed`, a hash of its bytes.
  // Two texts may be identical when their lengths are equal and their hashes are (or
  // either is not hashed).
  struct TextId {
    std::uint64_t length = 0;
    std::uint64_t hash = 0;
    bool hashed = false;
  };

  SetIndex() = default;
  SetIndex(const SetIndex&) = delete;
  SetIndex& operator=(const SetIndex&) = delete;

  // Adds a row: its keys[0..kLshBands) (one a band), its set (ascending and distinct: not
  // checked) or none (set == nullptr: the row is only known to share keys; n its size, or
  // kUnknownSize), the caller's tag and whether it is an original (for best()). The set is
  // held only while bytes() stays within hold_limit with it; the row is added either way.
  // text: nullptr when the set is the text's own, else the text's identity (see above).
  static constexpr std::size_t kUnknownSize = ~static_cast<std::size_t>(0);
  void add(const std::int64_t* keys, const std::uint64_t* set, std::size_t n, std::int64_t tag,
           bool original, std::size_t hold_limit = ~static_cast<std::size_t>(0),
           const TextId* text = nullptr);

  // Any row at least `threshold` similar to the set a[0..na) with keys[0..kLshBands); text:
  // the query's text identity (nullptr: rows' text identities are not checked).
  Answer any(const std::int64_t* keys, const std::uint64_t* a, std::size_t na, double threshold,
             Hit* hit, const TextId* text = nullptr);

  // The row the link policy picks: originals before rows that are not, then the most
  // similar, then the smallest tag; kUnknown when two originals are at similarity 1.
  Answer best(const std::int64_t* keys, const std::uint64_t* a, std::size_t na, double threshold,
              Hit* hit, const TextId* text = nullptr);

  std::size_t rows() const noexcept { return rows_.size(); }
  std::size_t held() const noexcept { return held_; }
  // After an exception from add() (out of memory), the index is not to be used again.
  // Bytes held (capacities).
  std::size_t bytes() const noexcept;

 private:
  struct Row {
    std::int64_t tag;
    std::uint64_t size;    // of the set, or kUnknownSize
    std::uint32_t chunk;   // the set's chunk, or kNoSet
    std::uint32_t offset;  // its first hash there
    std::uint32_t seen;    // the last query that met it
    bool original;
    // 0: the set is its text's own; else texts_[row] is its text's identity (1: its
    // length, 2: its length and hash)
    std::uint8_t text;
  };
  static constexpr std::uint32_t kNoSet = ~static_cast<std::uint32_t>(0);
  // Hashes of the first chunk; each next one twice the last, up to kMaxChunk (8 MB). A set
  // larger than the next chunk gets one of its own.
  static constexpr std::size_t kFirstChunk = std::size_t{1} << 14;
  static constexpr std::size_t kMaxChunk = std::size_t{1} << 20;

  std::size_t bucket(int band, std::int64_t key) const noexcept;
  const std::uint64_t* set_of(const Row& r) const noexcept;
  // True when the query's text may be byte-identical to row r's while r's set (held or not)
  // is not equal to the query's a[0..na): the caller's search would say 1.0 where the sets
  // say otherwise.
  bool text_may_differ(const Row& r, const std::uint64_t* a, std::size_t na,
                       const TextId* text) const noexcept;
  // Starts a query: rows met in it are met once.
  void begin_query();
  // Calls f(row index) once for each row of class cls (0: originals, 1: the others) sharing
  // a key in its band with keys, until f returns false (then false).
  template <typename F>
  bool for_candidates(const std::int64_t* keys, int cls, F&& f);

  std::vector<Row> rows_;
  // The text identities of rows added with one (length, hash), by row; empty until one is.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> texts_;
  std::vector<std::int64_t> keys_;    // kLshBands a row
  std::vector<std::uint32_t> next_;   // kLshBands a row: the next node of its chain
  // Chains by (band, key), one table for originals and one for the others (best() walks
  // the originals first): node + 1, or 0.
  std::vector<std::uint32_t> heads_[2];
  std::vector<std::unique_ptr<std::uint64_t[]>> chunks_;
  std::size_t chunk_size_ = 0;  // of the last chunk
  std::size_t chunk_used_ = 0;
  std::size_t chunk_bytes_ = 0;
  std::size_t held_ = 0;
  std::uint32_t query_ = 0;
};

}  // namespace simhash
