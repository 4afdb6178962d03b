// libFuzzer target: block keys, probes, probe plans and lock keys through the C ABI
// (src/capi/search_capi.h over src/core/blocks.hpp and locks.hpp), behind simhash_block,
// simhash_block_probes, simhash_layout_blocks, the planner of simhash_near and the dedupe
// trigger's locks.
//
// Input: byte 0 blocks (% 20: 2..16 valid), byte 1 block (% 18), byte 2 radius (% 40 - 2),
// byte 3 k (% 20: 0..16 valid for lock keys, up to 19 for plans), bytes 4-5 the mask of
// present blocks, then fingerprint fp (8 bytes), the row count and the candidate cost of a
// plan (raw doubles: NaN, infinities, negatives and subnormals included), and the
// positions of up to k bits to flip in fp for a near duplicate.
//
// Checks, aborting on the first violation:
//  - the block functions refuse exactly the invalid blocks/block; a block value fits its
//    width;
//  - the probe count is the sum of binomial coefficients; the probes of a radius are
//    ascending, distinct, within the radius of the block value, as many as counted, and
//    for narrow blocks exactly the values a brute-force scan finds; a buffer that is too
//    small is refused;
//  - a feasible probe plan probes only present blocks, with radii within their widths
//    that cover k (sum of radius + 1 over probed blocks > k: the pigeonhole argument);
//    with every block present and k <= 64 a plan is always feasible; no plan crashes on any
//    row count or cost; simhash_choose_blocks returns 2..16 or refuses;
//  - lock keys are refused outside 0..16 and otherwise sorted, distinct and at most
//    SIMHASH_MAX_LOCK_KEYS; a fingerprint and any near duplicate within k bits share a key.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "capi/search_capi.h"
#include "fuzz_util.hpp"

