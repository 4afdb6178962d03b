#include "core/fingerprint.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

// xxHash as static inline functions (token_hash.hpp defines XXH_INLINE_ALL): no xxHash
// symbol leaves this object file, so another library loaded in the same process cannot
// clash with ours.
#include "core/token_hash.hpp"

#include "core/isa.hpp"

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

// -1: not detected yet. A plain int: a race between two first calls writes the same value.
int g_best_isa = -1;
int g_isa_limit = static_cast<int>(Isa::kAvx512);

}  // namespace

Isa best_isa() noexcept {
  if (g_best_isa < 0) g_best_isa = static_cast<int>(detect_isa());
  return static_cast<Isa>(g_best_isa);
}

Isa active_isa() noexcept {
  const int best = static_cast<int>(best_isa());
  return static_cast<Isa>(best < g_isa_limit ? best : g_isa_limit);
}

void limit_isa(Isa max) noexcept { g_isa_limit = static_cast<int>(max); }

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

inline void FeatureSink::token(const unsigned char* bytes, std::size_t len) noexcept {
  push(detail::token_hash(bytes, len, kSeed));
}

inline void FeatureSink::ascii_token(const unsigned char* raw, std::size_t len) noexcept {
  push(detail::token_hash<true>(raw, len, kSeed));
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
__attribute__((target("avx512f,avx512dq"))) unsigned shingle_avx512(
    const std::uint64_t* h, unsigned first, unsigned m, std::uint64_t* out) noexcept {
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
      const __m256i x =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(h + j + 1 - N + i));
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

void FeatureSink::flush() noexcept {
  const unsigned m = nbuf_;
  const std::uint64_t* h = hashes_ + kCarry;
  if (n_ == 1) {
    counter_.add_many(h, m);
  } else {
    // The window ending at token tokens_ + j is complete from token n - 1 on.
    const unsigned first =
        tokens_ >= n_ - 1 ? 0 : static_cast<unsigned>(std::min<std::uint64_t>(n_ - 1 - tokens_, m));
    std::uint64_t features[kBatch];
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
    counter_.add_many(features, k);
  }
  tokens_ += m;
  for (unsigned i = 0; i < kCarry; ++i) hashes_[i] = hashes_[i + m];
  nbuf_ = 0;
}

void FeatureSink::finish() noexcept {
  const std::uint64_t total = tokens_ + nbuf_;
  if (total > 0 && total < n_) {
    // Fewer than n tokens, all in this batch (a batch holds more than kMaxShingle).
    counter_.add(combine(hashes_ + kCarry, static_cast<unsigned>(total)));
    tokens_ = total;
    nbuf_ = 0;
    return;
  }
  flush();
}

}  // namespace detail

void Fingerprinter::feed(const char* data, std::size_t size) noexcept {
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
