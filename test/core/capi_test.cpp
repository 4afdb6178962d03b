#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "capi/simhash_capi.h"
#include "core/fingerprint.hpp"

namespace {

simhash_options defaults() {
  simhash_options o;
  simhash_default_options(&o);
  return o;
}

TEST(CApi, FingerprintMatchesTheCore) {
  const std::string text = "The quick brown fox jumps over the lazy dog";
  simhash_state st;
  char err[64];
  const simhash_options o = defaults();
  ASSERT_EQ(simhash_begin(&st, &o, err, sizeof err), SIMHASH_OK);
  ASSERT_EQ(simhash_feed(&st, text.data(), 10, err, sizeof err), SIMHASH_OK);
  ASSERT_EQ(simhash_feed(&st, text.data() + 10, text.size() - 10, err, sizeof err), SIMHASH_OK);
  std::uint64_t fp = 0;
  ASSERT_EQ(simhash_end(&st, &fp, err, sizeof err), SIMHASH_OK);
  EXPECT_EQ(fp, *simhash::fingerprint(text));
}

TEST(CApi, EmptyTextHasNoFeatures) {
  simhash_state st;
  char err[64];
  const simhash_options o = defaults();
  ASSERT_EQ(simhash_begin(&st, &o, err, sizeof err), SIMHASH_OK);
  ASSERT_EQ(simhash_feed(&st, nullptr, 0, err, sizeof err), SIMHASH_OK);
  std::uint64_t fp = 12345;
  EXPECT_EQ(simhash_end(&st, &fp, err, sizeof err), SIMHASH_NO_FEATURES);
  EXPECT_EQ(fp, 12345u);
}

TEST(CApi, InvalidOptionsAreReportedNotThrown) {
  simhash_state st;
  char err[128];
  simhash_options o = defaults();
  o.shingle = 0;
  EXPECT_EQ(simhash_begin(&st, &o, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  EXPECT_STREQ(err, "shingle size must be between 1 and 8, got 0");
  o.shingle = 9;
  EXPECT_EQ(simhash_begin(&st, &o, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
}

TEST(CApi, MessagesAreTruncatedToTheCallersBuffer) {
  simhash_state st;
  simhash_options o = defaults();
  o.shingle = -1;
  char err[8];
  std::memset(err, 'z', sizeof err);
  EXPECT_EQ(simhash_begin(&st, &o, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  EXPECT_STREQ(err, "shingle");
  char one[1] = {'z'};
  EXPECT_EQ(simhash_begin(&st, &o, one, 1), SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(one[0], '\0');
  EXPECT_EQ(simhash_begin(&st, &o, nullptr, 0), SIMHASH_INVALID_ARGUMENT);
}

TEST(CApi, NullPointersAreRejected) {
  simhash_state st;
  char err[64];
  const simhash_options o = defaults();
  EXPECT_EQ(simhash_begin(nullptr, &o, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(simhash_begin(&st, nullptr, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  ASSERT_EQ(simhash_begin(&st, &o, err, sizeof err), SIMHASH_OK);
  EXPECT_EQ(simhash_feed(&st, nullptr, 5, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
  EXPECT_EQ(simhash_end(&st, nullptr, err, sizeof err), SIMHASH_INVALID_ARGUMENT);
}

TEST(CApi, HugeInputInChunks) {
  std::string chunk;
  for (int i = 0; i < 20000; ++i) chunk += "word" + std::to_string(i % 997) + " ";
  simhash_state st;
  char err[64];
  const simhash_options o = defaults();
  ASSERT_EQ(simhash_begin(&st, &o, err, sizeof err), SIMHASH_OK);
  std::string whole;
  for (int i = 0; i < 200; ++i) {  // ~24 MB
    ASSERT_EQ(simhash_feed(&st, chunk.data(), chunk.size(), err, sizeof err), SIMHASH_OK);
    whole += chunk;
  }
  std::uint64_t fp = 0;
  ASSERT_EQ(simhash_end(&st, &fp, err, sizeof err), SIMHASH_OK);
  EXPECT_EQ(fp, *simhash::fingerprint(whole));
}

TEST(CApi, Hamming) {
  EXPECT_EQ(simhash_hamming(0, ~0ULL), 64);
  EXPECT_EQ(simhash_hamming(0x8000000000000000ULL, 0), 1);
}

}  // namespace
