// Fingerprints with options: tokenizer, shingle size, weighting and a minimum number of
// features. The SQL function simhash(body, tokenizer, n, weighting, min_features) is this.
//
//  * tokenizer 'word' with weighting 'tf' is the default fingerprint of fingerprint.hpp
//    (word n-grams; one token per character in unspaced scripts), computed by the very same
//    streaming Fingerprinter: with the defaults it equals simhash(text) bit for bit;
//  * tokenizer 'char': the tokenizer's normalized tokens split into characters
//    (char_splitter.hpp) and shingled n characters at a time, across word boundaries;
//  * tokenizer 'char' with 'tf' streams: every character shingle goes straight into the
//    bit counters (weighted.hpp, unit adds), no buffer;
//  * the other weightings collect the document's feature hashes in a buffer the caller
//    owns and weight each distinct feature (weighted.hpp).
//
// Everything here is deterministic and part of the on-disk format of fingerprints stored
// with these options (golden values in test/core/text_options_test.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "core/fingerprint.hpp"
#include "core/no_postgres.hpp"
#include "core/tokenizer.hpp"
#include "core/weighted.hpp"

namespace simhash {

enum class TokenizerKind : std::uint8_t {
  Word = 0,  // words; each character a token in unspaced scripts (the default)
  Char = 1,  // every normalized character a token
};

// The tokenizer named `name` ('word', 'char'). Throws std::invalid_argument naming the
// allowed values.
TokenizerKind parse_tokenizer(std::string_view name);
const char* tokenizer_name(TokenizerKind t) noexcept;

// Tokens per feature when n is 0: 3 for words (the default of simhash(text)), 5 for
// characters (chosen with bench/eval_defaults.cpp --candidates options, see the README:
// with binary weights 5- to 7-grams are equally good and 5 is the shortest of them).
int default_n(TokenizerKind t) noexcept;

struct TextOptions {
  TokenizerKind tokenizer = TokenizerKind::Word;
  int n = 0;  // tokens per feature, 1..kMaxShingle; 0: default_n(tokenizer)
  Weighting weighting = Weighting::Tf;
  std::int64_t min_features = 1;  // fewer features than this: no fingerprint (SQL NULL)
};

// Throws std::invalid_argument naming the allowed range or values.
void validate(const TextOptions& options);

// Bounds on the features a collecting fingerprinter can add: feeding b bytes adds at most
// kMaxFeaturesPerByte * b + kFeatureSlack features (a code point of 1 to 4 bytes
// normalizes to at most 18 code points, each of them ends at most one token or is one
// character; the slack covers a pending word of up to 128 characters, a pending unspaced
// character and the short feature of finish()). Tested over the whole Unicode table.
inline constexpr std::size_t kMaxFeaturesPerByte = 18;
inline constexpr std::size_t kFeatureSlack = 256;

namespace detail {

// Tokens -> token hashes (or, with `chars`, the hashes of their characters) -> features of
// n consecutive hashes, shingled exactly as the default fingerprint shingles them (n = 1:
// the hash itself; otherwise combine(); fewer than n tokens: one feature of all of them)
// -> a buffer the caller owns, or with `stream` straight into `counter` (unit weights). When
// the buffer is full further features are dropped and `overflow` is set: the caller sizes
// the buffer with the bounds above, so that never happens, and the fingerprinter refuses
// to finish if it did.
class ShingleCollector {
 public:
  ShingleCollector(int n, bool chars, bool stream) noexcept
      : n_(static_cast<unsigned>(n)), chars_(chars), stream_(stream) {}

  void token(const unsigned char* bytes, std::size_t len) noexcept;
  // Shingles the character hashes held back by token() (with chars, n > 1, no stream):
  // after each feed, and before finish().
  void flush() noexcept;
  void finish() noexcept;

  std::uint64_t* data = nullptr;
  std::size_t size = 0;
  std::size_t capacity = 0;
  bool overflow = false;
  WeightedCounter counter;  // with `stream`

 private:
  void push(std::uint64_t h) noexcept;
  void add(std::uint64_t feature) noexcept {
    if (stream_) {
      counter.add_unit(feature);
    } else if (size < capacity) {
      data[size++] = feature;
    } else {
      overflow = true;
    }
  }

  // The batched path: the last n - 1 hashes shingled, then the pending ones (not shingled
  // yet), in one array, so that each feature is combine() of n consecutive values of it.
  static constexpr std::size_t kPending = 64;
  bool batched() const noexcept { return chars_ && !stream_ && n_ > 1; }

