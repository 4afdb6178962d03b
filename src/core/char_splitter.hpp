// Tokens -> characters: the piece behind the `char` tokenizer.
//
// The tokenizer (tokenizer.hpp) already normalizes the text and keeps only letters, digits,
// unspaced-script characters and emoji, with their combining marks. Splitting each of its
// tokens into characters, and passing the characters on as tokens of their own, gives the
// stream of the text's normalized characters with white space and punctuation gone: the
// features of the classic character n-gram recipe (Python `simhash`: lower case, keep word
// characters, slide a window of n characters), with our Unicode 15.0 normalization instead
// of a locale's. Word boundaries disappear, so an n-gram may span two words.
#pragma once
#include <cstddef>

#include "core/no_postgres.hpp"
#include "core/unicode.hpp"
#include "core/utf8.hpp"

namespace simhash {

// Calls f(bytes, len) for every character of a token: a code point together with the
// combining marks (CharClass::Mark) that follow it. A token that starts with a mark (a long
// word cut inside a run of marks) starts with a character made of marks only. `bytes` must
// be valid UTF-8, as every token the tokenizer emits is.
template <class F>
void for_each_char(const unsigned char* bytes, std::size_t len, F&& f) {
  std::size_t start = 0;
  std::size_t i = 0;
  while (i < len) {
    const unsigned char c = bytes[i];
    if (c < 0x80) {  // ASCII: no marks, every byte is a character
      if (i > start) f(bytes + start, i - start);
      start = i;
      ++i;
      continue;
    }
    const unsigned k = utf8::sequence_length(c);
    const unsigned n = k == 0 || i + k > len ? 1 : k;  // defensive: never read past the end
    const bool mark =
        n == k && unicode::lookup(utf8::decode(bytes + i, n)).cls == unicode::CharClass::Mark;
    if (!mark && i > start) {
      f(bytes + start, i - start);
      start = i;
    }
    i += n;
  }
  if (len > start) f(bytes + start, len - start);
}

}  // namespace simhash
