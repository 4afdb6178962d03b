// Helpers shared by the evaluation programs (eval_defaults.cpp, eval_natural.cpp,
// eval_symbols.cpp): reading the corpus and splitting it into paragraphs, decoding UTF-8
// without the core's normalization (for the reference labels), the command line (integers,
// CORPUS_DIR, the command for the report) and timing. Each program defines usage_error().
#pragma once
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "core/utf8.hpp"

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

// The whole file (std::runtime_error when it cannot be read).
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

// Prints "program: msg" and the program's usage line to stderr, exits with status 2 (the
// body of each program's usage_error).
[[noreturn]] inline void usage_exit(const char* program, const char* arguments,
                                    const std::string& msg) {
  std::fprintf(stderr, "%s: %s\nusage: %s %s\n", program, msg.c_str(), program, arguments);
  std::exit(2);
}

// Reads the command line: on_option(a, value) takes argument a when it is one of the
// program's options (value() reads the option's value; usage_error when there is none) and
// returns whether it did; any other argument is -h / --help, an unknown option or
// CORPUS_DIR (once). Returns CORPUS_DIR, checked to be a directory.
template <typename OnOption>
std::filesystem::path parse_command_line(int argc, char** argv, OnOption on_option) {
  std::filesystem::path corpus;
  bool have_corpus = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    if (on_option(a, value)) continue;
    if (a == "-h" || a == "--help") usage_error("help");
    if (!a.empty() && a[0] == '-') usage_error("unknown option " + a);
    if (have_corpus) usage_error("only one CORPUS_DIR, please");
    corpus = a;
    have_corpus = true;
  }
  if (!have_corpus) usage_error("CORPUS_DIR missing");
  if (!std::filesystem::is_directory(corpus)) usage_error(corpus.string() + " is not a directory");
  return corpus;
}

// The command as typed, for the report's "Run" section.
inline std::string command_line(int argc, char** argv) {
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  return command;
}

using Clock = std::chrono::steady_clock;
inline double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

inline bool is_blank(std::string_view line) {
  return line.find_first_not_of(" \t\r\f\v") == std::string_view::npos;
}

// Blocks of non-blank lines, each block's lines joined with one space.
inline std::vector<std::string> paragraphs(std::string_view text) {
  std::vector<std::string> out;
  std::string block;
  bool open = false;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(at, end - at);
    if (is_blank(line)) {
      if (open) out.push_back(std::move(block));
      block.clear();
      open = false;
    } else {
      if (open) block += ' ';
      block += line;
      open = true;
    }
    at = end + 1;
  }
  if (open) out.push_back(std::move(block));
  return out;
}

// The regular files of dir whose names start with prefix, sorted by name (none when dir is
// not a directory).
inline std::vector<std::filesystem::path> sorted_files(const std::filesystem::path& dir,
                                                       std::string_view prefix) {
  namespace fs = std::filesystem;
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.compare(0, prefix.size(), prefix) == 0) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end(),
            [](const fs::path& a, const fs::path& b) { return a.filename() < b.filename(); });
  return out;
}

}  // namespace eval
