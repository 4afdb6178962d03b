// Core fingerprint throughput (MB/s) on real text, with MD5 and a bare XXH3 pass over the
// same bytes as baselines measured in the same run.
//
//   build/bench_core [--benchmark_...]            English: /usr/share/doc/*/copyright
//   SIMHASH_CORPUS=DIR build/bench_core           DIR/{en,zh,ja,...}/ from make_corpus.sh
#include <benchmark/benchmark.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/fingerprint.hpp"
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

}  // namespace

int main(int argc, char** argv) {
  for (const auto& [lang, docs] : corpus()) {
    benchmark::RegisterBenchmark(("md5/" + lang).c_str(), BM_Md5, lang);
    benchmark::RegisterBenchmark(("xxh3_whole_text/" + lang).c_str(), BM_Xxh3Whole, lang);
    benchmark::RegisterBenchmark(("simhash_default/" + lang).c_str(), BM_Simhash, lang,
                                 simhash::Options{});
    for (int shingle : {1, 2}) {  // the default is 3
      benchmark::RegisterBenchmark(
          ("simhash_shingle" + std::to_string(shingle) + "/" + lang).c_str(), BM_Simhash, lang,
          simhash::Options{shingle, true});
    }
  }
  for (const auto& [lang, docs] : corpus()) RegisterOptionBenchmarks(lang);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
