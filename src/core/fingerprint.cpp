#include "core/fingerprint.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <string>

// xxHash as static inline functions (token_hash.hpp defines XXH_INLINE_ALL): no xxHash
// symbol leaves this object file, so another library loaded in the same process cannot
// clash with ours.
#include "core/isa.hpp"
#include "core/token_hash.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#define SIMHASH_X86_DISPATCH 1
#include <immintrin.h>
#endif

namespace simhash {

void validate(const Options& options) {
  if (options.shingle < 1 || options.shingle > kMaxShingle) {
    throw std::invalid_argument("shingle size must be between 1 and " +
                                std::to_string(kMaxShingle) + ", got " +
                                std::to_string(options.shingle));
  }
}

std::uint64_t hash_bytes(const void* data, std::size_t len) noexcept {
  return XXH3_64bits_withSeed(data, len, kSeed);
}

namespace detail {

namespace {

Isa detect_isa() noexcept {
#if SIMHASH_X86_DISPATCH
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512bw")) {
    return Isa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2")) return Isa::kAvx2;
#endif
  return Isa::kPortable;
}

// -1: not detected yet. Relaxed atomics (constant-initialized, no code at load): two
// threads detecting at once store the same value.
std::atomic<int> g_best_isa{-1};
std::atomic<int> g_isa_limit{static_cast<int>(Isa::kAvx512)};

}  // namespace

Isa best_isa() noexcept {
  int best = g_best_isa.load(std::memory_order_relaxed);
  if (best < 0) {
    best = static_cast<int>(detect_isa());
    g_best_isa.store(best, std::memory_order_relaxed);
  }
  return static_cast<Isa>(best);
}

Isa active_isa() noexcept {
  const int best = static_cast<int>(best_isa());
  const int limit = g_isa_limit.load(std::memory_order_relaxed);
  return static_cast<Isa>(best < limit ? best : limit);
}

void limit_isa(Isa max) noexcept {
  g_isa_limit.store(static_cast<int>(max), std::memory_order_relaxed);
}

const char* isa_name(Isa isa) noexcept {
  switch (isa) {
    case Isa::kPortable:
      return "portable";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "?";
}

template <Stage S>
BasicFeatureSink<S>::BasicFeatureSink(int shingle) noexcept
    : n_(static_cast<unsigned>(shingle)), defer_ascii_(active_isa() == Isa::kAvx512) {
  // The hashes before the first token (never read: the first features are not complete).
  // The rest of the batch is written before it is read.
  std::memset(hashes_, 0, sizeof(std::uint64_t) * kCarry);
}

template <Stage S>
inline void BasicFeatureSink<S>::token(const unsigned char* bytes, std::size_t len) noexcept {
  if constexpr (S == Stage::kTokenize) {
    checksum_ += len;
    return;
  }
  // A character of 3-byte UTF-8 (every CJK unit without a mark) is most tokens of CJK text:
  // its hash with the length known here, inlined.
  if (len == 3) {
    push(xxh3::len1to3<false>(bytes, 3, kSeed));
    return;
  }
  push(detail::token_hash(bytes, len, kSeed));
}

template <Stage S>
inline void BasicFeatureSink<S>::ascii_token(const unsigned char* raw, std::size_t len) noexcept {
  if constexpr (S == Stage::kTokenize) {
    checksum_ += len;
    return;
  }
  const auto at = reinterpret_cast<std::uintptr_t>(raw);
  // Both 8-byte reads must stay inside the chunk: [raw, raw + 8) and [raw + len - 8, raw + len).
  if (defer_ascii_ && len <= 16 && at - input_begin_ >= 8 && input_end_ - at >= 8) {
    hashes_[kCarry + nbuf_] = xxh3::le64(raw) | 0x2020202020202020ULL;
    last8_[nbuf_] = xxh3::le64(raw + len - 8) | 0x2020202020202020ULL;
    pending_len_[nbuf_] = static_cast<std::uint8_t>(len);
    if (++nbuf_ >= kBatch) flush();
    return;
  }
  push(detail::token_hash<true>(raw, len, kSeed));
}

template <Stage S>
void BasicFeatureSink<S>::unit_tokens(const unsigned char* bytes, std::size_t n) noexcept {
  if constexpr (S == Stage::kTokenize) {
    checksum_ += 3 * n;
    return;
  }
  // The count stays in a register: flushing (when the batch is full) sets nbuf_ to 0.
  unsigned k = nbuf_;
  const unsigned char* const end = bytes + 3 * n;
  for (; bytes != end; bytes += 3) {
    hashes_[kCarry + k] = xxh3::len1to3<false>(bytes, 3, kSeed);
    pending_len_[k] = 0;
    if (++k >= kBatch) {
      nbuf_ = k;
      flush();
      k = 0;
    }
  }
  nbuf_ = k;
}

template <Stage S>
void BasicFeatureSink<S>::ascii_block(const unsigned char* base, std::uint64_t starts,
                                      std::uint64_t ends) noexcept {
  if (S == Stage::kTokenize || !defer_ascii_) {
    while (starts != 0) {
      const auto s = static_cast<unsigned>(__builtin_ctzll(starts));
      const auto e = static_cast<unsigned>(__builtin_ctzll(ends));
      starts &= starts - 1;
      ends &= ends - 1;
      ascii_token(base + s, e - s);
    }
    return;
  }
  // Each word's first 8 bytes and last 8 bytes are read, up to 8 bytes either side of the
  // block: from a padded copy of it near the ends of the chunk.
  const auto at = reinterpret_cast<std::uintptr_t>(base);
  if (at - input_begin_ >= 8 && input_end_ - at >= 72) {
    nbuf_ = defer_block<false>(base, starts, ends, nbuf_);
  } else {
    nbuf_ = defer_block<true>(base, starts, ends, nbuf_);
  }
  if (nbuf_ >= kBatch) flush();
}

// Puts the words of an ascii_block() into the batch from entry k on, as ascii_token() does,
// in a loop that keeps k in a register; returns the new count. At most 32 words.
template <Stage S>
template <bool Copy>
unsigned BasicFeatureSink<S>::defer_block(const unsigned char* base, std::uint64_t starts,
                                          std::uint64_t ends, unsigned k) noexcept {
  constexpr std::uint64_t kLower = 0x2020202020202020ULL;
  unsigned char padded[8 + 64 + 8] = {};
  const unsigned char* p = base;
  if constexpr (Copy) {
    std::memcpy(padded + 8, base, 64);
    p = padded + 8;
  }
  while (starts != 0) {
    const auto s = static_cast<unsigned>(__builtin_ctzll(starts));
    const auto e = static_cast<unsigned>(__builtin_ctzll(ends));
    starts &= starts - 1;
    ends &= ends - 1;
    const unsigned len = e - s;
    if (len <= 16) {
      hashes_[kCarry + k] = xxh3::le64(p + s) | kLower;
      last8_[k] = xxh3::le64(p + e - 8) | kLower;
      pending_len_[k] = static_cast<std::uint8_t>(len);
    } else {
      hashes_[kCarry + k] = detail::token_hash<true>(p + s, len, kSeed);
      pending_len_[k] = 0;
    }
    ++k;
  }
  return k;
}

namespace {
// Feature hashes of the windows of N tokens ending at h[first..m), written to out; h[-N+1..0)
// are the tokens before. Returns the number of features.
template <unsigned N>
unsigned shingle(const std::uint64_t* h, unsigned first, unsigned m, std::uint64_t* out) noexcept {
  unsigned k = 0;
  for (unsigned j = first; j < m; ++j) out[k++] = combine(h + j + 1 - N, N);
  return k;
}

#if SIMHASH_X86_DISPATCH
// GCC 12 warns about the deliberately undefined pass-through operand inside its own
// AVX-512 shift intrinsics (a known false positive of -Wmaybe-uninitialized).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// The same with AVX-512: combine() of 8 windows at once, one 64-bit lane each (vpmullq is
// the 64-bit multiply that AVX2 lacks).
template <unsigned N>
__attribute__((target("avx512f,avx512dq"))) unsigned shingle_avx512(const std::uint64_t* h,
                                                                    unsigned first, unsigned m,
                                                                    std::uint64_t* out) noexcept {
  const __m512i golden = _mm512_set1_epi64(static_cast<long long>(0x9E3779B97F4A7C15ULL));
  const __m512i mix1 = _mm512_set1_epi64(static_cast<long long>(0xFF51AFD7ED558CCDULL));
  const __m512i mix2 = _mm512_set1_epi64(static_cast<long long>(0xC4CEB9FE1A85EC53ULL));
  unsigned j = first, k = 0;
  for (; j + 8 <= m; j += 8, k += 8) {
    __m512i acc = _mm512_set1_epi64(static_cast<long long>(kSeed));
    for (unsigned i = 0; i < N; ++i) {  // combine()
      const __m512i x = _mm512_loadu_si512(h + j + 1 - N + i);
      acc = _mm512_mullo_epi64(_mm512_xor_si512(acc, x), golden);
      acc = _mm512_xor_si512(acc, _mm512_srli_epi64(acc, 32));
    }
    acc = _mm512_xor_si512(acc, _mm512_srli_epi64(acc, 33));  // mix64()
    acc = _mm512_mullo_epi64(acc, mix1);
    acc = _mm512_xor_si512(acc, _mm512_srli_epi64(acc, 33));
    acc = _mm512_mullo_epi64(acc, mix2);
    acc = _mm512_xor_si512(acc, _mm512_srli_epi64(acc, 33));
    _mm512_storeu_si512(out + k, acc);
  }
  for (; j < m; ++j) out[k++] = combine(h + j + 1 - N, N);
  return k;
}
#pragma GCC diagnostic pop

// The same with AVX2, 4 windows at once. AVX2 has no 64-bit lane multiply: a * k mod 2^64
// is lo(a) lo(k) + ((hi(a) lo(k) + lo(a) hi(k)) << 32), three 32x32->64 multiplies.
__attribute__((target("avx2"))) inline __m256i mul64_avx2(__m256i a, __m256i k,
                                                          __m256i k_hi) noexcept {
  const __m256i lo_lo = _mm256_mul_epu32(a, k);
  const __m256i hi_lo = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), k);
  const __m256i lo_hi = _mm256_mul_epu32(a, k_hi);
  return _mm256_add_epi64(lo_lo, _mm256_slli_epi64(_mm256_add_epi64(hi_lo, lo_hi), 32));
}

template <unsigned N>
__attribute__((target("avx2"))) unsigned shingle_avx2(const std::uint64_t* h, unsigned first,
                                                      unsigned m, std::uint64_t* out) noexcept {
  constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ULL;
  constexpr std::uint64_t kMix1 = 0xFF51AFD7ED558CCDULL;
  constexpr std::uint64_t kMix2 = 0xC4CEB9FE1A85EC53ULL;
  const __m256i golden = _mm256_set1_epi64x(static_cast<long long>(kGolden));
  const __m256i golden_hi = _mm256_set1_epi64x(static_cast<long long>(kGolden >> 32));
  const __m256i mix1 = _mm256_set1_epi64x(static_cast<long long>(kMix1));
  const __m256i mix1_hi = _mm256_set1_epi64x(static_cast<long long>(kMix1 >> 32));
  const __m256i mix2 = _mm256_set1_epi64x(static_cast<long long>(kMix2));
  const __m256i mix2_hi = _mm256_set1_epi64x(static_cast<long long>(kMix2 >> 32));
  unsigned j = first, k = 0;
  for (; j + 4 <= m; j += 4, k += 4) {
    __m256i acc = _mm256_set1_epi64x(static_cast<long long>(kSeed));
    for (unsigned i = 0; i < N; ++i) {  // combine()
      const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + j + 1 - N + i));
      acc = mul64_avx2(_mm256_xor_si256(acc, x), golden, golden_hi);
      acc = _mm256_xor_si256(acc, _mm256_srli_epi64(acc, 32));
    }
    acc = _mm256_xor_si256(acc, _mm256_srli_epi64(acc, 33));  // mix64()
    acc = mul64_avx2(acc, mix1, mix1_hi);
    acc = _mm256_xor_si256(acc, _mm256_srli_epi64(acc, 33));
    acc = mul64_avx2(acc, mix2, mix2_hi);
    acc = _mm256_xor_si256(acc, _mm256_srli_epi64(acc, 33));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + k), acc);
  }
  for (; j < m; ++j) out[k++] = combine(h + j + 1 - N, N);
  return k;
}
#endif

