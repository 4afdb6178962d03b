// The distinct rows of a bulk load, by what the dedupe trigger knows a row by: its
// fingerprint, or with a similarity threshold a 128-bit digest of its text (XXH3-128 with a
// seed the caller keeps secret, so that no text can be made to collide with another). The
// load's memo (src/pg/dedupe_memo.c) searches the table once for each distinct id, then
// answers the rows whose id found nothing there.
//
//   add() each row -> settle(): the distinct ids, each with its first row, in the order of
//   those rows (the caller searches for each, set_near() the ones it found) ->
//   keep_clean(): only the others stay, sorted -> has() for each row written.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/no_postgres.hpp"

namespace simhash {

class LoadIds {
 public:
  // Room for `capacity` rows, taken at once: bytes_for(capacity).
  LoadIds(std::size_t capacity, std::uint64_t seed);
  static std::size_t bytes_for(std::size_t rows) noexcept;

  // The load's row number `row`: its fingerprint fp, or (text not null) its text[0..len).
  // std::length_error past the capacity.
  void add(std::uint64_t row, std::uint64_t fp, const char* text, std::size_t len);

  void settle() noexcept;
  std::size_t size() const noexcept { return entries_.size(); }
  std::uint64_t row(std::size_t i) const noexcept { return entries_[i].row; }
  // The fingerprint of the i-th id (of an id of a fingerprint).
  std::uint64_t fingerprint(std::size_t i) const noexcept { return entries_[i].low; }
  void set_near(std::size_t i) noexcept { entries_[i].near = true; }
  // Drops the ids set near; how many they were.
  std::size_t keep_clean() noexcept;

  // Whether a row of this fingerprint or text is among the ids kept.
  bool has(std::uint64_t fp, const char* text, std::size_t len) const noexcept;

 private:
  struct Entry {
    std::uint64_t high;
    std::uint64_t low;
    std::uint64_t row;
    bool near;
  };
  Entry id_of(std::uint64_t fp, const char* text, std::size_t len) const noexcept;
  static bool id_less(const Entry& a, const Entry& b) noexcept;

  std::size_t capacity_;
  std::uint64_t seed_;
  std::vector<Entry> entries_;
};

}  // namespace simhash
