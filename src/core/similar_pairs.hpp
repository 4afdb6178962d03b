// Verified near duplicates of a whole collection: every pair of texts whose shingle sets
// have a Jaccard similarity of at least a threshold, and the connected components of those
// pairs. The engine of simhash_similar_pairs and simhash_similar_clusters, free of
// PostgreSQL (the glue feeds it texts and drains its pairs; bench/similar_reference.cpp
// runs it on files).
//
//   texts -> shingle sets (similarity.hpp; on worker threads), each text once
//         -> identical sets grouped (by digest): a group's members are pairs of
//            similarity 1, and the group is verified once for all of them
//         -> candidates between groups: from 0.7, the MinHash LSH keys (minhash.hpp) of
//            each distinct set, one band at a time sorted by key; the groups in a run of
//            equal keys are candidates, each pair only in the first band the two share,
//            so no pair is verified twice. Below 0.7, the pairs within a Hamming radius
//            of the fingerprints the calibration names (near_pairs.hpp, resumable), a
//            pair of the second recipe only when the first one's radius does not hold it.
//         -> each candidate verified exactly: a merge of the two sorted sets that stops
//            as soon as the threshold is out of reach (on worker threads)
//         -> pairs of rows, or a union-find over the groups for clusters.
//
// The work after add() is done in bounded steps (step(), next()), so a caller can check
// for interrupts and report progress between them; within a call, and within add() (a
// batch, and a row, may hold any amount of text), the engine asks the caller's interrupt
// check as it goes (set_interrupt()). Worker threads run only inside add() and next(),
// never touch the caller's state (they poll a stop flag that the calling thread sets when
// its check says stop), start with every signal blocked (signals reach the caller's thread
// only), and hand back any exception to the calling thread, which rethrows it after they
// have all finished.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/interrupt.hpp"
#include "core/near_pairs.hpp"
#include "core/no_postgres.hpp"
#include "core/text_options.hpp"

namespace simhash {

// How candidates are found for a threshold (the calibration of docs/verified.md, measured
// with bench/eval_natural.cpp): `lsh` = pairs sharing a simhash_lsh key; otherwise pairs
// within max_distance of simhash(text, tokenizer, n, 'binary').
struct SimilarRecipe {
  bool lsh;
  TokenizerKind tokenizer;
  int n;
  int max_distance;  // -1 for lsh
};

// The recipes for a threshold, 1 or 2 (the candidates of two are joined). Throws
// std::invalid_argument unless 0 < min_similarity <= 1.
std::vector<SimilarRecipe> similar_recipes(double min_similarity);

// A verified pair of rows: id1 < id2.
struct SimilarPair {
  std::int64_t id1;
  std::int64_t id2;
  double similarity;
};

// A row of a cluster: the row's id, the smallest id of its component, and its highest
// similarity to another row of the component.
struct SimilarClusterRow {
  std::int64_t id;
  std::int64_t cluster_id;
  double similarity;
};

class SimilarPairs {
 public:
  // Throws std::invalid_argument unless 0 < min_similarity <= 1. threads >= 1.
  SimilarPairs(double min_similarity, int threads);
  ~SimilarPairs();
  SimilarPairs(const SimilarPairs&) = delete;
  SimilarPairs& operator=(const SimilarPairs&) = delete;

  // The caller's interrupt check (interrupt.hpp), asked on the calling thread while add(),
  // next() and cluster_step() work (the worker threads stop with it): about every 64 kB of
  // a text shingled and 64 K shingles hashed, sorted or merged. When it says stop, those
  // throw Interrupted, and the engine is then only to be destroyed.
  void set_interrupt(InterruptCheck check) noexcept { interrupt_ = check; }

  // Adds n rows: ids and UTF-8 texts (the caller's memory, read during the call only).
  // Texts without a character (an empty shingle set) are left out, as in simhash_jaccard
  // (undefined similarity). Shingles on the engine's threads.
  void add(const std::int64_t* ids, const std::string_view* texts, std::size_t n);

