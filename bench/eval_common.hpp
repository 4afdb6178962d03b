// Helpers shared by the evaluation programs (eval_defaults.cpp, eval_natural.cpp): reading
// the corpus, decoding UTF-8 without the core's normalization (for the reference labels),
// and command-line integers. Each program defines usage_error().
#pragma once
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace eval {

// Prints the message and the program's usage to stderr, exits with status 2.
[[noreturn]] void usage_error(const std::string& msg);

// The code point at s[i] and its length in bytes; an invalid byte is U+FFFD of length 1.
inline char32_t next_code_point(std::string_view s, std::size_t i, unsigned& len) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
  const std::size_t left = s.size() - i;
  const unsigned need = simhash::utf8::sequence_length(p[0]);
  len = 1;
  if (need == 1) return p[0];
  if (need == 0 || need > left) return 0xFFFD;
  for (unsigned k = 1; k < need; ++k) {
    if (!simhash::utf8::is_continuation(p[k])) return 0xFFFD;
  }
  const char32_t cp = simhash::utf8::decode(p, need);
  if (cp > 0x10FFFF) return 0xFFFD;
  len = need;
  return cp;
}

// Unicode White_Space.
inline bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// The whole file (empty when it cannot be read).
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// An integer option in [lo, hi]; usage_error otherwise.
inline std::uint64_t parse_uint(const std::string& opt, const std::string& s, std::uint64_t lo,
                         std::uint64_t hi) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || s[0] == '-' || *end != '\0' || errno != 0 || v < lo || v > hi) {
    usage_error(opt + " needs an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                "], got '" + s + "'");
  }
  return v;
}

}  // namespace eval
