// libFuzzer target: the tokenizer and the Unicode normalizer (src/core/tokenizer.hpp,
// unicode.hpp), with every tokenizer option.
//
// Input: byte 0 holds the options (bit 0: cjk_bigrams; bits 1-7: where the text is cut
// into chunks), the rest is the text (any bytes: valid and broken UTF-8 alike).
//
// Checks, aborting on the first violation:
//  - the tokens equal those of the deliberately simple reference tokenizer
//    (test/core/reference.hpp), which shares nothing with the fast paths but the frozen
//    Unicode tables;
//  - feeding the text in chunks cut anywhere (inside UTF-8 sequences too) gives the same
//    tokens as feeding it whole; so does a sink that takes ASCII words raw
//    (ascii_token(), as the fingerprint's sink does), once they are lower-cased;
//  - every token is non-empty, valid UTF-8 and at most kMaxTokenBytes long; raw ASCII
//    words are ASCII letters and digits only;
//  - a tokenizer is reusable after finish(): the same text again gives the same tokens;
//  - normalizing is idempotent: without bigrams, a token (not starting with a combining
//    mark, which only a long word cut in a run of marks does) tokenizes to itself.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/tokenizer.hpp"
#include "fuzz_util.hpp"

namespace {

using simhash::Tokenizer;
using simhash::TokenizerOptions;
using simhash::fuzz::Input;
using simhash::fuzz::Rng;

struct Collect {
  std::vector<std::string> tokens;
  void token(const unsigned char* bytes, std::size_t len) {
    FUZZ_CHECK(len > 0 && len <= simhash::kMaxTokenBytes);
    tokens.emplace_back(reinterpret_cast<const char*>(bytes), len);
  }
};

// A sink that also takes ASCII words straight out of the input, as FeatureSink does.
struct CollectRaw : Collect {
  void ascii_token(const unsigned char* raw, std::size_t len) {
    FUZZ_CHECK(len > 0 && len <= simhash::kMaxTokenBytes);
    std::string t(reinterpret_cast<const char*>(raw), len);
    for (char& c : t) {
      const bool word = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
      FUZZ_CHECK(word);
      c = static_cast<char>(c | 0x20);
    }
    tokens.push_back(std::move(t));
  }
};

template <class Sink>
std::vector<std::string> tokenize(const std::vector<std::string_view>& pieces, bool bigrams) {
  Sink sink;
  Tokenizer<Sink> t(TokenizerOptions{bigrams});
  for (std::string_view p : pieces) t.feed(p.data(), p.size(), sink);
  t.finish(sink);
  return sink.tokens;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  const std::uint8_t flags = in.byte();
  const bool bigrams = (flags & 1) != 0;
  const std::string_view text = in.rest();

  const std::vector<std::string> whole = tokenize<Collect>({text}, bigrams);
  FUZZ_CHECK(whole == simhash::reference::tokens(text, bigrams));
  for (const std::string& t : whole) FUZZ_CHECK(simhash::fuzz::valid_utf8(t));

  Rng rng(flags ^ (std::uint64_t{size} << 8));
  const std::size_t max_chunk = 1 + (flags >> 1) % 80;
  const std::vector<std::string_view> pieces = simhash::fuzz::chunks(text, rng, max_chunk);
  FUZZ_CHECK(tokenize<Collect>(pieces, bigrams) == whole);
  FUZZ_CHECK(tokenize<CollectRaw>(pieces, bigrams) == whole);
  FUZZ_CHECK(tokenize<CollectRaw>({text}, bigrams) == whole);

  {  // reuse after finish()
    Collect sink;
    Tokenizer<Collect> t(TokenizerOptions{bigrams});
    for (int round = 0; round < 2; ++round) {
      t.feed(text.data(), text.size(), sink);
      t.finish(sink);
    }
    std::vector<std::string> twice = whole;
    twice.insert(twice.end(), whole.begin(), whole.end());
    FUZZ_CHECK(sink.tokens == twice);
  }

  if (!bigrams) {
    for (const std::string& t : whole) {
      const char32_t first = simhash::reference::decode(t).front();
      if (simhash::unicode::lookup(first).cls == simhash::unicode::CharClass::Mark) continue;
      const std::vector<std::string> again = tokenize<Collect>({t}, false);
      FUZZ_CHECK(again.size() == 1 && again[0] == t);
    }
  }
  return 0;
}
