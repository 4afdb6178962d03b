#include "core/similar_pairs.hpp"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <random>
#include <thread>

#include "core/clusters.hpp"
#include "core/hamming.hpp"
#include "core/minhash.hpp"
#include "core/mix.hpp"
#include "core/near_pairs.hpp"
#include "core/similarity.hpp"
#include "core/text_options.hpp"
#include "core/token_hash.hpp"

namespace simhash {

namespace {

// Rows per thread below which add() and the verification stay on the calling thread.
constexpr std::size_t kMinRowsPerThread = 64;
constexpr std::size_t kMinPairsPerThread = 256;

// Runs f(slice, begin, end, poll) over [0, n) cut into `threads` slices: slice 0 on the
// calling thread, the others on new threads that start with every signal blocked. Each slice
// polls as it goes: slice 0 asks `check` (and sets a stop flag when it says stop), the
// others read the flag; once its own slice is done, the calling thread goes on asking every
// millisecond until the others are done. An exception of a slice sets the flag too. After
// all have finished, rethrows the first exception other than Interrupted, else Interrupted
// if a slice was interrupted.
template <typename F>
void run_parallel(int threads, std::size_t n, std::size_t min_per_thread, InterruptCheck check,
                  F f) {
  std::size_t t = static_cast<std::size_t>(threads < 1 ? 1 : threads);
  if (min_per_thread > 0) t = std::min(t, std::max<std::size_t>(1, n / min_per_thread));
  std::atomic<bool> stop{false};
  if (t <= 1) {
    Poll poll(check, &stop);
    f(std::size_t{0}, std::size_t{0}, n, poll);
    return;
  }
  std::vector<std::exception_ptr> errors(t);
  std::unique_ptr<std::atomic<bool>[]> interrupted(new std::atomic<bool>[t]);
  for (std::size_t k = 0; k < t; ++k) interrupted[k] = false;
  std::atomic<std::size_t> running{0};
  std::vector<std::thread> workers;
  workers.reserve(t - 1);
  auto slice = [&](std::size_t k) {
    const std::size_t begin = n * k / t;
    const std::size_t end = n * (k + 1) / t;
    Poll poll = k == 0 ? Poll(check, &stop) : Poll::worker(&stop);
    try {
      f(k, begin, end, poll);
    } catch (const Interrupted&) {
      interrupted[k] = true;
    } catch (...) {
      errors[k] = std::current_exception();
      stop = true;
    }
  };
  auto worker = [&](std::size_t k) {
    slice(k);
    running.fetch_sub(1);
  };
  {
    // A new thread inherits the creating thread's signal mask: block everything while
    // they are created, so that signals are only ever delivered to the calling thread.
    sigset_t all;
    sigset_t old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    try {
      for (std::size_t k = 1; k < t; ++k) {
        running.fetch_add(1);
        try {
          workers.emplace_back(worker, k);
        } catch (...) {
          running.fetch_sub(1);
          throw;
        }
      }
    } catch (...) {
      pthread_sigmask(SIG_SETMASK, &old, nullptr);
      stop = true;
      for (auto& w : workers) w.join();
      throw;
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  slice(0);
  if (check.fn != nullptr) {
    Poll poll(check, &stop);
    while (running.load() > 0 && !poll.should_stop()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  for (auto& w : workers) w.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  for (std::size_t k = 0; k < t; ++k) {
    if (interrupted[k]) throw Interrupted{};
  }
}

// Runs f(at, m) over [0, n) in pieces of Poll::kUnits, asking the poll between them.
template <typename F>
void in_pieces(std::size_t n, Poll& poll, F f) {
  constexpr auto kPiece = static_cast<std::size_t>(Poll::kUnits);
  for (std::size_t at = 0; at < n;) {
    const std::size_t m = std::min(n - at, kPiece);
    f(at, m);
    at += m;
    poll.work(m);
  }
}

// A second digest of a set, independent of set_digest (another seed and another chain):
// in external mode, identical sets are those of equal size and both digests.
// (In pieces: second_digest_add() over consecutive pieces of a set, from begin(n) to end().)
std::uint64_t second_digest_begin(std::size_t n) noexcept {
  return mix64(0xA4093822299F31D0ULL + n);
}
std::uint64_t second_digest_add(std::uint64_t h, const std::uint64_t* piece,
                                std::size_t m) noexcept {
  for (std::size_t i = 0; i < m; ++i) {
    h = mix64(h + piece[i] * 0x9E3779B97F4A7C15ULL) ^ 0x082EFA98EC4E6C89ULL;
  }
  return h;
}
std::uint64_t second_digest_end(std::uint64_t h) noexcept { return mix64(h); }
std::uint64_t second_digest(const std::uint64_t* set, std::size_t n) noexcept {
  return second_digest_end(second_digest_add(second_digest_begin(n), set, n));
}

constexpr std::uint64_t kNowhere = ~std::uint64_t{0};

// Sorts a band's (key, group) entries, whose groups ascend, into the order std::sort gives
// (by key, then group): a stable LSD radix sort on the key as an unsigned value with its
// sign bit flipped, 11 bits a pass, the counts of every pass taken in one read; a pass
// whose digit is the same everywhere is skipped. tmp: scratch, left at n entries. (The 20
// std::sorts of the bands took about as long as the verification.)
void sort_band(std::vector<std::pair<std::int64_t, std::uint32_t>>& e,
               std::vector<std::pair<std::int64_t, std::uint32_t>>& tmp) {
  const std::size_t n = e.size();
  if (n < 1024) {
    std::sort(e.begin(), e.end());
    return;
  }
  constexpr unsigned kBits = 11;
  constexpr unsigned kPasses = 6;  // 66 bits
  constexpr std::size_t kBuckets = std::size_t{1} << kBits;
  std::vector<std::size_t> count(kPasses * kBuckets, 0);
  auto digit = [](std::int64_t key, unsigned pass) {
    const std::uint64_t u = static_cast<std::uint64_t>(key) ^ (std::uint64_t{1} << 63);
    return static_cast<std::size_t>((u >> (pass * kBits)) & (kBuckets - 1));
  };
  for (const auto& x : e) {
    for (unsigned p = 0; p < kPasses; ++p) ++count[p * kBuckets + digit(x.first, p)];
  }
  tmp.resize(n);
  auto* from = &e;
  auto* to = &tmp;
  for (unsigned p = 0; p < kPasses; ++p) {
    std::size_t* c = count.data() + p * kBuckets;
    if (c[digit((*from)[0].first, p)] == n) continue;
    std::size_t sum = 0;
    for (std::size_t b = 0; b < kBuckets; ++b) {
      const std::size_t k = c[b];
      c[b] = sum;
      sum += k;
    }
    const auto* src = from->data();
    auto* dst = to->data();
    for (std::size_t i = 0; i < n; ++i) dst[c[digit(src[i].first, p)]++] = src[i];
    std::swap(from, to);
  }
  if (from != &e) e.swap(tmp);
}

// The chunks one slice of a batch writes its rows' shingle sets into, each set where its
// features were collected: shingle_set's work (the same features, sorted and made
// distinct in place) without a vector a row, a zero-filled buffer a row and a copy a set.
// A chunk is sized for the rest of the slice's text (a set has about one shingle a
// character, at most one a byte but for rare expanding characters) plus the room feed()
// asks for; a row that outgrows it moves, alone, to a chunk twice the size. Chunks not
// handed over are freed.
struct SliceChunks {
  struct Chunk {
    std::uint64_t* data;
    std::size_t cap;
    std::size_t used;
  };
  std::vector<Chunk> chunks;
  std::size_t remaining = 0;  // bytes of the slice's texts not shingled yet

  SliceChunks() = default;
  SliceChunks(const SliceChunks&) = delete;
  SliceChunks& operator=(const SliceChunks&) = delete;
  ~SliceChunks() {
    for (const Chunk& c : chunks) std::free(c.data);
  }

  // A new chunk of `words`, last in the list.
  void add_chunk(std::size_t words) {
    chunks.reserve(chunks.size() + 1);
    auto* p = static_cast<std::uint64_t*>(std::malloc(words * 8));
    if (p == nullptr) throw std::bad_alloc();
    chunks.push_back(Chunk{p, words, 0});
  }

  // Shingles `text` (as shingle_set(text, kSimilarityShingle)) into the slice's scratch
  // buffer (reused from row to row: no fresh pages), sorts it there, and copies the
  // distinct shingles, the set, to the end of the last chunk; returns the set's size, its
  // chunk and offset there.
  std::size_t shingle(std::string_view text, Poll& poll, std::uint32_t& chunk, std::size_t& at) {
    TextOptions options;
    options.tokenizer = TokenizerKind::Char;
    options.n = kSimilarityShingle;
    options.weighting = Weighting::Binary;
    TextFingerprinter fp(options, /*collect=*/true);
    constexpr std::size_t kPiece = std::size_t{1} << 16;
    grow_scratch(fp.capacity_for(std::min(text.size(), kPiece)));
    fp.set_buffer(scratch.get(), scratch_words);
    std::size_t pos = 0;
    while (pos < text.size()) {
      const std::size_t want = std::min(text.size() - pos, kPiece);
      if (fp.feed_limit() < want) {
        grow_scratch(std::max(2 * scratch_words, fp.capacity_for(want)), fp.size());
        fp.set_buffer(scratch.get(), scratch_words);
        continue;
      }
      fp.feed(text.data() + pos, want);
      pos += want;
      if (fp.size() > kMaxSetFeatures) {
        throw std::length_error("the text has too many shingles (the limit is 67108864)");
      }
      poll.work(want);
    }
    remaining -= text.size();
    // Sorted in slices, the poll asked between them (64 million features take seconds).
    fp.sort(poll);
    const std::size_t distinct = fp.distinct(nullptr, 0);
    if (chunks.empty() || chunks.back().cap - chunks.back().used < distinct) {
      add_chunk(std::max(distinct, remaining));
    }
    Chunk& c = chunks.back();
    std::memcpy(c.data + c.used, scratch.get(), distinct * 8);
    chunk = static_cast<std::uint32_t>(chunks.size() - 1);
    at = c.used;
    c.used += distinct;
    // A huge row's buffer is not kept for the rows after it.
    if (scratch_words > kScratchKept) {
      scratch.reset();
      scratch_words = 0;
    }
    return distinct;
  }

 private:
  static constexpr std::size_t kScratchKept = std::size_t{1} << 21;  // 16 MB
  struct FreeDeleter {
    void operator()(std::uint64_t* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<std::uint64_t[], FreeDeleter> scratch;
  std::size_t scratch_words = 0;

  // The scratch buffer holds at least `words`, its first `keep` values kept.
  void grow_scratch(std::size_t words, std::size_t keep = 0) {
    if (scratch_words >= words) return;
    auto* p = static_cast<std::uint64_t*>(std::malloc(words * 8));
    if (p == nullptr) throw std::bad_alloc();
    if (keep > 0) std::memcpy(p, scratch.get(), keep * 8);
    scratch.reset(p);
    scratch_words = words;
  }
};

}  // namespace

// The calibration (bench/eval_natural.cpp, on natural near duplicates: paragraphs of man
// pages in five languages and of copyright files; see the calibration in docs/verified.md),
// the one table of the project (simhash_similar_recipes() shows it in SQL). From
// kLshMinSimilarity = 0.7, the pairs sharing an LSH key hold at least 99 % of the pairs at
// or above the threshold in every collection, with about 2 candidates per row. Below, the
// fingerprints and radii whose candidate pairs hold at least 97 % of them (96.4 % at 0.5
// in the weakest collection: no choice within k <= 16, what simhash_pairs serves, does
// better), with the fewest candidates; the candidates of two recipes are joined.
std::vector<SimilarRecipe> similar_recipes(double t) {
  if (!(t > 0 && t <= 1)) throw std::invalid_argument("min_similarity must be in (0, 1]");
  if (t >= kLshMinSimilarity) {
    return {SimilarRecipe{true, TokenizerKind::Char, kSimilarityShingle, -1}};
  }
  const int k = t >= 0.6 ? 14 : kMaxPairDistance;
  return {SimilarRecipe{false, TokenizerKind::Word, 1, k},
          SimilarRecipe{false, TokenizerKind::Char, 3, k}};
}

std::optional<std::uint64_t> binary_fingerprint(std::string_view text, TokenizerKind tokenizer,
                                                int n, Poll* poll) {
  Poll never;
  Poll& p = poll != nullptr ? *poll : never;
  TextOptions options;
  options.tokenizer = tokenizer;
  options.n = n;
  options.weighting = Weighting::Binary;
  TextFingerprinter fp(options);
  // Fed a chunk at a time, the poll asked between chunks.
  constexpr std::size_t kChunk = std::size_t{1} << 16;
  if (!fp.needs_buffer()) {
    for (std::size_t done = 0; done < text.size();) {
      const std::size_t want = std::min(text.size() - done, kChunk);
      fp.feed(text.data() + done, want);
      done += want;
      p.work(want);
    }
    return fp.fingerprint();
  }
  // The buffer grows with the features (about one a character): sized up front for the
  // worst case of a text (18 features a byte), it was 144 zeroed bytes a byte of text,
  // 2.2 GB for a 15 MB row, held on each of the engine's threads.
  std::vector<std::uint64_t> buffer(fp.capacity_for(std::min(text.size(), kChunk)));
  fp.set_buffer(buffer.data(), buffer.size());
  for (std::size_t done = 0; done < text.size();) {
    const std::size_t want = std::min(text.size() - done, kChunk);
    if (fp.feed_limit() < want) {
      buffer.resize(std::max(fp.capacity_for(want), 2 * buffer.size()));
      fp.set_buffer(buffer.data(), buffer.size());
    }
    fp.feed(text.data() + done, want);
    done += want;
    p.work(want);
  }
  fp.sort(p);
  return fp.fingerprint();
}

SimilarPairs::SimilarPairs(double min_similarity, int threads)
    : threshold_(min_similarity), threads_(threads < 1 ? 1 : threads),
      recipes_(similar_recipes(min_similarity)) {}

SimilarPairs::~SimilarPairs() { free_chunks(); }

void SimilarPairs::free_chunks() noexcept {
  for (const SetChunk& c : chunks_) std::free(c.data);
  chunks_.clear();
  chunk_words_ = 0;
}

std::size_t SimilarPairs::memory_bytes() const noexcept {
  return row_ids_.capacity() * 8 + other_ids_.capacity() * 8 + row_set_.capacity() * 4 + row_fps_.capacity() * 8 +
         chunk_words_ * 8 + chunks_.capacity() * sizeof(SetChunk) + set_data_.capacity() * 8 +
         set_size_.capacity() * 4 +
         set_of_digest_.size() * 32 + set_of_digest_.bucket_count() * 8 +
         row_of_text_.size() * 40 + row_of_text_.bucket_count() * 8 +
         member_ids_.capacity() * 8 + member_offsets_.capacity() * 4 + keys_.capacity() * 8 +
         band_entries_.capacity() * 16 + band_scratch_.capacity() * 16 + rep_fps_.capacity() * 8 + finder_workspace_.capacity() * 8 + finder_pairs_.capacity() * 12 +
         candidates_.capacity() * 8 + verified_pairs_.capacity() * 16 + parent_.capacity() * 4 +
         best_.capacity() * 8 + ext_size_.capacity() * 4 + ext_offset_.capacity() * 8 +
         digest2_.capacity() * 8 + loads_.capacity() * sizeof(SetLoad) + arena_cap_ * 8 +
         where_.capacity() * 8;
}

// One batch of add(): each row's set (its chunk, in its slice's list, and offset there, and
// its size), keys, fingerprints and digests, and whether it repeats an earlier text.
struct SimilarPairs::Batch {
  static constexpr std::uint32_t kNew = 0xFFFFFFFFU;      // a text not met before
  static constexpr std::uint64_t kEarlier = ~0ULL >> 1;  // copy_of: flag of an earlier batch's row
  std::size_t n;
  std::size_t nrec;
  bool lsh;
  std::vector<std::uint32_t> row_chunk;
  std::vector<std::size_t> row_at;
  std::vector<std::size_t> row_size;
  std::vector<std::int64_t> keys;
  std::vector<std::uint64_t> fps;
  std::vector<unsigned char> has_fp;
  std::vector<std::uint64_t> digests;
  std::vector<std::uint64_t> digests2;
  std::vector<XXH128_hash_t> text_digest;
  // kNew; the batch's earlier row with the same text; or kEarlier + an index into row_ids_
  std::vector<std::uint64_t> copy_of;
  std::vector<std::uint32_t> row_index;  // where a row went in row_ids_ (kNew: left out)
  std::vector<SliceChunks> made;
  std::vector<std::size_t> slice_begin;
  std::size_t first_chunk = 0;

  Batch(std::size_t rows, std::size_t recipes, bool with_lsh, bool external, int threads)
      : n(rows), nrec(recipes), lsh(with_lsh), row_chunk(rows), row_at(rows), row_size(rows),
        keys(with_lsh ? rows * kLshBands : 0), fps(rows * recipes), has_fp(rows * recipes),
        digests(rows), digests2(external ? rows : 0), text_digest(rows), copy_of(rows, kNew),
        row_index(rows, kNew), made(static_cast<std::size_t>(threads)),
        slice_begin(static_cast<std::size_t>(threads) + 1, rows) {}
};

// Marks the rows whose text an earlier row had, in this batch (compared byte for byte) or
// before (by the seeded 128-bit digest): they are not shingled.
void SimilarPairs::find_known_texts(const std::string_view* texts, Batch& b) {
  if (text_seed_ == 0) text_seed_ = mix64(std::random_device{}() ^ (std::uint64_t{std::random_device{}()} << 32)) | 1;
  std::unordered_map<std::uint64_t, std::uint32_t> first;  // in this batch
  first.reserve(b.n);
  for (std::size_t i = 0; i < b.n; ++i) {
    const XXH128_hash_t d = XXH3_128bits_withSeed(texts[i].data(), texts[i].size(), text_seed_);
    b.text_digest[i] = d;
    if (auto it = row_of_text_.find(d.low64); it != row_of_text_.end() && it->second.high == d.high64) {
      b.copy_of[i] = Batch::kEarlier + it->second.row;
      continue;
    }
    auto [it, fresh] = first.emplace(d.low64, static_cast<std::uint32_t>(i));
    if (!fresh && texts[it->second] == texts[i]) b.copy_of[i] = it->second;
  }
}

// Each new text's set, digests, LSH keys and fingerprints, on the engine's threads, in
// pieces with the poll asked between them (a row of 25 million characters takes seconds).
void SimilarPairs::shingle_batch(const std::string_view* texts, Batch& b) {
  run_parallel(threads_, b.n, kMinRowsPerThread, interrupt_,
               [&](std::size_t k, std::size_t begin, std::size_t end, Poll& poll) {
    SliceChunks& out = b.made[k];
    b.slice_begin[k] = begin;
    for (std::size_t i = begin; i < end; ++i) {
      if (b.copy_of[i] == Batch::kNew) out.remaining += texts[i].size();
    }
    for (std::size_t i = begin; i < end; ++i) {
      if (b.copy_of[i] != Batch::kNew) continue;
      const std::size_t size = out.shingle(texts[i], poll, b.row_chunk[i], b.row_at[i]);
      b.row_size[i] = size;
      if (size == 0) continue;
      const std::uint64_t* s = out.chunks[b.row_chunk[i]].data + b.row_at[i];
      std::uint64_t d = set_digest_begin(size);
      std::uint64_t d2 = second_digest_begin(size);
      LshSketch sketch;
      in_pieces(size, poll, [&](std::size_t at, std::size_t m) {
        d = set_digest_add(d, s + at, m);
        if (external_) d2 = second_digest_add(d2, s + at, m);
        if (b.lsh) sketch.add(s + at, m);
      });
      b.digests[i] = set_digest_end(d);
      if (external_) b.digests2[i] = second_digest_end(d2);
      if (b.lsh) sketch.keys_into(b.keys.data() + i * kLshBands);
      for (std::size_t r = 0; r < b.nrec; ++r) {
        const auto fp = binary_fingerprint(texts[i], recipes_[r].tokenizer, recipes_[r].n, &poll);
        b.has_fp[i * b.nrec + r] = fp.has_value();
        b.fps[i * b.nrec + r] = fp.value_or(0);
      }
    }
  });
}

// The slices' chunks join the engine's (slice by slice); each row's chunk becomes an index
// into chunks_.
void SimilarPairs::join_chunks(Batch& b) {
  b.first_chunk = chunks_.size();
  std::size_t count = 0;
  for (const SliceChunks& m : b.made) count += m.chunks.size();
  chunks_.reserve(b.first_chunk + count);
  std::size_t base = b.first_chunk;
  std::size_t k = 0;
  for (std::size_t i = 0; i < b.n; ++i) {
    while (k + 1 < b.made.size() && i >= b.slice_begin[k + 1]) {
      base += b.made[k].chunks.size();
      ++k;
    }
    b.row_chunk[i] = static_cast<std::uint32_t>(base + b.row_chunk[i]);
  }
  for (SliceChunks& m : b.made) {
    for (const auto& c : m.chunks) {
      chunks_.push_back(SetChunk{c.data, c.cap, 0});
      chunk_words_ += c.cap;
    }
    m.chunks.clear();  // the engine's now
  }
}

// The group of new row i's set: an identical set's, or a new group, its set squeezed down
// in its chunk over the sets of rows that joined a group (the sets of a chunk are in row
// order, so this never overwrites a set not yet looked at). A digest taken by another set
// is probed further. (External mode: the same set is the same size and second digest; the
// set of a group exported already is no longer here to compare.)
std::uint32_t SimilarPairs::group_of_set(Batch& b, std::size_t i,
                                         std::vector<std::pair<std::uint32_t, std::size_t>>& placed) {
  const std::size_t size = b.row_size[i];
  SetChunk& c = chunks_[b.row_chunk[i]];
  const std::uint64_t* s = c.data + b.row_at[i];
  for (std::uint64_t digest = b.digests[i];; digest = mix64(digest + 1)) {
    auto it = set_of_digest_.find(digest);
    if (it == set_of_digest_.end()) {
      const auto group = static_cast<std::uint32_t>(groups());
      if (groups() >= 0xFFFFFFFEULL) throw std::length_error("too many rows for one call");
      set_of_digest_.emplace(digest, group);
      if (external_) add_group_external(b.digests2[i], size);
      std::uint64_t* to = c.data + c.used;
      if (to != s) std::memmove(to, s, size * 8);
      placed.emplace_back(b.row_chunk[i], c.used);
      c.used += size;
      set_data_.push_back(to);
      set_size_.push_back(static_cast<std::uint32_t>(size));
      if (b.lsh) {
        keys_.insert(keys_.end(), b.keys.begin() + static_cast<std::ptrdiff_t>(i * kLshBands),
                     b.keys.begin() + static_cast<std::ptrdiff_t>((i + 1) * kLshBands));
      }
      return group;
    }
    if (external_ ? set_size(it->second) == size && digest2_[it->second] == b.digests2[i]
                  : set_size(it->second) == size &&
                        std::memcmp(set_data(it->second), s, size * 8) == 0) {
      return it->second;
    }
  }
}

// Each row into row_ids_ with its group and fingerprints (a text met before: the earlier
// row's), or into other_ids_ without a character; the new texts remembered.
void SimilarPairs::place_rows(const std::int64_t* ids, Batch& b) {
  std::vector<std::pair<std::uint32_t, std::size_t>> placed;
  for (std::size_t i = 0; i < b.n; ++i) {
    std::uint64_t from = b.copy_of[i];
    std::size_t earlier = Batch::kNew;  // the row (of row_ids_) whose text this is
    if (from >= Batch::kEarlier) {
      earlier = static_cast<std::size_t>(from - Batch::kEarlier);
    } else if (from != Batch::kNew) {
      earlier = b.row_index[from];
    }
    if (from != Batch::kNew ? earlier == Batch::kNew : b.row_size[i] == 0) {
      other_ids_.push_back(ids[i]);  // no character: its id counts for the duplicate check
      continue;
    }
    if (row_ids_.size() >= 0xFFFFFFFEULL) throw std::invalid_argument("too many rows for one call");
    b.row_index[i] = static_cast<std::uint32_t>(row_ids_.size());
    row_ids_.push_back(ids[i]);
    if (from != Batch::kNew) {
      row_set_.push_back(row_set_[earlier]);
      for (std::size_t r = 0; r < b.nrec; ++r) row_fps_.push_back(row_fps_[earlier * b.nrec + r]);
      continue;
    }
    row_set_.push_back(group_of_set(b, i, placed));
    for (std::size_t r = 0; r < b.nrec; ++r) {
      row_fps_.push_back(b.has_fp[i * b.nrec + r] ? b.fps[i * b.nrec + r] : 0);
    }
    if (!external_) {
      row_of_text_.emplace(b.text_digest[i].low64, TextRow{b.text_digest[i].high64, b.row_index[i]});
    }
  }
  trim_chunks(b, placed);
}

// The batch's chunks trimmed to what they hold (the sets of its new groups), the empty
// ones freed; a chunk that moved has its groups' pointers set again.
void SimilarPairs::trim_chunks(Batch& b, const std::vector<std::pair<std::uint32_t, std::size_t>>& placed) {
  std::size_t kept = b.first_chunk;
  std::vector<std::uint32_t> renumber(chunks_.size() - b.first_chunk);
  for (std::size_t j = b.first_chunk; j < chunks_.size(); ++j) {
    SetChunk c = chunks_[j];
    chunk_words_ -= c.cap;
    if (c.used == 0) {
      std::free(c.data);
      continue;
    }
    if (c.used < c.cap) {
      // Shrinking never fails in practice; if it does, the chunk stays as it was.
      if (void* p = std::realloc(c.data, c.used * 8)) {
        c.data = static_cast<std::uint64_t*>(p);
        c.cap = c.used;
      }
    }
    chunk_words_ += c.cap;
    renumber[j - b.first_chunk] = static_cast<std::uint32_t>(kept);
    chunks_[kept++] = c;
  }
  chunks_.resize(kept);
  const std::size_t first_new = set_data_.size() - placed.size();
  for (std::size_t g = 0; g < placed.size(); ++g) {
    const auto [j, at] = placed[g];
    set_data_[first_new + g] = chunks_[renumber[j - b.first_chunk]].data + at;
  }
}

void SimilarPairs::add(const std::int64_t* ids, const std::string_view* texts, std::size_t n) {
  if (phase_ != Phase::Adding) throw std::logic_error("rows added after the search began");
  if (n == 0) return;
  if (ids == nullptr || texts == nullptr) throw std::invalid_argument("null argument");
  const bool lsh = recipes_[0].lsh;
  Batch b(n, lsh ? 0 : recipes_.size(), lsh, external_, threads_);
  find_known_texts(texts, b);
  shingle_batch(texts, b);
  join_chunks(b);
  place_rows(ids, b);
}

void SimilarPairs::add_id(std::int64_t id) {
  if (phase_ != Phase::Adding) throw std::logic_error("rows added after the search began");
  other_ids_.push_back(id);
}

std::optional<std::int64_t> SimilarPairs::duplicate_id() {
  std::vector<std::int64_t> sorted(row_ids_);
  sorted.insert(sorted.end(), other_ids_.begin(), other_ids_.end());
  std::sort(sorted.begin(), sorted.end());
  auto it = std::adjacent_find(sorted.begin(), sorted.end());
  if (it == sorted.end()) return std::nullopt;
  return *it;
}

int SimilarPairs::lsh_bands() const noexcept { return recipes_[0].lsh ? kLshBands : 0; }

int SimilarPairs::stages() const noexcept {
  return recipes_[0].lsh ? kLshBands : 1;
}

void SimilarPairs::finish_adding() {
  set_of_digest_ = {};
  if (external_) {
    if (export_base_ != groups()) throw std::logic_error("records not exported before the search");
    digest2_ = {};
    where_.assign(groups(), kNowhere);
  }
  const std::size_t g = groups();
  const std::size_t n = rows();
  // Members of each group, ascending ids (counting sort by group, then sort each group).
  member_offsets_.assign(g + 1, 0);
  for (std::size_t r = 0; r < n; ++r) member_offsets_[row_set_[r] + 1]++;
  for (std::size_t s = 0; s < g; ++s) member_offsets_[s + 1] += member_offsets_[s];
  member_ids_.resize(n);
  {
    std::vector<std::uint32_t> fill(member_offsets_.begin(), member_offsets_.end() - 1);
    for (std::size_t r = 0; r < n; ++r) member_ids_[fill[row_set_[r]]++] = row_ids_[r];
  }
  for (std::size_t s = 0; s < g; ++s) {
    std::sort(member_ids_.begin() + member_offsets_[s], member_ids_.begin() + member_offsets_[s + 1]);
  }
  if (recipes_[0].lsh) {
    row_fps_ = {};
  } else {
    prepare_recipes();
  }
  row_set_ = {};
  phase_ = Phase::Groups;
}

void SimilarPairs::prepare_recipes() {
  // Each group's fingerprints are those of its member with the smallest id.
  const std::size_t g = groups();
  const std::size_t nrec = recipes_.size();
  std::vector<std::int64_t> rep_id(g, INT64_MAX);
  rep_fps_.assign(g * nrec, 0);
  for (std::size_t r = 0; r < rows(); ++r) {
    const std::uint32_t s = row_set_[r];
    if (row_ids_[r] < rep_id[s]) {
      rep_id[s] = row_ids_[r];
      for (std::size_t k = 0; k < nrec; ++k) rep_fps_[k * g + s] = row_fps_[r * nrec + k];
    }
  }
  row_fps_ = {};
  recipe_ = 0;
  finder_.reset();
}

void SimilarPairs::prepare_band() {
  const std::size_t g = groups();
  band_entries_.resize(g);
  for (std::size_t s = 0; s < g; ++s) {
    band_entries_[s] = {keys_[s * kLshBands + band_], static_cast<std::uint32_t>(s)};
  }
  sort_band(band_entries_, band_scratch_);
  run_begin_ = run_end_ = run_i_ = run_j_ = 0;
  band_ready_ = true;
}

bool SimilarPairs::gather_candidates(std::size_t work) {
  candidates_.clear();
  if (work == 0) work = 1;
  // (May return true with no candidate: a call's budget went on steps that gave none, or on
  // pairs an earlier band or recipe had; the caller calls again.)
  return recipes_[0].lsh ? gather_band_candidates(work) : gather_recipe_candidates(work);
}

bool SimilarPairs::gather_recipe_candidates(std::size_t work) {
  // The pairs within each recipe's radius, from a resumable finder; a pair that an earlier
  // recipe's radius holds too was a candidate of that recipe already.
  const std::size_t g = groups();
  while (recipe_ < recipes_.size()) {
    const std::uint64_t* fps = rep_fps_.data() + recipe_ * g;
    if (!finder_) {
      const PairLayout layout = choose_pair_layout(g, recipes_[recipe_].max_distance);
      const std::size_t bytes = NearPairFinder::workspace_bytes(layout, g, 0, layout.tables);
      finder_workspace_.assign((bytes + 7) / 8, 0);
      finder_.emplace(layout, fps, g, 0, layout.tables, finder_workspace_.data(),
                      finder_workspace_.size() * 8);
    }
    // Pairs from the finder, a bounded number at a time; candidates taken from them until
    // the work (merges of their sets, at most) reaches the budget, the rest kept.
    std::size_t cost = 0;
    for (;;) {
      if (finder_pos_ == finder_count_) {
        if (finder_->done()) break;
        finder_pairs_.resize(4096);
        finder_count_ = finder_->next(finder_pairs_.data(), finder_pairs_.size(), 1 << 16);
        finder_pos_ = 0;
        cost += 1 << 12;
        if (finder_count_ == 0) {
          if (cost >= work) return true;
          continue;
        }
      }
      const std::uint32_t a = finder_pairs_[finder_pos_].i;
      const std::uint32_t b = finder_pairs_[finder_pos_].j;
      ++finder_pos_;
      bool earlier = false;
      for (std::size_t e = 0; e < recipe_ && !earlier; ++e) {
        earlier = hamming(rep_fps_[e * g + a], rep_fps_[e * g + b]) <= recipes_[e].max_distance;
      }
      ++cost;
      if (!earlier) {
        candidates_.emplace_back(std::min(a, b), std::max(a, b));
        cost += std::min(set_size(a), set_size(b)) * 2;
        if (external_ && gather_external_loads()) return true;
      }
      if (cost >= work) return true;
    }
    if (!candidates_.empty()) return true;
    finder_.reset();
    finder_workspace_ = {};
    ++recipe_;
  }
  return !candidates_.empty();
}

bool SimilarPairs::next_run_pair() {
  // The next pair (run_i_, run_j_) of the current run of equal keys, or of the next run of
  // two groups or more; false at the band's end.
  const std::size_t g = band_entries_.size();
  if (run_j_ < run_end_) return true;
  ++run_i_;
  run_j_ = run_i_ + 1;
  if (run_j_ < run_end_) return true;
  run_begin_ = run_end_;
  while (run_begin_ < g) {
    run_end_ = run_begin_ + 1;
    while (run_end_ < g && band_entries_[run_end_].first == band_entries_[run_begin_].first) {
      ++run_end_;
    }
    if (run_end_ - run_begin_ >= 2) break;
    run_begin_ = run_end_;
  }
  if (run_begin_ >= g) return false;
  run_i_ = run_begin_;
  run_j_ = run_i_ + 1;
  return true;
}

bool SimilarPairs::gather_band_candidates(std::size_t work) {
  std::size_t steps = 0;
  while (band_ < kLshBands) {
    if (!band_ready_) {
      if (external_ && groups() > 0) {
        // The band's keys come from the caller's store (provide_band_keys()).
        if (need_ != Need::BandKeys) {
          need_ = Need::BandKeys;
          band_entries_.clear();
          band_entries_.reserve(groups());
          band_keys_in_ = 0;
        }
        return true;
      }
      prepare_band();
    }
    batch_band_ = band_;
    bool band_done = false;
    while (steps < work) {
      if (!next_run_pair()) {
        band_done = true;
        break;
      }
      const std::uint32_t a = band_entries_[run_i_].second;
      const std::uint32_t b = band_entries_[run_j_].second;
      ++run_j_;
      ++steps;
      // Only in the first band the two share (external mode: checked once their records,
      // which hold their keys, are loaded).
      bool earlier = false;
      for (int e = 0; e < band_ && !earlier && !external_; ++e) {
        earlier = keys_[a * std::size_t{kLshBands} + e] == keys_[b * std::size_t{kLshBands} + e];
      }
      if (!earlier) {
        candidates_.emplace_back(std::min(a, b), std::max(a, b));
        // A candidate costs up to a merge of its two sets.
        steps += std::min(set_size(a), set_size(b)) * 2;
        if (external_ && gather_external_loads()) return true;
      }
    }
    if (!band_done) return true;
    ++band_;
    band_ready_ = false;
    // External mode: a batch's candidates come from one band (the rule above needs it).
    if (external_ && !candidates_.empty()) return true;
  }
  band_entries_ = {};
  band_scratch_ = {};
  return !candidates_.empty();
}

void SimilarPairs::verify_candidates() {
  verified_pairs_.clear();
  const std::size_t n = candidates_.size();
  std::size_t t = static_cast<std::size_t>(threads_);
  t = std::min(t, std::max<std::size_t>(1, n / kMinPairsPerThread));
  std::vector<std::vector<SetPair>> found(t);
  // The threads take the candidates a small run at a time: a run's sets may be far larger
  // than another's (one family of long texts), and equal halves left a thread idle.
  constexpr std::size_t kRun = 64;
  std::atomic<std::size_t> taken{0};
  run_parallel(static_cast<int>(t), n, 0, interrupt_,
               [&](std::size_t k, std::size_t, std::size_t, Poll& poll) {
    auto& out = found[k];
    const std::size_t skip = recipes_[0].lsh ? kLshBands : 0;
    for (std::size_t c = 0, end = 0;; ++c) {
      if (c == end) {
        c = taken.fetch_add(kRun);
        if (c >= n) break;
        end = std::min(n, c + kRun);
      }
      const auto [a, b] = candidates_[c];
      const std::size_t na = set_size(a);
      const std::size_t nb = set_size(b);
      if (jaccard_bound(na, nb) < threshold_) continue;
      const std::uint64_t need = common_needed(na, nb, threshold_);
      if (need > std::min(na, nb)) continue;
      const std::uint64_t* da;
      const std::uint64_t* db;
      if (external_) {
        const std::uint64_t* ra = record_of(a);
        const std::uint64_t* rb = record_of(b);
        // Only in the first band the two share: their keys are the records' words 1..20.
        bool earlier = false;
        for (int e = 0; e < batch_band_ && skip > 0 && !earlier; ++e) earlier = ra[1 + e] == rb[1 + e];
        if (earlier) continue;
        da = ra + 1 + skip;
        db = rb + 1 + skip;
      } else {
        da = set_data(a);
        db = set_data(b);
      }
      const std::uint64_t common = common_at_least(da, na, db, nb, need);
      poll.work(na + nb);
      if (common < need) continue;
      const double sim = jaccard_of(common, na, nb);
      if (sim >= threshold_) out.push_back(SetPair{a, b, sim});
    }
  });
  for (auto& f : found) verified_pairs_.insert(verified_pairs_.end(), f.begin(), f.end());
  verified_ += n;
}

bool SimilarPairs::next_set_pairs(std::size_t work) {
  if (phase_ == Phase::Adding) finish_adding();
  phase_ = Phase::Candidates;
  expand_pos_ = expand_x_ = expand_y_ = 0;
  if (!loaded_) {
    if (!gather_candidates(work)) {
      verified_pairs_.clear();
      phase_ = Phase::Done;
      return false;
    }
    if (need_ == Need::BandKeys) {
      verified_pairs_.clear();
      return true;
    }
    if (external_ && !loads_.empty()) {
      // The caller reads the batch's records, in the store's order, into the arena.
      if (arena_cap_ < arena_words_) {
        arena_.reset();
        arena_cap_ = 0;
        arena_.reset(new std::uint64_t[arena_words_]);
        arena_cap_ = arena_words_;
      }
      for (SetLoad& l : loads_) l.dest = arena_.get() + where_[l.group];
      std::sort(loads_.begin(), loads_.end(),
                [](const SetLoad& x, const SetLoad& y) { return x.offset < y.offset; });
      need_ = Need::Sets;
      verified_pairs_.clear();
      return true;
    }
  }
  loaded_ = false;
  verify_candidates();
  if (external_) {
    for (const SetLoad& l : loads_) where_[l.group] = kNowhere;
    loads_.clear();
    arena_words_ = 0;
    if (arena_cap_ > 2 * (record_budget_ / 8) + 1024) {
      arena_.reset();
      arena_cap_ = 0;
    }
  }
  return true;
}

// External mode: the records candidates_'s last pair needs, marked for loading; true once
// the batch's records reach the budget.
bool SimilarPairs::gather_external_loads() {
  const auto [a, b] = candidates_.back();
  for (const std::uint32_t x : {a, b}) {
    if (where_[x] != kNowhere) continue;
    where_[x] = arena_words_;
    arena_words_ += record_words(x);
    loads_.push_back(SetLoad{ext_offset_[x], record_words(x) * 8, nullptr, x});
  }
  return arena_words_ * 8 >= record_budget_;
}

std::size_t SimilarPairs::record_words(std::uint32_t s) const noexcept {
  return 1 + (recipes_[0].lsh ? std::size_t{kLshBands} : 0) + ext_size_[s];
}

void SimilarPairs::add_group_external(std::uint64_t digest2, std::size_t size) {
  ext_size_.push_back(static_cast<std::uint32_t>(size));
  ext_offset_.push_back(record_end_);
  digest2_.push_back(digest2);
  record_end_ += record_words(static_cast<std::uint32_t>(ext_size_.size() - 1)) * 8;
}

void SimilarPairs::go_external() {
  if (phase_ != Phase::Adding) throw std::logic_error("go_external after the search began");
  if (external_) return;
  const std::size_t g = groups();
  for (std::size_t s = 0; s < g; ++s) {
    if (set_size(static_cast<std::uint32_t>(s)) > 0xFFFFFFFFULL) throw std::length_error("set too large");
  }
  std::vector<std::uint32_t> sizes(g);
  std::vector<std::uint64_t> d2(g);
  for (std::size_t s = 0; s < g; ++s) {
    sizes[s] = static_cast<std::uint32_t>(set_size(static_cast<std::uint32_t>(s)));
    d2[s] = second_digest(set_data(static_cast<std::uint32_t>(s)), sizes[s]);
  }
  external_ = true;
  row_of_text_ = {};  // the memory it held goes to the records
  for (std::size_t s = 0; s < g; ++s) add_group_external(d2[s], sizes[s]);
  export_base_ = 0;
  export_group_ = 0;
  export_pos_ = 0;
  export_band_ = -1;
}

std::size_t SimilarPairs::export_records(unsigned char* buf, std::size_t cap) {
  if (!external_) throw std::logic_error("export_records before go_external");
  if (buf == nullptr || cap % 8 != 0) throw std::invalid_argument("export buffer must hold whole words");
  const std::size_t kb = recipes_[0].lsh ? kLshBands : 0;
  std::size_t written = 0;
  while (written < cap && export_group_ < groups()) {
    const auto s = static_cast<std::uint32_t>(export_group_);
    const std::size_t words = record_words(s);
    std::size_t w = export_pos_ / 8;
    while (w < words && written < cap) {
      // Word w of the record: the size, the keys, then the set (copied a run at a time).
      const std::uint64_t* from;
      std::size_t run;
      std::uint64_t size_word = set_size(s);
      if (w == 0) {
        from = &size_word;
        run = 1;
      } else if (w < 1 + kb) {
        from = reinterpret_cast<const std::uint64_t*>(keys_.data()) + (s - export_base_) * kb + (w - 1);
        run = 1 + kb - w;
      } else {
        from = set_data(s) + (w - 1 - kb);
        run = words - w;
      }
      run = std::min(run, (cap - written) / 8);
      std::memcpy(buf + written, from, run * 8);
      written += run * 8;
      w += run;
    }
    if (w == words) {
      ++export_group_;
      export_pos_ = 0;
    } else {
      export_pos_ = w * 8;
    }
  }
  return written;
}

std::size_t SimilarPairs::export_keys(int band, std::int64_t* buf, std::size_t cap) {
  if (!external_) throw std::logic_error("export_keys before go_external");
  if (!recipes_[0].lsh || band < 0 || band >= kLshBands || buf == nullptr) {
    throw std::invalid_argument("no such band");
  }
  if (band != export_band_) {
    export_band_ = band;
    export_key_ = 0;
  }
  const std::size_t pending = groups() - export_base_;
  std::size_t n = 0;
  while (n < cap && export_key_ < pending) {
    buf[n++] = keys_[export_key_ * kLshBands + static_cast<std::size_t>(band)];
    ++export_key_;
  }
  return n;
}

void SimilarPairs::export_done() {
  if (!external_ || export_group_ != groups()) throw std::logic_error("records not all exported");
  export_base_ = static_cast<std::uint32_t>(groups());
  // Freed, not cleared: at the switch they held up to work_mem; a batch's are small.
  free_chunks();
  chunks_ = {};
  set_data_ = {};
  set_size_ = {};
  keys_ = {};
  export_pos_ = 0;
  export_band_ = -1;
}

void SimilarPairs::provide_band_keys(const std::int64_t* keys, std::size_t n) {
  if (need_ != Need::BandKeys) throw std::logic_error("band keys not asked for");
  if (n > groups() - band_keys_in_) throw std::invalid_argument("more band keys than groups");
  for (std::size_t i = 0; i < n; ++i) {
    band_entries_.emplace_back(keys[i], static_cast<std::uint32_t>(band_keys_in_++));
  }
  if (band_keys_in_ == groups()) {
    sort_band(band_entries_, band_scratch_);
    run_begin_ = run_end_ = run_i_ = run_j_ = 0;
    band_ready_ = true;
    need_ = Need::None;
  }
}

void SimilarPairs::sets_loaded() {
  if (need_ != Need::Sets) throw std::logic_error("records not asked for");
  need_ = Need::None;
  loaded_ = true;
}

std::size_t SimilarPairs::expand(SimilarPair* out, std::size_t capacity) {
  std::size_t count = 0;
  // The pairs inside each group first: identical shingle sets, similarity 1.
  while (!within_done_ && count < capacity) {
    if (within_group_ >= groups()) {
      within_done_ = true;
      expand_x_ = expand_y_ = 0;
      break;
    }
    const std::size_t lo = member_offsets_[within_group_];
    const std::size_t size = member_offsets_[within_group_ + 1] - lo;
    if (expand_y_ <= expand_x_) expand_y_ = expand_x_ + 1;
    if (expand_x_ + 1 >= size) {
      ++within_group_;
      expand_x_ = 0;
      expand_y_ = 1;
      continue;
    }
    out[count++] = SimilarPair{member_ids_[lo + expand_x_], member_ids_[lo + expand_y_], 1.0};
    if (++expand_y_ >= size) {
      ++expand_x_;
      expand_y_ = expand_x_ + 1;
    }
  }
  if (!within_done_) return count;
  // Then the members of each verified pair of groups, every one with every one.
  while (count < capacity && expand_pos_ < verified_pairs_.size()) {
    const SetPair& p = verified_pairs_[expand_pos_];
    const std::size_t alo = member_offsets_[p.a];
    const std::size_t asize = member_offsets_[p.a + 1] - alo;
    const std::size_t blo = member_offsets_[p.b];
    const std::size_t bsize = member_offsets_[p.b + 1] - blo;
    const std::int64_t x = member_ids_[alo + expand_x_];
    const std::int64_t y = member_ids_[blo + expand_y_];
    out[count++] = SimilarPair{std::min(x, y), std::max(x, y), p.similarity};
    if (++expand_y_ >= bsize) {
      expand_y_ = 0;
      if (++expand_x_ >= asize) {
        expand_x_ = 0;
        ++expand_pos_;
      }
    }
  }
  return count;
}

std::size_t SimilarPairs::next(SimilarPair* out, std::size_t capacity, std::size_t work) {
  if (out == nullptr && capacity > 0) throw std::invalid_argument("null argument");
  if (phase_ == Phase::Adding) finish_adding();
  std::size_t count = 0;
  bool searched = false;
  for (;;) {
    count += expand(out + count, capacity - count);
    if (count == capacity || phase_ == Phase::Done) return count;
    if (!within_done_) continue;
    if (searched || need_ != Need::None) return count;
    next_set_pairs(work);
    searched = true;
  }
}

bool SimilarPairs::cluster_step(std::size_t work) {
  if (phase_ == Phase::Adding) finish_adding();
  if (parent_.empty() && groups() > 0) {
    parent_.resize(groups());
    union_find_init(parent_.data(), groups());
    best_.assign(groups(), -1.0);
    for (std::size_t s = 0; s < groups(); ++s) {
      if (member_offsets_[s + 1] - member_offsets_[s] >= 2) best_[s] = 1.0;
    }
  }
  if (phase_ == Phase::Done) return true;
  if (need_ != Need::None) return false;  // the caller serves it first
  if (!next_set_pairs(work)) return true;
  for (const SetPair& p : verified_pairs_) {
    union_find_unite(parent_.data(), p.a, p.b);
    best_[p.a] = std::max(best_[p.a], p.similarity);
    best_[p.b] = std::max(best_[p.b], p.similarity);
  }
  verified_pairs_.clear();
  return false;
}

std::vector<SimilarClusterRow> SimilarPairs::cluster_rows() {
  std::vector<SimilarClusterRow> rows;
  const std::size_t g = groups();
  if (g == 0) return rows;
  // The smallest id of each component, at its root.
  std::vector<std::int64_t> smallest(g, INT64_MAX);
  for (std::size_t s = 0; s < g; ++s) {
    const std::uint32_t root = union_find_root(parent_.data(), static_cast<std::uint32_t>(s));
    smallest[root] = std::min(smallest[root], member_ids_[member_offsets_[s]]);
  }
  for (std::size_t s = 0; s < g; ++s) {
    if (best_[s] < 0) continue;  // alone, and no other row with its text
    const std::int64_t cluster = smallest[union_find_root(parent_.data(), static_cast<std::uint32_t>(s))];
    for (std::size_t m = member_offsets_[s]; m < member_offsets_[s + 1]; ++m) {
      rows.push_back(SimilarClusterRow{member_ids_[m], cluster, best_[s]});
    }
  }
  std::sort(rows.begin(), rows.end(), [](const SimilarClusterRow& x, const SimilarClusterRow& y) {
    return x.cluster_id != y.cluster_id ? x.cluster_id < y.cluster_id : x.id < y.id;
  });
  return rows;
}

}  // namespace simhash
