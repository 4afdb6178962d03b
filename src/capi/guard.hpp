// The one exception guard of the C ABI: every extern "C" function runs its body through
// guarded(), so no C++ exception ever crosses into C, and a failure becomes a status code
// plus a message in the caller's buffer.
#pragma once
#include <cstddef>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>

#include "capi/simhash_capi.h"
#include "core/interrupt.hpp"
#include "core/no_postgres.hpp"

namespace simhash::capi {

// Copies message into errbuf, truncated to fit and NUL-terminated (nothing when errcap is 0).
inline void set_error(char* errbuf, std::size_t errcap, const char* message) noexcept {
  if (errbuf == nullptr || errcap == 0) return;
  std::size_t n = std::strlen(message);
  if (n >= errcap) n = errcap - 1;
  std::memcpy(errbuf, message, n);
  errbuf[n] = '\0';
}

// Asks a C poll (the InterruptCheck of interrupt_check()).
inline bool ask_interrupt(void* arg) noexcept {
  const auto* i = static_cast<const simhash_interrupt*>(arg);
  return i->check(i->arg) != 0;
}

// The core's InterruptCheck for a C poll (which must outlive its use); none for NULL.
inline simhash::InterruptCheck interrupt_check(const simhash_interrupt* i) noexcept {
  if (i == nullptr || i->check == nullptr) return simhash::InterruptCheck{};
  return simhash::InterruptCheck{&ask_interrupt, const_cast<simhash_interrupt*>(i)};
}

// Runs body (which returns a simhash_status), turning any exception into a status and a
// message: simhash::Interrupted is the caller's poll saying stop, std::invalid_argument the
// caller's mistake, std::length_error a documented limit, std::bad_alloc is out of memory,
// anything else is an internal error.
template <class Body>
simhash_status guarded(char* errbuf, std::size_t errcap, Body&& body) noexcept {
  try {
    return body();
  } catch (const simhash::Interrupted&) {
    set_error(errbuf, errcap, "interrupted");
    return SIMHASH_INTERRUPTED;
  } catch (const std::invalid_argument& e) {
    set_error(errbuf, errcap, e.what());
    return SIMHASH_INVALID_ARGUMENT;
  } catch (const std::length_error& e) {
    set_error(errbuf, errcap, e.what());
    return SIMHASH_LIMIT_EXCEEDED;
  } catch (const std::bad_alloc&) {
    set_error(errbuf, errcap, "out of memory");
    return SIMHASH_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_error(errbuf, errcap, e.what());
    return SIMHASH_INTERNAL_ERROR;
  } catch (...) {
    set_error(errbuf, errcap, "unknown C++ exception");
    return SIMHASH_INTERNAL_ERROR;
  }
}

}  // namespace simhash::capi