namespace {

using simhash::fuzz::Input;

double raw_double(Input& in) {
  const std::uint64_t bits = in.u64();
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

std::uint64_t binomial_sum(int width, int radius) {
  if (radius < 0) return 0;
  std::uint64_t total = 0;
  for (int d = 0; d <= std::min(radius, width); ++d) {
    std::uint64_t c = 1;
    for (int i = 1; i <= d; ++i) c = c * static_cast<std::uint64_t>(width - d + i) / i;
    total += c;
  }
  return total;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  const int blocks = in.byte() % 20;
  const int block = in.byte() % 18;
  const int radius = in.byte() % 40 - 2;
  const int k = in.byte() % 20;
  const std::uint32_t mask = in.u16();
  const std::uint64_t fp = in.u64();
  const double rows = raw_double(in);
  const double cost = raw_double(in);
  simhash::fuzz::ErrBuf err(k * 3);

  const bool valid = blocks >= 2 && blocks <= 16 && block < blocks;
  std::uint32_t value = 0;
  simhash_status st = simhash_block_value(fp, blocks, block, &value, err.data(), err.cap());
  FUZZ_CHECK(st == (valid ? SIMHASH_OK : SIMHASH_INVALID_ARGUMENT));
  if (valid) {
    const int lo = 64 * block / blocks, width = 64 * (block + 1) / blocks - lo;
    FUZZ_CHECK(value == ((fp >> lo) & ((std::uint64_t{1} << width) - 1)));

    std::uint64_t count = 0;
    FUZZ_CHECK(simhash_block_probe_count(blocks, block, radius, &count, err.data(), err.cap()) ==
               SIMHASH_OK);
    FUZZ_CHECK(count == binomial_sum(width, radius));
    if (count <= 20000) {
      std::vector<std::uint32_t> probes(count + 1);
      std::size_t got = 0;
      FUZZ_CHECK(simhash_block_probes(fp, blocks, block, radius, probes.data(), probes.size(), &got,
                                      err.data(), err.cap()) == SIMHASH_OK);
      FUZZ_CHECK(got == count);
      for (std::size_t i = 0; i < got; ++i) {
        FUZZ_CHECK(__builtin_popcount(probes[i] ^ value) <= radius);
        FUZZ_CHECK(width == 32 || (probes[i] >> width) == 0);
        if (i > 0) FUZZ_CHECK(probes[i - 1] < probes[i]);
      }
      if (width <= 12 && radius >= 0) {
        std::size_t brute = 0;
        for (std::uint32_t v = 0; v < (1U << width); ++v) {
          if (__builtin_popcount(v ^ value) <= radius) {
            FUZZ_CHECK(brute < got && probes[brute] == v);
            ++brute;
          }
        }
        FUZZ_CHECK(brute == got);
      }
      if (count > 0) {
        FUZZ_CHECK(simhash_block_probes(fp, blocks, block, radius, probes.data(), count - 1, &got,
                                        err.data(), err.cap()) == SIMHASH_INVALID_ARGUMENT);
        err.check_terminated();
      }
    }
  }

  if (blocks >= 2 && blocks <= 16) {
    simhash_probe_plan plan;
    st = simhash_plan_probes(blocks, mask, k, rows, cost, &plan, err.data(), err.cap());
    if (!(cost >= 0)) {
      FUZZ_CHECK(st == SIMHASH_INVALID_ARGUMENT);
    } else {
      FUZZ_CHECK(st == SIMHASH_OK);
      if (plan.feasible) {
        int cover = 0;
        for (int i = 0; i < 16; ++i) {
          const int width = i < blocks ? 64 * (i + 1) / blocks - 64 * i / blocks : 0;
          FUZZ_CHECK(plan.radius[i] >= -1 && plan.radius[i] <= width);
          if (plan.radius[i] >= 0) {
            FUZZ_CHECK(i < blocks && ((mask >> i) & 1));
            cover += plan.radius[i] + 1;
          }
        }
        FUZZ_CHECK(cover > k);
      } else {
        FUZZ_CHECK((mask & ((1U << blocks) - 1)) != ((1U << blocks) - 1));
      }
    }
  }
  std::int32_t chosen = 0;
  st = simhash_choose_blocks(k, rows, &chosen, err.data(), err.cap());
  FUZZ_CHECK(st == SIMHASH_OK && chosen >= 2 && chosen <= 16);

  // Lock keys, and a near duplicate sharing one.
  std::uint32_t keys[SIMHASH_MAX_LOCK_KEYS], near_keys[SIMHASH_MAX_LOCK_KEYS];
  std::size_t nk = 0, nn = 0;
  st = simhash_lock_keys(fp, k, keys, SIMHASH_MAX_LOCK_KEYS, &nk, err.data(), err.cap());
  if (k > SIMHASH_MAX_LOCK_DISTANCE) {
    FUZZ_CHECK(st == SIMHASH_INVALID_ARGUMENT);
    return 0;
  }
  FUZZ_CHECK(st == SIMHASH_OK && nk >= 1 && nk <= SIMHASH_MAX_LOCK_KEYS);
  for (std::size_t i = 1; i < nk; ++i) FUZZ_CHECK(keys[i - 1] < keys[i]);
  std::uint64_t near = fp;
  for (int f = 0; f < k && !in.empty(); ++f) near ^= std::uint64_t{1} << (in.byte() & 63);
  FUZZ_CHECK(simhash_lock_keys(near, k, near_keys, SIMHASH_MAX_LOCK_KEYS, &nn, err.data(),
                               err.cap()) == SIMHASH_OK);
  bool shared = false;
  for (std::size_t i = 0; i < nk && !shared; ++i) {
    shared = std::binary_search(near_keys, near_keys + nn, keys[i]);
  }
  FUZZ_CHECK(shared);
  if (nk > 1) {
    FUZZ_CHECK(simhash_lock_keys(fp, k, keys, nk - 1, &nn, err.data(), err.cap()) ==
               SIMHASH_INVALID_ARGUMENT);
  }
  return 0;
}
