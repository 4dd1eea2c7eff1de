#pragma once
// Text for a terminal. Names and descriptions come from files anyone may have written, and a
// terminal obeys the control characters in what it shows (ESC starts a sequence that can retitle
// the window, redraw the screen or, on some terminals, answer back as typed input). Everything
// ipusim prints on its output and error streams passes through `printable`, so a name shows its
// control characters as escapes (`\x1b`) instead of acting on them.

#include <array>
#include <optional>
#include <ostream>
#include <streambuf>
#include <string>
#include <string_view>

namespace ipusim::core {

// `text` with every C0 control character but line feed and tab, DEL, and every byte that is not
// part of valid UTF-8 (a raw 0x9B, which an 8-bit terminal takes as CSI; 0xFF; a sequence cut
// short) as `\xHH`, and every C1 control character (U+0080 to U+009F, as UTF-8) as `\u00HH`. In
// JSON text the escapes are already there, or stay valid escapes, so JSON lines keep their
// meaning.
std::string printable(std::string_view text);

// A UTF-8 sequence begun but not finished, carried between writes of a stream.
struct Utf8Pending {
  std::array<unsigned char, 4> bytes{};
  int size = 0;  // bytes held
  int need = 0;  // bytes the sequence takes
};

// A stream that writes to `target` through `printable`, unbuffered so that it interleaves with
// what is written to `target` directly (the progress bar's carriage returns).
class PrintableStream : public std::ostream {
 public:
  explicit PrintableStream(std::ostream& target);
  ~PrintableStream() override;
  PrintableStream(const PrintableStream&) = delete;
  PrintableStream& operator=(const PrintableStream&) = delete;

  std::ostream& target() const { return target_; }

  // Shows a UTF-8 sequence cut short at the end of the text and flushes the target. Returns
  // std::nullopt when every write to the target succeeded, else the error number of the first
  // that failed (0 when the target set none): a full disk or a closed stream fails a write
  // quietly, and the number is gone by the time the stream is checked.
  std::optional<int> finish();

 private:
  class Buffer : public std::streambuf {
   public:
    explicit Buffer(std::ostream& target) : target_(target) {}
    void finish();  // shows a sequence cut short at the end of the text
    std::optional<int> failure() const { return failure_; }

   protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* text, std::streamsize count) override;
    int sync() override;

   private:
    std::ostream& target_;
    Utf8Pending pending_;         // a sequence whose next bytes decide how it is shown
    std::optional<int> failure_;  // errno of the first write to target_ that failed

    void check_target();  // records errno when target_ has just failed
  };

  std::ostream& target_;
  Buffer buffer_;
};

// The stream `stream` writes to when it is a PrintableStream, else `stream` itself: for the
// progress bar, whose carriage return must reach the terminal.
std::ostream& unescaped(std::ostream& stream);

}  // namespace ipusim::core
