// How the long loops of the core let their caller stop them (a query cancel, a terminate).
//
// The core never calls PostgreSQL. A caller that must answer a cancel passes an
// InterruptCheck: a plain function and its argument, which the core's long loops (shingling
// a text, sorting or hashing a large set, a table growing, the rows of a batch) ask about
// every Poll::kUnits units of work (a byte of text, an element moved or hashed): a few
// hundred microseconds apart. When it answers true the loop throws Interrupted, which unwinds
// the core's frames (their destructors run) up to the C ABI; that returns
// SIMHASH_INTERRUPTED, and the caller raises its cancel there, outside any C++ frame. The
// state the call was working on is then only to be dropped.
//
// The check is called only on the thread that called into the core: worker threads
// (similar_pairs.cpp) poll a stop flag, which the calling thread sets when its check says
// stop (and asks about while it waits for them).
#pragma once
#include <atomic>
#include <cstddef>
#include <exception>

#include "core/no_postgres.hpp"

namespace simhash {

// The caller's question "stop now?": fn(arg) returns true to stop. It must be quick, and
// must neither throw nor longjmp. A null fn never stops.
struct InterruptCheck {
  bool (*fn)(void* arg) = nullptr;
  void* arg = nullptr;
};

// Thrown when a check said stop. Not a std::exception: no catch of those swallows it.
struct Interrupted {};

// Counts the work of a loop and asks the check every kUnits units. The hot path is a
// subtraction and a compare; asking is a call through a pointer.
class Poll {
 public:
  static constexpr std::ptrdiff_t kUnits = std::ptrdiff_t{1} << 16;

  // Never stops.
  Poll() noexcept = default;
  // Asks `check`; with `stop`, also stops once *stop is set, and sets it when the check
  // says stop (so that worker threads polling it stop too).
  explicit Poll(InterruptCheck check, std::atomic<bool>* stop = nullptr) noexcept
      : check_(check), stop_(stop) {}
  // A worker thread's: stops once *stop is set, never calls a check.
  static Poll worker(std::atomic<bool>* stop) noexcept { return Poll(InterruptCheck{}, stop); }

  // `units` more units of work done; asks when they add up to kUnits. Throws Interrupted.
  void work(std::size_t units) {
    left_ -= static_cast<std::ptrdiff_t>(units);
    if (left_ <= 0) ask();
  }
  // Asks now (and starts counting again). Throws Interrupted.
  void ask() {
    left_ = kUnits;
    if (should_stop()) throw Interrupted{};
  }
  // Asks now without throwing: true to stop (and *stop is then set).
  bool should_stop() noexcept {
    if (stop_ != nullptr && stop_->load(std::memory_order_relaxed)) return true;
    if (check_.fn == nullptr || !check_.fn(check_.arg)) return false;
    if (stop_ != nullptr) stop_->store(true, std::memory_order_relaxed);
    return true;
  }
  bool can_stop() const noexcept { return check_.fn != nullptr || stop_ != nullptr; }

 private:
  InterruptCheck check_;
  std::atomic<bool>* stop_ = nullptr;
  std::ptrdiff_t left_ = kUnits;
};

}  // namespace simhash
