#pragma once
// Output files appear whole or not at all, and only ever as regular files that ipusim created.
//
// A command declares every file it will write in an OutputSet before it starts the work, so
// that a wrong path is reported at once instead of after a long simulation: the folder must
// exist and be writable, the path must be absent or a regular file (a device, FIFO, directory,
// socket or symbolic link would be replaced by the rename or written through), no two outputs
// may be one file, and no output may be a file the command reads (add_input). Each text goes to a
// temporary file created next to its target (O_CREAT|O_EXCL under a unique name) whose every write,
// fsync and close is checked; commit() renames them all at the end, each keeping the permission
// bits of the file it replaces. A set destroyed before commit() removes its temporaries and the
// folders it created, and so does a stop signal (sim/core/signal_cleanup.hpp), so a failure
// leaves no output half done and nothing else behind.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/signal_cleanup.hpp"

namespace ipusim::core {

// Where a large output's bytes go as they are produced: the temporary file of a streamed output
// (OutputSet::open_stream), or a string in tests. Callers buffer; each write() reaches the sink.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual void write(std::string_view bytes) = 0;
};

// Keeps what is written, for tests and small outputs.
class StringSink : public ByteSink {
 public:
  void write(std::string_view bytes) override { text.append(bytes); }
  std::string text;
};

// An output that grows in place one whole line per write(), so that a kill leaves at most one
// partial line at its end (a sweep's CSV). It is locked with flock(2) while this object lives:
// two processes appending to one file would interleave or lose rows.
class AppendFile {
 public:
  // Opens `path`, creating it when absent, never through a symbolic link, and locks it. Throws
  // core::ConfigError with `busy` as its message when another process holds the lock.
  AppendFile(std::string path, std::string what, const std::string& busy);
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  void append(std::string_view line);
  void truncate(std::size_t bytes);  // drops what follows the first `bytes` bytes

 private:
  bool open_and_lock(const std::string& busy);
  [[noreturn]] void fail() const;  // with errno's text

  std::string path_;
  std::string what_;  // "the -o output", as errors name it
  int fd_ = -1;
};

// The files one command writes (see the top of this file). Not thread-safe.
class OutputSet {
 public:
  OutputSet() = default;
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;
  ~OutputSet();

  // Declares `path` an output; `option` ("--json") names it in errors, or "" for "the output
  // file". Throws core::ConfigError naming the path when it cannot be written (see above).
  void add(const std::string& path, const std::string& option = "");
  // Declares `path` a file the command reads; `role` ("the config this command reads") names
  // it in errors. An output that is the same file (the same inode when both exist, else the same
  // real folder and name), declared before or after, is refused with core::ConfigError naming the
  // output: replacing an input would lose it.
  void add_input(const std::string& path, const std::string& role);
  // Whether a folder given as a symbolic link is written through: yes for one the user named
  // (`train --save DIR`), no for one ipusim names itself (import's `<stem>.weights`), where a
  // planted link would send the files elsewhere.
  enum class FolderLink { kFollow, kRefuse };
  // Makes sure `folder` exists to hold outputs, creating it and its parents when missing (they
  // are removed again unless the set is committed). Throws core::ConfigError when `folder` is
  // something other than a folder (or, with kRefuse, a symbolic link) or cannot be created.
  void add_folder(const std::string& folder, const std::string& option = "",
                  FolderLink link = FolderLink::kFollow);

  // Writes the text of an output declared with add() to its temporary file, the parts one after
  // another (so that a large array need not be copied into one string).
  void write(const std::string& path, std::initializer_list<std::string_view> parts);
  void write(const std::string& path, std::string_view text) { write(path, {text}); }
  // The same for a text too large to hold at once: `produce` hands it over in pieces, each
  // written before the next is made. Whatever `produce` throws leaves no temporary behind.
  using Producer = std::function<void(const std::function<void(std::string_view)>& put)>;
  void write_streamed(const std::string& path, const Producer& produce);

  // Opens the temporary file of a declared output to be written piece by piece as it is
  // produced (a trace); commit() syncs, closes and renames it like a write()'s. A write that
  // fails (a full disk) throws core::ConfigError naming the path, and the temporary is removed
  // with the set.
  ByteSink& open_stream(const std::string& path);

  // Opens a declared output to grow in place (see AppendFile); it stays locked until the set is
  // destroyed, and survives a failure. A write() of the same path replaces it whole at commit().
  AppendFile& open_append(const std::string& path, const std::string& busy);

  // Checks again that every written output's path is absent or a regular file, then renames
  // each temporary over its path.
  void commit();

 private:
  struct Output {
    std::string path;
    std::string what;                // "the --json output"
    std::filesystem::path identity;  // the real folder and the file name, to spot duplicates
    std::string temporary;           // empty until written, and again once renamed
    std::unique_ptr<AppendFile> append;
    std::unique_ptr<ByteSink> stream;  // open_stream()'s file, open until commit()
    RemoveOnSignal cleanup;            // of `temporary`
  };

  struct Input {
    std::string path;
    std::string role;                // "the config this command reads"
    std::filesystem::path identity;  // as Output's
  };

  Output& declared(const std::string& path);
  void close_streams();
  void check_not_input(const Output& output, const Input& input) const;

  std::vector<Output> outputs_;
  std::vector<Input> inputs_;
  std::vector<std::filesystem::path> created_folders_;  // parents first
  std::vector<RemoveOnSignal> folder_cleanups_;         // of created_folders_, until commit()
  bool committed_ = false;
};

// Bytes free to an unprivileged user on the file system that holds `path`'s folder, or -1 when
// it cannot be told.
std::int64_t free_bytes_for(const std::string& path);

// One output on its own: checked, written to a temporary file and renamed over `path`.
// Throws core::ConfigError naming `path` when the file cannot be written.
void write_file_atomically(const std::string& path, std::string_view text);

}  // namespace ipusim::core
