// The stored form of a shingle set: the simhash_dedupe trigger's sets column
// ('sets=column'), each row's set stored so that a candidate is verified against it
// instead of its text being shingled again. Format 1, which never changes once stored: one
// byte 0x01, then the set's hashes (the ascending, distinct 64-bit shingle hashes
// simhash_jaccard compares), 8 bytes each, little-endian. A set of more than
// kStoredSetMaxShingles is not stored (NULL). A value that is not format 1 (another first
// byte or length, hashes not ascending and distinct) is not a stored set: the trigger
// verifies such a candidate against its text, as without the column.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/no_postgres.hpp"

namespace simhash {

inline constexpr unsigned char kStoredSetFormat = 1;
inline constexpr std::size_t kStoredSetMaxShingles = 8192;

// Bytes of the stored form of a set of n hashes; 0 when n is too large to store.
std::size_t stored_set_size(std::size_t n) noexcept;

// True when len bytes are the size of a stored set: the format byte, then whole 8-byte
// hashes, at most kStoredSetMaxShingles of them. (Checked before a value is read whole.)
bool stored_set_length_ok(std::size_t len) noexcept;

// Writes the stored form of set[0..n), ascending and distinct, n at most
// kStoredSetMaxShingles: stored_set_size(n) bytes into out.
void write_stored_set(const std::uint64_t* set, std::size_t n, unsigned char* out) noexcept;

// Reads the stored set bytes[0..len) into out (room for len / 8 hashes) and *n; false when
// the bytes are not a stored set (out then holds nothing of use).
bool read_stored_set(const unsigned char* bytes, std::size_t len, std::uint64_t* out,
                     std::size_t* n) noexcept;

}  // namespace simhash
