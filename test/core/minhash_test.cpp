#include "core/minhash.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "capi/similarity_capi.h"
#include "core/similarity.hpp"
#include "core/text_options.hpp"

namespace simhash {
namespace {

// Two random sets of `size` hashes sharing `common` of them: Jaccard common / (2 size - common).
void random_pair(std::mt19937_64& rng, std::size_t size, std::size_t common,
                 std::vector<std::uint64_t>& a, std::vector<std::uint64_t>& b) {
  a.clear();
  b.clear();
  for (std::size_t i = 0; i < size; ++i) {
    const std::uint64_t x = rng();
    a.push_back(x);
    b.push_back(i < common ? x : rng());
  }
}

TEST(MinHash, EmptySetHasNoSignatureAndNoKeys) {
  EXPECT_TRUE(minhash_signature(nullptr, 0, 100).empty());
  EXPECT_TRUE(lsh_keys(nullptr, 0).empty());
  EXPECT_TRUE(lsh_keys(std::string_view("... !!! ---")).empty());
}

TEST(MinHash, BadArguments) {
  const std::uint64_t x = 1;
  EXPECT_THROW(minhash_signature(&x, 1, 0), std::invalid_argument);
  EXPECT_THROW(minhash_signature(nullptr, 3, 10), std::invalid_argument);
  EXPECT_THROW(lsh_band_keys(std::vector<std::uint64_t>(99), 20, 5), std::invalid_argument);
}

TEST(MinHash, EveryBinFilledAndOrderIrrelevant) {
  // One shingle: every bin holds its value (densification copies it everywhere).
  const std::uint64_t one = 42;
  const auto sig = minhash_signature(&one, 1, 100);
  ASSERT_EQ(sig.size(), 100u);
  for (const auto v : sig) EXPECT_EQ(v, sig[0]);
  // The signature of a set does not depend on the order of its elements or on repeats.
  std::vector<std::uint64_t> s = {5, 1, 99, 7, 1234567, 8};
  const auto a = minhash_signature(s.data(), s.size(), 100);
  std::vector<std::uint64_t> t = {8, 1234567, 7, 99, 1, 5, 5, 99};
  EXPECT_EQ(minhash_signature(t.data(), t.size(), 100), a);
}

// Each value of the signature agrees with probability J (one permutation hashing with
// optimal densification is unbiased), for sets larger and smaller than the signature.
TEST(MinHash, AgreementEstimatesJaccard) {
  std::mt19937_64 rng(7);
  for (const std::size_t size : {10u, 60u, 400u}) {
    for (const double j : {0.3, 0.6, 0.8}) {
      const auto common = static_cast<std::size_t>(std::lround(2 * size * j / (1 + j)));
      const double exact = static_cast<double>(common) / static_cast<double>(2 * size - common);
      std::vector<std::uint64_t> a, b;
      std::uint64_t agree = 0, total = 0;
      for (int trial = 0; trial < 300; ++trial) {
        random_pair(rng, size, common, a, b);
        const auto sa = minhash_signature(a.data(), a.size(), kLshBands * kLshRows);
        const auto sb = minhash_signature(b.data(), b.size(), kLshBands * kLshRows);
        for (std::size_t i = 0; i < sa.size(); ++i) agree += sa[i] == sb[i];
        total += sa.size();
      }
      const double measured = static_cast<double>(agree) / static_cast<double>(total);
      // 30,000 values: the standard error is below 0.003; the values of one signature are
      // dependent, so allow 0.02.
      EXPECT_NEAR(measured, exact, 0.02) << "size " << size << ", J " << exact;
    }
  }
}

// Pairs at J = 0.8 share a key nearly always, pairs at J = 0.2 nearly never.
TEST(MinHash, KeysFindSimilarSetsOnly) {
  std::mt19937_64 rng(11);
  int shared_high = 0, shared_low = 0;
  const int trials = 2000;
  std::vector<std::uint64_t> a, b;
  for (int t = 0; t < trials; ++t) {
    const auto share = [&](std::size_t size, std::size_t common) {
      random_pair(rng, size, common, a, b);
      const auto ka = lsh_keys(a.data(), a.size());
      const auto kb = lsh_keys(b.data(), b.size());
      for (std::size_t i = 0; i < ka.size(); ++i) {
        if (ka[i] == kb[i]) return true;
      }
      return false;
    };
    shared_high += share(200, 178);  // J = 178 / 222 = 0.80
    shared_low += share(200, 67);    // J = 67 / 333 = 0.20
  }
  EXPECT_GE(shared_high, trials * 995 / 1000);
  EXPECT_LE(shared_low, trials * 2 / 100);
}

TEST(MinHash, KeysOfBandsDiffer) {
  // Equal signature values in two bands still give different keys: a key names its band.
  const std::vector<std::uint64_t> sig(kLshBands * kLshRows, 77);
  const auto keys = lsh_band_keys(sig, kLshBands, kLshRows);
  for (std::size_t i = 1; i < keys.size(); ++i) EXPECT_NE(keys[i], keys[0]);
}

// The format: stored keys are searched with keys computed later, so these never change
// (the same values as expected/simhash_similar.out).
TEST(MinHash, GoldenKeys) {
  const auto en = lsh_keys(std::string_view("The quick brown fox jumps over the lazy dog"));
  ASSERT_EQ(en.size(), 20u);
  EXPECT_EQ(en[0], 2389549385801869523LL);
  EXPECT_EQ(en[1], 6362375191217843633LL);
  EXPECT_EQ(en[2], -2347669518508686971LL);
  const auto shortest = lsh_keys(std::string_view("abc"));
  ASSERT_EQ(shortest.size(), 20u);
  EXPECT_EQ(shortest[0], -6876746635416185982LL);
  EXPECT_EQ(shortest[1], 833779461723836349LL);
  const auto ja = lsh_keys(std::string_view("これはテストの文章です"));
  ASSERT_EQ(ja.size(), 20u);
  EXPECT_EQ(ja[19], -4424369141657845758LL);
  // Normalization: case, white space and punctuation do not matter.
  EXPECT_EQ(lsh_keys(std::string_view("THE QUICK, brown fox!")),
            lsh_keys(std::string_view("the quick brown fox")));
}

TEST(MinHash, CAbi) {
  const auto set = shingle_set("The quick brown fox jumps over the lazy dog");
  std::int64_t keys[SIMHASH_LSH_BANDS];
  std::size_t n = 99;
  char err[256];
  ASSERT_EQ(simhash_lsh_keys(set.data(), set.size(), keys, SIMHASH_LSH_BANDS, &n, err, sizeof(err)),
            SIMHASH_OK);
  ASSERT_EQ(n, 20u);
  EXPECT_EQ(keys[0], 2389549385801869523LL);
  EXPECT_EQ(simhash_lsh_keys(set.data(), set.size(), keys, 19, &n, err, sizeof(err)),
            SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(simhash_lsh_keys(nullptr, 0, keys, SIMHASH_LSH_BANDS, &n, err, sizeof(err)), SIMHASH_OK);
  EXPECT_EQ(n, 0u);
  EXPECT_EQ(simhash_lsh_keys(set.data(), set.size(), keys, SIMHASH_LSH_BANDS, nullptr, err,
                             sizeof(err)),
            SIMHASH_INVALID_ARGUMENT);
}

// The glue computes keys and digests of large sets in pieces, with interrupt checks between
// them: any cut gives the values of the whole set (sizes 1 to 3000: below and above the
// 100 bins, so that densification is exercised too).
TEST(MinHash, PiecesGiveTheKeysAndDigestOfTheWholeSet) {
  std::mt19937_64 rng(2026);
  for (std::size_t n : {1, 2, 7, 99, 100, 101, 3000}) {
    std::vector<std::uint64_t> set(n);
    for (auto& x : set) x = rng();
    std::sort(set.begin(), set.end());
    const auto want = lsh_keys(set.data(), set.size());
    const std::uint64_t want_digest = set_digest(set.data(), set.size());
    for (std::size_t piece : {std::size_t{1}, std::size_t{3}, std::size_t{64}, n}) {
      LshSketch sketch;
      simhash_lsh_state state;
      simhash_lsh_begin(&state);
      std::uint64_t d = set_digest_begin(n);
      std::uint64_t cd = simhash_shingle_digest_begin(n);
      for (std::size_t i = 0; i < n; i += piece) {
        const std::size_t m = std::min(piece, n - i);
        sketch.add(set.data() + i, m);
        simhash_lsh_add(&state, set.data() + i, m);
        d = set_digest_add(d, set.data() + i, m);
        cd = simhash_shingle_digest_add(cd, set.data() + i, m);
      }
      ASSERT_EQ(sketch.keys(), want) << n << " " << piece;
      ASSERT_EQ(set_digest_end(d), want_digest);
      ASSERT_EQ(simhash_shingle_digest_end(cd), want_digest);
      std::int64_t keys[SIMHASH_LSH_BANDS];
      std::size_t nkeys = 0;
      char err[128];
      ASSERT_EQ(simhash_lsh_end(&state, keys, SIMHASH_LSH_BANDS, &nkeys, err, sizeof err),
                SIMHASH_OK);
      ASSERT_EQ(std::vector<std::int64_t>(keys, keys + nkeys), want);
    }
  }
  LshSketch empty;
  EXPECT_TRUE(empty.keys().empty());
  simhash_lsh_state state;
  simhash_lsh_begin(&state);
  std::size_t nkeys = 9;
  char err[128];
  ASSERT_EQ(simhash_lsh_end(&state, nullptr, 0, &nkeys, err, sizeof err), SIMHASH_OK);
  EXPECT_EQ(nkeys, 0u);
}

// simhash_lsh(text) folds each piece's shingles as they come (unsorted, repeats
// included) and drains them (src/pg/similarity.c): the keys of the text's shingle set, for
// any piece size, through the text's own word and multi-byte boundaries.
TEST(MinHash, DrainedShinglesGiveTheKeysOfTheSet) {
  const std::string texts[] = {
      "", "a", "abcd", "The quick brown fox jumps over the lazy dog, the lazy dog sleeps.",
      "日本語のテキストは空白なしで書かれる。日本語のテキスト。", "Ünïcödé wörds — and ASCII ones; ÆØÅ æøå",
      std::string(3000, 'x') + " tail words " + std::string(500, 'y')};
  for (const std::string& text : texts) {
    const auto want = lsh_keys(text);
    for (std::size_t piece : {std::size_t{1}, std::size_t{5}, std::size_t{64}, std::size_t{8192}}) {
      TextOptions options;
      options.tokenizer = TokenizerKind::Char;
      options.n = kSimilarityShingle;
      options.weighting = Weighting::Binary;
      TextFingerprinter fp(options, /*collect=*/true);
      std::vector<std::uint64_t> buffer(fp.capacity_for(piece));
      fp.set_buffer(buffer.data(), buffer.size());
      LshSketch sketch;
      for (std::size_t at = 0; at < text.size(); at += piece) {
        fp.feed(text.data() + at, std::min(piece, text.size() - at));
        sketch.add(buffer.data(), fp.size());
        fp.drain();
      }
      sketch.add(buffer.data(), fp.collected());
      ASSERT_EQ(sketch.keys(), want) << text.substr(0, 20) << " " << piece;
    }
  }
}

}  // namespace
}  // namespace simhash
