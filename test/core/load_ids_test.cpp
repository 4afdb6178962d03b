// The distinct ids of a bulk load's rows (core/load_ids.hpp) and its C ABI: each id once
// with its first row, in the order of those rows; only the ids not found near kept; the
// text's id is XXH3-128 with the seed.
#include "core/load_ids.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "capi/load_ids_capi.h"

namespace simhash {
namespace {

TEST(LoadIds, DistinctFingerprintsInTheOrderOfTheirFirstRows) {
  const std::vector<std::uint64_t> fps = {9, 3, 9, 7, 3, 1, 7, 9};
  LoadIds ids(fps.size(), 42);
  for (std::size_t row = 0; row < fps.size(); ++row) ids.add(row, fps[row], nullptr, 0);
  ids.settle();
  ASSERT_EQ(ids.size(), 4u);
  const std::uint64_t want_fp[] = {9, 3, 7, 1};
  const std::uint64_t want_row[] = {0, 1, 3, 5};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(ids.fingerprint(i), want_fp[i]);
    EXPECT_EQ(ids.row(i), want_row[i]);
  }
  ids.set_near(1);  // 3
  ids.set_near(3);  // 1
  EXPECT_EQ(ids.keep_clean(), 2u);
  EXPECT_EQ(ids.size(), 2u);
  EXPECT_TRUE(ids.has(9, nullptr, 0));
  EXPECT_TRUE(ids.has(7, nullptr, 0));
  EXPECT_FALSE(ids.has(3, nullptr, 0));
  EXPECT_FALSE(ids.has(1, nullptr, 0));
  EXPECT_FALSE(ids.has(2, nullptr, 0));
}

TEST(LoadIds, TextsByTheirSeededDigest) {
  const std::vector<std::string> texts = {"b", "a", "b", "", "a"};
  LoadIds ids(texts.size(), 7);
  for (std::size_t row = 0; row < texts.size(); ++row)
    ids.add(row, 0, texts[row].data(), texts[row].size());
  ids.settle();
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids.row(0), 0u);
  EXPECT_EQ(ids.row(1), 1u);
  EXPECT_EQ(ids.row(2), 3u);
  EXPECT_EQ(ids.fingerprint(0), XXH3_128bits_withSeed("b", 1, 7).low64);
  EXPECT_EQ(ids.keep_clean(), 0u);
  for (const auto& t : texts) EXPECT_TRUE(ids.has(0, t.data(), t.size())) << t;
  EXPECT_FALSE(ids.has(0, "c", 1));
  // a text is not its digest's low half taken as a fingerprint
  EXPECT_FALSE(ids.has(XXH3_128bits_withSeed("b", 1, 7).low64, nullptr, 0));
  // another seed, other digests
  LoadIds other(1, 8);
  other.add(0, 0, "b", 1);
  other.settle();
  EXPECT_NE(other.fingerprint(0), ids.fingerprint(0));
}

TEST(LoadIds, EmptyAndCapacity) {
  LoadIds none(0, 1);
  none.settle();
  EXPECT_EQ(none.size(), 0u);
  EXPECT_EQ(none.keep_clean(), 0u);
  EXPECT_FALSE(none.has(0, nullptr, 0));
  EXPECT_THROW(none.add(0, 1, nullptr, 0), std::length_error);
  EXPECT_EQ(LoadIds::bytes_for(0), 0u);
  EXPECT_EQ(LoadIds::bytes_for(1000), 1000 * LoadIds::bytes_for(1));
  EXPECT_GE(LoadIds::bytes_for(1), 24u);
}

// Against a reference: random fingerprints with many repeats, random near marks.
TEST(LoadIds, MatchesAReference) {
  std::mt19937_64 rng(3);
  for (int round = 0; round < 20; ++round) {
    const std::size_t n = rng() % 2000;
    LoadIds ids(n, rng());
    std::map<std::uint64_t, std::uint64_t> first;  // fp -> its first row
    for (std::size_t row = 0; row < n; ++row) {
      const std::uint64_t fp = rng() % (n / 3 + 1);
      ids.add(row, fp, nullptr, 0);
      first.emplace(fp, row);
    }
    ids.settle();
    ASSERT_EQ(ids.size(), first.size());
    std::set<std::uint64_t> rows, near;
    for (const auto& [fp, row] : first) rows.insert(row);
    auto want = rows.begin();
    for (std::size_t i = 0; i < ids.size(); ++i, ++want) {
      ASSERT_EQ(ids.row(i), *want);
      ASSERT_EQ(first.at(ids.fingerprint(i)), ids.row(i));
      if (rng() % 3 == 0) {
        ids.set_near(i);
        near.insert(ids.fingerprint(i));
      }
    }
    ASSERT_EQ(ids.keep_clean(), near.size());
    for (std::uint64_t fp = 0; fp <= n / 3 + 1; ++fp)
      ASSERT_EQ(ids.has(fp, nullptr, 0), first.count(fp) == 1 && near.count(fp) == 0) << fp;
  }
}

TEST(LoadIds, Capi) {
  char err[256];
  simhash_load_ids* ids = nullptr;
  ASSERT_EQ(simhash_load_ids_create(3, 5, &ids, err, sizeof(err)), SIMHASH_OK);
  EXPECT_EQ(simhash_load_ids_bytes(3), LoadIds::bytes_for(3));
  ASSERT_EQ(simhash_load_ids_add(ids, 0, 0, "x", 1, err, sizeof(err)), SIMHASH_OK);
  ASSERT_EQ(simhash_load_ids_add(ids, 1, 0, "y", 1, err, sizeof(err)), SIMHASH_OK);
  ASSERT_EQ(simhash_load_ids_add(ids, 2, 0, "x", 1, err, sizeof(err)), SIMHASH_OK);
  EXPECT_EQ(simhash_load_ids_add(ids, 3, 0, "z", 1, err, sizeof(err)), SIMHASH_LIMIT_EXCEEDED);
  ASSERT_EQ(simhash_load_ids_settle(ids), 2u);
  EXPECT_EQ(simhash_load_ids_row(ids, 1), 1u);
  EXPECT_EQ(simhash_load_ids_fingerprint(ids, 0), XXH3_128bits_withSeed("x", 1, 5).low64);
  simhash_load_ids_set_near(ids, 0);
  EXPECT_EQ(simhash_load_ids_keep_clean(ids), 1u);
  EXPECT_EQ(simhash_load_ids_has(ids, 0, "x", 1), 0);
  EXPECT_EQ(simhash_load_ids_has(ids, 0, "y", 1), 1);
  simhash_load_ids_free(ids);
  simhash_load_ids_free(nullptr);
}

}  // namespace
}  // namespace simhash
