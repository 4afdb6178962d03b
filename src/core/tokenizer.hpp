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
//
// How it is fast: the input is classified 64 bytes at a time into two bit masks (ASCII
// letter or digit; byte >= 0x80), and runs of "maybe token" bytes are found with bit
// tricks. A run of ASCII letters and digits between ASCII separators is a complete token
// (or several, cut at kMaxTokenBytes) and goes to the sink at once, without a byte loop;
// everything else (runs with non-ASCII bytes, runs that touch the end of a chunk) goes
// through the general per-code-point path, which is also where a chunk starts when the
// previous one ended inside a token. After an ASCII separator the general path's state is
// always empty, so the two paths hand over only there.
//
// A Sink may also provide `void ascii_token(const unsigned char* raw, std::size_t len)`:
// then ASCII words come as `len` (<= kMaxTokenBytes) letters and digits straight out of the
// input, not yet lower-cased (the token is each byte OR 0x20), so the sink can hash them
// without a copy. Sinks without it get every token through `token()`, lower-cased. A Sink
// with ascii_token may also provide `void ascii_block(const unsigned char* base,
// std::uint64_t starts, std::uint64_t ends)`: the ASCII words of a whole 64-byte block of
// the input at base (all its bytes < 0x80), in one call; bit i of starts / ends is set when
// a word starts at base + i / ends just before base + i, and the i-th start pairs with the
// i-th end (every word is whole, 1..63 bytes, inside the block). And a Sink may provide
// `void unit_tokens(const unsigned char* bytes, std::size_t n)`: n tokens of 3 bytes each,
// one after the other at bytes (characters of unspaced scripts), in one call.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "core/no_postgres.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/unicode.hpp"
#include "core/utf8.hpp"

#if defined(__GNUC__)
#define SIMHASH_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define SIMHASH_ALWAYS_INLINE inline
#endif

namespace simhash {

inline constexpr std::size_t kMaxTokenBytes = 128;
inline constexpr std::size_t kMaxUnitBytes = 64;

struct TokenizerOptions {
  bool cjk_bigrams = false;  // as Options::cjk_bigrams: the default fingerprint has none
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
  const unsigned word =
      static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(upper, lower), digit)));
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

// Classifies 64 bytes: bit i of *word is set when p[i] is an ASCII letter or digit, bit i of
// *high when p[i] >= 0x80 (part of a multi-byte sequence, or invalid). Reads exactly 64 bytes.
SIMHASH_ALWAYS_INLINE void classify64(const unsigned char* p, std::uint64_t* word,
                                      std::uint64_t* high) noexcept {
#if defined(__SSE2__)
  std::uint64_t w = 0, h = 0;
  for (unsigned k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    // Signed compares after an offset: 'a'..'z' (after OR 0x20) and '0'..'9' land on
    // -128..-103 and -128..-119; every other byte, >= 0x80 included, lands above.
    const __m128i alpha =
        _mm_cmplt_epi8(_mm_add_epi8(_mm_or_si128(v, _mm_set1_epi8(0x20)), _mm_set1_epi8(0x1F)),
                       _mm_set1_epi8(-102));
    const __m128i digit = _mm_cmplt_epi8(_mm_add_epi8(v, _mm_set1_epi8(0x50)), _mm_set1_epi8(-118));
    w |= std::uint64_t{static_cast<std::uint16_t>(_mm_movemask_epi8(_mm_or_si128(alpha, digit)))}
         << (16 * k);
    h |= std::uint64_t{static_cast<std::uint16_t>(_mm_movemask_epi8(v))} << (16 * k);
  }
  *word = w;
  *high = h;
#else
  std::uint64_t w = 0, h = 0;
  for (unsigned i = 0; i < 64; ++i) {
    const unsigned char c = p[i];
    if (c >= 0x80) {
      h |= std::uint64_t{1} << i;
    } else if (kAscii.cls[c] == unicode::CharClass::Word) {
      w |= std::uint64_t{1} << i;
    }
  }
  *word = w;
  *high = h;
#endif
}

// Whether Sink has the optional ascii_token(raw, len).
template <class Sink, class = void>
struct has_ascii_token : std::false_type {};
template <class Sink>
struct has_ascii_token<Sink, std::void_t<decltype(std::declval<Sink&>().ascii_token(
                                 std::declval<const unsigned char*>(), std::size_t{}))>>
    : std::true_type {};

