// Core fingerprint throughput (MB/s) on real text, with MD5 and a bare XXH3 pass over the
// same bytes as baselines measured in the same run, per language and per option, and a
// breakdown of the default into stages. Ends with a summary table.
//
//   build/bench_core [--benchmark_...]            English: /usr/share/doc/*/copyright
//   SIMHASH_CORPUS=DIR build/bench_core           DIR/{en,zh,ja,...}/ from make_corpus.sh
//
//   SIMHASH_CORPUS=DIR build/bench_core --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true   (one line; the summary then shows medians)
//
// The summary starts with the command line; bench/plot.sh reads the md5 and default
// columns of a report saved as bench/results/bench_core.txt.
//
// Stages (the real pipeline, stopped after a stage; each adds one step to the one before):
//   tokenize    the tokenizer alone; the sink only adds up token lengths
//   +hash       and XXH3 of every token
//   +shingle    and combine() of every 3 consecutive token hashes
//   default     and the bit counters: the whole fingerprint, simhash(text)
//
// The instruction set path is the best the CPU has; SIMHASH_ISA=portable|avx2|avx512 limits
// it (and the summary says which was used).
#include <benchmark/benchmark.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/fingerprint.hpp"
#include "core/isa.hpp"
#include "core/text_options.hpp"

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxBytesPerLanguage = 16u << 20;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Documents per language, up to kMaxBytesPerLanguage each.
std::map<std::string, std::vector<std::string>> load_corpus() {
  std::map<std::string, std::vector<fs::path>> files;
  if (const char* dir = std::getenv("SIMHASH_CORPUS")) {
    for (const auto& lang : fs::directory_iterator(dir)) {
      if (!lang.is_directory()) continue;
      for (const auto& f : fs::directory_iterator(lang.path())) {
        files[lang.path().filename().string()].push_back(f.path());
      }
    }
  } else {
    for (const auto& d : fs::directory_iterator("/usr/share/doc")) {
      const fs::path c = d.path() / "copyright";
      if (fs::is_regular_file(c)) files["en"].push_back(c);
    }
  }
  std::map<std::string, std::vector<std::string>> docs;
  for (auto& [lang, paths] : files) {
    std::sort(paths.begin(), paths.end());
    std::size_t bytes = 0;
    for (const auto& p : paths) {
      if (bytes >= kMaxBytesPerLanguage) break;
      docs[lang].push_back(read_file(p));
      bytes += docs[lang].back().size();
    }
  }
  return docs;
}

const std::map<std::string, std::vector<std::string>>& corpus() {
  static const auto* docs = new std::map<std::string, std::vector<std::string>>(load_corpus());
  return *docs;
}

// The lines of the documents that have a letter or digit, as separate texts (like the short
// rows of bench/bench_pg.sh): per-text overhead weighs more here.
const std::map<std::string, std::vector<std::string>>& corpus_lines() {
  static const auto* lines = [] {
    auto* out = new std::map<std::string, std::vector<std::string>>();
    for (const auto& [lang, docs] : corpus()) {
      auto& v = (*out)[lang];
      for (const auto& d : docs) {
        std::size_t start = 0;
        while (start < d.size()) {
          std::size_t end = d.find('\n', start);
          if (end == std::string::npos) end = d.size();
          const std::string line = d.substr(start, end - start);
          if (std::any_of(line.begin(), line.end(), [](char c) {
                return std::isalnum(static_cast<unsigned char>(c)) || c < 0;
              })) {
            v.push_back(line);
          }
          start = end + 1;
        }
      }
    }
    return out;
  }();
  return *lines;
}

std::int64_t total_bytes(const std::vector<std::string>& docs) {
  std::int64_t n = 0;
  for (const auto& d : docs) n += static_cast<std::int64_t>(d.size());
  return n;
}

