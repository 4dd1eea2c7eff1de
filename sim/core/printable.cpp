#include "sim/core/printable.hpp"

#include <cerrno>
#include <cstdio>

namespace ipusim::core {
namespace {

constexpr unsigned char kC1Lead = 0xC2;  // UTF-8 of U+0080 to U+00BF starts with it

bool is_c0_or_del(unsigned char c) {
  return (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f;
}

bool is_continuation(unsigned char c) {
  return c >= 0x80 && c <= 0xbf;
}

// The bytes of a UTF-8 sequence this lead starts; 0 for a byte no valid sequence starts with
// (a stray continuation such as a raw 0x9B, which an 8-bit terminal takes as CSI, or 0xFF).
int sequence_length(unsigned char lead) {
  if (lead >= 0xc2 && lead <= 0xdf)
    return 2;
  if (lead >= 0xe0 && lead <= 0xef)
    return 3;
  if (lead >= 0xf0 && lead <= 0xf4)
    return 4;
  return 0;
}

std::string escape(const char* form, unsigned char c) {
  char text[8];
  std::snprintf(text, sizeof text, form, unsigned{c});
  return text;
}

// A sequence cut short, or never valid, shows its bytes as escapes.
void flush_invalid(Utf8Pending& pending, std::string& out) {
  for (int i = 0; i < pending.size; ++i)
    out += escape("\\x%02x", pending.bytes[std::size_t(i)]);
  pending.size = 0;
}

void emit_sequence(Utf8Pending& pending, std::string& out) {
  const unsigned char second = pending.bytes[1];
  if (pending.bytes[0] == kC1Lead && second <= 0x9f)
    out += escape("\\u%04x", second);  // a C1 control
  else
    out.append(reinterpret_cast<const char*>(pending.bytes.data()), std::size_t(pending.size));
  pending.size = 0;
}

// Appends byte `c` of the text to `out`, escaped; `pending` carries an unfinished UTF-8
// sequence between calls.
void append_printable(unsigned char c, Utf8Pending& pending, std::string& out) {
  if (pending.size > 0) {
    if (is_continuation(c)) {
      pending.bytes[std::size_t(pending.size++)] = c;
      if (pending.size == pending.need)
        emit_sequence(pending, out);
      return;
    }
    flush_invalid(pending, out);
  }
  if (c < 0x80) {
    out += is_c0_or_del(c) ? escape("\\x%02x", c) : std::string(1, static_cast<char>(c));
    return;
  }
  pending.need = sequence_length(c);
  if (pending.need == 0) {
    out += escape("\\x%02x", c);
    return;
  }
  pending.bytes[0] = c;
  pending.size = 1;
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  Utf8Pending pending;
  for (const char c : text)
    append_printable(static_cast<unsigned char>(c), pending, out);
  flush_invalid(pending, out);
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
  std::string out;
  flush_invalid(pending_, out);
  target_.write(out.data(), static_cast<std::streamsize>(out.size()));
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
    append_printable(static_cast<unsigned char>(text[i]), pending_, out);
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