// XXH3 of a token of len (1..16) bytes given its first and last 8 bytes (the same bytes
// XXH3's short-input branches read), as in token_hash.hpp.
inline std::uint64_t hash_first_last(std::uint64_t first, std::uint64_t last,
                                     std::uint64_t len) noexcept {
  using namespace xxh3;
  if (len > 8) {
    const std::uint64_t lo = first ^ ((secret64(24) ^ secret64(32)) + kSeed);
    const std::uint64_t hi = last ^ ((secret64(40) ^ secret64(48)) - kSeed);
    return avalanche(len + __builtin_bswap64(lo) + hi + mul128_fold64(lo, hi));
  }
  if (len >= 4) {
    const std::uint64_t seed =
        kSeed ^ (std::uint64_t{__builtin_bswap32(static_cast<std::uint32_t>(kSeed))} << 32);
    return rrmxmx(((last >> 32) + (first << 32)) ^ ((secret64(8) ^ secret64(16)) - seed), len);
  }
  const std::uint64_t combined = ((first & 0xFF) << 16) |
                                 (((first >> (8 * (len >> 1))) & 0xFF) << 24) |
                                 ((first >> (8 * (len - 1))) & 0xFF) | (len << 8);
  return xxh64_avalanche(combined ^ ((secret32(0) ^ secret32(4)) + kSeed));
}

