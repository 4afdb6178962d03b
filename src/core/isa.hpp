// Which instruction set extensions the core uses, chosen at run time. Every path computes
// exactly the same values; the portable path is plain C++ and runs anywhere. Tests and
// benchmarks can limit the choice to run every path on one machine.
#pragma once
#include "core/no_postgres.hpp"

namespace simhash::detail {

enum class Isa : int {
  kPortable = 0,  // plain C++ (SSE2 on x86-64, which every x86-64 has)
  kAvx2 = 1,      // AVX2
  kAvx512 = 2,    // AVX-512 F, DQ and BW
};

// The best this CPU supports (checked once).
Isa best_isa() noexcept;

// What the core uses: best_isa(), or less when limited.
Isa active_isa() noexcept;

// Use at most `max` from now on (for tests and benchmarks; not thread-safe with fingerprints
// being computed at the same time). Isa::kAvx512 removes the limit.
void limit_isa(Isa max) noexcept;

const char* isa_name(Isa isa) noexcept;

}  // namespace simhash::detail
