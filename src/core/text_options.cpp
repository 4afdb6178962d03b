#include "core/text_options.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/char_splitter.hpp"

namespace simhash {

TokenizerKind parse_tokenizer(std::string_view name) {
  if (name == "word") return TokenizerKind::Word;
  if (name == "char") return TokenizerKind::Char;
  throw std::invalid_argument("unknown tokenizer \"" + std::string(name) +
                              "\"; allowed values are 'word', 'char'");
}

const char* tokenizer_name(TokenizerKind t) noexcept {
  return t == TokenizerKind::Char ? "char" : "word";
}

int default_n(TokenizerKind t) noexcept { return t == TokenizerKind::Char ? 5 : Options{}.shingle; }

void validate(const TextOptions& options) {
  if (options.tokenizer != TokenizerKind::Word && options.tokenizer != TokenizerKind::Char) {
    throw std::invalid_argument("unknown tokenizer; allowed values are 'word', 'char'");
  }
  if (options.n < 0 || options.n > kMaxShingle) {
    throw std::invalid_argument("n must be between 1 and " + std::to_string(kMaxShingle) +
                                " (or 0 for the tokenizer's default), got " +
                                std::to_string(options.n));
  }
  switch (options.weighting) {
    case Weighting::Tf:
    case Weighting::Binary:
    case Weighting::Log:
    case Weighting::Idf:
      break;
    default:
      throw std::invalid_argument("unknown weighting; allowed values are 'tf', 'binary', 'log'");
  }
  if (options.min_features < 1) {
    throw std::invalid_argument("min_features must be at least 1, got " +
                                std::to_string(options.min_features));
  }
}

namespace detail {

void ShingleCollector::push(std::uint64_t h) noexcept {
  ++tokens_;
  if (n_ == 1) {
    add(h);
    return;
  }
  for (unsigned i = 0; i + 1 < n_; ++i) window_[i] = window_[i + 1];
  window_[n_ - 1] = h;
  if (tokens_ >= n_) add(combine(window_, n_));
}

namespace {

// hash_bytes() of each ASCII character, computed once: the 'char' tokenizer hashes every
// character, and a call of XXH3 a letter was a tenth of shingling a Latin-script text.
struct AsciiHashes {
  std::uint64_t of[128];
  AsciiHashes() noexcept {
    for (unsigned c = 0; c < 128; ++c) {
      const auto b = static_cast<unsigned char>(c);
      of[c] = hash_bytes(&b, 1);
    }
  }
};

const std::uint64_t* ascii_hashes() noexcept {
  static const AsciiHashes table;
  return table.of;
}

}  // namespace

void ShingleCollector::token(const unsigned char* bytes, std::size_t len) noexcept {
  if (!chars_) {
    push(hash_bytes(bytes, len));
    return;
  }
  const std::uint64_t* ascii = ascii_hashes();
  if (!batched()) {
    for_each_char(bytes, len, [this, ascii](const unsigned char* c, std::size_t n) {
      push(n == 1 && c[0] < 0x80 ? ascii[c[0]] : hash_bytes(c, n));
    });
    return;
  }
  std::uint64_t* held = batch_ + (n_ - 1);
  for_each_char(bytes, len, [this, ascii, held](const unsigned char* c, std::size_t n) {
    held[pending_++] = n == 1 && c[0] < 0x80 ? ascii[c[0]] : hash_bytes(c, n);
    if (pending_ == kPending) flush();
  });
}

namespace {

// Features of the values v[0..m + N - 1): combine() of each N consecutive ones from the
// first, into out; N known to the compiler, so that the loop runs many at once.
template <unsigned N>
void shingle_run(const std::uint64_t* v, std::size_t m, std::uint64_t* out) noexcept {
  for (std::size_t j = 0; j < m; ++j) out[j] = combine(v + j, N);
}

}  // namespace

// The same features as push() a hash at a time: the feature of the t-th token (t >= n)
// combines the n hashes ending with it, the window's last n - 1 and the pending ones.
void ShingleCollector::flush() noexcept {
  if (pending_ == 0) return;
  const std::size_t n = n_;
  for (std::size_t i = 0; i + 1 < n; ++i) batch_[i] = window_[i + 1];
  // Tokens before the n-th make no feature: skip them.
  const std::size_t skip = tokens_ + 1 >= n ? 0 : std::min<std::size_t>(pending_, n - 1 - tokens_);
  std::size_t m = pending_ - skip;
  if (m > capacity - size) {
    overflow = true;
    m = capacity - size;
  }
  const std::uint64_t* v = batch_ + skip;
  if (n == 5) {
    shingle_run<5>(v, m, data + size);
  } else {
    for (std::size_t j = 0; j < m; ++j) data[size + j] = combine(v + j, n_);
  }
  size += m;
  tokens_ += pending_;
  for (std::size_t i = 0; i < n; ++i) window_[i] = batch_[pending_ - 1 + i];
  pending_ = 0;
}

void ShingleCollector::finish() noexcept {
  flush();
  if (tokens_ > 0 && tokens_ < n_) {
    const auto k = static_cast<unsigned>(tokens_);
    add(combine(window_ + (n_ - k), k));
  }
}

}  // namespace detail

namespace {

TextOptions resolved(TextOptions o) {
  validate(o);
  if (o.n == 0) o.n = default_n(o.tokenizer);
  return o;
}

}  // namespace

TextFingerprinter::TextFingerprinter(const TextOptions& options, bool collect)
    : options_(resolved(options)),
      fast_(!collect && options_.tokenizer == TokenizerKind::Word &&
            options_.weighting == Weighting::Tf),
      stream_(!collect && options_.tokenizer == TokenizerKind::Char &&
              options_.weighting == Weighting::Tf),
      fast_fp_(Options{options_.n, false}),
      collector_(options_.n, options_.tokenizer == TokenizerKind::Char, stream_),
      tokenizer_(TokenizerOptions{false}) {}

std::size_t TextFingerprinter::feed_limit() const noexcept {
  if (!needs_buffer()) return SIZE_MAX;
  // Feeding b bytes adds at most 18 b + slack features; keeping another slack free means
  // the end of the text always fits.
  const std::size_t free = collector_.capacity - collector_.size;
  return free <= 2 * kFeatureSlack ? 0 : (free - 2 * kFeatureSlack) / kMaxFeaturesPerByte;
}

std::size_t TextFingerprinter::capacity_for(std::size_t bytes) const noexcept {
  if (!needs_buffer()) return 0;
  return collector_.size + 2 * kFeatureSlack + kMaxFeaturesPerByte * bytes;
}

void TextFingerprinter::set_buffer(std::uint64_t* data, std::size_t capacity) {
  if (capacity < collector_.size || (data == nullptr && capacity != 0)) {
    throw std::logic_error("feature buffer smaller than the features it must hold");
  }
  if (sorting_ && data != collector_.data) {
    throw std::logic_error("the feature buffer cannot move while it is being sorted");
  }
  collector_.data = data;
  collector_.capacity = capacity;
}

void TextFingerprinter::feed(const char* data, std::size_t size) {
  if (ended_) throw std::logic_error("feed() after the end of the text");
  if (fast_) {
    fast_fp_.feed(data, size);
    return;
  }
  if (size > feed_limit()) throw std::logic_error("feature buffer too small for this chunk");
  tokenizer_.feed(data, size, collector_);
  collector_.flush();
}

void TextFingerprinter::token(const unsigned char* bytes, std::size_t len) {
  if (ended_) throw std::logic_error("token() after the end of the text");
  if (fast_) throw std::logic_error("token() is not for the default fingerprint");
  if (needs_buffer() && collector_.capacity - collector_.size < len + 2) {
    throw std::logic_error("feature buffer too small for this token");
  }
  collector_.token(bytes, len);
  collector_.flush();
}

// Ends the text of a collecting fingerprinter (idempotent).
void TextFingerprinter::end() {
  if (ended_) return;
  ended_ = true;
  tokenizer_.finish(collector_);
  collector_.finish();
  if (collector_.overflow) throw std::logic_error("feature buffer overflow");
  features_ = stream_ ? collector_.counter.features() : collector_.size;
}

bool TextFingerprinter::sort_step(SlicedSort& sort, std::size_t work) {
  if (!needs_buffer()) throw std::logic_error("sort_step() needs a collecting fingerprinter");
  end();
  if (sorted_) return true;
  if (!sorting_) {
    sort.begin(collector_.data, collector_.size);
    sorting_ = true;
  } else if (sort.data() != collector_.data || sort.size() != collector_.size) {
    throw std::logic_error("sort_step() with another sort than the one it began");
  }
  sorted_ = sort.step(work);
  return sorted_;
}

void TextFingerprinter::sort(Poll& poll) {
  if (sorting_) throw std::logic_error("sort() after sort_step()");
  constexpr auto kSlice = static_cast<std::size_t>(Poll::kUnits);
  SlicedSort sort;  // its 19 kB left uninitialized: a short text pays nothing for it
  while (!sort_step(sort, kSlice)) poll.work(kSlice);
  // The sort is done: the next calls need not see it (and it is about to go away).
  sorting_ = false;
}

std::optional<std::uint64_t> TextFingerprinter::fingerprint(const DfTable* df) {
  if (fast_) {
    if (ended_) throw std::logic_error("fingerprint() called twice");
    ended_ = true;
    const auto fp = fast_fp_.finish();
    features_ = fast_fp_.features();
    if (!fp || features_ < static_cast<std::uint64_t>(options_.min_features)) return std::nullopt;
    return fp;
  }
  end();
  if (features_ < static_cast<std::uint64_t>(options_.min_features)) return std::nullopt;
  if (stream_) return collector_.counter.fingerprint();
  return weighted_fingerprint(collector_.data, collector_.size, options_.weighting, df, sorted_);
}

std::size_t TextFingerprinter::collected() {
  if (!needs_buffer()) throw std::logic_error("collected() needs a collecting fingerprinter");
  end();
  return collector_.size;
}

void TextFingerprinter::drain() {
  if (!needs_buffer() || sorting_ || ended_) throw std::logic_error("drain() needs a collecting fingerprinter, before its end");
  collector_.size = 0;
}

std::size_t TextFingerprinter::distinct(std::uint64_t* counts, std::size_t counts_cap) {
  if (!needs_buffer()) throw std::logic_error("distinct() needs a collecting fingerprinter");
  end();
  if (counts != nullptr && counts_cap < features_) {
    throw std::invalid_argument("counts buffer too small");
  }
  return distinct_features(collector_.data, collector_.size, counts, sorted_);
}

}  // namespace simhash
