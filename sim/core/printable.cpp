#include "sim/core/printable.hpp"

#include <cerrno>
#include <cstdio>

namespace ipusim::core {
namespace {

constexpr unsigned char kC1Lead = 0xC2;  // UTF-8 of U+0080 to U+00BF starts with it

bool is_c0_or_del(unsigned char c) {
  return (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f;
}

bool is_c1_tail(unsigned char c) {
  return c >= 0x80 && c <= 0x9f;
}

std::string escape(const char* form, unsigned char c) {
  char text[8];
  std::snprintf(text, sizeof text, form, unsigned{c});
  return text;
}

// Appends byte `c` of the text to `out`, escaped; `lead_held` carries a 0xC2 between calls.
void append_printable(unsigned char c, bool& lead_held, std::string& out) {
  if (lead_held) {
    lead_held = false;
    if (is_c1_tail(c)) {
      out += escape("\\u%04x", c);
      return;
    }
    out += static_cast<char>(kC1Lead);
  }
  if (c == kC1Lead)
    lead_held = true;
  else if (is_c0_or_del(c))
    out += escape("\\x%02x", c);
  else
    out += static_cast<char>(c);
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool lead_held = false;
  for (const char c : text)
    append_printable(static_cast<unsigned char>(c), lead_held, out);
  if (lead_held)
    out += static_cast<char>(kC1Lead);
  return out;
}

PrintableStream::PrintableStream(std::ostream& target)
    : std::ostream(nullptr), target_(target), buffer_(target) {
  rdbuf(&buffer_);
}

PrintableStream::~PrintableStream() {
  buffer_.finish();
}

std::optional<int> PrintableStream::finish() {
  buffer_.finish();
  flush();
  return buffer_.failure();
}

void PrintableStream::Buffer::finish() {
  if (lead_held_)
    target_.put(static_cast<char>(kC1Lead));
  lead_held_ = false;
  check_target();
}

void PrintableStream::Buffer::check_target() {
  if (!target_ && !failure_)
    failure_ = errno;
}

PrintableStream::Buffer::int_type PrintableStream::Buffer::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof()))
    return traits_type::not_eof(c);
  const char byte = traits_type::to_char_type(c);
  return xsputn(&byte, 1) == 1 ? c : traits_type::eof();
}

std::streamsize PrintableStream::Buffer::xsputn(const char* text, std::streamsize count) {
  std::string out;
  out.reserve(static_cast<std::size_t>(count));
  for (std::streamsize i = 0; i < count; ++i)
    append_printable(static_cast<unsigned char>(text[i]), lead_held_, out);
  target_.write(out.data(), static_cast<std::streamsize>(out.size()));
  check_target();
  return target_ ? count : 0;
}

int PrintableStream::Buffer::sync() {
  target_.flush();
  check_target();
  return target_ ? 0 : -1;
}

std::ostream& unescaped(std::ostream& stream) {
  // The one type test: a PrintableStream hides its target, which only the progress bar needs.
  if (auto* printable = dynamic_cast<PrintableStream*>(&stream))
    return printable->target();
  return stream;
}

}  // namespace ipusim::core
