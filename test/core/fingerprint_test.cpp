#include "core/fingerprint.hpp"

#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

#include "core/hamming.hpp"
#include "test_util.hpp"

namespace simhash {
namespace {

TEST(Fingerprint, NoTokenNoFingerprint) {
  EXPECT_FALSE(fingerprint("").has_value());
  EXPECT_FALSE(fingerprint("   \n\t ").has_value());
  EXPECT_FALSE(fingerprint("?!... -- ,,").has_value());
}

TEST(Fingerprint, ShortTextsAreNotAConstant) {
  // A text shorter than a shingle has one feature made of all its tokens: its fingerprint
  // is that feature's hash, so short texts spread over the whole space.
  const Options o{2, true};
  const std::uint64_t token = hash_bytes("hello", 5);
  EXPECT_EQ(*fingerprint("hello", o), combine(&token, 1));
  EXPECT_NE(*fingerprint("hello", o), *fingerprint("world", o));
  EXPECT_EQ(*fingerprint("Hello!", o), *fingerprint("hello", o));
  const Options unigram{1, true};
  EXPECT_EQ(*fingerprint("hello", unigram), hash_bytes("hello", 5));
}

TEST(Fingerprint, ChunkingAnywhereGivesTheSameFingerprint) {
  std::mt19937_64 rng(3);
  for (const std::string& text : test::tricky_texts()) {
    for (int shingle = 1; shingle <= 3; ++shingle) {
      const Options o{shingle, true};
      const auto whole = fingerprint(text, o);
      for (int round = 0; round < 20; ++round) {
        Fingerprinter f(o);
        for (auto chunk : test::random_chunks(text, rng, 1 + round % 5)) f.feed(chunk);
        ASSERT_EQ(f.finish(), whole) << text;
      }
    }
  }
}

TEST(Fingerprint, NearDuplicatesAreCloserThanUnrelatedTexts) {
  const std::string a =
      "Permission is hereby granted, free of charge, to any person obtaining a copy of this "
      "software and associated documentation files, to deal in the Software without "
      "restriction, including without limitation the rights to use, copy, modify, merge, "
      "publish, distribute, sublicense, and/or sell copies of the Software.";
  std::string b = a;
  b.replace(b.find("charge"), 6, "fee");
  const std::string c =
      "This program is free software; you can redistribute it and/or modify it under the "
      "terms of the GNU General Public License as published by the Free Software Foundation.";
  EXPECT_LE(hamming(*fingerprint(a), *fingerprint(b)), 10);
  EXPECT_GT(hamming(*fingerprint(a), *fingerprint(c)), 16);
}

TEST(Fingerprint, OptionsAreValidated) {
  EXPECT_THROW(Fingerprinter(Options{0, true}), std::invalid_argument);
  EXPECT_THROW(Fingerprinter(Options{kMaxShingle + 1, true}), std::invalid_argument);
  EXPECT_NO_THROW(Fingerprinter(Options{kMaxShingle, true}));
}

// Golden values: the fingerprint is an on-disk format. A change here breaks every stored
// fingerprint; it needs a new function or version and a documented re-index.
struct Golden {
  const char* text;
  std::uint64_t fp;
};

TEST(Fingerprint, GoldenValuesOfTheDefaults) {
  const Golden golden[] = {
#include "golden_values.inc"
  };
  for (const Golden& g : golden) {
    const auto fp = fingerprint(g.text);
    ASSERT_TRUE(fp.has_value()) << g.text;
    EXPECT_EQ(*fp, g.fp) << "text: " << g.text << "\nactual: 0x" << std::hex << *fp;
  }
}

}  // namespace
}  // namespace simhash
