// Helpers shared by the libFuzzer targets of test/fuzz/: reading options and values from
// the fuzzer's bytes, checks that abort (so that libFuzzer keeps the input), a
// deterministic chunking of a text, the feature-buffer dance of the PostgreSQL glue
// (src/pg/options.c), and a reference weighted SimHash written from its definition
// (src/core/weighted.hpp) on top of test/core/reference.hpp.
//
// Nothing here is fast or clever on purpose: the targets compare the core's fast paths
// against it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../core/reference.hpp"
#include "capi/text_options_capi.h"
#include "core/unicode.hpp"
#include "core/weighted.hpp"

namespace simhash::fuzz {

// Prints what went wrong and aborts: libFuzzer reports a crash and keeps the input.
[[noreturn]] inline void fail(const char* file, int line, const char* what) {
  std::fprintf(stderr, "\n%s:%d: FUZZ CHECK FAILED: %s\n", file, line, what);
  std::fflush(stderr);
  std::abort();
}

#define FUZZ_CHECK(cond)                                            \
  do {                                                              \
    if (!(cond)) ::simhash::fuzz::fail(__FILE__, __LINE__, #cond); \
  } while (0)

// Reads the fuzzer's bytes front to back; past the end every read gives zeros.
class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) : p_(data), n_(size) {}

  std::size_t left() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }

  std::uint8_t byte() noexcept {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  std::uint16_t u16() noexcept {
    const std::uint16_t lo = byte();
    return static_cast<std::uint16_t>(lo | (byte() << 8));
  }
  std::uint64_t u64() noexcept {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t{byte()} << (8 * i);
    return v;
  }
  // Up to len bytes (fewer at the end of the input).
  std::string_view bytes(std::size_t len) noexcept {
    len = std::min(len, n_);
    const std::string_view s(reinterpret_cast<const char*>(p_), len);
    p_ += len;
    n_ -= len;
    return s;
  }
  std::string_view rest() noexcept { return bytes(n_); }

 private:
  const std::uint8_t* p_;
  std::size_t n_;
};

// A small deterministic generator (splitmix64) for choices that need not come from the
// input byte by byte, such as where a text is cut into chunks.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() noexcept {
    std::uint64_t z = (s_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) noexcept { return n == 0 ? 0 : next() % n; }

 private:
  std::uint64_t s_;
};

// Cuts text into chunks of 1..max_chunk bytes (cuts land anywhere, inside UTF-8 sequences
// too).
inline std::vector<std::string_view> chunks(std::string_view text, Rng& rng,
                                            std::size_t max_chunk) {
  std::vector<std::string_view> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t n = std::min(text.size() - pos, 1 + rng.below(max_chunk));
    out.push_back(text.substr(pos, n));
    pos += n;
  }
  return out;
}

// True when s is valid UTF-8 (no overlong forms, surrogates or values above U+10FFFF).
inline bool valid_utf8(std::string_view s) {
  for (char32_t cp : reference::decode(s)) {
    if (cp == reference::kBreak) return false;
  }
  return true;
}

// An error buffer of exactly `cap` bytes on the heap, so that AddressSanitizer sees a write
// past its end; checks that a message left in it is NUL-terminated within the buffer.
class ErrBuf {
 public:
  explicit ErrBuf(std::size_t cap) : cap_(cap), buf_(cap ? new char[cap] : nullptr) {
    if (cap_) std::memset(buf_.get(), 'x', cap_);
  }
  char* data() noexcept { return buf_.get(); }
  std::size_t cap() const noexcept { return cap_; }
  // After a failing call: the message fits and ends with a NUL.
  void check_terminated() const {
    if (cap_ == 0) return;
    FUZZ_CHECK(std::memchr(buf_.get(), '\0', cap_) != nullptr);
  }

 private:
  std::size_t cap_;
  std::unique_ptr<char[]> buf_;
};

// The feature buffer of a collecting fingerprint, grown the way src/pg/options.c grows it:
// capacity_for(), feed_limit(), set_buffer() with a new, larger allocation holding the
// features so far, and the old one freed at once (so that AddressSanitizer catches a use of
// it). Feeds in chunks of at most max_chunk bytes.
class FeatureBuffer {
 public:
  explicit FeatureBuffer(simhash_text_state* state) : state_(state) {
    if (simhash_text_feed_limit(state_) != SIZE_MAX) grow(simhash_text_capacity_for(state_, 0));
  }

  bool collecting() const { return simhash_text_feed_limit(state_) != SIZE_MAX; }

  void grow(std::size_t need) {
    if (need <= cap_) return;
    std::size_t cap = std::max(need, 2 * cap_);
    std::unique_ptr<std::uint64_t[]> next(new std::uint64_t[cap]);
    const std::size_t size = simhash_text_size(state_);
    FUZZ_CHECK(size <= cap_);
    if (size) std::memcpy(next.get(), data_.get(), size * sizeof(std::uint64_t));
    char err[256];
    FUZZ_CHECK(simhash_text_set_buffer(state_, next.get(), cap, err, sizeof err) == SIMHASH_OK);
    data_ = std::move(next);
    cap_ = cap;
  }

