#include "core/set_index.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/dedupe_rule.hpp"
#include "core/minhash.hpp"
#include "core/mix.hpp"
#include "core/similarity.hpp"

namespace simhash {

namespace {
constexpr std::size_t kNoNode = 0;
}  // namespace

std::size_t SetIndex::bucket(int band, std::int64_t key) const noexcept {
  const std::uint64_t h = mix64(static_cast<std::uint64_t>(key) ^
                                (static_cast<std::uint64_t>(band) * 0x9E3779B97F4A7C15ULL));
  return static_cast<std::size_t>(h & (heads_[0].size() - 1));
}

const std::uint64_t* SetIndex::set_of(const Row& r) const noexcept {
  return chunks_[r.chunk].get() + r.offset;
}

std::size_t SetIndex::next_chunk(std::size_t n) const noexcept {
  const std::size_t size = chunks_.empty() ? kFirstChunk : std::min(2 * chunk_size_, kMaxChunk);
  return std::max(size, n);
}

bool SetIndex::needs_chunk(std::size_t n) const noexcept {
  return chunks_.empty() || chunk_used_ + n > chunk_size_;
}

bool SetIndex::holds(std::size_t n, bool set_given, std::size_t hold_limit) const noexcept {
  return set_given && n != kUnknownSize && n > 0 &&
         (needs_chunk(n) ? next_chunk(n) * sizeof(std::uint64_t) : 0) <=
             hold_limit - std::min(hold_limit, bytes());
}

// Twice as many heads as nodes at least (chains of other keys stay short); rebuilt at four
// times. The second table (rows that are not originals) is made with the first such row:
// under skip and reject there is none, and its heads would be as many as the first's.
std::size_t SetIndex::heads_rebuilt(std::size_t rows, std::size_t others) const noexcept {
  const std::size_t nodes = rows * kLshBands;
  if (heads_[0].size() >= 2 * nodes && (others == 0 || !heads_[1].empty())) return 0;
  std::size_t heads = heads_[0].empty() ? 1024 : heads_[0].size();
  while (heads < 4 * nodes) heads *= 2;
  return heads;
}

namespace {
// The bytes a vector allocates when `add` elements join `size` of `capacity` (libstdc++:
// the larger of twice the size and the size needed), or 0 when they fit.
std::size_t growth(std::size_t size, std::size_t capacity, std::size_t add, std::size_t elem) {
  return size + add <= capacity ? 0 : (size + std::max(size, add)) * elem;
}
}  // namespace

std::size_t SetIndex::peak_bytes(std::size_t n, bool set_given, bool original,
                                 std::size_t hold_limit) const noexcept {
  std::size_t peak = bytes();
  const bool held = holds(n, set_given, hold_limit);
  if (held) {
    if (needs_chunk(n)) {
      peak += next_chunk(n) * sizeof(std::uint64_t);
      peak += growth(chunks_.size(), chunks_.capacity(), 1, sizeof(chunks_[0]));
    }
    peak += growth(counts_.size(), counts_.capacity(), kBuckets, 1);
  }
  peak += growth(rows_.size(), rows_.capacity(), 1, sizeof(Row));
  peak += growth(seen_.size(), seen_.capacity(), 1, sizeof(std::uint32_t));
  peak += growth(nodes_.size(), nodes_.capacity(), kLshBands, sizeof(Node));
  const std::size_t others = others_ + (original ? 0 : 1);
  peak += (others > 0 ? 2 : 1) * heads_rebuilt(rows_.size() + 1, others) * sizeof(std::uint32_t);
  return peak;
}

bool SetIndex::try_add(const std::int64_t* keys, const std::uint64_t* set, std::size_t n,
                       std::int64_t tag, bool original, std::size_t budget) {
  const std::size_t hold_limit = budget - budget / 4;
  if (peak_bytes(n, set != nullptr, original, hold_limit) > budget) return false;
  add(keys, set, n, tag, original, hold_limit);
  return true;
}

void SetIndex::add(const std::int64_t* keys, const std::uint64_t* set, std::size_t n,
                   std::int64_t tag, bool original, std::size_t hold_limit) {
  if ((rows_.size() + 1) * kLshBands >= UINT32_MAX) throw std::length_error("SetIndex: too many rows");
  Row r{tag, n, kNoSet, 0, kNoCounts, original};
  if (holds(n, set != nullptr, hold_limit)) {
    if (needs_chunk(n)) {
      const std::size_t size = next_chunk(n);
      if (chunks_.size() >= kNoSet - 1) throw std::length_error("SetIndex: too many chunks");
      chunks_.emplace_back(new std::uint64_t[size]);
      chunk_size_ = size;
      chunk_used_ = 0;
      chunk_bytes_ += size * sizeof(std::uint64_t);
    }
    std::memcpy(chunks_.back().get() + chunk_used_, set, n * sizeof(std::uint64_t));
    r.chunk = static_cast<std::uint32_t>(chunks_.size() - 1);
    r.offset = static_cast<std::uint32_t>(chunk_used_);
    chunk_used_ += n;
    ++held_;
    std::uint8_t counts[kBuckets];
    if (bucket_counts(set, n, counts) && counts_.size() / kBuckets < kNoCounts) {
      r.counts = static_cast<std::uint32_t>(counts_.size() / kBuckets);
      counts_.insert(counts_.end(), counts, counts + kBuckets);
    }
  }
  rows_.push_back(r);
  seen_.push_back(0);
  Node fresh[kLshBands];
  for (int band = 0; band < kLshBands; ++band) fresh[band] = Node{keys[band], 0};
  nodes_.insert(nodes_.end(), fresh, fresh + kLshBands);  // one growth (peak_bytes)
  const std::size_t row = rows_.size() - 1;
  if (!original) ++others_;
  // Rebuilt: oldest nodes first, each pushed to the front, so chains stay newest first.
  if (const std::size_t heads = heads_rebuilt(rows_.size(), others_); heads > 0) {
    heads_[0].assign(heads, 0);
    heads_[1].assign(others_ > 0 ? heads : 0, 0);
    for (std::size_t node = 0; node < rows_.size() * kLshBands; ++node) {
      const int band = static_cast<int>(node % kLshBands);
      auto& table = heads_[rows_[node / kLshBands].original ? 0 : 1];
      const std::size_t b = bucket(band, nodes_[node].key);
      nodes_[node].next = table[b];
      table[b] = static_cast<std::uint32_t>(node + 1);
    }
    return;
  }
  auto& table = heads_[original ? 0 : 1];
  for (int band = 0; band < kLshBands; ++band) {
    const std::size_t node = row * kLshBands + static_cast<std::size_t>(band);
    const std::size_t b = bucket(band, keys[band]);
    nodes_[node].next = table[b];
    table[b] = static_cast<std::uint32_t>(node + 1);
  }
}

bool SetIndex::bucket_counts(const std::uint64_t* a, std::size_t n, std::uint8_t* counts) noexcept {
  std::uint32_t wide[kBuckets] = {};
  for (std::size_t i = 0; i < n; ++i) ++wide[a[i] >> 56];
  for (std::size_t b = 0; b < kBuckets; ++b) {
    if (wide[b] > 254) return false;
    counts[b] = static_cast<std::uint8_t>(wide[b]);
  }
  return true;
}

bool SetIndex::counts_allow(const std::uint8_t* query, const Row& r,
                            std::uint64_t need) const noexcept {
  if (query == nullptr || r.counts == kNoCounts) return true;
  const std::uint8_t* c = counts_.data() + static_cast<std::size_t>(r.counts) * kBuckets;
  std::uint32_t most = 0;
  for (std::size_t b = 0; b < kBuckets; ++b) most += std::min(query[b], c[b]);
  return most >= need;
}

void SetIndex::begin_query() {
  if (++query_ == 0) {
    std::fill(seen_.begin(), seen_.end(), 0);
    query_ = 1;
  }
}

template <typename F>
bool SetIndex::for_candidates(const std::int64_t* keys, int cls, F&& f) {
  const auto& table = heads_[cls];
  if (table.empty()) return true;
  for (int band = 0; band < kLshBands; ++band) {
    for (std::uint32_t at = table[bucket(band, keys[band])]; at != kNoNode;) {
      const std::size_t node = at - 1;
      const Node& nd = nodes_[node];
      at = nd.next;
      if (nd.key != keys[band] || static_cast<int>(node % kLshBands) != band) continue;
      const std::size_t row = node / kLshBands;
      if (seen_[row] == query_) continue;
      seen_[row] = query_;
      if (!f(row)) return false;
    }
  }
  return true;
}

SetIndex::Verdict SetIndex::verify(const Row& r, const std::uint64_t* a, std::size_t na,
                                   const std::uint8_t* query, double bar,
                                   double* similarity) const noexcept {
  if (r.size == kUnknownSize) return Verdict::kUnknown;
  const std::uint64_t need = common_needed(na, r.size, bar);
  if (need > std::min<std::uint64_t>(na, r.size)) return Verdict::kBelow;
  if (r.chunk == kNoSet) return Verdict::kUnknown;
  if (!counts_allow(query, r, need)) return Verdict::kBelow;
  const std::uint64_t common = common_at_least(a, na, set_of(r), r.size, need);
  if (common < need) return Verdict::kBelow;
  *similarity = jaccard_of(common, na, r.size);
  return Verdict::kReached;
}

SetIndex::Answer SetIndex::any(const std::int64_t* keys, const std::uint64_t* a, std::size_t na,
                               double threshold, Hit* hit) {
  bool unknown = false;
  bool found = false;
  std::uint8_t counts[kBuckets];
  const std::uint8_t* query = bucket_counts(a, na, counts) ? counts : nullptr;
  auto check = [&](std::size_t i) {
    const Row& r = rows_[i];
    double sim = 0;
    const Verdict v = verify(r, a, na, query, threshold, &sim);
    unknown = unknown || v == Verdict::kUnknown;
    if (v != Verdict::kReached) return true;
    hit->tag = r.tag;
    hit->original = r.original;
    hit->similarity = sim;
    found = true;
    return false;
  };
  begin_query();
  if (for_candidates(keys, 0, check)) for_candidates(keys, 1, check);
  return found ? Answer::kFound : unknown ? Answer::kUnknown : Answer::kNone;
}

// The trigger's one rule (core/dedupe_rule.hpp), then the smaller tag. Originals first:
// once one is found, a row that is not cannot win, and the others are not walked. Within
// a class, a row must reach the best so far's similarity (the merge stops sooner); of
// equally similar ones the smaller tag, as the trigger's search picks the smaller key.
SetIndex::Answer SetIndex::best(const std::int64_t* keys, const std::uint64_t* a, std::size_t na,
                                double threshold, Hit* hit) {
  bool unknown = false;
  bool found = false;
  std::uint8_t counts[kBuckets];
  const std::uint8_t* query = bucket_counts(a, na, counts) ? counts : nullptr;
  auto check = [&](std::size_t i) {
    const Row& r = rows_[i];
    const double bar = found ? std::max(threshold, hit->similarity) : threshold;
    double sim = 0;
    const Verdict v = verify(r, a, na, query, bar, &sim);
    unknown = unknown || v == Verdict::kUnknown;
    if (v != Verdict::kReached) return true;
    const Preference p = found ? prefer({r.original, sim}, {hit->original, hit->similarity})
                               : Preference::kFirst;
    if (p == Preference::kFirst || (p == Preference::kTie && r.tag < hit->tag)) {
      hit->tag = r.tag;
      hit->original = r.original;
      hit->similarity = sim;
      found = true;
    }
    return true;
  };
  begin_query();
  for_candidates(keys, 0, check);
  if (!found) for_candidates(keys, 1, check);
  return unknown ? Answer::kUnknown : found ? Answer::kFound : Answer::kNone;
}

std::size_t SetIndex::bytes() const noexcept {
  return rows_.capacity() * sizeof(Row) + nodes_.capacity() * sizeof(Node) +
         seen_.capacity() * sizeof(std::uint32_t) + counts_.capacity() +
         (heads_[0].capacity() + heads_[1].capacity()) * sizeof(std::uint32_t) +
         chunk_bytes_ +
         chunks_.capacity() * sizeof(std::unique_ptr<std::uint64_t[]>);
}

}  // namespace simhash
