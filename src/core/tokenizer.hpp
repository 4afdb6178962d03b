// Text -> tokens. A streaming, locale-independent tokenizer over UTF-8:
//
//  * every code point is normalized on its own (compatibility decomposition plus full case
//    folding, fixed to one Unicode version; see unicode.hpp), so "Ｆｉｌｅ", "ﬁle" and "FILE"
//    give the same token "file", and precomposed and combining accents agree;
//  * a token in space-delimited scripts is a maximal run of letters and digits with their
//    combining marks; everything else (white space, punctuation, math and currency signs,
//    controls, invalid UTF-8) separates tokens and is dropped; default-ignorable code points
//    (soft hyphen, zero-width joiner, variation selectors) are dropped without separating;
//  * in scripts written without spaces (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar,
//    ...) and for symbols such as emoji, each character with its combining marks is a unit;
//    with `cjk_bigrams` every two neighbouring units of one run form a token (a run of one
//    unit is a token by itself), otherwise every unit is a token;
//  * a token never exceeds kMaxTokenBytes bytes: a longer word is cut into pieces, and a
//    unit stops taking combining marks at kMaxUnitBytes.
//
// Feeding the text in chunks of any size, cut anywhere (even inside a UTF-8 sequence), gives
// exactly the tokens of feeding it whole. The object is trivially copyable and never
// allocates, so it can live in memory the caller owns.
#pragma once
#include "core/no_postgres.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/unicode.hpp"
#include "core/utf8.hpp"

namespace simhash {

inline constexpr std::size_t kMaxTokenBytes = 128;
inline constexpr std::size_t kMaxUnitBytes = 64;

struct TokenizerOptions {
  bool cjk_bigrams = true;
};

namespace detail {

template <std::size_t Cap>
struct TokenBuffer {
  // Cap bytes of token plus room for one 16-byte vector store past the end of a token.
  unsigned char bytes[Cap + 16];
  std::uint16_t len;
  std::uint8_t last_ccc;  // combining class of the last code point appended
  bool reorder;           // marks were appended out of canonical order

  void clear() noexcept {
    len = 0;
    last_ccc = 0;
    reorder = false;
  }
  bool fits(unsigned n) const noexcept { return len + n <= Cap; }
  void append(const unsigned char* s, unsigned n, std::uint8_t ccc) noexcept {
    std::memcpy(bytes + len, s, n);
    len = static_cast<std::uint16_t>(len + n);
    if (ccc != 0 && last_ccc > ccc) reorder = true;
    last_ccc = ccc;
  }
};

// Puts every run of combining marks (non-zero combining class) of a UTF-8 buffer into
// canonical order (stable sort by combining class), in place. The length does not change.
void canonical_reorder(unsigned char* bytes, std::size_t len) noexcept;

// Stores the 16 bytes at `in`, ASCII upper case letters lowered, at `out`, and returns how
// many leading bytes are ASCII letters or digits (0..16). Reads and writes exactly 16 bytes.
inline unsigned ascii_word_prefix16(const unsigned char* in, unsigned char* out) noexcept {
#if defined(__SSE2__)
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
  // Signed compares: bytes >= 0x80 are negative and fall outside every range.
  const __m128i upper = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('A' - 1)),
                                      _mm_cmplt_epi8(v, _mm_set1_epi8('Z' + 1)));
  const __m128i lower = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('a' - 1)),
                                      _mm_cmplt_epi8(v, _mm_set1_epi8('z' + 1)));
  const __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
                                      _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
  const unsigned word = static_cast<unsigned>(
      _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(upper, lower), digit)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                   _mm_add_epi8(v, _mm_and_si128(upper, _mm_set1_epi8(0x20))));
  return static_cast<unsigned>(__builtin_ctz(~word | 0x10000U));
#else
  unsigned n = 16;
  for (unsigned i = 0; i < 16; ++i) {
    const unsigned char c = in[i];
    const bool upper = c >= 'A' && c <= 'Z';
    const bool word = upper || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!word && n == 16) n = i;
    out[i] = static_cast<unsigned char>(upper ? c + 32 : c);
  }
  return n;
