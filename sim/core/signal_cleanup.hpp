#pragma once
// Files that must not outlive the process when it is stopped by a signal: the temporary files
// of outputs being written (sim/core/output_file.hpp).
//
// A RemoveOnSignal registers one path for as long as it lives. Registering installs a handler
// for those of SIGINT, SIGTERM, SIGHUP and SIGQUIT that are at their default action (a signal
// the parent ignored, as nohup does SIGHUP, stays ignored; one handled by others, theirs). The
// handler unlinks every registered path and then dies of the signal by its default action, so the
// exit status and a shell's "Terminated" are what they would have been. A SIGKILL or a crash still
// leaves the files, named NAME.<pid>-<n>.partial and safe to delete.
//
// This is process-wide state by necessity: a signal handler can reach nothing else. It holds a
// fixed table of pointers to path copies; whoever takes a pointer out of its slot (an atomic
// exchange) owns it, so the handler, running on any thread, never reads a path being freed.

#include <cstddef>
#include <string>

namespace ipusim::core {

class RemoveOnSignal {
 public:
  RemoveOnSignal() = default;  // registers nothing
  // Registers `path`, which need not exist yet. When all kSlots are taken the path is not
  // registered: the file is still removed on any exit but a signal.
  explicit RemoveOnSignal(const std::string& path);
  RemoveOnSignal(RemoveOnSignal&& other) noexcept;
  RemoveOnSignal& operator=(RemoveOnSignal&& other) noexcept;
  ~RemoveOnSignal();  // forgets the path; does not remove the file

  // Paths registered at once, e.g. the files of `train --save` for a large model.
  static constexpr std::size_t kSlots = 16384;

 private:
  void release() noexcept;

  std::size_t slot_ = kSlots;  // kSlots: none
};

}  // namespace ipusim::core
