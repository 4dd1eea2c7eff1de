#include "sim/core/signal_cleanup.hpp"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <span>

namespace ipusim::core {
namespace {

// Each slot holds a path copy made with new[], or null. Only atomic operations touch a slot:
// they are lock-free, so the handler may use them.
using Slot = std::atomic<char*>;
std::array<Slot, RemoveOnSignal::kFileSlots> registered_files{};
std::array<Slot, RemoveOnSignal::kFolderSlots> registered_folders{};
static_assert(Slot::is_always_lock_free);

std::span<Slot> slots_of(RemoveOnSignal::Kind kind) {
  if (kind == RemoveOnSignal::Kind::kFolder)
    return registered_folders;
  return registered_files;
}

// The signals a user or a session sends to stop a program, and the one a closed pipe sends
// (`ipusim sweep ... | head`).
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};

// Folders registered parents first are removed deepest first; a folder that holds another
// registered one empties in a later pass. One that still holds a file stays.
void remove_registered_folders() {
  for (std::size_t pass = 0; pass < 16; ++pass) {
    for (auto slot = registered_folders.rbegin(); slot != registered_folders.rend(); ++slot) {
      char* path = slot->exchange(nullptr);
      if (path && ::rmdir(path) != 0 && errno == ENOTEMPTY)
        slot->store(path);  // for the next pass
    }
  }
}

// Only async-signal-safe calls: unlink(2), rmdir(2), sigaction(2), raise(3).
void remove_registered_and_die(int signal) {
  for (auto& slot : registered_files) {
    // Taken, not read: the path is not freed under us, and it stays taken (a leak) since the
    // process is about to die.
    if (char* path = slot.exchange(nullptr))
      ::unlink(path);
  }
  remove_registered_folders();
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

// The first free slot at or after `start`, wrapping around, taken for `copy`; kNone when full.
std::size_t take_slot(std::span<Slot> slots, std::size_t start, char* copy) {
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const std::size_t slot = (start + i) % slots.size();
    char* empty = nullptr;
    if (slots[slot].compare_exchange_strong(empty, copy))
      return slot;
  }
  return slots.size();
}

}  // namespace

RemoveOnSignal::RemoveOnSignal(const std::string& path, Kind kind) : kind_(kind) {
  install_handler();
  char* copy = new char[path.size() + 1];
  std::memcpy(copy, path.c_str(), path.size() + 1);
  const auto slots = slots_of(kind);
  // Files start after the slot taken last, so that a long run of registrations does not rescan
  // the slots it filled. Folders start at 0, so that a deeper one, registered later, sits later.
  static std::atomic<std::size_t> next_file{0};
  const std::size_t start = kind == Kind::kFile ? next_file.load() : 0;
  const std::size_t slot = take_slot(slots, start, copy);
  if (slot == slots.size()) {
    delete[] copy;
    return;
  }
  if (kind == Kind::kFile)
    next_file.store(slot + 1);
  slot_ = slot;
}

RemoveOnSignal::RemoveOnSignal(RemoveOnSignal&& other) noexcept
    : kind_(other.kind_), slot_(other.slot_) {
  other.slot_ = kNone;
}

RemoveOnSignal& RemoveOnSignal::operator=(RemoveOnSignal&& other) noexcept {
  if (this != &other) {
    release();
    kind_ = other.kind_;
    slot_ = other.slot_;
    other.slot_ = kNone;
  }
  return *this;
}

RemoveOnSignal::~RemoveOnSignal() {
  release();
}

void RemoveOnSignal::release() noexcept {
  if (slot_ == kNone)
    return;
  // Null when the handler took the path: it owns the copy now.
  delete[] slots_of(kind_)[slot_].exchange(nullptr);
  slot_ = kNone;
}

}  // namespace ipusim::core