// Whether Sink has the optional unit_tokens(bytes, n).
template <class Sink, class = void>
struct has_unit_tokens : std::false_type {};
template <class Sink>
struct has_unit_tokens<Sink, std::void_t<decltype(std::declval<Sink&>().unit_tokens(
                                 std::declval<const unsigned char*>(), std::size_t{}))>>
    : std::true_type {};

// Whether Sink has the optional ascii_block(base, starts, ends).
template <class Sink, class = void>
struct has_ascii_block : std::false_type {};
template <class Sink>
struct has_ascii_block<
    Sink, std::void_t<decltype(std::declval<Sink&>().ascii_block(
              std::declval<const unsigned char*>(), std::uint64_t{}, std::uint64_t{}))>>
    : std::true_type {};

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
    if (!idle()) p = general_to_boundary(p, end, sink);
    if (p < end) scan(p, end, sink);
  }

  // The general path, one code point at a time, over [p, stop). stop is end, or an ASCII
  // separator byte before end (no UTF-8 sequence crosses it); bytes up to end may be read.
  void general(const unsigned char* p, const unsigned char* stop, const unsigned char* end,
               Sink& sink) noexcept {
    while (p < stop) {
      const unsigned char c = *p;
      if (c < 0x80) {
        if (detail::kAscii.cls[c] != unicode::CharClass::Word) {
          separator(sink);
          ++p;
        } else {
          p = ascii_word(p, end, sink);
        }
        continue;
      }
      if (c >= 0xC2 && c < 0xE0 && stop - p >= 2 && utf8::is_continuation(p[1]) &&
          append_letter2(p)) {
        p += 2;
        continue;
      }
      if (stop - p >= 3 && (c & 0xF0) == 0xE0) {
        const unsigned char* q = unspaced_run(p, stop, sink);
        if (q != p) {
          p = q;
          continue;
        }
      }
      p = code_point_at(p, end, sink);
      if (p == nullptr) return;  // a sequence cut by the chunk's end, kept in pending_
    }
  }

  // Hot path: a run of ASCII letters and digits starting at p (a word byte), copied in lower
  // case, 16 bytes at a time while a whole vector is left, then byte by byte (which also
  // does the cut at kMaxTokenBytes). Returns where the run ends.
  const unsigned char* ascii_word(const unsigned char* p, const unsigned char* end,
                                  Sink& sink) noexcept {
    if (word_.len == 0) end_run(sink);
    unsigned len = word_.len;
    while (end - p >= 16) {
      const unsigned n = detail::ascii_word_prefix16(p, word_.bytes + len);
      if (len + n > kMaxTokenBytes) break;
      len += n;
      p += n;
      if (n < 16) break;
    }
    if (p != end && *p < 0x80 && detail::kAscii.cls[*p] == unicode::CharClass::Word) {
      unsigned char c = *p;
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
    }
    word_.len = static_cast<std::uint16_t>(len);
    word_.last_ccc = 0;
    return p;
  }

  // A 2-byte letter (é, ß, ж...) at p inside or at the start of a word, with no unspaced
  // run open: its normalized bytes appended at once, as classified() would append them one
  // code point at a time (no cut needed: they fit). False when that does not apply.
  bool append_letter2(const unsigned char* p) noexcept {
    const unicode::WordAppend& a =
        unicode::kWordAppend2.of[((char32_t(p[0] & 0x1F) << 6) | (p[1] & 0x3F)) - 0x80];
    if (a.len == 0 || unit_.len != 0 || run_units_ != 0 || word_.len + a.len > kMaxTokenBytes) {
      return false;
    }
    std::memcpy(word_.bytes + word_.len, a.utf8, sizeof a.utf8);  // the buffer has room
    word_.len = static_cast<std::uint16_t>(word_.len + a.len);
    if (a.reorder) word_.reorder = true;
    word_.last_ccc = a.last_ccc;
    return true;
  }

  // One code point (or an invalid byte, a separator) at p; returns what follows it, or
  // nullptr when the chunk ends inside its sequence (kept in pending_ for the next chunk).
  const unsigned char* code_point_at(const unsigned char* p, const unsigned char* end,
                                     Sink& sink) noexcept {
    const unsigned need = utf8::sequence_length(*p);
    if (need == 0) {
      separator(sink);
      return p + 1;
    }
    unsigned have = 1;
    while (have < need && p + have < end && utf8::is_continuation(p[have])) ++have;
    if (have < need) {
      if (p + have == end) {  // the sequence may go on in the next chunk
        std::memcpy(pending_, p, have);
        pending_len_ = static_cast<std::uint8_t>(have);
        return nullptr;
      }
      separator(sink);  // a lead byte not followed by enough continuation bytes
      return p + 1;
    }
    code_point(utf8::decode(p, need), sink);
    return p + need;
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
  // True when no token, unit or run is open: the state after any ASCII separator.
  bool idle() const noexcept { return word_.len == 0 && unit_.len == 0 && run_units_ == 0; }

  // Runs the general path up to and including the first ASCII separator, after which the
  // state is idle. Returns where the scan can take over.
  const unsigned char* general_to_boundary(const unsigned char* p, const unsigned char* end,
                                           Sink& sink) noexcept {
    const unsigned char* q = p;
    while (q < end && (*q >= 0x80 || detail::kAscii.cls[*q] == unicode::CharClass::Word)) ++q;
    general(p, q, end, sink);
    if (q == end) return end;
    separator(sink);
    return q + 1;
  }

  // The block scan, from an idle state. A run is a maximal stretch of ASCII letters and
  // digits and bytes >= 0x80; ASCII separators delimit runs.
  void scan(const unsigned char* p, const unsigned char* end, Sink& sink) noexcept {
    // A run open at the end of the previous block: where it started, and whether it had a
    // byte >= 0x80 so far.
    const unsigned char* open = nullptr;
    bool open_high = false;
    for (const unsigned char* base = p; base < end; base += 64) {
      std::uint64_t word, high;
      if (end - base >= 64) {
        detail::classify64(base, &word, &high);
      } else {  // the tail: pad with spaces, which end a run like any separator
        unsigned char tail[64];
        const auto n = static_cast<std::size_t>(end - base);
        std::memcpy(tail, base, n);
        std::memset(tail + n, ' ', 64 - n);
        detail::classify64(tail, &word, &high);
      }
      const std::uint64_t run = word | high;
      const std::uint64_t prev = (run << 1) | (open != nullptr ? 1U : 0U);
      std::uint64_t starts = run & ~prev;  // first byte of each run
      std::uint64_t ends = ~run & prev;    // the byte after each run
      if (open != nullptr) {
        if (ends == 0) {  // the open run covers the whole block
          open_high = open_high || high != 0;
          continue;
        }
        const auto e = static_cast<unsigned>(__builtin_ctzll(ends));
        ends &= ends - 1;
        end_of_run(open, base + e, open_high || (high & ((std::uint64_t{1} << e) - 1)) != 0, end,
                   sink);
        open = nullptr;
      }
      // Runs that start and end in this block pair up in order. Blocks of pure ASCII (most
      // of them, in languages written in Latin script) take the short loop.
      if (high == 0) {
        if constexpr (detail::has_ascii_block<Sink>::value) {
          if (end - base >= 64) {  // every run that ends here is whole and inside the block
            const std::uint64_t paired = paired_starts(starts, ends);
            if (paired != 0) sink.ascii_block(base, paired, ends);
            starts &= ~paired;
            ends = 0;
          }
        }
        while (ends != 0) {
          const auto s = static_cast<unsigned>(__builtin_ctzll(starts));
          const auto e = static_cast<unsigned>(__builtin_ctzll(ends));
          starts &= starts - 1;
          ends &= ends - 1;
          if (base + e == end) {  // may go on in the next chunk
            general(base + s, end, end, sink);
          } else {
            ascii_run(base + s, e - s, sink);
          }
        }
      } else {
        while (ends != 0) {
          const auto s = static_cast<unsigned>(__builtin_ctzll(starts));
          const auto e = static_cast<unsigned>(__builtin_ctzll(ends));
          starts &= starts - 1;
          ends &= ends - 1;
          end_of_run(base + s, base + e, ((high >> s) & ((std::uint64_t{1} << (e - s)) - 1)) != 0,
                     end, sink);
        }
      }
      if (starts != 0) {  // a run goes on into the next block
        const auto s = static_cast<unsigned>(__builtin_ctzll(starts));
        open = base + s;
        open_high = (high >> s) != 0;
      }
    }
    if (open != nullptr) general(open, end, end, sink);  // it may go on in the next chunk
  }

  // The starts of a block that pair with its ends (all of them but the last start, when
  // that one is after the last end: its run goes on into the next block).
  static std::uint64_t paired_starts(std::uint64_t starts, std::uint64_t ends) noexcept {
    if (starts == 0) return 0;
    const std::uint64_t last_start = std::uint64_t{1} << (63 - __builtin_clzll(starts));
    // No end is where a start is: some end comes after the last start iff ends > last_start.
    return ends > last_start ? starts : starts & ~last_start;
  }

  // A run [s, e) found by the scan; e is an ASCII separator or the end of the chunk.
  void end_of_run(const unsigned char* s, const unsigned char* e, bool high,
                  const unsigned char* end, Sink& sink) noexcept {
    if (high || e == end) {
      general(s, e, end, sink);
      if (e != end) separator(sink);
      return;
    }
    ascii_run(s, static_cast<std::size_t>(e - s), sink);
  }

  // A run of len ASCII letters and digits between ASCII separators: one token, or several
  // when it is longer than kMaxTokenBytes.
  void ascii_run(const unsigned char* s, std::size_t len, Sink& sink) noexcept {
    while (len > kMaxTokenBytes) {
      ascii_word(s, kMaxTokenBytes, sink);
      s += kMaxTokenBytes;
      len -= kMaxTokenBytes;
    }
    ascii_word(s, len, sink);
  }

  // An ASCII word of 1..kMaxTokenBytes letters and digits, straight out of the input.
  void ascii_word(const unsigned char* raw, std::size_t len, Sink& sink) noexcept {
    if constexpr (detail::has_ascii_token<Sink>::value) {
      sink.ascii_token(raw, len);
    } else {
      // Letters and digits: OR 0x20 lowers the letters and keeps the digits.
      for (std::size_t i = 0; i < len; ++i)
        word_.bytes[i] = static_cast<unsigned char>(raw[i] | 0x20);
      sink.token(word_.bytes, len);
    }
  }

  // What the 3 bytes at p are, for the fast path of unspaced runs: kUnit for a simple
  // unspaced code point (unicode::simple_unspaced), kDecomposed for one that normalizes to
  // a simple unspaced code point and a mark (unicode::decomposed_unspaced, which *d then
  // points to), kBreak for a simple separator, kOther for anything else (other code points,
  // and bytes that are not a valid 3-byte sequence).
  enum Kind3 { kOther, kUnit, kDecomposed, kBreak };
  SIMHASH_ALWAYS_INLINE static Kind3 kind3(const unsigned char* p,
                                           const unicode::DecomposedUnit** d) noexcept {
    if ((p[0] & 0xF0) != 0xE0 || !utf8::is_continuation(p[1]) || !utf8::is_continuation(p[2])) {
      return kOther;
    }
    const char32_t cp =
        (char32_t(p[0] & 0x0F) << 12) | (char32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    // The tables are empty below U+0800 and on surrogates: overlong forms are kOther.
    if (unicode::simple_unspaced(cp)) return kUnit;
    if (unicode::simple_separator(cp)) return kBreak;
    if ((*d = unicode::decomposed_unspaced(cp)) != nullptr) return kDecomposed;
    return kOther;
  }

  // A unit of the fast path: its normalized UTF-8 (in the input, or in the table of
  // decomposed units) and the combining class of its last code point.
  struct FastUnit {
    const unsigned char* bytes;
    unsigned len;
    std::uint8_t last_ccc;
  };

  // Emits the bigram of two units: straight from the input when they are adjacent there.
  void emit_pair(const FastUnit& a, const FastUnit& b, Sink& sink) noexcept {
    if (a.bytes + a.len == b.bytes) {  // adjacent in memory: that range is the pair
      sink.token(a.bytes, a.len + b.len);
      return;
    }
    unsigned char pair[12];
    std::memcpy(pair, a.bytes, a.len);
    std::memcpy(pair + a.len, b.bytes, b.len);
    sink.token(pair, a.len + b.len);
  }

  // The fast path over a stretch of 3-byte code points that are simple unspaced units,
  // decomposed units or simple separators, from p to the first other one (or stop). Gives
  // exactly the tokens and the state of the general path (classified() for each), but while
  // a run's units are known here, they are described by FastUnits and go to the sink
  // straight from where their bytes are: a unit is complete once the next begins, and with
  // bigrams two neighbouring simple units are adjacent in the input. Returns where it
  // stopped (p itself when p is not such a code point).
  const unsigned char* unspaced_run(const unsigned char* p, const unsigned char* stop,
                                    Sink& sink) noexcept {
    const unicode::DecomposedUnit* d = nullptr;
    Kind3 kind = kind3(p, &d);
    if (kind == kOther) return p;
    end_word(sink);
    // The general way, until a simple unit starts a run or follows a simple unit that the
    // general way left open in unit_ (held).
    const unsigned char* held = nullptr;
    while (!(kind == kUnit && (held != nullptr || (unit_.len == 0 && run_units_ == 0)))) {
      if (kind == kBreak) {
        separator(sink);
        held = nullptr;
      } else if (kind == kUnit) {
        complete_unit(sink);
        unit_.append(p, 3, 0);
        held = p;
      } else {
        code_point(utf8::decode(p, 3), sink);
        held = nullptr;
      }
      p += 3;
      if (stop - p < 3) return p;
      kind = kind3(p, &d);
      if (kind == kOther) return p;
    }
    // Fast: cur is the open unit, prev the unit completed before it in this run (bytes null
    // at the start of a run, when run_units_ is 0 and nothing pairs with cur).
    FastUnit prev{nullptr, 0, 0};
    if (held != nullptr) {  // unit_ holds the input unit `held`: complete it the general way
      complete_unit(sink);
      prev = FastUnit{held, 3, 0};
    }
    FastUnit cur{p, 3, 0};
    p += 3;
    while (stop - p >= 3) {
      kind = kind3(p, &d);
      if (kind == kOther) break;
      // cur is complete
      if (!bigrams_) {
        if (kind == kUnit && cur.len == 3) {  // cur is the input's 3 bytes before p
          p = unit_stretch(p, stop, prev, cur, sink);
          continue;
        }
        sink.token(cur.bytes, cur.len);
      } else if (prev.bytes != nullptr) {
        emit_pair(prev, cur, sink);
      }
      ++run_units_;
      if (kind != kBreak) {
        prev = cur;
        cur = kind == kUnit ? FastUnit{p, 3, 0} : FastUnit{d->utf8, 6, d->mark_ccc};
        p += 3;
        continue;
      }
      // a separator ends the run; a run of a single unit is a token by itself
      if (bigrams_ && run_units_ == 1) sink.token(cur.bytes, cur.len);
      run_units_ = 0;
      p += 3;
      // skip further separators, up to the next unit
      while (stop - p >= 3 && (kind = kind3(p, &d)) == kBreak) p += 3;
      if (stop - p < 3 || kind == kOther) return p;  // the state is idle
      prev = FastUnit{nullptr, 0, 0};
      cur = kind == kUnit ? FastUnit{p, 3, 0} : FastUnit{d->utf8, 6, d->mark_ccc};
      p += 3;
    }
    // Leave cur open in unit_ (and prev in prev_unit_), as the general path would: a
    // decomposed unit as its base and then its mark.
    unit_.clear();
    unit_.append(cur.bytes, 3, 0);
    if (cur.len == 6) unit_.append(cur.bytes + 3, 3, cur.last_ccc);
    if (bigrams_ && prev.bytes != nullptr) {
      prev_unit_.clear();
      prev_unit_.append(prev.bytes, prev.len, 0);
    }
    return p;
  }

  // Without bigrams: cur, a simple unit of the input just before p, is complete, and so is
  // every simple unit after it but the last of the stretch of them that starts at p. They
  // all go to the sink at once; the last becomes cur (and the one before it prev). Returns
  // where the stretch ends.
  const unsigned char* unit_stretch(const unsigned char* p, const unsigned char* stop,
                                    FastUnit& prev, FastUnit& cur, Sink& sink) noexcept {
    const unicode::DecomposedUnit* d = nullptr;
    const unsigned char* q = p + 3;
    while (stop - q >= 3 && kind3(q, &d) == kUnit) q += 3;
    const auto n = static_cast<std::size_t>(q - p) / 3;
    if constexpr (detail::has_unit_tokens<Sink>::value) {
      sink.unit_tokens(cur.bytes, n);
    } else {
      for (std::size_t i = 0; i < n; ++i) sink.token(cur.bytes + 3 * i, 3);
    }
    run_units_ += n;
    prev = FastUnit{q - 6, 3, 0};
    cur = FastUnit{q - 3, 3, 0};
    return q;
  }

  // Continues a UTF-8 sequence cut by the previous chunk's end.
  const unsigned char* complete_pending(const unsigned char* p, const unsigned char* end,
                                        Sink& sink) noexcept {
    const unsigned need = utf8::sequence_length(pending_[0]);
    while (pending_len_ < need && p < end && utf8::is_continuation(*p))
      pending_[pending_len_++] = *p++;
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
