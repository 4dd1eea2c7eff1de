#include "sim/core/signal_cleanup.hpp"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>

namespace ipusim::core {
namespace {

// Each slot holds a path copy made with new[], or null. Only atomic operations touch a slot:
// they are lock-free, so the handler may use them.
std::array<std::atomic<char*>, RemoveOnSignal::kSlots> registered{};
static_assert(std::atomic<char*>::is_always_lock_free);

// The signals a user or a session sends to stop a program.
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// Only async-signal-safe calls: unlink(2), sigaction(2), raise(3).
void remove_registered_and_die(int signal) {
  for (auto& slot : registered) {
    // Taken, not read: the path is not freed under us, and it stays taken (a leak) since the
    // process is about to die.
    if (char* path = slot.exchange(nullptr))
      ::unlink(path);
  }
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  ::sigaction(signal, &default_action, nullptr);
  // Blocked while this handler runs, the signal is delivered again as it returns, now to its
  // default action.
  ::raise(signal);
}

// Checked at every registration rather than once, so that a signal set back to its default
// since (as a forked child may do) is handled again.
void install_handler() {
  for (const int signal : kStopSignals) {
    struct sigaction current {};
    if (::sigaction(signal, nullptr, &current) != 0 || current.sa_handler != SIG_DFL)
      continue;  // ignored or handled by someone else: theirs to decide
    struct sigaction action {};
    action.sa_handler = remove_registered_and_die;
    sigemptyset(&action.sa_mask);
    // While one stop signal removes the files, another waits rather than cutting it short.
    for (const int other : kStopSignals)
      sigaddset(&action.sa_mask, other);
    ::sigaction(signal, &action, nullptr);
  }
}

}  // namespace

RemoveOnSignal::RemoveOnSignal(const std::string& path) {
  install_handler();
  char* copy = new char[path.size() + 1];
  std::memcpy(copy, path.c_str(), path.size() + 1);
  // Starting after the slot taken last keeps a long run of registrations from rescanning the
  // slots they filled.
  static std::atomic<std::size_t> next{0};
  const std::size_t start = next.load();
  for (std::size_t i = 0; i < kSlots; ++i) {
    const std::size_t slot = (start + i) % kSlots;
    char* empty = nullptr;
    if (registered[slot].compare_exchange_strong(empty, copy)) {
      next.store(slot + 1);
      slot_ = slot;
      return;
    }
  }
  delete[] copy;
}

RemoveOnSignal::RemoveOnSignal(RemoveOnSignal&& other) noexcept : slot_(other.slot_) {
  other.slot_ = kSlots;
}

RemoveOnSignal& RemoveOnSignal::operator=(RemoveOnSignal&& other) noexcept {
  if (this != &other) {
    release();
    slot_ = other.slot_;
    other.slot_ = kSlots;
  }
  return *this;
}

RemoveOnSignal::~RemoveOnSignal() {
  release();
}

void RemoveOnSignal::release() noexcept {
  if (slot_ == kSlots)
    return;
  // Null when the handler took the path: it owns the copy now.
  delete[] registered[slot_].exchange(nullptr);
  slot_ = kSlots;
}

}  // namespace ipusim::core