#endif
}

// Class and lower case of each ASCII byte, consistent with unicode::lookup.
struct AsciiTable {
  unicode::CharClass cls[128];
  unsigned char lower[128];
};
constexpr AsciiTable make_ascii_table() {
  AsciiTable t{};
  for (unsigned c = 0; c < 128; ++c) {
    const bool upper = c >= 'A' && c <= 'Z';
    const bool word = upper || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    t.cls[c] = word ? unicode::CharClass::Word : unicode::CharClass::Separator;
    t.lower[c] = static_cast<unsigned char>(upper ? c + 32 : c);
  }
  return t;
}
inline constexpr AsciiTable kAscii = make_ascii_table();

}  // namespace detail

// Sink must provide `void token(const unsigned char* bytes, std::size_t len)`.
template <class Sink>
class Tokenizer {
 public:
  explicit Tokenizer(TokenizerOptions options = {}) noexcept : bigrams_(options.cjk_bigrams) {
    word_.clear();
    unit_.clear();
    prev_unit_.clear();
  }

  void feed(const char* data, std::size_t size, Sink& sink) noexcept {
    const auto* p = reinterpret_cast<const unsigned char*>(data);
    const unsigned char* const end = p + size;
    if (pending_len_ != 0) p = complete_pending(p, end, sink);
    while (p < end) {
      unsigned char c = *p;
      if (c < 0x80) {
        if (detail::kAscii.cls[c] != unicode::CharClass::Word) {
          separator(sink);
          ++p;
          continue;
        }
        // Hot path: a run of ASCII letters and digits, copied in lower case, 16 bytes at a
        // time while a whole vector is left, then byte by byte (which also does the cut at
        // kMaxTokenBytes).
        if (word_.len == 0) end_run(sink);
        unsigned len = word_.len;
        while (end - p >= 16) {
          const unsigned n = detail::ascii_word_prefix16(p, word_.bytes + len);
          if (len + n > kMaxTokenBytes) break;
          len += n;
          p += n;
          if (n < 16) break;
        }
        if (p == end || *p >= 0x80 || detail::kAscii.cls[*p] != unicode::CharClass::Word) {
          word_.len = static_cast<std::uint16_t>(len);
          word_.last_ccc = 0;
          continue;
        }
        c = *p;
        do {
          if (len == kMaxTokenBytes) {
            word_.len = static_cast<std::uint16_t>(len);
            end_word(sink);
            len = 0;
          }
          word_.bytes[len++] = detail::kAscii.lower[c];
          if (++p == end) break;
          c = *p;
        } while (c < 0x80 && detail::kAscii.cls[c] == unicode::CharClass::Word);
        word_.len = static_cast<std::uint16_t>(len);
        word_.last_ccc = 0;
        continue;
      }
      const unsigned need = utf8::sequence_length(c);
      if (need == 0) {
        separator(sink);
        ++p;
        continue;
      }
      unsigned have = 1;
      while (have < need && p + have < end && utf8::is_continuation(p[have])) ++have;
      if (have < need) {
        if (p + have == end) {  // the sequence may go on in the next chunk
          std::memcpy(pending_, p, have);
          pending_len_ = static_cast<std::uint8_t>(have);
          return;
        }
        separator(sink);  // a lead byte not followed by enough continuation bytes
        ++p;
        continue;
      }
      code_point(utf8::decode(p, need), sink);
      p += need;
    }
  }

  // Ends the text: emits the last token. The tokenizer can then be reused for a new text.
  void finish(Sink& sink) noexcept {
    if (pending_len_ != 0) {  // truncated sequence at the very end
      pending_len_ = 0;
      separator(sink);
    }
    separator(sink);
  }

