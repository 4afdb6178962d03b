#include "core/locks.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/mix.hpp"
#include "core/siphash.hpp"

namespace simhash {

namespace {

double binomial(int n, int r) {
  double c = 1;
  for (int i = 1; i <= r; ++i) c = c * (n - r + i) / i;
  return c;
}

// Bits [64 i / m, 64 (i + 1) / m) of fp, as in blocks.hpp (which stops at 16 blocks).
std::uint64_t bits_of(std::uint64_t fp, int m, int i) {
  const int lo = 64 * i / m;
  const int w = 64 * (i + 1) / m - lo;
  return w == 64 ? fp : (fp >> lo) & ((std::uint64_t{1} << w) - 1);
}

}  // namespace

LockScheme lock_scheme(int k) {
  if (k < 0 || k > kMaxLockDistance) {
    throw std::invalid_argument("distance must be between 0 and " +
                                std::to_string(kMaxLockDistance) + ", got " + std::to_string(k));
  }
  LockScheme s;
  s.k = k;
  for (int r = 1; r <= 64 - k; ++r) {
    const double keys = binomial(k + r, r);
    if (keys > kMaxLockKeys) break;
    s.agree = r;
    s.blocks = k + r;
    s.keys = static_cast<int>(keys);
    if (64.0 * r / (k + r) >= kMinKeyBits) break;
  }
  return s;
}

std::vector<std::uint32_t> lock_keys(std::uint64_t fp, int k) {
  const LockScheme s = lock_scheme(k);
  std::vector<std::uint32_t> keys;
  keys.reserve(static_cast<std::size_t>(s.keys));
  // Every choice of s.agree blocks out of s.blocks, in lexicographic order.
  std::vector<int> pick(static_cast<std::size_t>(s.agree));
  for (int i = 0; i < s.agree; ++i) pick[static_cast<std::size_t>(i)] = i;
  for (std::uint64_t choice = 0;; ++choice) {
    std::uint64_t h = mix64(choice + 0x9E3779B97F4A7C15ULL * static_cast<std::uint64_t>(k + 1));
    for (int b : pick) h = mix64(h ^ bits_of(fp, s.blocks, b));
    keys.push_back(static_cast<std::uint32_t>(h >> 32));
    int i = s.agree - 1;
    while (i >= 0 && pick[static_cast<std::size_t>(i)] == s.blocks - s.agree + i) --i;
    if (i < 0) break;
    ++pick[static_cast<std::size_t>(i)];
    for (int j = i + 1; j < s.agree; ++j) {
      pick[static_cast<std::size_t>(j)] = pick[static_cast<std::size_t>(j) - 1] + 1;
    }
  }
  keys.resize(sort_distinct(keys.data(), keys.size()));
  return keys;
}

std::size_t lock_key_bound(int k) { return static_cast<std::size_t>(lock_scheme(k).keys); }

namespace {

// Keys keys[0..n) in place, then sorts them and drops repeats (keying keeps no order).
std::size_t key_all(std::uint32_t* keys, std::size_t n, const LockSecret& secret) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    keys[i] = keyed_lock_key(keys[i], secret.table, secret.k0, secret.k1);
  }
  return sort_distinct(keys, n);
}

}  // namespace

std::vector<std::uint32_t> row_lock_keys(std::uint64_t fp, int k, const LockSecret& secret) {
  std::vector<std::uint32_t> keys = lock_keys(fp, k);
  keys.resize(key_all(keys.data(), keys.size(), secret));
  return keys;
}

std::size_t lsh_row_lock_keys(const std::int64_t* lsh, std::size_t n, const LockSecret& secret,
                              std::uint32_t* out) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    const auto key = static_cast<std::uint64_t>(lsh[i]);
    out[i] = static_cast<std::uint32_t>(key ^ (key >> 32));
  }
  return key_all(out, n, secret);
}

std::size_t sort_distinct(std::uint32_t* keys, std::size_t n) noexcept {
  std::sort(keys, keys + n);
  return static_cast<std::size_t>(std::unique(keys, keys + n) - keys);
}

}  // namespace simhash