  // A row left out before shingling (a NULL text): its id counts for duplicate_id() only.
  void add_id(std::int64_t id);

  // Rows added (with a character) and distinct shingle sets among them.
  std::size_t rows() const noexcept { return row_ids_.size(); }
  std::size_t groups() const noexcept {
    return external_ ? ext_size_.size() : set_data_.size();
  }
  // Bytes held now (vectors' capacities; the hash map estimated).
  std::size_t memory_bytes() const noexcept;

  // After the last add(): the smallest id that occurs twice, if any (the caller's error),
  // among every row added, those without a character and add_id()'s included.
  std::optional<std::int64_t> duplicate_id();

  // Writes up to `capacity` pairs into out and returns how many, after about `work` units
  // of candidate search and verification (a unit: a step through a run of equal keys, or
  // a shingle of a set merged; the candidates of one call are verified together, on the
  // threads); 0 with done() true when every pair has been written. Every pair comes out
  // exactly once, in no particular order.
  std::size_t next(SimilarPair* out, std::size_t capacity, std::size_t work);
  bool done() const noexcept { return phase_ == Phase::Done; }

  // Clusters instead of pairs: call cluster_step() until it returns true (each call
  // about `work` units, as next()), then cluster_rows() writes every row that has a
  // similar row, ordered by cluster_id, then id.
  bool cluster_step(std::size_t work);
  std::vector<SimilarClusterRow> cluster_rows();

  // Progress for reports: the candidate source being walked (a band, or a recipe's pairs)
  // out of how many, and candidates verified so far.
  int stage() const noexcept { return band_; }
  int stages() const noexcept;
  std::uint64_t verified() const noexcept { return verified_; }

  // ---- External mode: the shingle sets (and LSH keys) in the caller's storage. ----
  //
  // For inputs whose shingle sets outgrow the caller's memory. After go_external() (while
  // adding; every group so far included), each distinct set becomes a record in a store the
  // caller keeps (a temporary file), written once and read back by offset; each LSH band's
  // keys go to a store of their own, read back once a band. What stays in memory is a few
  // words a row (ids, groups, record sizes and offsets) and what the caller allows for the
  // records of one batch of candidates (set_record_budget()). The engine still never calls
  // the caller: it asks (need()), and the caller serves the request between calls.
  //
  //   after each add():   export_records() until 0 -> append to the record store;
  //                       export_keys(b) for every band until 0 -> append to band b's store;
  //                       export_done().
  //   during next() / cluster_step(): when need() is
  //     Need::BandKeys:   read band need_band()'s store from its start and hand it over
  //                       with provide_band_keys() until need() changes;
  //     Need::Sets:       read each of sets_needed() (offset, bytes) into its dest, then
  //                       sets_loaded().
  // Identical sets are grouped by size and a 128-bit digest (not compared element by
  // element, as in memory: two different sets merge with probability about n^2 / 2^129).
  enum class Need { None, BandKeys, Sets };
  struct SetLoad {
    std::uint64_t offset;  // in the record store
    std::uint64_t bytes;
    void* dest;
    std::uint32_t group;
  };
  void go_external();
  bool external() const noexcept { return external_; }
  // Bytes of records one batch of candidates may load (at least one candidate's two).
  void set_record_budget(std::size_t bytes) noexcept { record_budget_ = bytes < 64 ? 64 : bytes; }
  std::size_t export_records(unsigned char* buf, std::size_t cap);
  std::size_t export_keys(int band, std::int64_t* buf, std::size_t cap);
  void export_done();
  Need need() const noexcept { return need_; }
  int need_band() const noexcept { return band_; }
  void provide_band_keys(const std::int64_t* keys, std::size_t n);
  const std::vector<SetLoad>& sets_needed() const noexcept { return loads_; }
  void sets_loaded();
  // LSH bands whose keys are exported (0 below 0.7, where candidates come from SimHash).
  int lsh_bands() const noexcept;
  // Bytes of records written so far (the record store's size).
  std::uint64_t record_bytes() const noexcept { return record_end_; }

