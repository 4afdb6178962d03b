#include "core/fingerprint.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

// xxHash as static inline functions (token_hash.hpp defines XXH_INLINE_ALL): no xxHash
// symbol leaves this object file, so another library loaded in the same process cannot
// clash with ours.
#include "core/token_hash.hpp"

namespace simhash {

void validate(const Options& options) {
  if (options.shingle < 1 || options.shingle > kMaxShingle) {
    throw std::invalid_argument("shingle size must be between 1 and " +
                                std::to_string(kMaxShingle) + ", got " +
                                std::to_string(options.shingle));
  }
}

std::uint64_t hash_bytes(const void* data, std::size_t len) noexcept {
  return XXH3_64bits_withSeed(data, len, kSeed);
}

namespace detail {

inline void FeatureSink::token(const unsigned char* bytes, std::size_t len) noexcept {
  push(detail::token_hash(bytes, len, kSeed));
}

inline void FeatureSink::ascii_token(const unsigned char* raw, std::size_t len) noexcept {
  push(detail::token_hash<true>(raw, len, kSeed));
}

namespace {
// Feature hashes of the windows of N tokens ending at h[first..m), written to out; h[-N+1..0)
// are the tokens before. Returns the number of features.
template <unsigned N>
unsigned shingle(const std::uint64_t* h, unsigned first, unsigned m, std::uint64_t* out) noexcept {
  unsigned k = 0;
  for (unsigned j = first; j < m; ++j) out[k++] = combine(h + j + 1 - N, N);
  return k;
}
}  // namespace

void FeatureSink::flush() noexcept {
  const unsigned m = nbuf_;
  const std::uint64_t* h = hashes_ + kCarry;
  if (n_ == 1) {
    counter_.add_many(h, m);
  } else {
    // The window ending at token tokens_ + j is complete from token n - 1 on.
    const unsigned first =
        tokens_ >= n_ - 1 ? 0 : static_cast<unsigned>(std::min<std::uint64_t>(n_ - 1 - tokens_, m));
    std::uint64_t features[kBatch];
    unsigned k;
    switch (n_) {  // the common sizes unrolled: the same result as the general case
      case 2:
        k = shingle<2>(h, first, m, features);
        break;
      case 3:
        k = shingle<3>(h, first, m, features);
        break;
      default:
        k = 0;
        for (unsigned j = first; j < m; ++j) features[k++] = combine(h + j + 1 - n_, n_);
        break;
    }
    counter_.add_many(features, k);
  }
  tokens_ += m;
  for (unsigned i = 0; i < kCarry; ++i) hashes_[i] = hashes_[i + m];
  nbuf_ = 0;
}

void FeatureSink::finish() noexcept {
  const std::uint64_t total = tokens_ + nbuf_;
  if (total > 0 && total < n_) {
    // Fewer than n tokens, all in this batch (a batch holds more than kMaxShingle).
    counter_.add(combine(hashes_ + kCarry, static_cast<unsigned>(total)));
    tokens_ = total;
    nbuf_ = 0;
    return;
  }
  flush();
}

}  // namespace detail

void Fingerprinter::feed(const char* data, std::size_t size) noexcept {
  tokenizer_.feed(data, size, sink_);
}

Fingerprinter::Fingerprinter(const Options& options)
    : sink_((validate(options), options.shingle)),
      tokenizer_(TokenizerOptions{options.cjk_bigrams}) {}

std::optional<std::uint64_t> Fingerprinter::finish() noexcept {
  tokenizer_.finish(sink_);
  sink_.finish();
  features_ = sink_.counter().total();
  if (features_ == 0) return std::nullopt;
  return sink_.counter().fingerprint();
}

std::optional<std::uint64_t> fingerprint(std::string_view text, const Options& options) {
  Fingerprinter fp(options);
  fp.feed(text);
  return fp.finish();
}

}  // namespace simhash