void hash_pending_portable(std::uint64_t* hashes, const std::uint64_t* last8,
                           const std::uint8_t* len, unsigned m) noexcept {
  for (unsigned i = 0; i < m; ++i) {
    if (len[i] != 0) hashes[i] = hash_first_last(hashes[i], last8[i], len[i]);
  }
}

#if SIMHASH_X86_DISPATCH
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // see shingle_avx512
#define SIMHASH_AVX512_LANES \
  __attribute__((target("avx512f,avx512dq,avx512bw"), always_inline)) inline

// XXH3's constants for short inputs, broadcast to 8 lanes.
struct ShortHashLanes {
  __m512i flip13, flip48, flip916a, flip916b, prime2, prime3, mx1, mx2, byte, low32, one, bswap;
  __m512i c28, c29, c32, c35, c64;  // shift counts
};

SIMHASH_AVX512_LANES ShortHashLanes short_hash_lanes() noexcept {
  using namespace xxh3;
  const std::uint64_t seed48 =
      kSeed ^ (std::uint64_t{__builtin_bswap32(static_cast<std::uint32_t>(kSeed))} << 32);
  ShortHashLanes k;
  k.flip13 = _mm512_set1_epi64(static_cast<long long>((secret32(0) ^ secret32(4)) + kSeed));
  k.flip48 = _mm512_set1_epi64(static_cast<long long>((secret64(8) ^ secret64(16)) - seed48));
  k.flip916a = _mm512_set1_epi64(static_cast<long long>((secret64(24) ^ secret64(32)) + kSeed));
  k.flip916b = _mm512_set1_epi64(static_cast<long long>((secret64(40) ^ secret64(48)) - kSeed));
  k.prime2 = _mm512_set1_epi64(static_cast<long long>(kPrime64_2));
  k.prime3 = _mm512_set1_epi64(static_cast<long long>(kPrime64_3));
  k.mx1 = _mm512_set1_epi64(static_cast<long long>(kPrimeMx1));
  k.mx2 = _mm512_set1_epi64(static_cast<long long>(kPrimeMx2));
  k.byte = _mm512_set1_epi64(0xFF);
  k.low32 = _mm512_set1_epi64(0xFFFFFFFF);
  k.one = _mm512_set1_epi64(1);
  k.c28 = _mm512_set1_epi64(28);
  k.c29 = _mm512_set1_epi64(29);
  k.c32 = _mm512_set1_epi64(32);
  k.c35 = _mm512_set1_epi64(35);
  k.c64 = _mm512_set1_epi64(64);
  // byte reversal within each 64-bit lane
  k.bswap = _mm512_set_epi8(
      56, 57, 58, 59, 60, 61, 62, 63, 48, 49, 50, 51, 52, 53, 54, 55, 40, 41, 42, 43, 44, 45, 46,
      47, 32, 33, 34, 35, 36, 37, 38, 39, 24, 25, 26, 27, 28, 29, 30, 31, 16, 17, 18, 19, 20, 21,
      22, 23, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
  return k;
}

// XXH3's three short branches end alike: a mix, a multiply, a shift-xor (plus the length,
// for 4..8 bytes), a multiply, a shift-xor. So each lane computes only its branch's value up
// to the first multiply, and the two multiplies and the shifts are done once for all lanes
// with per-lane constants (the 9..16 branch has a single multiply: its second is by 1, and
// its last shift by 64 xors in 0).
//
// 1..3 bytes: the first, middle and last byte and the length, XXH64's avalanche up to its
// first multiply (by prime2, then >> 29, prime3, >> 32).
SIMHASH_AVX512_LANES __m512i short_hash_1to3(const ShortHashLanes& k, __m512i first,
                                             __m512i len) noexcept {
  const __m512i c1 = _mm512_and_si512(first, k.byte);
  const __m512i c2 = _mm512_and_si512(
      _mm512_srlv_epi64(first, _mm512_slli_epi64(_mm512_srli_epi64(len, 1), 3)), k.byte);
  const __m512i c3 = _mm512_and_si512(
      _mm512_srlv_epi64(first, _mm512_slli_epi64(_mm512_sub_epi64(len, k.one), 3)), k.byte);
  __m512i h = _mm512_or_si512(_mm512_or_si512(_mm512_slli_epi64(c1, 16), _mm512_slli_epi64(c2, 24)),
                              _mm512_or_si512(c3, _mm512_slli_epi64(len, 8)));
  h = _mm512_xor_si512(h, k.flip13);
  return _mm512_xor_si512(h, _mm512_srli_epi64(h, 33));
}

// 4..8 bytes: first and last 4 bytes, rrmxmx up to its first multiply (by mx2, then
// ^= (>> 35) + len, mx2, >> 28).
SIMHASH_AVX512_LANES __m512i short_hash_4to8(const ShortHashLanes& k, __m512i first,
                                             __m512i last) noexcept {
  const __m512i h = _mm512_xor_si512(
      _mm512_add_epi64(_mm512_srli_epi64(last, 32), _mm512_slli_epi64(first, 32)), k.flip48);
  return _mm512_xor_si512(h, _mm512_xor_si512(_mm512_rol_epi64(h, 49), _mm512_rol_epi64(h, 24)));
}

// 9..16 bytes: first and last 8 bytes, a 64x64->128 multiply folded, XXH3's avalanche up to
// its multiply (by mx1, then >> 32).
SIMHASH_AVX512_LANES __m512i short_hash_9to16(const ShortHashLanes& k, __m512i first,
                                              __m512i last, __m512i len) noexcept {
  const __m512i lo = _mm512_xor_si512(first, k.flip916a);
  const __m512i hi = _mm512_xor_si512(last, k.flip916b);
  const __m512i lo_hi32 = _mm512_srli_epi64(lo, 32), hi_hi32 = _mm512_srli_epi64(hi, 32);
  const __m512i ll = _mm512_mul_epu32(lo, hi);
  const __m512i lh = _mm512_mul_epu32(lo, hi_hi32);
  const __m512i hl = _mm512_mul_epu32(lo_hi32, hi);
  const __m512i hh = _mm512_mul_epu32(lo_hi32, hi_hi32);
  const __m512i cross =
      _mm512_add_epi64(_mm512_add_epi64(_mm512_srli_epi64(ll, 32), _mm512_and_si512(lh, k.low32)),
                       _mm512_and_si512(hl, k.low32));
  const __m512i product_lo =
      _mm512_or_si512(_mm512_slli_epi64(cross, 32), _mm512_and_si512(ll, k.low32));
  const __m512i product_hi =
      _mm512_add_epi64(_mm512_add_epi64(hh, _mm512_srli_epi64(lh, 32)),
                       _mm512_add_epi64(_mm512_srli_epi64(hl, 32), _mm512_srli_epi64(cross, 32)));
  const __m512i h =
      _mm512_add_epi64(_mm512_add_epi64(len, _mm512_shuffle_epi8(lo, k.bswap)),
                       _mm512_add_epi64(hi, _mm512_xor_si512(product_lo, product_hi)));
  return _mm512_xor_si512(h, _mm512_srli_epi64(h, 37));
}

// The rest of the three branches, for 8 lanes: x from the branch of each lane's length
// (1..3 where short13, 9..16 where long916, 4..8 elsewhere).
SIMHASH_AVX512_LANES __m512i short_hash_finish(const ShortHashLanes& k, __m512i x, __m512i len,
                                               __mmask8 short13, __mmask8 long916) noexcept {
  const __m512i first_mul =
      _mm512_mask_blend_epi64(long916, _mm512_mask_blend_epi64(short13, k.mx2, k.prime2), k.mx1);
  const __m512i second_mul =
      _mm512_mask_blend_epi64(long916, _mm512_mask_blend_epi64(short13, k.mx2, k.prime3), k.one);
  const __m512i shift2 =
      _mm512_mask_blend_epi64(long916, _mm512_mask_blend_epi64(short13, k.c35, k.c29), k.c32);
  const __m512i shift3 =
      _mm512_mask_blend_epi64(long916, _mm512_mask_blend_epi64(short13, k.c28, k.c32), k.c64);
  const __m512i plus_len = _mm512_maskz_mov_epi64(static_cast<__mmask8>(~(short13 | long916)), len);
  x = _mm512_mullo_epi64(x, first_mul);
  x = _mm512_xor_si512(x, _mm512_add_epi64(_mm512_srlv_epi64(x, shift2), plus_len));
  x = _mm512_mullo_epi64(x, second_mul);
  return _mm512_xor_si512(x, _mm512_srlv_epi64(x, shift3));
}

// The same for 8 entries at once: each lane's branch of XXH3's short ones picked by its
// length (or the hash already there, for length 0). No branch but whether any lane has
// 9..16 bytes.
__attribute__((target("avx512f,avx512dq,avx512bw"))) void hash_pending_avx512(
    std::uint64_t* hashes, const std::uint64_t* last8, const std::uint8_t* lengths,
    unsigned m) noexcept {
  const ShortHashLanes k = short_hash_lanes();
  // Which entries wait to be hashed: one test of the 64 length bytes (the caller's batch
  // holds 64; those past m are not part of it). In text that is mostly not ASCII, most groups of 8
  // have none.
  const __m512i all_lengths = _mm512_loadu_si512(lengths);
  const std::uint64_t waiting = _mm512_test_epi8_mask(all_lengths, all_lengths) &
                                (m == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << m) - 1);
  for (unsigned i = 0; i < m; i += 8) {
    if (((waiting >> i) & 0xFF) == 0) continue;
    const __mmask8 live = static_cast<__mmask8>(m - i >= 8 ? 0xFF : (1U << (m - i)) - 1);
    const __m512i first = _mm512_maskz_loadu_epi64(live, hashes + i);
    const __m512i last = _mm512_maskz_loadu_epi64(live, last8 + i);
    // (Entries past m are not part of the batch: their lengths are read but not stored.)
    const __m512i len =
        _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(lengths + i)));
    const __mmask8 short13 = _mm512_cmple_epu64_mask(len, _mm512_set1_epi64(3));
    const __mmask8 long916 = _mm512_cmpgt_epu64_mask(len, _mm512_set1_epi64(8));
    const __mmask8 hashed = _mm512_cmpeq_epu64_mask(len, _mm512_setzero_si512());
    __m512i x = _mm512_mask_blend_epi64(short13, short_hash_4to8(k, first, last),
                                        short_hash_1to3(k, first, len));
    if ((long916 & live) != 0) {
      x = _mm512_mask_blend_epi64(long916, x, short_hash_9to16(k, first, last, len));
    }
    x = _mm512_mask_blend_epi64(hashed, short_hash_finish(k, x, len, short13, long916), first);
    _mm512_mask_storeu_epi64(hashes + i, live, x);
  }
}
#undef SIMHASH_AVX512_LANES
#pragma GCC diagnostic pop
#endif

