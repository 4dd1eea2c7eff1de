#include "sim/core/output_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "sim/core/error.hpp"
#include "sim/core/file_kind.hpp"
#include "sim/core/signal_cleanup.hpp"

namespace ipusim::core {
namespace {

namespace fs = std::filesystem;

std::string what_of(const std::string& option) {
  return option.empty() ? "the output file" : "the " + option + " output";
}

[[noreturn]] void refuse(const std::string& path, const std::string& what,
                         const std::string& reason) {
  throw ConfigError(path, "", "cannot write " + what + ": " + reason);
}

std::string system_error(int error) {
  return std::strerror(error);
}

[[noreturn]] void refuse_kind(const std::string& path, const std::string& what, mode_t mode) {
  refuse(path, what,
         "it is " + file_kind(mode) + "; give the path of a regular file or of a new one");
}

// Anything but a regular file would be replaced by the rename (a device node, a symbolic link)
// or make it fail after the work is done (a directory). The link itself is looked at, not
// what it points to.
void check_target(const std::string& path, const std::string& what) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) == 0) {
    if (!S_ISREG(info.st_mode))
      refuse_kind(path, what, info.st_mode);
    return;
  }
  // A missing folder is reported by check_folder, which says which one.
  if (errno != ENOENT && errno != ENOTDIR)
    refuse(path, what, system_error(errno));
}

std::string folder_of(const std::string& path) {
  const auto folder = fs::path(path).parent_path();
  return folder.empty() ? "." : folder.string();
}

void check_folder(const std::string& path, const std::string& what) {
  const std::string folder = folder_of(path);
  struct stat info {};
  if (::stat(folder.c_str(), &info) != 0) {
    if (errno == ENOENT || errno == ENOTDIR)
      refuse(path, what, "the folder " + folder + " does not exist");
    refuse(path, what, "the folder " + folder + ": " + system_error(errno));
  }
  if (!S_ISDIR(info.st_mode))
    refuse(path, what, folder + " is not a folder");
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    refuse(path, what, "the folder " + folder + " is not writable (" + system_error(errno) + ")");
}

// The folder with symbolic links and "." resolved, so that two spellings of one file compare
// equal.
fs::path real_folder(const std::string& folder) {
  std::error_code error;
  const auto real = fs::canonical(folder, error);
  return error ? fs::absolute(folder).lexically_normal() : real;
}

// A temporary file in the making: its name, registered for removal on a signal, and the open
// descriptor.
struct Temporary {
  std::string name;
  RemoveOnSignal cleanup;
  int fd = -1;
};

// The real folder and the file name, so that two spellings of one path compare equal.
fs::path identity_of(const std::string& path) {
  return real_folder(folder_of(path)) / fs::path(path).filename();
}

// One file under two paths: the same inode when both exist (a hard or symbolic link to it
// included), else the same identity.
bool same_file(const std::string& a, const fs::path& a_identity, const std::string& b,
               const fs::path& b_identity) {
  std::error_code error;
  const bool same = fs::equivalent(a, b, error);
  return error ? a_identity == b_identity : same;
}

// A fresh file next to `path` (so that the rename stays within one file system), created
// exclusively: an existing file or link under that name is never opened. The name is registered
// before the file exists, so that no signal finds it there unregistered.
Temporary create_temporary(const std::string& path, const std::string& what) {
  static std::atomic<unsigned> counter{0};
  for (int attempt = 0; attempt < 100; ++attempt) {
    Temporary temporary;
    temporary.name =
        path + "." + std::to_string(::getpid()) + "-" + std::to_string(counter++) + ".partial";
    temporary.cleanup = RemoveOnSignal(temporary.name);
    temporary.fd =
        ::open(temporary.name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (temporary.fd >= 0)
      return temporary;
    if (errno != EEXIST)
      refuse(path, what, "cannot create a temporary file next to it: " + system_error(errno));
  }
  refuse(path, what, "cannot create a temporary file next to it: every name tried exists");
}

// The file an output replaces keeps its permission bits (a 0600 file stays private); a new one
// gets 0666 less the umask. Set before anything is written, so the text is never more exposed
// than the file it replaces.
int keep_permissions(int fd, const std::string& path) {
  struct stat replaced {};
  if (::lstat(path.c_str(), &replaced) != 0 || !S_ISREG(replaced.st_mode))
    return 0;
  return ::fchmod(fd, replaced.st_mode & 0777) == 0 ? 0 : errno;
}

// Returns 0, or the errno of the first write that failed. A file system that is full shows
// here or only at fsync() or close(), so all three are checked.
int write_all(int fd, std::initializer_list<std::string_view> parts, bool sync = true) {
  for (const auto part : parts) {
    std::size_t done = 0;
    while (done < part.size()) {
      const ssize_t n = ::write(fd, part.data() + done, part.size() - done);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return n < 0 ? errno : EIO;
      done += std::size_t(n);
    }
  }
  if (sync && ::fsync(fd) != 0)
    return errno;
  return 0;
}

}  // namespace