void BM_Simhash(benchmark::State& state, std::string lang, simhash::Options options) {
  const auto& docs = corpus().at(lang);
  for (auto _ : state) {
    for (const auto& d : docs) benchmark::DoNotOptimize(simhash::fingerprint(d, options));
  }
  state.SetBytesProcessed(state.iterations() * total_bytes(docs));
  state.counters["docs"] = static_cast<double>(docs.size());
}

void BM_SimhashLines(benchmark::State& state, std::string lang) {
  const auto& lines = corpus_lines().at(lang);
  for (auto _ : state) {
    for (const auto& l : lines) benchmark::DoNotOptimize(simhash::fingerprint(l));
  }
  state.SetBytesProcessed(state.iterations() * total_bytes(lines));
  state.counters["texts"] = static_cast<double>(lines.size());
}

void BM_Md5Lines(benchmark::State& state, std::string lang) {
  const auto& lines = corpus_lines().at(lang);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  for (auto _ : state) {
    for (const auto& l : lines) {
      EVP_Digest(l.data(), l.size(), digest, &len, EVP_md5(), nullptr);
      benchmark::DoNotOptimize(digest);
    }
  }
  state.SetBytesProcessed(state.iterations() * total_bytes(lines));
}

void BM_Md5(benchmark::State& state, std::string lang) {
  const auto& docs = corpus().at(lang);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  for (auto _ : state) {
    for (const auto& d : docs) {
      EVP_Digest(d.data(), d.size(), digest, &len, EVP_md5(), nullptr);
      benchmark::DoNotOptimize(digest);
    }
  }
  state.SetBytesProcessed(state.iterations() * total_bytes(docs));
}

void BM_Xxh3Whole(benchmark::State& state, std::string lang) {
  const auto& docs = corpus().at(lang);
  for (auto _ : state) {
    for (const auto& d : docs) benchmark::DoNotOptimize(simhash::hash_bytes(d.data(), d.size()));
  }
  state.SetBytesProcessed(state.iterations() * total_bytes(docs));
}

// simhash(body, tokenizer, n, weighting) as the SQL function computes it
// (core/text_options.hpp): 64 kB chunks, the feature buffer growing as needed (kept
// across documents, so it is allocated in the first iteration only).
void BM_SimhashOptions(benchmark::State& state, std::string lang, simhash::TextOptions options) {
  const auto& docs = corpus().at(lang);
  std::vector<std::uint64_t> buffer;
  for (auto _ : state) {
    for (const auto& d : docs) {
      simhash::TextFingerprinter f(options);
      if (f.needs_buffer()) f.set_buffer(buffer.data(), buffer.size());
      for (std::size_t done = 0; done < d.size();) {
        const std::size_t n = std::min<std::size_t>(d.size() - done, 64 * 1024);
        if (f.feed_limit() < n) {
          buffer.resize(std::max(2 * buffer.size(), f.capacity_for(n)));
          f.set_buffer(buffer.data(), buffer.size());
        }
        f.feed(d.data() + done, n);
        done += n;
      }
      benchmark::DoNotOptimize(f.fingerprint());
    }
  }
  state.SetBytesProcessed(state.iterations() * total_bytes(docs));
}

// The default pipeline stopped after a stage (the real code: fingerprint.cpp runs its own
// sink up to that stage, batching and all).
void BM_Stage(benchmark::State& state, std::string lang, simhash::detail::Stage stage) {
  const auto& docs = corpus().at(lang);
  const simhash::Options options;
  for (auto _ : state) {
    for (const auto& d : docs) {
      benchmark::DoNotOptimize(simhash::detail::run_stage(stage, options, d.data(), d.size()));
    }
  }
  state.SetBytesProcessed(state.iterations() * total_bytes(docs));
}

