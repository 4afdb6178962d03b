// The shingle sets of a table in memory, found by their MinHash LSH band keys: what the
// dedupe trigger with a similarity threshold asks a table for each new row (is a row sharing
// a band key with it, in the same band, at least this similar?), answered without an index
// search or a heap fetch. The dedupe trigger's statement memo with a threshold
// (src/pg/dedupe_memo.c) holds one during a long statement or a bulk load.
//
//   row -> its kLshBands band keys, its shingle set (ascending, distinct 64-bit hashes)
//       -> one node a band in a chained hash table on (band, key), newest first (two
//          tables: originals, and rows that are not)
//   query -> the rows sharing a key in the same band, each once -> sizes that cannot
//       reach the threshold ruled out -> counts by bucket that cannot either (|A ∩ B| is
//       at most the sum over buckets of the smaller count) -> a merge that stops once it
//       cannot -> the answer.
//
// Exact: a row is found when its Jaccard similarity (computed as simhash_jaccard computes
// it) is at least the threshold, and no other row is. A row may be added without its set
// (over the caller's memory, or too large): a query that would have to verify such a row
// answers kUnknown, and the caller asks the table instead.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
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

  SetIndex() = default;
  SetIndex(const SetIndex&) = delete;
  SetIndex& operator=(const SetIndex&) = delete;

  // Adds a row: its keys[0..kLshBands) (one a band), its set (ascending and distinct: not
  // checked) or none (set == nullptr: the row is only known to share keys; n its size, or
  // kUnknownSize), the caller's tag and whether it is an original (for best()). The set is
  // held only while bytes() stays within hold_limit with it; the row is added either way.
  static constexpr std::size_t kUnknownSize = ~static_cast<std::size_t>(0);
  void add(const std::int64_t* keys, const std::uint64_t* set, std::size_t n, std::int64_t tag,
           bool original, std::size_t hold_limit = ~static_cast<std::size_t>(0));

  // add() for a caller with a budget: the set held while bytes() stays within three
  // quarters of it; false, nothing added, when bytes() could pass the budget at any point
  // of the add (peak_bytes()).
  bool try_add(const std::int64_t* keys, const std::uint64_t* set, std::size_t n,
               std::int64_t tag, bool original, std::size_t budget);

  // Any row at least `threshold` similar to the set a[0..na) with keys[0..kLshBands).
  Answer any(const std::int64_t* keys, const std::uint64_t* a, std::size_t na, double threshold,
             Hit* hit);

  // The row the link policy picks: originals before rows that are not, then the most
  // similar, then the smallest tag, as the trigger's search picks them.
  Answer best(const std::int64_t* keys, const std::uint64_t* a, std::size_t na, double threshold,
              Hit* hit);

  std::size_t rows() const noexcept { return rows_.size(); }
  std::size_t held() const noexcept { return held_; }
  // After an exception from add() (out of memory), the index is not to be used again.
  // Bytes held (capacities).
  std::size_t bytes() const noexcept;
  // At most the bytes held at any point of add() of a row with a set of n hashes (or
  // without one: set_given false), original or not, and this hold_limit: bytes() plus every buffer that may
  // grow (while a vector grows, its old and new buffers are both held), a new chunk, and
  // the chain heads if they are rebuilt. A caller with a budget checks it before add().
  std::size_t peak_bytes(std::size_t n, bool set_given, bool original,
                         std::size_t hold_limit) const noexcept;

 private:
  struct Row {
    std::int64_t tag;
    std::uint64_t size;    // of the set, or kUnknownSize
    std::uint32_t chunk;   // the set's chunk, or kNoSet
    std::uint32_t offset;  // its first hash there
    std::uint32_t counts;  // its bucket counts in counts_ (times kBuckets), or kNoCounts
    bool original;
  };
  static constexpr std::uint32_t kNoSet = ~static_cast<std::uint32_t>(0);
  // A held set's counts of hashes by their top byte (the bucket): an element common to two
  // sets is in the same bucket of both, so |A ∩ B| <= sum of min(countA, countB). A set
  // with a bucket of more than 254 has none (kNoCounts); 256 bytes a held set.
  static constexpr std::size_t kBuckets = 256;
  static constexpr std::uint32_t kNoCounts = ~static_cast<std::uint32_t>(0);
  // Fills counts[kBuckets] for set a; false when a bucket overflows.
  static bool bucket_counts(const std::uint64_t* a, std::size_t n, std::uint8_t* counts) noexcept;
  // Whether the counts allow `need` common elements (counts of a query, counts of row r).
  bool counts_allow(const std::uint8_t* query, const Row& r, std::uint64_t need) const noexcept;
  // Hashes of the first chunk; each next one twice the last, up to kMaxChunk (8 MB). A set
  // larger than the next chunk gets one of its own.
  static constexpr std::size_t kFirstChunk = std::size_t{1} << 14;
  static constexpr std::size_t kMaxChunk = std::size_t{1} << 20;

  std::size_t bucket(int band, std::int64_t key) const noexcept;
  // The size of the chunk a set of n hashes would start; whether add() would hold it.
  std::size_t next_chunk(std::size_t n) const noexcept;
  bool holds(std::size_t n, bool set_given, std::size_t hold_limit) const noexcept;
  // Whether a held set of n hashes starts a new chunk.
  bool needs_chunk(std::size_t n) const noexcept;
  // The heads of each table once `rows` rows (`others` of them not originals) are in, when
  // they must be rebuilt for it; 0 when the present ones serve.
  std::size_t heads_rebuilt(std::size_t rows, std::size_t others) const noexcept;
  const std::uint64_t* set_of(const Row& r) const noexcept;
  // Whether row r reaches similarity `bar` with the set a[0..na) (query: its bucket counts,
  // or nullptr): kReached with *similarity, kBelow, or kUnknown (held without its set).
  enum class Verdict { kBelow, kReached, kUnknown };
  Verdict verify(const Row& r, const std::uint64_t* a, std::size_t na, const std::uint8_t* query,
                 double bar, double* similarity) const noexcept;
  // Starts a query: rows met in it are met once.
  void begin_query();
  // Calls f(row index) once for each row of class cls (0: originals, 1: the others) sharing
  // a key in its band with keys, until f returns false (then false).
  template <typename F>
  bool for_candidates(const std::int64_t* keys, int cls, F&& f);

  std::vector<Row> rows_;
  // kLshBands nodes a row (node / kLshBands is its row, node % kLshBands its band): its key
  // and the next node of its chain, together (one cache line a node met).
  struct Node {
    std::int64_t key;
    std::uint32_t next;  // node + 1, or 0
  };
  std::vector<Node> nodes_;
  std::vector<std::uint32_t> seen_;  // a row: the last query that met it
  std::vector<std::uint8_t> counts_;  // kBuckets a held set (Row::counts)
  // Chains by (band, key), one table for originals and one for the others (best() walks
  // the originals first): node + 1, or 0. Both of one size; the second empty until a row
  // that is not an original is added.
  std::vector<std::uint32_t> heads_[2];
  std::size_t others_ = 0;  // rows that are not originals
  std::vector<std::unique_ptr<std::uint64_t[]>> chunks_;
  std::size_t chunk_size_ = 0;  // of the last chunk
  std::size_t chunk_used_ = 0;
  std::size_t chunk_bytes_ = 0;
  std::size_t held_ = 0;
  std::uint32_t query_ = 0;
};

}  // namespace simhash
