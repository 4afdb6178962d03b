// The interrupt poll (core/interrupt.hpp): every long loop of the core asks the caller's
// check as it goes and unwinds with Interrupted when it says stop (the C ABI returns
// SIMHASH_INTERRUPTED); a check that never says stop changes no result; the check is only
// ever called on the calling thread, also while worker threads shingle.
#include "core/interrupt.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include "capi/similar_pairs_capi.h"
#include "capi/similarity_capi.h"
#include "core/similar_pairs.hpp"
#include "core/similarity.hpp"
#include "core/weighted.hpp"

namespace simhash {
namespace {

// A check that says stop from its `stop_at`-th call on (never with 0), counting its calls
// and noting whether any came from another thread than the one that made it.
struct Counter {
  explicit Counter(std::uint64_t stop_at_call = 0) : stop_at(stop_at_call) {}
  std::uint64_t stop_at;
  std::atomic<std::uint64_t> calls{0};
  std::atomic<bool> other_thread{false};
  std::thread::id owner = std::this_thread::get_id();

  static bool ask(void* arg) {
    auto* c = static_cast<Counter*>(arg);
    if (std::this_thread::get_id() != c->owner) c->other_thread = true;
    const std::uint64_t n = ++c->calls;
    return c->stop_at != 0 && n >= c->stop_at;
  }
  static int ask_c(void* arg) { return ask(arg) ? 1 : 0; }
  InterruptCheck check() { return InterruptCheck{&Counter::ask, this}; }
  simhash_interrupt c_check() { return simhash_interrupt{&Counter::ask_c, this}; }
};

// Text of about `bytes` bytes with many distinct shingles (random letters and digits).
std::string varied_text(std::size_t bytes, std::uint32_t seed = 1) {
  static const char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::mt19937 rng(seed);
  std::string s;
  s.reserve(bytes);
  while (s.size() < bytes) {
    s.push_back(kChars[rng() % 36]);
    if (rng() % 9 == 0) s.push_back(' ');
  }
  return s;
}

TEST(Poll, AsksEveryKUnitsAndStops) {
  Counter c(3);
  Poll poll(c.check());
  poll.work(static_cast<std::size_t>(Poll::kUnits) - 1);  // not there yet
  EXPECT_EQ(c.calls, 0u);
  poll.work(1);
  EXPECT_EQ(c.calls, 1u);
  poll.work(static_cast<std::size_t>(Poll::kUnits));
  EXPECT_EQ(c.calls, 2u);
  EXPECT_THROW(poll.ask(), Interrupted);
  EXPECT_EQ(c.calls, 3u);
}

TEST(Poll, StopFlagReachesWorkers) {
  std::atomic<bool> stop{false};
  Counter c(1);
  Poll mine(c.check(), &stop);
  Poll worker = Poll::worker(&stop);
  EXPECT_NO_THROW(worker.ask());
  EXPECT_THROW(mine.ask(), Interrupted);
  EXPECT_TRUE(stop.load());
  EXPECT_THROW(worker.ask(), Interrupted);
  Poll never;
  EXPECT_FALSE(never.can_stop());
  for (int i = 0; i < 100; ++i) never.work(static_cast<std::size_t>(Poll::kUnits));
}

TEST(Poll, SortInSlicesIsTheSort) {
  std::mt19937_64 rng(7);
  std::vector<std::uint64_t> a(1000000);
  for (auto& x : a) x = rng() >> (rng() % 3 == 0 ? 40 : 0);  // many equal top bytes too
  std::vector<std::uint64_t> b = a;
  sort_features(a.data(), a.size());
  Counter c;
  Poll poll(c.check());
  sort_features(b.data(), b.size(), poll);
  EXPECT_EQ(a, b);
  EXPECT_GT(c.calls, 5u);
  Counter stop(2);
  Poll stopping(stop.check());
  std::vector<std::uint64_t> d = b;
  std::reverse(d.begin(), d.end());
  EXPECT_THROW(sort_features(d.data(), d.size(), stopping), Interrupted);
}

TEST(Poll, ShingleSetAsksAsItGoes) {
  const std::string text = varied_text(3 << 20);
  Counter c;
  Poll poll(c.check());
  EXPECT_EQ(shingle_set(text, kSimilarityShingle, &poll), shingle_set(text));
  // 48 pieces of 64 kB, and the sort of about 3 million features in slices
  EXPECT_GT(c.calls, 48u + 40u);
  for (std::uint64_t at : {1, 20, 70}) {
    Counter stop(at);
    Poll stopping(stop.check());
    EXPECT_THROW(shingle_set(text, kSimilarityShingle, &stopping), Interrupted) << at;
    EXPECT_EQ(stop.calls, at);
  }
  for (TokenizerKind t : {TokenizerKind::Word, TokenizerKind::Char}) {
    Counter never;
    Poll p(never.check());
    EXPECT_EQ(binary_fingerprint(text, t, 3, &p), binary_fingerprint(text, t, 3));
    EXPECT_GE(never.calls, 48u);
    Counter stop(5);
    Poll stopping(stop.check());
    EXPECT_THROW(binary_fingerprint(text, t, 3, &stopping), Interrupted);
  }
}

// The overlap of two sets (simhash_jaccard(bigint[], bigint[]) of 1 GB arrays took 3.7 s
// for sets of 134 million values interleaved at random, without a poll): the ascending
// checks and the merge ask as they go, and the answer is the same.
TEST(Poll, OverlapAsksAsItGoes) {
  std::mt19937_64 rng(3);
  std::vector<std::uint64_t> a;
  std::vector<std::uint64_t> b;
  for (std::uint64_t x = 1; a.size() < (std::size_t{1} << 20); x++) {
    const unsigned r = rng() % 3;
    if (r != 1) a.push_back(x);
    if (r != 0) b.push_back(x);
  }
  const Overlap plain = overlap(a.data(), a.size(), b.data(), b.size());
  Counter never;
  Poll poll(never.check());
  const Overlap polled = overlap(a.data(), a.size(), b.data(), b.size(), &poll);
  EXPECT_EQ(polled.common, plain.common);
  // about 16 asks for each set checked (2^20 values), as many in the merge and more for the
  // elements of the longer set stepped over
  EXPECT_GE(never.calls, 40u);
  for (std::uint64_t at : {1, 20, 40}) {
    Counter stop(at);
    Poll stopping(stop.check());
    EXPECT_THROW(overlap(a.data(), a.size(), b.data(), b.size(), &stopping), Interrupted) << at;
    EXPECT_EQ(stop.calls, at);
  }
  char err[64];
  std::uint64_t common = 0;
  Counter stop(30);
  const simhash_interrupt c_poll = stop.c_check();
  EXPECT_EQ(simhash_shingle_overlap(a.data(), a.size(), b.data(), b.size(), &common, &c_poll,
                                    err, sizeof(err)),
            SIMHASH_INTERRUPTED);
  EXPECT_EQ(simhash_shingle_overlap(b.data(), b.size(), a.data(), a.size(), &common, nullptr,
                                    err, sizeof(err)),
            SIMHASH_OK);
  EXPECT_EQ(common, plain.common);
}

TEST(Poll, ShingleCounterGrowsAndSortsAsItGoes) {
  const std::string text = varied_text(2 << 20, 3);
  auto count = [&](Poll* poll, std::vector<std::uint64_t>* out) {
    std::vector<std::vector<std::uint64_t>> tables;
    tables.emplace_back(16);
    ShingleCounter c(std::uint64_t{1} << 24, tables.back().data(), tables.back().size());
    for (std::size_t at = 0; at < text.size(); at += 4096) {
      const std::size_t n = std::min<std::size_t>(4096, text.size() - at);
      if (c.table_size_before(n) > c.table_size()) {
        tables.emplace_back(c.table_size_before(n));
        c.grow(tables.back().data(), tables.back().size(), poll);
      }
      c.feed(text.data() + at, n);
    }
    if (c.table_size_before(0) > c.table_size()) {
      tables.emplace_back(c.table_size_before(0));
      c.grow(tables.back().data(), tables.back().size(), poll);
    }
    c.end();
    out->assign(c.count(), 0);
    c.sorted(out->data(), out->size(), poll);
  };
  std::vector<std::uint64_t> plain;
  std::vector<std::uint64_t> polled;
  count(nullptr, &plain);
  Counter never;
  Poll poll(never.check());
  count(&poll, &polled);
  EXPECT_EQ(plain, polled);
  EXPECT_EQ(polled, shingle_set(text));
  EXPECT_GT(never.calls, 20u);
  for (std::uint64_t at : {std::uint64_t{1}, std::uint64_t{10}, never.calls.load()}) {
    Counter stop(at);
    Poll stopping(stop.check());
    EXPECT_THROW(count(&stopping, &polled), Interrupted) << at;
  }
}

// The engine: one row of 1 MB (and short ones), on 1 and 3 threads, at 0.8 (LSH keys) and
// 0.5 (fingerprints): the same pairs with a check that never stops; interrupted wherever
// it stops, the check called on the calling thread only.
TEST(Poll, EngineAsksWhileAddingAndVerifying) {
  std::vector<std::string> texts;
  texts.push_back(varied_text(1 << 20, 5));
  texts.push_back(texts[0].substr(0, texts[0].size() - 1000));
  for (int i = 0; i < 300; ++i) texts.push_back(varied_text(200 + i, 100 + i));
  std::vector<std::int64_t> ids;
  std::vector<std::string_view> views;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    ids.push_back(static_cast<std::int64_t>(i) + 1);
    views.emplace_back(texts[i]);
  }
  auto run = [&](double t, int threads, Counter* c) {
    SimilarPairs engine(t, threads);
    if (c != nullptr) engine.set_interrupt(c->check());
    engine.add(ids.data(), views.data(), ids.size());
    std::vector<std::tuple<std::int64_t, std::int64_t, double>> pairs;
    std::vector<SimilarPair> buf(64);
    while (!engine.done()) {
      const std::size_t n = engine.next(buf.data(), buf.size(), 1 << 20);
      for (std::size_t i = 0; i < n; ++i)
        pairs.emplace_back(buf[i].id1, buf[i].id2, buf[i].similarity);
    }
    std::sort(pairs.begin(), pairs.end());
    return pairs;
  };
  for (double t : {0.8, 0.5}) {
    for (int threads : {1, 3}) {
      Counter never;
      const auto plain = run(t, threads, nullptr);
      EXPECT_EQ(run(t, threads, &never), plain) << t << " " << threads;
      EXPECT_GE(plain.size(), 1u);
      EXPECT_GT(never.calls, 20u);
      EXPECT_FALSE(never.other_thread);
      for (std::uint64_t at : {std::uint64_t{1}, never.calls.load() / 2}) {
        Counter stop(at);
        EXPECT_THROW(run(t, threads, &stop), Interrupted) << t << " " << threads << " " << at;
        EXPECT_FALSE(stop.other_thread);
      }
    }
  }
}

TEST(Poll, CapiReturnsInterrupted) {
  const std::string text = varied_text(3 << 20, 9);
  char err[64];
  simhash_similar* engine = nullptr;
  ASSERT_EQ(simhash_similar_create(0.8, 2, &engine, err, sizeof(err)), SIMHASH_OK);
  Counter stop(3);
  const simhash_interrupt poll = stop.c_check();
  simhash_similar_set_interrupt(engine, &poll);
  const std::int64_t id = 1;
  const char* data = text.data();
  const std::size_t len = text.size();
  EXPECT_EQ(simhash_similar_add(engine, &id, &data, &len, 1, err, sizeof(err)),
            SIMHASH_INTERRUPTED);
  EXPECT_STREQ(err, "interrupted");
  simhash_similar_free(engine);

  // the shingle counter: growing its table (of more than 64 K entries: one slice, then the
  // poll) and copying its set out
  std::vector<std::uint64_t> small(std::size_t{1} << 17);
  simhash_shingle_counter state;
  ASSERT_EQ(
      simhash_shingle_counter_begin(&state, 1 << 20, small.data(), small.size(), err, sizeof(err)),
      SIMHASH_OK);
  std::vector<std::uint64_t> big(std::size_t{1} << 22);
  Counter stop1(1);
  const simhash_interrupt poll1 = stop1.c_check();
  EXPECT_EQ(simhash_shingle_counter_grow(&state, big.data(), big.size(), &poll1, err, sizeof(err)),
            SIMHASH_INTERRUPTED);
  EXPECT_EQ(stop1.calls, 1u);
  ASSERT_EQ(
      simhash_shingle_counter_begin(&state, 1 << 20, big.data(), big.size(), err, sizeof(err)),
      SIMHASH_OK);
  std::uint64_t count = 0;
  ASSERT_EQ(simhash_shingle_counter_feed(&state, text.data(), 1 << 20, &count, err, sizeof(err)),
            SIMHASH_OK);
  std::vector<std::uint64_t> out(count);
  std::size_t n = 0;
  Counter stop2(2);
  const simhash_interrupt poll2 = stop2.c_check();
  EXPECT_EQ(
      simhash_shingle_counter_set(&state, out.data(), out.size(), &n, &poll2, err, sizeof(err)),
      SIMHASH_INTERRUPTED);
  const simhash_interrupt none{nullptr, nullptr};
  EXPECT_EQ(
      simhash_shingle_counter_set(&state, out.data(), out.size(), &n, &none, err, sizeof(err)),
      SIMHASH_OK);
  EXPECT_EQ(n, count);
}

}  // namespace
}  // namespace simhash
