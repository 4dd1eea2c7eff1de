#include "sim/core/json_text.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "sim/core/config_node.hpp"
#include "sim/core/error.hpp"
#include "sim/core/file_kind.hpp"

namespace ipusim::core {
namespace {

using Json = nlohmann::json;

std::string too_large(std::int64_t max_bytes) {
  return "it holds more than " + std::to_string(max_bytes >> 20) + " MiB (" +
         std::to_string(max_bytes) + " bytes), the most ipusim reads";
}

// Owns a file descriptor for the length of one read.
class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  ~Descriptor() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// O_NONBLOCK: opening a FIFO must not wait for a writer; regular_within refuses it.
Descriptor open_regular(const std::string& path) {
  return Descriptor(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
}

// Why the opened file is not one to read (not opened, not a regular file, over `max_bytes`);
// nullopt when it is, its size then in `size` if given.
std::optional<std::string> regular_within(const Descriptor& file, std::int64_t max_bytes,
                                          std::int64_t* size = nullptr) {
  if (file.get() < 0)
    return std::string(std::strerror(errno));
  struct stat status {};
  if (::fstat(file.get(), &status) != 0)
    return std::string(std::strerror(errno));
  if (!S_ISREG(status.st_mode))
    return "it is " + file_kind(status.st_mode) + ", not a regular file";
  if (status.st_size > max_bytes)
    return too_large(max_bytes);
  if (size != nullptr)
    *size = status.st_size;
  return std::nullopt;
}

// Reads `fd` to its end a buffer at a time, handing each piece to `chunk`; past `max_bytes` it
// stops with why.
std::optional<std::string> read_chunks(int fd, std::int64_t max_bytes, std::size_t buffer_bytes,
                                       const std::function<void(std::string_view)>& chunk) {
  std::vector<char> buffer(buffer_bytes);
  std::int64_t total = 0;
  while (true) {
    const ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return std::string(std::strerror(errno));
    if (got == 0)
      return std::nullopt;
    total += got;
    if (total > max_bytes)
      return too_large(max_bytes);
    chunk(std::string_view(buffer.data(), std::size_t(got)));
  }
}

// `size` is the file's size when it was opened: the text is allocated once at that size (a
// string grown by appending would take up to twice the file), and still grows if the file does.
std::optional<std::string> read_all(int fd, std::string* text, std::int64_t max_bytes,
                                    std::int64_t size) {
  text->clear();
  text->reserve(std::size_t(size));
  return read_chunks(fd, max_bytes, std::size_t{1} << 16,
                     [text](std::string_view piece) { text->append(piece); });
}

// Builds the document through nlohmann's DOM builder while tracking the JSON pointer of the
// value being read, so that a failure can say where it happened.
class TrackingSax {
 public:
  explicit TrackingSax(Json& result) : dom_(result, false) {}

  bool null() { return scalar(dom_.null()); }
  bool boolean(bool value) { return scalar(dom_.boolean(value)); }
  bool number_integer(Json::number_integer_t value) { return scalar(dom_.number_integer(value)); }
  bool number_unsigned(Json::number_unsigned_t value) {
    return scalar(dom_.number_unsigned(value));
  }
  bool number_float(Json::number_float_t value, const Json::string_t& text) {
    return scalar(dom_.number_float(value, text));
  }
  bool string(Json::string_t& value) { return scalar(dom_.string(value)); }
  bool binary(Json::binary_t& value) { return scalar(dom_.binary(value)); }
  bool start_object(std::size_t elements) { return open(false) && dom_.start_object(elements); }
  bool key(Json::string_t& value) {
    frames_.back().key = value;
    return dom_.key(value);
  }
  bool end_object() { return close(dom_.end_object()); }
  bool start_array(std::size_t elements) { return open(true) && dom_.start_array(elements); }
  bool end_array() { return close(dom_.end_array()); }

  bool parse_error(std::size_t position, const std::string& token,
                   const nlohmann::detail::exception& error) {
    position_ = position;
    located_ = true;
    pointer_ = pointer();
    if (error.id == 406) {
      message_ = "the number " + token + " is out of range (JSON numbers lie within +-1.8e308)";
    } else {
      message_ = error.what();
      const auto start = message_.find("syntax error");
      if (start != std::string::npos)
        message_ = message_.substr(start);
    }
    return false;
  }

  // Where the lexer stopped; only set for failures of the text itself, not of its depth.
  std::optional<std::size_t> position() const {
    return located_ ? std::optional(position_) : std::nullopt;
  }
  const std::string& failure_pointer() const { return pointer_; }
  const std::string& message() const { return message_; }

 private:
  struct Frame {
    bool array = false;
    std::string key;
    std::int64_t index = 0;
  };

  std::string pointer() const {
    std::string out;
    for (const Frame& frame : frames_)
      out += "/" + (frame.array ? std::to_string(frame.index) : escape_pointer_token(frame.key));
    return out;
  }

  bool scalar(bool accepted) {
    if (!frames_.empty() && frames_.back().array)
      ++frames_.back().index;
    return accepted;
  }

  bool open(bool array) {
    if (int(frames_.size()) >= kMaxJsonDepth) {
      pointer_ = pointer();
      message_ = "the JSON nests deeper than " + std::to_string(kMaxJsonDepth) + " levels";
      return false;
    }
    frames_.push_back({array, "", 0});
    return true;
  }

  bool close(bool accepted) {
    frames_.pop_back();
    return scalar(accepted);
  }

  nlohmann::detail::json_sax_dom_parser<Json> dom_;
  std::vector<Frame> frames_;
  std::size_t position_ = 0;
  bool located_ = false;
  std::string pointer_;
  std::string message_;
};

void line_and_column(const std::string& text, std::size_t byte, std::size_t* line,
                     std::size_t* column) {
  *line = 1;
  *column = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++*line;
      *column = 1;
    } else {
      ++*column;
    }
  }
}

// Parses with `sax`; false when the text is not JSON (the handler says why).
bool parse_tracked(const std::string& text, TrackingSax& sax) {
  return Json::sax_parse(text, &sax, Json::input_format_t::json, true);
}

// "line 4, column 3", or "" when the failure has no position.
std::string line_and_column_text(const std::string& text, std::optional<std::size_t> position) {
  if (!position)
    return "";
  std::size_t line = 0;
  std::size_t column = 0;
  // The parser reports the byte after the offending character.
  line_and_column(text, *position == 0 ? 0 : *position - 1, &line, &column);
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

bool is_range_failure(const TrackingSax& sax) {
  return sax.message().rfind("syntax error", 0) != 0;
}

}  // namespace

std::optional<std::string> read_regular_file(const std::string& path, std::string* text,
                                             std::int64_t max_bytes) {
  const Descriptor file = open_regular(path);
  std::int64_t size = 0;
  if (auto why = regular_within(file, max_bytes, &size))
    return why;
  return read_all(file.get(), text, max_bytes, size);
}

std::optional<std::string> read_regular_file_chunks(
    const std::string& path, std::int64_t max_bytes,
    const std::function<void(std::string_view)>& chunk) {
  const Descriptor file = open_regular(path);
  if (auto why = regular_within(file, max_bytes))
    return why;
  return read_chunks(file.get(), max_bytes, std::size_t{1} << 20, chunk);
}

Json parse_json_text(const std::string& text, const std::string& source) {
  Json result;
  TrackingSax sax(result);
  if (parse_tracked(text, sax))
    return result;
  const std::string where = line_and_column_text(text, sax.position());
  if (is_range_failure(sax)) {
    throw ConfigError(source, sax.failure_pointer(),
                      sax.message() + (where.empty() ? "" : " (" + where + ")"));
  }
  throw ConfigError(source, "", "malformed JSON at " + where + ": " + sax.message());
}

bool is_utf8(const std::string& text) {
  try {
    Json(text).dump();
    return true;
  } catch (const Json::type_error&) {
    return false;
  }
}

std::optional<Json> parse_json_value(const std::string& text, const std::string& source) {
  Json result;
  TrackingSax sax(result);
  if (parse_tracked(text, sax))
    return result;
  if (is_range_failure(sax))
    throw ConfigError(source, sax.failure_pointer(), sax.message());
  return std::nullopt;
}

}  // namespace ipusim::core