void RegisterOptionBenchmarks(const std::string& lang) {
  using simhash::TokenizerKind;
  using simhash::Weighting;
  const struct {
    const char* name;
    TokenizerKind tokenizer;
    Weighting weighting;
  } options[] = {{"word_tf", TokenizerKind::Word, Weighting::Tf},
                 {"word_binary", TokenizerKind::Word, Weighting::Binary},
                 {"word_log", TokenizerKind::Word, Weighting::Log},
                 {"char_tf", TokenizerKind::Char, Weighting::Tf},
                 {"char_binary", TokenizerKind::Char, Weighting::Binary}};
  for (const auto& o : options) {
    simhash::TextOptions t;
    t.tokenizer = o.tokenizer;
    t.weighting = o.weighting;
    benchmark::RegisterBenchmark(("simhash_opt_" + std::string(o.name) + "/" + lang).c_str(),
                                 BM_SimhashOptions, lang, t);
  }
}

// The columns of the summary, in order: benchmark name prefix and column title.
const std::vector<std::pair<std::string, std::string>> kColumns = {
    {"md5", "md5"},
    {"xxh3_whole_text", "xxh3"},
    {"simhash_default", "default"},
    {"simhash_shingle1", "shingle1"},
    {"simhash_shingle2", "shingle2"},
    {"simhash_default_bigrams", "bigrams"},
    {"stage1_tokenize", "tokenize"},
    {"stage2_hash", "+hash"},
    {"stage3_shingle", "+shingle"},
    {"md5_lines", "md5 lines"},
    {"simhash_lines", "lines"},
    {"simhash_opt_word_binary", "w binary"},
    {"simhash_opt_word_log", "w log"},
    {"simhash_opt_char_tf", "char tf"},
    {"simhash_opt_char_binary", "c binary"},
};

// Console output as usual, plus the MB/s of every benchmark (the median when repeated).
class SummaryReporter : public benchmark::ConsoleReporter {
 public:
  using ConsoleReporter::ConsoleReporter;

  void ReportRuns(const std::vector<Run>& reports) override {
    ConsoleReporter::ReportRuns(reports);
    for (const Run& r : reports) {
      if (r.error_occurred) continue;
      const bool median = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      const bool single = r.run_type == Run::RT_Iteration && r.repetitions <= 1;
      if (!median && !single) continue;
      const auto it = r.counters.find("bytes_per_second");
      if (it == r.counters.end()) continue;
      mbps_[r.run_name.function_name] = it->second.value / 1e6;
      repeated_ = repeated_ || median;
    }
  }

  // The command line, printed with the summary so that a saved report names what made it.
  void SetCommand(std::string command) { command_ = std::move(command); }

  void PrintSummary() const {
    if (mbps_.empty()) return;
    std::printf("\nCommand: %s\n", command_.c_str());
    std::printf(
        "Summary: MB/s (10^6 bytes per second of CPU time; the M/s above are 2^20),"
        " one thread, %s.\n",
        repeated_ ? "medians of the repetitions"
                  : "one run each (use "
                    "--benchmark_repetitions=N for medians)");
    std::printf("Instruction set path: %s (this CPU's best: %s).\n",
                simhash::detail::isa_name(simhash::detail::active_isa()),
                simhash::detail::isa_name(simhash::detail::best_isa()));
    std::printf(
        "default = simhash(text): word trigrams, CJK character trigrams; shingle1/2: "
        "1 and 2 tokens per feature;\nbigrams: the default with cjk_bigrams; "
        "tokenize, +hash, +shingle: the default's stages (its 4th is the counters);\n"
        "md5 lines, lines: MD5 and the default of each line of the documents as a "
        "text of its own;\nw binary, w log, char tf, c binary: simhash(body, 'word' or "
        "'char', weighting => 'binary', 'log' or 'tf').\n\n");
    std::printf("%-4s", "lang");
    for (const auto& [prefix, title] : kColumns) std::printf(" %9s", title.c_str());
    std::printf(" %12s %12s\n", "default/md5", "lines/md5");
    for (const auto& [lang, docs] : corpus()) {
      std::printf("%-4s", lang.c_str());
      for (const auto& [prefix, title] : kColumns) {
        const auto it = mbps_.find(prefix + "/" + lang);
        if (it == mbps_.end()) {
          std::printf(" %9s", "-");
        } else {
          std::printf(" %9.0f", it->second);
        }
      }
      const auto d = mbps_.find("simhash_default/" + lang);
      const auto m = mbps_.find("md5/" + lang);
      const auto dl = mbps_.find("simhash_lines/" + lang);
      const auto ml = mbps_.find("md5_lines/" + lang);
      if (d != mbps_.end() && m != mbps_.end()) {
        std::printf(" %12.2f", d->second / m->second);
      } else {
        std::printf(" %12s", "-");
      }
      if (dl != mbps_.end() && ml != mbps_.end()) std::printf(" %12.2f", dl->second / ml->second);
      std::printf("\n");
    }
  }