  // Room for `features` more features (simhash_text_reserve in the glue).
  void reserve(std::size_t features) { grow(simhash_text_capacity_for(state_, 0) + features); }

  // Feeds text in chunks of 1..max_chunk bytes, growing the buffer whenever the core's
  // feed limit is below the next chunk (the glue grows below 1024 bytes; here anywhere).
  void feed(std::string_view text, Rng& rng, std::size_t max_chunk) {
    char err[256];
    for (std::string_view chunk : chunks(text, rng, max_chunk)) {
      while (!chunk.empty()) {
        std::size_t n = chunk.size();
        if (collecting()) {
          if (simhash_text_feed_limit(state_) < n) grow(simhash_text_capacity_for(state_, n));
          n = std::min(n, simhash_text_feed_limit(state_));
          FUZZ_CHECK(n > 0);
        }
        FUZZ_CHECK(simhash_text_feed(state_, chunk.data(), n, err, sizeof err) == SIMHASH_OK);
        chunk.remove_prefix(n);
      }
    }
  }

  std::uint64_t* data() noexcept { return data_.get(); }
  std::size_t capacity() const noexcept { return cap_; }

 private:
  simhash_text_state* state_;
  std::unique_ptr<std::uint64_t[]> data_;
  std::size_t cap_ = 0;
};

// --- The reference --------------------------------------------------------------------

// The characters of a token, as the 'char' tokenizer splits it (src/core/char_splitter.hpp,
// restated): each code point starts a character unless it is a combining mark, which joins
// the character before it (a token starting with marks starts with a character of marks
// only). Bytes that are not a complete sequence are characters of one byte each (tokens
// from simhash_text_token() may be any bytes).
inline std::vector<std::string> characters(std::string_view token) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < token.size()) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    std::size_t n = 1;
    bool mark = false;
    if (c >= 0x80) {
      const std::size_t want = c >= 0xC2 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3
                             : c >= 0xF0 && c < 0xF5 ? 4 : 0;
      if (want != 0 && i + want <= token.size()) {
        n = want;
        // As utf8::decode() reads a sequence (continuation bytes taken on trust): what the
        // tokenizer emits is always valid, so only tokens given as they are reach here
        // otherwise, and for them only the grouping of bytes matters.
        char32_t cp = c & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
        for (std::size_t k = 1; k < n; ++k)
          cp = (cp << 6) | (static_cast<unsigned char>(token[i + k]) & 0x3F);
        const bool bad = (n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
                         (n == 4 && (cp < 0x10000 || cp > 0x10FFFF));
        mark = !bad && unicode::lookup(cp).cls == unicode::CharClass::Mark;
      }
    }
    if (mark && !out.empty()) {
      out.back().append(token.substr(i, n));
    } else {
      out.emplace_back(token.substr(i, n));
    }
    i += n;
  }
  return out;
}

// The units the shingles are made of: the tokens themselves, or with `chars` their
// characters one after another.
inline std::vector<std::string> units(const std::vector<std::string>& tokens, bool chars) {
  if (!chars) return tokens;
  std::vector<std::string> out;
  for (const std::string& t : tokens) {
    for (std::string& c : characters(t)) out.push_back(std::move(c));
  }
  return out;
}

// The weighted fingerprint of a document's features (one per occurrence) from its
// definition: every distinct feature once with its integer weight; 64 signed counters
// (128-bit: no overflow to worry about); a counter of exactly 0 takes the bit of mix64 of
// the wrapping sum of the features, each counted as often as the weighting sees it.
// Idf reads df (feature -> document frequency, absent: 0) and docs.
inline std::optional<std::uint64_t> weighted_reference(
    const std::vector<std::uint64_t>& features, Weighting w,
    const std::map<std::uint64_t, std::uint64_t>* df = nullptr, std::uint64_t docs = 0) {
  if (features.empty()) return std::nullopt;
  std::map<std::uint64_t, std::uint64_t> count;
  for (std::uint64_t f : features) ++count[f];
  __int128 v[64] = {};
  std::uint64_t ties = 0;
  for (const auto& [f, c] : count) {
    std::uint64_t idf = 0;
    if (w == Weighting::Idf) {
      const auto it = df->find(f);
      idf = idf_q20(it == df->end() ? 0 : it->second, docs);
    }
    const std::uint64_t weight = feature_weight(w, c, idf);
    for (int i = 0; i < 64; ++i) v[i] += ((f >> i) & 1) ? __int128(weight) : -__int128(weight);
    ties += f * (w == Weighting::Tf || w == Weighting::Idf ? c : 1);
  }
  const std::uint64_t t = reference::mix64(ties);
  std::uint64_t fp = 0;
  for (int i = 0; i < 64; ++i) {
    if (v[i] > 0 || (v[i] == 0 && ((t >> i) & 1))) fp |= std::uint64_t{1} << i;
  }
  return fp;
}

}  // namespace simhash::fuzz