template <unsigned N>
unsigned shingle_best(const std::uint64_t* h, unsigned first, unsigned m, std::uint64_t* out,
                      Isa isa) noexcept {
#if SIMHASH_X86_DISPATCH
  if (isa == Isa::kAvx512) return shingle_avx512<N>(h, first, m, out);
  if (isa == Isa::kAvx2) return shingle_avx2<N>(h, first, m, out);
#endif
  (void)isa;
  return shingle<N>(h, first, m, out);
}
}  // namespace

template <Stage S>
void BasicFeatureSink<S>::hash_pending() noexcept {
  static_assert(sizeof pending_len_ % 64 == 0, "hash_pending_avx512 reads 64 lengths at once");
  if (!defer_ascii_) return;
#if SIMHASH_X86_DISPATCH
  if (active_isa() == Isa::kAvx512) {
    for (unsigned i = 0; i < nbuf_; i += 64) {
      hash_pending_avx512(hashes_ + kCarry + i, last8_ + i, pending_len_ + i,
                          nbuf_ - i < 64 ? nbuf_ - i : 64);
    }
    return;
  }
#endif
  hash_pending_portable(hashes_ + kCarry, last8_, pending_len_, nbuf_);
}

template <Stage S>
void BasicFeatureSink<S>::flush() noexcept {
  hash_pending();
  const unsigned m = nbuf_;
  const std::uint64_t* h = hashes_ + kCarry;
  if (S == Stage::kHash || (S == Stage::kShingle && n_ == 1)) {
    for (unsigned i = 0; i < m; ++i) checksum_ ^= h[i];
  } else if (n_ == 1) {
    counter_.add_many(h, m);
  } else {
    // The window ending at token tokens_ + j is complete from token n - 1 on.
    const unsigned first =
        tokens_ >= n_ - 1 ? 0 : static_cast<unsigned>(std::min<std::uint64_t>(n_ - 1 - tokens_, m));
    std::uint64_t features[kRoom];
    const Isa isa = active_isa();
    unsigned k;
    switch (n_) {  // every size unrolled; the same result as combine(h + j + 1 - n, n)
      case 2:
        k = shingle_best<2>(h, first, m, features, isa);
        break;
      case 3:
        k = shingle_best<3>(h, first, m, features, isa);
        break;
      case 4:
        k = shingle_best<4>(h, first, m, features, isa);
        break;
      case 5:
        k = shingle_best<5>(h, first, m, features, isa);
        break;
      case 6:
        k = shingle_best<6>(h, first, m, features, isa);
        break;
      case 7:
        k = shingle_best<7>(h, first, m, features, isa);
        break;
      default:
        static_assert(kMaxShingle == 8, "one case per shingle size");
        k = shingle_best<8>(h, first, m, features, isa);
        break;
    }
    if constexpr (S == Stage::kShingle) {
      for (unsigned i = 0; i < k; ++i) checksum_ ^= features[i];
    } else {
      counter_.add_many(features, k);
    }
  }
  tokens_ += m;
  for (unsigned i = 0; i < kCarry; ++i) hashes_[i] = hashes_[i + m];
  nbuf_ = 0;
}