namespace {

// The temporary file of a streamed output, written through as the caller's buffer fills.
class StreamFile : public ByteSink {
 public:
  StreamFile(int fd, RemoveOnSignal cleanup, std::string path, std::string what)
      : fd_(fd), cleanup_(std::move(cleanup)), path_(std::move(path)), what_(std::move(what)) {}
  ~StreamFile() override {
    if (fd_ >= 0)
      ::close(fd_);
  }
  StreamFile(const StreamFile&) = delete;
  StreamFile& operator=(const StreamFile&) = delete;

  void write(std::string_view bytes) override {
    IPUSIM_CHECK(fd_ >= 0);
    if (const int error = write_all(fd_, {bytes}, false); error != 0)
      refuse(path_, what_, system_error(error));
  }

  // Syncs and closes the file; its signal registration passes to the caller.
  RemoveOnSignal close() {
    int error = ::fsync(fd_) == 0 ? 0 : errno;
    if (::close(fd_) != 0 && error == 0)
      error = errno;
    fd_ = -1;
    if (error != 0)
      refuse(path_, what_, system_error(error));
    return std::move(cleanup_);
  }

 private:
  int fd_;
  RemoveOnSignal cleanup_;
  std::string path_;
  std::string what_;
};

}  // namespace

// --- AppendFile ---------------------------------------------------------------------------

AppendFile::AppendFile(std::string path, std::string what, const std::string& busy)
    : path_(std::move(path)), what_(std::move(what)) {
  try {
    // Another process may rename a new file over `path` between our open() and flock(): the
    // lock would then guard a file no longer there, so we open again.
    for (int attempt = 0; attempt < 100; ++attempt) {
      if (open_and_lock(busy))
        return;
    }
  } catch (...) {
    if (fd_ >= 0)
      ::close(fd_);  // no destructor runs for an object whose constructor throws
    throw;
  }
  throw ConfigError(path_, "", busy);
}

AppendFile::~AppendFile() {
  if (fd_ >= 0)
    ::close(fd_);
}

bool AppendFile::open_and_lock(const std::string& busy) {
  // O_NONBLOCK: a FIFO put in the file's place fails at once instead of waiting for a reader.
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
               0666);
  struct stat opened {};
  if (fd_ < 0 || ::fstat(fd_, &opened) != 0)
    fail();
  if (!S_ISREG(opened.st_mode))
    refuse_kind(path_, what_, opened.st_mode);
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK)
      throw ConfigError(path_, "", busy);
    refuse(path_, what_, "cannot lock it: " + system_error(errno));
  }
  struct stat now {};
  if (::lstat(path_.c_str(), &now) == 0 && now.st_dev == opened.st_dev &&
      now.st_ino == opened.st_ino)
    return true;
  ::close(fd_);
  fd_ = -1;
  return false;
}

void AppendFile::append(std::string_view line) {
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      errno = n < 0 ? errno : EIO;
      fail();
    }
    done += std::size_t(n);
  }
}

void AppendFile::truncate(std::size_t bytes) {
  if (::ftruncate(fd_, off_t(bytes)) != 0)
    fail();
}

void AppendFile::fail() const {
  refuse(path_, what_, system_error(errno));
}

// --- OutputSet ----------------------------------------------------------------------------

OutputSet::~OutputSet() {
  for (auto& output : outputs_) {
    output.stream.reset();  // closes the file before it is removed
    if (!output.temporary.empty())
      ::unlink(output.temporary.c_str());
  }
  if (committed_)
    return;
  // Deepest first; a folder that is not empty (something else was put there) stays.
  for (auto folder = created_folders_.rbegin(); folder != created_folders_.rend(); ++folder)
    ::rmdir(folder->c_str());
}

void OutputSet::add(const std::string& path, const std::string& option) {
  IPUSIM_CHECK(!path.empty() && !committed_);
  const std::string what = what_of(option);
  check_target(path, what);
  check_folder(path, what);
  const auto identity = identity_of(path);
  for (const auto& other : outputs_) {
    if (other.identity == identity)
      refuse(path, what, other.what + " is the same file; give each output its own path");
  }
  Output output{path, what, identity, "", nullptr, nullptr, {}};
  for (const auto& input : inputs_)
    check_not_input(output, input);
  outputs_.push_back(std::move(output));
}

void OutputSet::add_input(const std::string& path, const std::string& role) {
  IPUSIM_CHECK(!path.empty() && !committed_);
  Input input{path, role, identity_of(path)};
  for (const auto& output : outputs_)
    check_not_input(output, input);
  inputs_.push_back(std::move(input));
}

void OutputSet::check_not_input(const Output& output, const Input& input) const {
  if (same_file(output.path, output.identity, input.path, input.identity))
    refuse(output.path, output.what, "it is " + input.role + "; choose another file");
}