 private:
  // Continues a UTF-8 sequence cut by the previous chunk's end.
  const unsigned char* complete_pending(const unsigned char* p, const unsigned char* end,
                                        Sink& sink) noexcept {
    const unsigned need = utf8::sequence_length(pending_[0]);
    while (pending_len_ < need && p < end && utf8::is_continuation(*p)) pending_[pending_len_++] = *p++;
    if (pending_len_ < need) {
      if (p == end) return p;  // still incomplete: wait for more
      pending_len_ = 0;        // broken sequence; *p starts afresh
      separator(sink);
      return p;
    }
    pending_len_ = 0;
    code_point(utf8::decode(pending_, need), sink);
    return p;
  }

  void code_point(char32_t cp, Sink& sink) noexcept {
    if (cp > 0x10FFFF) {
      separator(sink);
      return;
    }
    const unicode::CodePointInfo info = unicode::lookup(cp);
    if (info.cls == unicode::CharClass::Ignorable) return;
    if (info.map_len == 0) {
      classified(cp, info.cls, info.ccc, sink);
      return;
    }
    for (unsigned i = 0; i < info.map_len; ++i) {
      const unicode::CodePointInfo out = unicode::lookup(info.map[i]);
      classified(info.map[i], out.cls, out.ccc, sink);
    }
  }

  void classified(char32_t cp, unicode::CharClass cls, std::uint8_t ccc, Sink& sink) noexcept {
    unsigned char enc[4];
    switch (cls) {
      case unicode::CharClass::Word: {
        end_run(sink);
        const unsigned n = utf8::encode(cp, enc);
        if (!word_.fits(n)) end_word(sink);
        word_.append(enc, n, ccc);
        break;
      }
      case unicode::CharClass::Unspaced: {
        end_word(sink);
        complete_unit(sink);
        unit_.append(enc, utf8::encode(cp, enc), ccc);
        break;
      }
      case unicode::CharClass::Mark: {
        const unsigned n = utf8::encode(cp, enc);
        if (word_.len != 0) {
          if (!word_.fits(n)) end_word(sink);
          word_.append(enc, n, ccc);
        } else if (unit_.len != 0 && unit_.fits(n)) {
          unit_.append(enc, n, ccc);
        }  // a mark with nothing to attach to is dropped
        break;
      }
      case unicode::CharClass::Ignorable:
        break;
      case unicode::CharClass::Separator:
        separator(sink);
        break;
    }
  }

  void separator(Sink& sink) noexcept {
    end_word(sink);
    if (unit_.len != 0 || run_units_ != 0) end_run(sink);
  }

  void end_word(Sink& sink) noexcept {
    if (word_.len == 0) return;
    if (word_.reorder) detail::canonical_reorder(word_.bytes, word_.len);
    sink.token(word_.bytes, word_.len);
    word_.clear();
  }

  // Closes the open unit of an unspaced run.
  void complete_unit(Sink& sink) noexcept {
    if (unit_.len == 0) return;
    if (unit_.reorder) detail::canonical_reorder(unit_.bytes, unit_.len);
    if (!bigrams_) {
      sink.token(unit_.bytes, unit_.len);
    } else {
      if (run_units_ != 0) {
        unsigned char pair[2 * kMaxUnitBytes];
        std::memcpy(pair, prev_unit_.bytes, prev_unit_.len);
        std::memcpy(pair + prev_unit_.len, unit_.bytes, unit_.len);
        sink.token(pair, std::size_t{prev_unit_.len} + unit_.len);
      }
      prev_unit_ = unit_;
    }
    ++run_units_;
    unit_.clear();
  }

  // Ends an unspaced run; a run of a single unit is a token by itself.
  void end_run(Sink& sink) noexcept {
    complete_unit(sink);
    if (bigrams_ && run_units_ == 1) sink.token(prev_unit_.bytes, prev_unit_.len);
    run_units_ = 0;
  }

  detail::TokenBuffer<kMaxTokenBytes> word_;
  detail::TokenBuffer<kMaxUnitBytes> unit_;
  detail::TokenBuffer<kMaxUnitBytes> prev_unit_;
  std::uint64_t run_units_ = 0;
  unsigned char pending_[4] = {};
  std::uint8_t pending_len_ = 0;
  bool bigrams_;
};

}  // namespace simhash