 private:
  enum class Phase { Adding, Groups, Candidates, Done };
  struct SetPair {
    std::uint32_t a;
    std::uint32_t b;
    double similarity;
  };

  // add()'s steps: one batch's rows, as add() goes through them.
  struct Batch;
  void find_known_texts(const std::string_view* texts, Batch& b);
  void shingle_batch(const std::string_view* texts, Batch& b);
  void join_chunks(Batch& b);
  std::uint32_t group_of_set(Batch& b, std::size_t i, std::vector<std::pair<std::uint32_t, std::size_t>>& placed);
  void place_rows(const std::int64_t* ids, Batch& b);
  void trim_chunks(Batch& b, const std::vector<std::pair<std::uint32_t, std::size_t>>& placed);

  void finish_adding();
  void prepare_band();
  void prepare_recipes();
  // Fills candidates_ with up to `work` candidate pairs of groups; false when none is left.
  bool gather_candidates(std::size_t work);
  bool gather_recipe_candidates(std::size_t work);
  bool gather_band_candidates(std::size_t work);
  bool next_run_pair();
  // Verifies candidates_ (on threads) into verified_pairs_.
  void verify_candidates();
  // The verified group pairs of the next batch (and the within-group pairs first).
  bool next_set_pairs(std::size_t work);
  std::size_t expand(SimilarPair* out, std::size_t capacity);

  // A set in memory: every set before go_external(); after, the sets of the groups not
  // exported yet (from export_base_), and those loaded for a batch (record_of()).
  const std::uint64_t* set_data(std::uint32_t s) const noexcept {
    return set_data_[s - export_base_];
  }
  std::size_t set_size(std::uint32_t s) const noexcept {
    return external_ ? ext_size_[s]
                     : static_cast<std::size_t>(set_size_[s]);
  }
  // External mode: a record's words (the set's size, the LSH keys, then the set).
  std::size_t record_words(std::uint32_t s) const noexcept;
  const std::uint64_t* record_of(std::uint32_t s) const noexcept { return arena_.get() + where_[s]; }
  void add_group_external(std::uint64_t digest2, std::size_t size);
  bool gather_external_loads();

  double threshold_;
  int threads_;
  InterruptCheck interrupt_;
  std::vector<SimilarRecipe> recipes_;
  Phase phase_ = Phase::Adding;

  // Rows: id and group.
  std::vector<std::int64_t> row_ids_;
  std::vector<std::int64_t> other_ids_;  // rows left out (no character, NULL text)
  std::vector<std::uint32_t> row_set_;
  // Fingerprints of each row for the SimHash recipes (recipes_.size() per row).
  std::vector<std::uint64_t> row_fps_;
  // Distinct sets: set s is set_size_[s] hashes at set_data_[s], in one of chunks_. A batch's
  // sets are written into chunks of their own as they are shingled (on the threads), and
  // stay there: a row whose set is a group's already is squeezed out of its chunk, which
  // is then trimmed. Nothing is copied as the sets grow (a single vector regrown a quarter
  // at a time was copied whole each time, into fresh pages: over half the time of add()).
  struct SetChunk {
    std::uint64_t* data;  // std::malloc'd
    std::size_t cap;      // words
    std::size_t used;
  };
  std::vector<SetChunk> chunks_;
  std::size_t chunk_words_ = 0;  // the chunks' capacities
  std::vector<const std::uint64_t*> set_data_;
  std::vector<std::uint32_t> set_size_;
  void free_chunks() noexcept;
  std::unordered_map<std::uint64_t, std::uint32_t> set_of_digest_;
  // Texts already added: a 128-bit digest of the bytes, seeded with a secret of the engine
  // (its low half the key, its high half compared) -> a row with that text (an index into
  // row_ids_). A row of the same text takes that row's group and fingerprints without
  // being shingled again. Not kept in external mode (within a batch only there).
  struct TextRow {
    std::uint64_t high;
    std::uint32_t row;
  };
  std::unordered_map<std::uint64_t, TextRow> row_of_text_;
  std::uint64_t text_seed_ = 0;
  // Members of each group, ascending ids: member_ids_[member_offsets_[s] ...].
  std::vector<std::int64_t> member_ids_;
  std::vector<std::uint32_t> member_offsets_;
  // LSH keys, kLshBands per group.
  std::vector<std::int64_t> keys_;

