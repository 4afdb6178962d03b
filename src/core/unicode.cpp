#include "core/unicode.hpp"

#include <cstddef>

#include "core/utf8.hpp"

namespace simhash::unicode {
namespace {

struct Record {
  std::uint8_t cls;
  std::uint8_t ccc;
  std::uint8_t map_len;
  std::uint16_t map_offset;
};

#include "core/unicode_data.inc"

constexpr const Record& record_of(char32_t cp) noexcept {
  const std::uint16_t block = kStage1[cp >> kBlockShift];
  return kRecords[kStage2[(std::size_t{block} << kBlockShift) | (cp & ((1U << kBlockShift) - 1))]];
}

constexpr bool is_simple_unspaced(char32_t cp) noexcept {
  const Record& r = record_of(cp);
  return static_cast<CharClass>(r.cls) == CharClass::Unspaced && r.map_len == 0 && r.ccc == 0;
}

constexpr bool is_simple_separator(char32_t cp) noexcept {
  const Record& r = record_of(cp);
  if (static_cast<CharClass>(r.cls) == CharClass::Ignorable) return false;
  if (r.map_len == 0) return static_cast<CharClass>(r.cls) == CharClass::Separator;
  for (unsigned i = 0; i < r.map_len; ++i) {
    if (static_cast<CharClass>(record_of(kPool[r.map_offset + i]).cls) != CharClass::Separator) {
      return false;
    }
  }
  return true;
}

template <class Predicate>
constexpr Bitmap64K make_bitmap3(Predicate predicate) noexcept {
  Bitmap64K b{};
  for (char32_t cp = 0x800; cp < 0x10000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    if (predicate(cp)) b.bits[cp >> 6] |= std::uint64_t{1} << (cp & 63);
  }
  return b;
}

constexpr bool three_bytes(char32_t cp) noexcept {
  return cp >= 0x800 && cp < 0x10000 && !(cp >= 0xD800 && cp <= 0xDFFF);
}

// cp maps to a simple unspaced code point and one Mark, both of 3-byte UTF-8.
constexpr bool is_decomposed_unspaced(char32_t cp) noexcept {
  const Record& r = record_of(cp);
  if (static_cast<CharClass>(r.cls) == CharClass::Ignorable || r.map_len != 2) return false;
  const char32_t base = kPool[r.map_offset], mark = kPool[r.map_offset + 1];
  return three_bytes(base) && is_simple_unspaced(base) && three_bytes(mark) &&
         static_cast<CharClass>(record_of(mark).cls) == CharClass::Mark;
}

constexpr DecomposedTable make_decomposed() noexcept {
  DecomposedTable t{};
  unsigned n = 0;
  for (char32_t word = 0; word < 1024; ++word) {
    t.rank[word] = static_cast<std::uint16_t>(n);
    for (char32_t cp = word * 64; cp < word * 64 + 64; ++cp) {
      if (!three_bytes(cp) || !is_decomposed_unspaced(cp)) continue;
      const Record& r = record_of(cp);
      // Too many for the table: the bit stays clear, so the code point takes the general
      // path (and the count check below fails the build).
      if (n == kMaxDecomposedUnits) return t;
      t.bits[word] |= std::uint64_t{1} << (cp & 63);
      utf8::encode(kPool[r.map_offset], t.units[n].utf8);
      utf8::encode(kPool[r.map_offset + 1], t.units[n].utf8 + 3);
      t.units[n].mark_ccc = record_of(kPool[r.map_offset + 1]).ccc;
      ++n;
    }
  }
  return t;
}

constexpr unsigned count_decomposed() noexcept {
  unsigned n = 0;
  for (char32_t cp = 0x800; cp < 0x10000; ++cp) n += three_bytes(cp) && is_decomposed_unspaced(cp);
  return n;
}
static_assert(count_decomposed() <= kMaxDecomposedUnits, "raise kMaxDecomposedUnits");

constexpr WordAppend word_append_of(char32_t cp) noexcept {
  WordAppend a{};
  const Record& r = record_of(cp);
  if (static_cast<CharClass>(r.cls) == CharClass::Ignorable) return a;
  char32_t seq[kMaxMapLen] = {};
  unsigned n = 0;
  if (r.map_len == 0) {
    seq[n++] = cp;
  } else {
    for (unsigned i = 0; i < r.map_len; ++i) seq[n++] = kPool[r.map_offset + i];
  }
  const Record& first = record_of(seq[0]);
  if (static_cast<CharClass>(first.cls) != CharClass::Word || first.ccc != 0) return a;
  unsigned char bytes[4 * kMaxMapLen] = {};
  unsigned len = 0;
  std::uint8_t last_ccc = 0;
  bool reorder = false;
  for (unsigned i = 0; i < n; ++i) {
    const Record& c = record_of(seq[i]);
    const auto cls = static_cast<CharClass>(c.cls);
    if (cls != CharClass::Word && cls != CharClass::Mark) return a;
    len += utf8::encode(seq[i], bytes + len);
    // as TokenBuffer::append
    if (c.ccc != 0 && last_ccc > c.ccc) reorder = true;
    last_ccc = c.ccc;
  }
  if (len > sizeof a.utf8) return a;
  a.len = static_cast<std::uint8_t>(len);
  a.last_ccc = last_ccc;
  a.reorder = reorder;
  for (unsigned i = 0; i < len; ++i) a.utf8[i] = bytes[i];
  return a;
}

constexpr WordAppendTable make_word_append2() noexcept {
  WordAppendTable t{};
  for (char32_t cp = 0x80; cp < 0x800; ++cp) t.of[cp - 0x80] = word_append_of(cp);
  return t;
}

// constexpr: evaluated by the compiler (an error if it cannot be), so no code runs at load.
constexpr Bitmap64K kSimpleUnspacedBitmap = make_bitmap3(is_simple_unspaced);
constexpr Bitmap64K kSimpleSeparatorBitmap = make_bitmap3(is_simple_separator);
constexpr DecomposedTable kDecomposedTable = make_decomposed();
constexpr WordAppendTable kWordAppend2Table = make_word_append2();

}  // namespace

const Bitmap64K kSimpleUnspaced = kSimpleUnspacedBitmap;
const Bitmap64K kSimpleSeparator = kSimpleSeparatorBitmap;
const DecomposedTable kDecomposedUnspaced = kDecomposedTable;
const WordAppendTable kWordAppend2 = kWordAppend2Table;

CodePointInfo lookup(char32_t cp) noexcept {
  if (cp > 0x10FFFF) return {CharClass::Separator, 0, 0, nullptr};
  const Record& r = record_of(cp);
  return {static_cast<CharClass>(r.cls), r.ccc, r.map_len,
          r.map_len == 0 ? nullptr : kPool + r.map_offset};
}

}  // namespace simhash::unicode
