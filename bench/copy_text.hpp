// One field of PostgreSQL's COPY text format, unescaped: what the bench programs that read
// a collection file ("id<TAB>text" a line, as bench_similar_engine.sh writes it) share.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace simhash_bench {

// \\ \t \n \r \b \f \v and \N (NULL: returns false).
inline bool unescape(std::string_view in, std::string& out) {
  out.clear();
  if (in == "\\N") return false;
  for (std::size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '\\' && i + 1 < in.size()) {
      const char e = in[++i];
      switch (e) {
        case 't': c = '\t'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'v': c = '\v'; break;
        default: c = e;
      }
    }
    out.push_back(c);
  }
  return true;
}

}  // namespace simhash_bench
