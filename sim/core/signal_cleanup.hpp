#pragma once
// Files and folders that must not outlive the process when it is stopped by a signal: the
// temporary files of outputs being written and the folders made for them
// (sim/core/output_file.hpp).
//
// A RemoveOnSignal registers one path for as long as it lives. Registering installs a handler
// for those of SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGPIPE that are at their default action (a
// signal the parent ignored, as nohup does SIGHUP, stays ignored; one handled by others, theirs).
// The handler unlinks every registered file, then removes every registered folder left empty, and
// dies of the signal by its default action, so the exit status and a shell's "Terminated" are
// what they would have been. A SIGKILL or a crash still leaves the files, named
// NAME.<pid>-<n>.partial and safe to delete.
//
// This is process-wide state by necessity: a signal handler can reach nothing else. It holds
// fixed tables of pointers to path copies; whoever takes a pointer out of its slot (an atomic
// exchange) owns it, so the handler, running on any thread, never reads a path being freed.

#include <cstddef>
#include <string>

namespace ipusim::core {

class RemoveOnSignal {
 public:
  enum class Kind { kFile, kFolder };

  RemoveOnSignal() = default;  // registers nothing
  // Registers `path`, which need not exist yet. When all slots of its kind are taken the path
  // is not registered: it is still removed on any exit but a signal.
  explicit RemoveOnSignal(const std::string& path, Kind kind = Kind::kFile);
  RemoveOnSignal(RemoveOnSignal&& other) noexcept;
  RemoveOnSignal& operator=(RemoveOnSignal&& other) noexcept;
  ~RemoveOnSignal();  // forgets the path; does not remove it

  // Paths registered at once, e.g. the files of `train --save` for a large model.
  static constexpr std::size_t kFileSlots = 16384;
  static constexpr std::size_t kFolderSlots = 256;

 private:
  static constexpr std::size_t kNone = kFileSlots;

  void release() noexcept;

  Kind kind_ = Kind::kFile;
  std::size_t slot_ = kNone;
};

}  // namespace ipusim::core
