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

}  // namespace

CodePointInfo lookup(char32_t cp) noexcept {
  if (cp > 0x10FFFF) return {CharClass::Separator, 0, 0, nullptr};
  const std::uint16_t block = kStage1[cp >> kBlockShift];
  const Record& r =
      kRecords[kStage2[(std::size_t{block} << kBlockShift) | (cp & ((1U << kBlockShift) - 1))]];
  return {static_cast<CharClass>(r.cls), r.ccc, r.map_len,
          r.map_len == 0 ? nullptr : kPool + r.map_offset};
}

}  // namespace simhash::unicode