  std::uint64_t window_[kMaxShingle] = {};  // last n token hashes, oldest first
  std::uint64_t tokens_ = 0;
  std::uint64_t batch_[kMaxShingle - 1 + kPending];  // the batched path (see flush())
  std::size_t pending_ = 0;
  unsigned n_;
  bool chars_;
  bool stream_;
};

}  // namespace detail

// Streaming fingerprint of one text with options. Trivially copyable; it never allocates:
// when it collects features (needs_buffer()), they go into a buffer the caller provides
// and may grow between feeds (set_buffer()).
class TextFingerprinter {
 public:
  // `collect`: keep the features even where the default path would not need them, for
  // distinct(). Throws std::invalid_argument for invalid options.
  explicit TextFingerprinter(const TextOptions& options, bool collect = false);

  bool needs_buffer() const noexcept { return !fast_ && !stream_; }
  // How many bytes feed() accepts now without the buffer growing (SIZE_MAX without one).
  // Within the limit there is always room left for the end of the text, so a text fed
  // within the limits can always be finished.
  std::size_t feed_limit() const noexcept;
  // The buffer capacity (in features) that lets feed() take `bytes` more bytes.
  std::size_t capacity_for(std::size_t bytes) const noexcept;
  // The buffer, holding the `size()` features collected so far (the caller copies them when
  // it moves the buffer; capacity >= size()).
  void set_buffer(std::uint64_t* data, std::size_t capacity);
  std::size_t size() const noexcept { return collector_.size; }

  // Feeds the next chunk of UTF-8 text (cut anywhere). Throws std::logic_error if size
  // exceeds feed_limit().
  void feed(const char* data, std::size_t size);
  // Adds one ready-made token, hashed as it is (no normalization; split into characters
  // with the 'char' tokenizer), e.g. a text search lexeme. Not on the default path
  // (std::logic_error); with a buffer, needs room for len + 2 features (std::logic_error
  // otherwise). Do not mix with feed().
  void token(const unsigned char* bytes, std::size_t len);

  // Ends the text (no feed() or token() afterwards) and sorts the collected features for
  // about `work` units of `sort` (SlicedSort::step); returns true once they are sorted, after
  // which fingerprint() and distinct() do not sort again. Pass the same `sort` to every call;
  // the buffer must not move meanwhile (set_buffer() refuses). Only when needs_buffer().
  bool sort_step(SlicedSort& sort, std::size_t work);
  // sort_step() has begun (its SlicedSort is in use).
  bool sorting() const noexcept { return sorting_; }
  // Ends the text and sorts the collected features in slices of Poll::kUnits values, asking
  // `poll` between them (throws Interrupted). Only when needs_buffer(), before sort_step().
  void sort(Poll& poll);

  // The fingerprint: nullopt when the text has fewer than min_features features (none at
  // all included). `df` is used by Weighting::Idf. Call once.
  std::optional<std::uint64_t> fingerprint(const DfTable* df = nullptr);
  // The distinct features, ascending as unsigned values, in the buffer's first entries, and
  // their numbers of occurrences in counts; returns how many there are. counts_cap must be
  // at least the number of features once the text has ended (the buffer's capacity will
  // do); std::invalid_argument otherwise. counts may be null: no numbers (the shingle sets
  // of the similarity functions need none). Only when needs_buffer().
  std::size_t distinct(std::uint64_t* counts, std::size_t counts_cap);
  // Ends the text and returns how many features the buffer holds, unsorted, repeats
  // included: for a consumer that needs no order, such as a MinHash sketch (a minimum
  // does not care about order or repeats). Only when needs_buffer().
  std::size_t collected();
  // Forgets the features collected so far (an order-blind consumer took them), keeping
  // what the next ones depend on (the last tokens): the buffer then holds only what the
  // next feed() adds. Not while sorting (std::logic_error).
  void drain();

  // Number of features (occurrences) of the text, after fingerprint() or distinct().
  std::uint64_t features() const noexcept { return features_; }

 private:
  void end();

  TextOptions options_;
  bool fast_;    // word + tf: the default Fingerprinter
  bool stream_;  // char + tf: unit adds, no buffer
  bool ended_ = false;
  bool sorting_ = false;  // sort_step() has begun: the buffer must stay where it is
  bool sorted_ = false;   // the collected features are in ascending order
  std::uint64_t features_ = 0;
  Fingerprinter fast_fp_;
  detail::ShingleCollector collector_;
  Tokenizer<detail::ShingleCollector> tokenizer_;
};

}  // namespace simhash