void OutputSet::add_folder(const std::string& folder, const std::string& option, FolderLink link) {
  IPUSIM_CHECK(!folder.empty() && !committed_);
  struct stat info {};
  if (link == FolderLink::kRefuse && ::lstat(folder.c_str(), &info) == 0 && S_ISLNK(info.st_mode))
    refuse(folder, what_of(option),
           "it is a symbolic link; ipusim writes into a folder of its own name, never through a "
           "link (remove the link or write the config elsewhere)");
  if (::stat(folder.c_str(), &info) == 0) {
    if (!S_ISDIR(info.st_mode))
      refuse(folder, what_of(option), "it is " + file_kind(info.st_mode) + ", not a folder");
    return;  // add() checks that each file in it can be written
  }
  fs::path normal = fs::path(folder).lexically_normal();
  if (normal.filename().empty())
    normal = normal.parent_path();  // "out/" is "out"
  std::vector<fs::path> missing;
  for (fs::path at = normal; !at.empty(); at = at.parent_path()) {
    struct stat found {};
    if (::lstat(at.c_str(), &found) == 0)
      break;
    missing.push_back(at);
  }
  for (auto at = missing.rbegin(); at != missing.rend(); ++at) {
    RemoveOnSignal cleanup(at->string(), RemoveOnSignal::Kind::kFolder);  // before it exists
    if (::mkdir(at->c_str(), 0777) != 0) {
      refuse(folder, what_of(option),
             "cannot create the folder " + at->string() + ": " + system_error(errno));
    }
    created_folders_.push_back(*at);
    folder_cleanups_.push_back(std::move(cleanup));
  }
}

OutputSet::Output& OutputSet::declared(const std::string& path) {
  const auto found = std::find_if(outputs_.begin(), outputs_.end(),
                                  [&](const Output& output) { return output.path == path; });
  IPUSIM_CHECK(found != outputs_.end());
  return *found;
}

void OutputSet::write(const std::string& path, std::initializer_list<std::string_view> parts) {
  Output& output = declared(path);
  IPUSIM_CHECK(output.temporary.empty() && !committed_);
  auto temporary = create_temporary(path, output.what);
  int error = keep_permissions(temporary.fd, path);
  if (error == 0)
    error = write_all(temporary.fd, parts);
  if (::close(temporary.fd) != 0 && error == 0)
    error = errno;
  if (error != 0) {
    ::unlink(temporary.name.c_str());
    refuse(path, output.what, system_error(error));
  }
  output.temporary = std::move(temporary.name);
  output.cleanup = std::move(temporary.cleanup);
}

ByteSink& OutputSet::open_stream(const std::string& path) {
  Output& output = declared(path);
  IPUSIM_CHECK(output.temporary.empty() && !output.stream && !committed_);
  auto temporary = create_temporary(path, output.what);
  if (const int error = keep_permissions(temporary.fd, path); error != 0) {
    ::close(temporary.fd);
    ::unlink(temporary.name.c_str());
    refuse(path, output.what, system_error(error));
  }
  // The name is the set's to remove from here on, whatever fails.
  output.temporary = temporary.name;
  output.stream =
      std::make_unique<StreamFile>(temporary.fd, std::move(temporary.cleanup), path, output.what);
  return *output.stream;
}

void OutputSet::close_streams() {
  for (auto& output : outputs_) {
    if (!output.stream)
      continue;
    output.cleanup = static_cast<StreamFile&>(*output.stream).close();
    output.stream.reset();
  }
}

void OutputSet::write_streamed(const std::string& path, const Producer& produce) {
  ByteSink& sink = open_stream(path);
  // Pieces are gathered into writes of about a megabyte: a row at a time would be a system call
  // per row. Whatever fails, the set removes the temporary file.
  std::string buffer;
  produce([&](std::string_view piece) {
    buffer += piece;
    if (buffer.size() >= (std::size_t{1} << 20)) {
      sink.write(buffer);
      buffer.clear();
    }
  });
  sink.write(buffer);
}

AppendFile& OutputSet::open_append(const std::string& path, const std::string& busy) {
  Output& output = declared(path);
  IPUSIM_CHECK(!output.append && !committed_);
  output.append = std::make_unique<AppendFile>(path, output.what, busy);
  return *output.append;
}

// A rename that fails after others succeeded (the file system failing under us) cannot be
// undone; the outputs not yet renamed are dropped.
void OutputSet::commit() {
  IPUSIM_CHECK(!committed_);
  close_streams();
  // Every check before the first rename, so that a path spoilt since add() leaves all unwritten.
  for (const auto& output : outputs_) {
    if (!output.temporary.empty())
      check_target(output.path, output.what);
  }
  for (auto& output : outputs_) {
    if (output.temporary.empty())
      continue;
    if (::rename(output.temporary.c_str(), output.path.c_str()) != 0)
      refuse(output.path, output.what, "cannot replace the file: " + system_error(errno));
    output.temporary.clear();
    output.cleanup = RemoveOnSignal();  // after the rename: a signal before it removes the file
  }
  folder_cleanups_.clear();  // they hold the outputs now
  committed_ = true;
}

std::int64_t free_bytes_for(const std::string& path) {
  struct statvfs info {};
  if (::statvfs(folder_of(path).c_str(), &info) != 0)
    return -1;
  return std::int64_t(info.f_bavail) * std::int64_t(info.f_frsize);
}

void write_file_atomically(const std::string& path, std::string_view text) {
  OutputSet outputs;
  outputs.add(path);
  outputs.write(path, text);
  outputs.commit();
}

}  // namespace ipusim::core