 private:
  std::map<std::string, double> mbps_;
  bool repeated_ = false;
  std::string command_;
};

// "SIMHASH_CORPUS=... SIMHASH_ISA=... build/bench_core ARGS", from the environment and argv.
std::string command_line(int argc, char** argv) {
  std::string command;
  for (const char* name : {"SIMHASH_CORPUS", "SIMHASH_ISA"}) {
    if (const char* value = std::getenv(name)) command += std::string(name) + "=" + value + " ";
  }
  for (int i = 0; i < argc; i++) command += (i > 0 ? " " : "") + std::string(argv[i]);
  return command;
}

}  // namespace

int main(int argc, char** argv) {
  using simhash::detail::Isa;
  if (const char* isa = std::getenv("SIMHASH_ISA")) {
    const std::string name = isa;
    if (name == "portable") {
      simhash::detail::limit_isa(Isa::kPortable);
    } else if (name == "avx2") {
      simhash::detail::limit_isa(Isa::kAvx2);
    } else if (name != "avx512") {
      std::fprintf(stderr, "SIMHASH_ISA must be portable, avx2 or avx512\n");
      return 1;
    }
  }
  for (const auto& [lang, docs] : corpus()) {
    benchmark::RegisterBenchmark(("md5/" + lang).c_str(), BM_Md5, lang);
    benchmark::RegisterBenchmark(("xxh3_whole_text/" + lang).c_str(), BM_Xxh3Whole, lang);
    benchmark::RegisterBenchmark(("simhash_default/" + lang).c_str(), BM_Simhash, lang,
                                 simhash::Options{});
    for (int shingle : {1, 2}) {  // the default is 3
      benchmark::RegisterBenchmark(
          ("simhash_shingle" + std::to_string(shingle) + "/" + lang).c_str(), BM_Simhash, lang,
          simhash::Options{shingle, false});
    }
    benchmark::RegisterBenchmark(("simhash_default_bigrams/" + lang).c_str(), BM_Simhash, lang,
                                 simhash::Options{3, true});
    using simhash::detail::Stage;
    benchmark::RegisterBenchmark(("md5_lines/" + lang).c_str(), BM_Md5Lines, lang);
    benchmark::RegisterBenchmark(("simhash_lines/" + lang).c_str(), BM_SimhashLines, lang);
    benchmark::RegisterBenchmark(("stage1_tokenize/" + lang).c_str(), BM_Stage, lang,
                                 Stage::kTokenize);
    benchmark::RegisterBenchmark(("stage2_hash/" + lang).c_str(), BM_Stage, lang, Stage::kHash);
    benchmark::RegisterBenchmark(("stage3_shingle/" + lang).c_str(), BM_Stage, lang,
                                 Stage::kShingle);
  }
  for (const auto& [lang, docs] : corpus()) RegisterOptionBenchmarks(lang);
  const std::string command = command_line(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // Colours only on a terminal, as the library's own console reporter does by default.
  SummaryReporter reporter(isatty(fileno(stdout)) ? benchmark::ConsoleReporter::OO_Color
                                                  : benchmark::ConsoleReporter::OO_None);
  reporter.SetCommand(command);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintSummary();
  benchmark::Shutdown();
  return 0;
}