  // Candidate generation.
  int band_ = 0;                 // the band (lsh) being walked
  bool band_ready_ = false;      // band_entries_ holds band_, sorted
  std::vector<std::pair<std::int64_t, std::uint32_t>> band_entries_;  // (key, group), sorted
  std::vector<std::pair<std::int64_t, std::uint32_t>> band_scratch_;  // for its sort
  std::size_t run_begin_ = 0, run_end_ = 0, run_i_ = 0, run_j_ = 0;
  // The SimHash recipes: each group's fingerprints (recipe-major), and a resumable finder
  // of the pairs within the current recipe's radius.
  std::vector<std::uint64_t> rep_fps_;
  std::size_t recipe_ = 0;
  std::optional<NearPairFinder> finder_;
  std::vector<std::uint64_t> finder_workspace_;
  std::vector<NearPair> finder_pairs_;
  std::size_t finder_pos_ = 0, finder_count_ = 0;  // pairs of finder_pairs_ not taken yet
  std::vector<std::pair<std::uint32_t, std::uint32_t>> candidates_;
  std::vector<SetPair> verified_pairs_;
  std::uint64_t verified_ = 0;

  // Expansion of verified_pairs_ (and of the groups' own pairs) into row pairs.
  std::size_t expand_pos_ = 0;
  std::size_t expand_x_ = 0, expand_y_ = 0;
  std::uint32_t within_group_ = 0;  // next group whose inner pairs are written
  bool within_done_ = false;

  // External mode. ext_size_ / ext_offset_: each group's set size and record offset;
  // digest2_: a second digest of each group's set (while adding); the groups before
  // export_base_ are in the stores, the others still in chunks_ / keys_ (their keys at
  // keys_[(s - export_base_) * kLshBands + b]).
  bool external_ = false;
  std::vector<std::uint32_t> ext_size_;
  std::vector<std::uint64_t> ext_offset_;
  std::vector<std::uint64_t> digest2_;
  std::uint32_t export_base_ = 0;
  std::uint64_t record_end_ = 0;
  std::size_t export_group_ = 0, export_pos_ = 0;  // export_records() cursor
  int export_band_ = -1;
  std::size_t export_key_ = 0;                      // export_keys() cursor
  std::size_t band_keys_in_ = 0;                    // keys provided for band_
  Need need_ = Need::None;
  std::size_t record_budget_ = std::size_t{1} << 26;
  // A batch's records: loads_, and where each loaded group starts in arena_ (kNowhere if not).
  std::vector<SetLoad> loads_;
  std::unique_ptr<std::uint64_t[]> arena_;  // left uninitialized: the caller fills it
  std::size_t arena_cap_ = 0;               // words
  std::vector<std::uint64_t> where_;
  std::uint64_t arena_words_ = 0;
  bool loaded_ = false;      // candidates_ gathered, their records loaded (or in memory)
  int batch_band_ = 0;       // the band of the batch's candidates (lsh, external)

  // Clusters: a union-find over groups, and each group's best similarity to another.
  std::vector<std::uint32_t> parent_;
  std::vector<double> best_;
};

// The binary-weighted fingerprint of a text with a tokenizer and n, as
// simhash(text, tokenizer, n, 'binary'); nullopt for a text without features. With a poll,
// asks it as it goes (throws Interrupted).
std::optional<std::uint64_t> binary_fingerprint(std::string_view text, TokenizerKind tokenizer,
                                                int n, Poll* poll = nullptr);

}  // namespace simhash