template <Stage S>
void BasicFeatureSink<S>::finish() noexcept {
  if constexpr (S == Stage::kTokenize) return;
  const std::uint64_t total = tokens_ + nbuf_;
  if (S != Stage::kHash && total > 0 && total < n_) {
    // Fewer than n tokens, all in this batch (a batch holds more than kMaxShingle).
    hash_pending();
    const std::uint64_t feature = combine(hashes_ + kCarry, static_cast<unsigned>(total));
    if constexpr (S == Stage::kShingle) {
      checksum_ ^= feature;
    } else {
      counter_.add(feature);
    }
    tokens_ = total;
    nbuf_ = 0;
    return;
  }
  flush();
}

template class BasicFeatureSink<Stage::kTokenize>;
template class BasicFeatureSink<Stage::kHash>;
template class BasicFeatureSink<Stage::kShingle>;
template class BasicFeatureSink<Stage::kCount>;

namespace {
template <Stage S>
std::uint64_t run_stage_as(const Options& options, const char* data, std::size_t size) noexcept {
  BasicFeatureSink<S> sink(options.shingle);
  Tokenizer<BasicFeatureSink<S>> tokenizer(TokenizerOptions{options.cjk_bigrams});
  sink.set_input(data, size);
  tokenizer.feed(data, size, sink);
  tokenizer.finish(sink);
  sink.finish();
  if constexpr (S == Stage::kCount) {
    return sink.counter().total() == 0 ? 0 : sink.counter().fingerprint();
  }
  return sink.checksum();
}
}  // namespace

