#include "core/unicode.hpp"

#include <cstddef>

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

// constexpr: evaluated by the compiler (an error if it cannot be), so no code runs at load.
constexpr Bitmap64K kSimpleUnspacedBitmap = make_bitmap3(is_simple_unspaced);
constexpr Bitmap64K kSimpleSeparatorBitmap = make_bitmap3(is_simple_separator);

}  // namespace

const Bitmap64K kSimpleUnspaced = kSimpleUnspacedBitmap;
const Bitmap64K kSimpleSeparator = kSimpleSeparatorBitmap;

CodePointInfo lookup(char32_t cp) noexcept {
  if (cp > 0x10FFFF) return {CharClass::Separator, 0, 0, nullptr};
  const Record& r = record_of(cp);
  return {static_cast<CharClass>(r.cls), r.ccc, r.map_len,
          r.map_len == 0 ? nullptr : kPool + r.map_offset};
}

}  // namespace simhash::unicode
