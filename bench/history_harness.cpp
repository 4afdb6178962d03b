// Times simhash::fingerprint() with the default options over a corpus directory, for
// bench/bench_history.sh, which links it against the core of each commit it compares (so it
// uses only the public API that every version has).
//
//   history_harness DIR RUNS [lines]
//
// Reads the files of DIR (sorted, up to 16 MB), fingerprints them all RUNS times and prints
// the MB/s (10^6 bytes per second of CPU time) of each run, one per line. With "lines",
// every line of the files that has a letter or digit is a text of its own.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/fingerprint.hpp"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s DIR RUNS [lines]\n", argv[0]);
    return 2;
  }
  std::vector<fs::path> files;
  for (const auto& f : fs::directory_iterator(argv[1])) files.push_back(f.path());
  std::sort(files.begin(), files.end());
  std::vector<std::string> docs;
  std::size_t bytes = 0;
  for (const auto& p : files) {
    if (bytes >= (16u << 20)) break;
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    docs.push_back(ss.str());
    bytes += docs.back().size();
  }
  if (argc > 3 && std::strcmp(argv[3], "lines") == 0) {
    std::vector<std::string> lines;
    bytes = 0;
    for (const auto& d : docs) {
      std::size_t start = 0;
      while (start < d.size()) {
        std::size_t end = d.find('\n', start);
        if (end == std::string::npos) end = d.size();
        std::string line = d.substr(start, end - start);
        if (std::any_of(line.begin(), line.end(), [](char c) {
              return std::isalnum(static_cast<unsigned char>(c)) ||
                     static_cast<unsigned char>(c) >= 0x80;
            })) {
          bytes += line.size();
          lines.push_back(std::move(line));
        }
        start = end + 1;
      }
    }
    docs.swap(lines);
  }
  const int runs = std::atoi(argv[2]);
  std::uint64_t sink = 0;
  for (int r = 0; r < runs; ++r) {
    timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    for (const auto& d : docs) sink += simhash::fingerprint(d).value_or(0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    const double seconds = static_cast<double>(t1.tv_sec - t0.tv_sec) +
                           1e-9 * static_cast<double>(t1.tv_nsec - t0.tv_nsec);
    std::printf("%.1f\n", static_cast<double>(bytes) / seconds / 1e6);
  }
  std::fprintf(stderr, "checksum %llx\n", static_cast<unsigned long long>(sink));
  return 0;
}
