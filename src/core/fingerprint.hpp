// Text -> 64-bit SimHash fingerprint.
//
//   text --Tokenizer--> tokens --XXH3--> token hashes --shingle of n--> feature hashes
//        --BitCounter (weight 1 per occurrence = term frequency)--> fingerprint
//
// A token's hash is XXH3-64 (seed kSeed) of its UTF-8 bytes. A feature is n consecutive
// tokens; for n = 1 its hash is the token hash, otherwise combine() of the n token hashes in
// text order. A text with fewer than n tokens but at least one has a single feature made of
// all its tokens. A text without tokens has no fingerprint.
//
// Everything here is part of the on-disk format of stored fingerprints: the tokenizer
// (tokenizer.hpp), the Unicode tables, the seed, the way hashes combine and the tie rule
// (bit 0 when a counter is exactly zero). Golden-value tests freeze it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/bit_counter.hpp"
#include "core/mix.hpp"
#include "core/no_postgres.hpp"
#include "core/tokenizer.hpp"

namespace simhash {

inline constexpr std::uint64_t kSeed = 0x53494d4841534831ULL;  // "SIMHASH1"
inline constexpr int kMaxShingle = 8;

// The defaults are those of simhash(text), chosen with bench/eval_defaults.cpp (README,
// "Choosing the defaults"): word trigrams, and for unspaced scripts character trigrams (each
// character a token, three tokens a feature).
struct Options {
  int shingle = 3;           // tokens per feature, 1..kMaxShingle
  bool cjk_bigrams = false;  // true: neighbouring unspaced characters pair up as tokens
};

// Throws std::invalid_argument naming the allowed range when an option is out of range.
void validate(const Options& options);

std::uint64_t hash_bytes(const void* data, std::size_t len) noexcept;

// Order-sensitive hash of a sequence of (already random) 64-bit hashes: each step mixes the
// next hash in with a multiplication and a shift, and the MurmurHash3 64-bit finalizer
// avalanches the result. Cheaper than hashing the bytes again, and just as well spread.
inline std::uint64_t combine(const std::uint64_t* hashes, unsigned n) noexcept {
  std::uint64_t acc = kSeed;
  for (unsigned i = 0; i < n; ++i) {
    acc = (acc ^ hashes[i]) * 0x9E3779B97F4A7C15ULL;
    acc ^= acc >> 32;
  }
  return mix64(acc);
}

namespace detail {
// Token hashes -> shingled feature hashes -> bit counter. Its token methods are defined in
// fingerprint.cpp, where the tokenizer loop that calls them is compiled too, so that they
// are inlined into it. Tokens are collected in batches: an ASCII word of up to 16 bytes is
// kept as its first and last 8 bytes and its length, and hashed with the rest of its batch
// (all at once with AVX-512, without a branch on the length); other tokens are hashed at
// once. (Only on the AVX-512 path: in scalar code, hashing each word at once is faster.)
// Each batch is then shingled and counted in tight loops.
//
// Stage S says how far it goes: the fingerprint needs all of it (FeatureSink); the others
// stop early and keep a checksum of what their last stage produced, so that benchmarks can
// time the real pipeline stage by stage (run_stage()).
enum class Stage { kTokenize, kHash, kShingle, kCount };

template <Stage S>
class BasicFeatureSink {
 public:
  explicit BasicFeatureSink(int shingle) noexcept;
  // The chunk the tokenizer is about to read: ASCII words may be read 8 bytes at a time
  // within it, past their own ends.
  void set_input(const void* begin, std::size_t size) noexcept {
    input_begin_ = reinterpret_cast<std::uintptr_t>(begin);
    input_end_ = input_begin_ + size;
  }
  void token(const unsigned char* bytes, std::size_t len) noexcept;
  // An ASCII word straight out of the input, not yet lower-cased (see tokenizer.hpp).
  void ascii_token(const unsigned char* raw, std::size_t len) noexcept;
  // n tokens of 3 bytes, one after the other (see tokenizer.hpp).
  void unit_tokens(const unsigned char* bytes, std::size_t n) noexcept;
  // The ASCII words of a whole 64-byte block of the input (see tokenizer.hpp).
  void ascii_block(const unsigned char* base, std::uint64_t starts, std::uint64_t ends) noexcept;
  // Counts the last features, and the short feature of a text with fewer than n tokens.
  void finish() noexcept;
  BitCounter& counter() noexcept { return counter_; }
  std::uint64_t checksum() const noexcept { return checksum_; }

 private:
  // A batch is counted once it holds kBatch tokens; ascii_block() may add up to 32 at once
  // before that check, so the arrays have room for kRoom.
  static constexpr unsigned kBatch = 128;
  static constexpr unsigned kRoom = kBatch + 32;
  static constexpr unsigned kCarry = kMaxShingle - 1;

  void push(std::uint64_t h) noexcept {
    hashes_[kCarry + nbuf_] = h;
    pending_len_[nbuf_] = 0;
    if (++nbuf_ >= kBatch) flush();
  }
  template <bool Copy>
  unsigned defer_block(const unsigned char* base, std::uint64_t starts, std::uint64_t ends,
                       unsigned k) noexcept;
  void hash_pending() noexcept;
  void flush() noexcept;

  // Token hashes in text order: the batch from kCarry on, preceded by the last n - 1 hashes
  // of the batches before it. A batch entry whose pending_len_ is not 0 is not hashed yet:
  // it holds the first 8 bytes of an ASCII word of pending_len_ (1..16) bytes, lower-cased,
  // and last8_ the word's last 8 bytes (which, for a shorter word, start before it).
  std::uint64_t hashes_[kCarry + kRoom];
  std::uint64_t last8_[kRoom];
  std::uint8_t pending_len_[(kRoom + 63) / 64 * 64] = {};  // read 64 at a time
  std::uint64_t tokens_ = 0;  // tokens of the batches before this one
  unsigned nbuf_ = 0;         // tokens in this batch
  unsigned n_;
  bool defer_ascii_;  // batch short ASCII words (the AVX-512 path)
  std::uintptr_t input_begin_ = 0, input_end_ = 0;
  std::uint64_t checksum_ = 0;  // stages before kCount
  BitCounter counter_;
};

using FeatureSink = BasicFeatureSink<Stage::kCount>;

// For benchmarks: the pipeline of Fingerprinter on one text, up to and including `stage`;
// returns a checksum of that stage's output (for kCount, the fingerprint, 0 for none).
std::uint64_t run_stage(Stage stage, const Options& options, const char* data,
                        std::size_t size) noexcept;
}  // namespace detail

// Streaming fingerprint of one text. Trivially copyable, never allocates.
class Fingerprinter {
 public:
  // Throws std::invalid_argument for invalid options.
  explicit Fingerprinter(const Options& options = {});

  void feed(const char* data, std::size_t size) noexcept;
  void feed(std::string_view chunk) noexcept { feed(chunk.data(), chunk.size()); }

  // The fingerprint of everything fed, or nullopt when the text had no token.
  // Call once.
  std::optional<std::uint64_t> finish() noexcept;

  // Number of features added (valid after finish()).
  std::uint64_t features() const noexcept { return features_; }

 private:
  detail::FeatureSink sink_;
  Tokenizer<detail::FeatureSink> tokenizer_;
  std::uint64_t features_ = 0;
};

// One-shot convenience.
std::optional<std::uint64_t> fingerprint(std::string_view text, const Options& options = {});

}  // namespace simhash
