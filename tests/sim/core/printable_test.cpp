#include "sim/core/printable.hpp"

#include <catch2/catch.hpp>
#include <cerrno>
#include <sstream>

using namespace ipusim::core;

TEST_CASE("control characters are shown as escapes, line feeds and tabs as they are") {
  CHECK(printable("a\x1b]0;pwned\x07z") == "a\\x1b]0;pwned\\x07z");
  CHECK(printable(std::string("n\0l", 3)) == "n\\x00l");
  CHECK(printable("cr\rdel\x7f") == "cr\\x0ddel\\x7f");
  CHECK(printable("two\n\tlines") == "two\n\tlines");
}

TEST_CASE("C1 controls in UTF-8 are escaped and other UTF-8 text is kept") {
  CHECK(printable("csi\xc2\x9b") == "csi\\u009b");
  CHECK(printable("caf\xc3\xa9 \xc2\xb5s") == "caf\xc3\xa9 \xc2\xb5s");
  CHECK(printable("\xc2") == "\\xc2");  // cut short
}

TEST_CASE("bytes that are not valid UTF-8 are shown as escapes") {
  CHECK(printable("\x9b"
                  "2J") == "\\x9b2J");  // CSI on an 8-bit terminal
  CHECK(printable("\xff\xfe") == "\\xff\\xfe");
  CHECK(printable("\xc3(") == "\\xc3(");  // a lead byte without its continuation
  CHECK(printable("\xe2\x82") == "\\xe2\\x82");
  CHECK(printable("\xe2\x82\xac \xf0\x9f\x98\x80") == "\xe2\x82\xac \xf0\x9f\x98\x80");
}

TEST_CASE("a printable stream escapes what is written to it, one character at a time too") {
  std::ostringstream target;
  {
    PrintableStream stream(target);
    stream << "x\x1b[2J" << '\x07' << '\xc2' << '\x85' << "\xc2";
    stream.put('\xb5');
    CHECK(&unescaped(stream) == &target);
  }
  CHECK(target.str() == "x\\x1b[2J\\x07\\u0085\xc2\xb5");
  CHECK(&unescaped(target) == &target);
}

TEST_CASE("a printable stream's finish says whether a write to its target failed, and why") {
  std::ostringstream target;
  PrintableStream fine(target);
  fine << "text";
  CHECK(!fine.finish().has_value());
  CHECK(target.str() == "text");
  std::ostream broken(nullptr);  // no buffer: every write fails
  PrintableStream lost(broken);
  errno = ENOSPC;
  lost << "text";
  errno = 0;
  lost << "more";
  CHECK(lost.finish() == ENOSPC);
}
