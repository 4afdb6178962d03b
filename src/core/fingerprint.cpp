#include "core/fingerprint.hpp"

#include <stdexcept>
#include <string>

// xxHash as static inline functions: no xxHash symbol leaves this object file, so another
// library loaded in the same process cannot clash with ours.
#define XXH_INLINE_ALL
#include <xxhash.h>

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

void FeatureSink::token(const unsigned char* bytes, std::size_t len) noexcept {
  const std::uint64_t h = hash_bytes(bytes, len);
  ++tokens_;
  if (n_ == 1) {
    counter_.add(h);
    return;
  }
  // The common sizes unrolled: same result as the general case below.
  if (n_ == 3) {
    window_[0] = window_[1];
    window_[1] = window_[2];
    window_[2] = h;
    if (tokens_ >= 3) counter_.add(combine(window_, 3));
    return;
  }
  if (n_ == 2) {
    window_[0] = window_[1];
    window_[1] = h;
    if (tokens_ >= 2) counter_.add(combine(window_, 2));
    return;
  }
  for (unsigned i = 0; i + 1 < n_; ++i) window_[i] = window_[i + 1];
  window_[n_ - 1] = h;
  if (tokens_ >= n_) counter_.add(combine(window_, n_));
}

void FeatureSink::finish() noexcept {
  if (tokens_ > 0 && tokens_ < n_) {
    const auto k = static_cast<unsigned>(tokens_);
    counter_.add(combine(window_ + (n_ - k), k));
  }
}

}  // namespace detail

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
