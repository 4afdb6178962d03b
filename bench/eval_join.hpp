// An exact all-pairs similarity join over shingle sets, for the evaluation programs: every
// pair of sets whose Jaccard similarity reaches a threshold, and a brute-force join to check
// it. The same method as eval_natural.cpp's join (prefix, size and positional filters, every
// candidate verified with simhash::overlap); kept here so that further programs need not
// copy it (eval_symbols.cpp uses it).
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <exception>
#include <functional>
#include <numeric>
#include <thread>
#include <vector>

#include "core/similarity.hpp"

namespace eval {

// Runs body(next) on `threads` threads; next(i) hands out 0, 1, 2, ... until n.
inline void run_parallel(
    unsigned threads, std::size_t n,
    const std::function<void(const std::function<bool(std::size_t&)>&)>& body) {
  std::atomic<std::size_t> counter{0};
  const std::function<bool(std::size_t&)> next = [&](std::size_t& i) {
    i = counter.fetch_add(1, std::memory_order_relaxed);
    return i < n;
  };
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(threads);
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      try {
        body(next);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  }
  for (auto& th : pool) th.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

struct SimPair {
  std::uint32_t a = 0, b = 0;  // item numbers, a < b
  std::uint32_t common = 0, united = 0;
  double jaccard() const { return static_cast<double>(common) / static_cast<double>(united); }
  bool operator==(const SimPair& o) const {
    return a == o.a && b == o.b && common == o.common && united == o.united;
  }
};

inline bool by_items(const SimPair& x, const SimPair& y) {
  return x.a != y.a ? x.a < y.a : x.b < y.b;
}

inline SimPair make_pair_of(std::size_t i, std::size_t j, const simhash::Overlap& o) {
  SimPair p;
  p.a = static_cast<std::uint32_t>(std::min(i, j));
  p.b = static_cast<std::uint32_t>(std::max(i, j));
  p.common = static_cast<std::uint32_t>(o.common);
  p.united = static_cast<std::uint32_t>(o.left + o.right - o.common);
  return p;
}

// Lower bounds on overlaps, rounded down a little so that rounding never prunes a true pair.
inline std::size_t ceil_down(double x) {
  const double c = std::ceil(x - 1e-9);
  return c < 0 ? 0 : static_cast<std::size_t>(c);
}

// Every pair of sets with Jaccard >= t (sets: ascending distinct hashes, none empty), sorted
// by items. Tokens are renamed by rank of rarity; each set's prefix of its
// |s| - ceil(t |s|) + 1 rarest tokens is indexed (two sets with J >= t share a prefix token).
// Sets are visited by size; set x probes the postings of its prefix tokens for the earlier
// sets y with |y| >= t |x| (size filter), and drops y once the tokens left cannot reach the
// overlap t / (1 + t) (|x| + |y|) (positional filter). Survivors are verified exactly.
inline std::vector<SimPair> similarity_join(const std::vector<std::vector<std::uint64_t>>& sets,
                                            double t, unsigned threads) {
  const std::size_t n = sets.size();
  std::vector<std::uint64_t> all;
  std::size_t total = 0;
  for (const auto& s : sets) total += s.size();
  all.reserve(total);
  for (const auto& s : sets) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  std::vector<std::uint64_t> tokens;
  std::vector<std::uint32_t> df;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i + 1;
    while (j < all.size() && all[j] == all[i]) ++j;
    tokens.push_back(all[i]);
    df.push_back(static_cast<std::uint32_t>(j - i));
    i = j;
  }
  std::vector<std::uint64_t>().swap(all);
  std::vector<std::uint32_t> by_rarity(tokens.size());
  std::iota(by_rarity.begin(), by_rarity.end(), 0U);
  std::stable_sort(by_rarity.begin(), by_rarity.end(),
                   [&](std::uint32_t x, std::uint32_t y) { return df[x] < df[y]; });
  std::vector<std::uint32_t> rank(tokens.size());
  for (std::size_t r = 0; r < by_rarity.size(); ++r) rank[by_rarity[r]] = static_cast<std::uint32_t>(r);

  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0U);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t x, std::uint32_t y) {
    return sets[x].size() < sets[y].size();
  });
  std::vector<std::size_t> size_at(n);
  for (std::size_t p = 0; p < n; ++p) size_at[p] = sets[order[p]].size();
  std::vector<std::vector<std::uint32_t>> ranked(n);
  run_parallel(threads, n, [&](const auto& next) {
    for (std::size_t p; next(p);) {
      const auto& s = sets[order[p]];
      auto& r = ranked[p];
      r.resize(s.size());
      for (std::size_t i = 0; i < s.size(); ++i) {
        const auto it = std::lower_bound(tokens.begin(), tokens.end(), s[i]);
        r[i] = rank[static_cast<std::size_t>(it - tokens.begin())];
      }
      std::sort(r.begin(), r.end());
    }
  });
  const auto prefix = [t](std::size_t size) {
    return size - std::max<std::size_t>(1, ceil_down(t * static_cast<double>(size))) + 1;
  };
  struct Posting {
    std::uint32_t pos;
    std::uint32_t at;
  };
  std::vector<std::size_t> start(tokens.size() + 1, 0);
  for (std::size_t p = 0; p < n; ++p) {
    for (std::size_t i = 0; i < prefix(size_at[p]); ++i) ++start[ranked[p][i] + 1];
  }
  for (std::size_t r = 0; r < tokens.size(); ++r) start[r + 1] += start[r];
  std::vector<Posting> postings(start.back());
  {
    std::vector<std::size_t> fill(start.begin(), start.end() - 1);
    for (std::size_t p = 0; p < n; ++p) {
      for (std::size_t i = 0; i < prefix(size_at[p]); ++i) {
        postings[fill[ranked[p][i]]++] =
            Posting{static_cast<std::uint32_t>(p), static_cast<std::uint32_t>(i)};
      }
    }
  }
  std::vector<std::vector<SimPair>> found(threads);
  std::atomic<unsigned> worker{0};
  run_parallel(threads, n, [&](const auto& next) {
    auto& out = found[worker.fetch_add(1)];
    std::vector<std::int32_t> acc(n, 0);  // shared prefix tokens; -1: pruned
    std::vector<std::uint32_t> touched;
    for (std::size_t p; next(p);) {
      const std::size_t sx = size_at[p];
      const std::size_t min_size = ceil_down(t * static_cast<double>(sx));
      const std::size_t lo = static_cast<std::size_t>(
          std::lower_bound(size_at.begin(), size_at.end(), min_size) - size_at.begin());
      if (lo >= p) continue;
      const auto& rx = ranked[p];
      for (std::size_t i = 0; i < prefix(sx); ++i) {
        const Posting* b = postings.data() + start[rx[i]];
        const Posting* e = postings.data() + start[rx[i] + 1];
        b = std::lower_bound(b, e, lo, [](const Posting& q, std::size_t v) { return q.pos < v; });
        for (; b != e && b->pos < p; ++b) {
          std::int32_t& a = acc[b->pos];
          if (a < 0) continue;
          const std::size_t sy = size_at[b->pos];
          const std::size_t need = ceil_down(t / (1 + t) * static_cast<double>(sx + sy));
          const std::size_t bound =
              static_cast<std::size_t>(a) + 1 + std::min(sx - i - 1, sy - b->at - 1);
          if (a == 0) touched.push_back(b->pos);
          if (bound < need) {
            a = -1;
          } else {
            ++a;
          }
        }
      }
      const auto& x = sets[order[p]];
      for (const std::uint32_t q : touched) {
        if (acc[q] > 0) {
          const auto& y = sets[order[q]];
          const simhash::Overlap o = simhash::overlap(x.data(), x.size(), y.data(), y.size());
          if (simhash::jaccard(o) >= t) out.push_back(make_pair_of(order[p], order[q], o));
        }
        acc[q] = 0;
      }
      touched.clear();
    }
  });
  std::vector<SimPair> pairs;
  for (auto& f : found) pairs.insert(pairs.end(), f.begin(), f.end());
  std::sort(pairs.begin(), pairs.end(), by_items);
  return pairs;
}

// Every pair among the first n sets with Jaccard >= t, by comparing all pairs (only the size
// bound skips merges); sorted by items.
inline std::vector<SimPair> brute_force_join(const std::vector<std::vector<std::uint64_t>>& sets,
                                             std::size_t n, double t, unsigned threads) {
  n = std::min(n, sets.size());
  std::vector<std::vector<SimPair>> rows(n);
  run_parallel(threads, n, [&](const auto& next) {
    for (std::size_t i; next(i);) {
      for (std::size_t j = i + 1; j < n; ++j) {
        if (simhash::jaccard_bound(sets[i].size(), sets[j].size()) < t) continue;
        const simhash::Overlap o =
            simhash::overlap(sets[i].data(), sets[i].size(), sets[j].data(), sets[j].size());
        if (simhash::jaccard(o) >= t) rows[i].push_back(make_pair_of(i, j, o));
      }
    }
  });
  std::vector<SimPair> pairs;
  for (auto& r : rows) pairs.insert(pairs.end(), r.begin(), r.end());
  return pairs;
}

}  // namespace eval