std::uint64_t run_stage(Stage stage, const Options& options, const char* data,
                        std::size_t size) noexcept {
  switch (stage) {
    case Stage::kTokenize:
      return run_stage_as<Stage::kTokenize>(options, data, size);
    case Stage::kHash:
      return run_stage_as<Stage::kHash>(options, data, size);
    case Stage::kShingle:
      return run_stage_as<Stage::kShingle>(options, data, size);
    case Stage::kCount:
      break;
  }
  return run_stage_as<Stage::kCount>(options, data, size);
}

}  // namespace detail

void Fingerprinter::feed(const char* data, std::size_t size) noexcept {
  sink_.set_input(data, size);
  tokenizer_.feed(data, size, sink_);
}

Fingerprinter::Fingerprinter(const Options& options)
    : sink_((validate(options), options.shingle)),
      tokenizer_(TokenizerOptions{options.cjk_bigrams}) {}

std::optional<std::uint64_t> Fingerprinter::finish() noexcept {
  tokenizer_.finish(sink_);
  sink_.finish();
  features_ = sink_.counter().total();
  if (features_ == 0) return std::nullopt;
  return sink_.counter().fingerprint();
}

std::optional<std::uint64_t> fingerprint(std::string_view text, const Options& options) {
  Fingerprinter fp(options);
  fp.feed(text);
  return fp.finish();
}

}  // namespace simhash
