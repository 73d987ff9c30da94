// What the JSON writer and the one-line message text escape (core/util/json.cc, utf8.cc): every
// character that must be escaped is, at the edges of each range, and nothing else is.
#include <catch2/catch.hpp>

#include <limits>
#include <string>

#include "core/util/json.h"
#include "core/util/utf8.h"

using namespace lattice;
using namespace std::string_literals;

TEST_CASE("JSON strings escape quotes, backslashes and every control character below U+0020") {
  CHECK(Json("a\"b\\c").dump(false) == R"("a\"b\\c")");
  CHECK(Json("\n\r\t").dump(false) == R"("\n\r\t")");
  CHECK(Json("\0\x01\x1f"s).dump(false) == R"("\u0000\u0001\u001f")");
  CHECK(Json(" ~\x7f/").dump(false) == "\" ~\x7f/\"");  // U+0020 on are written as they are
  CHECK(Json("\xc2\x85 \xe2\x80\xa8").dump(false) == "\"\xc2\x85 \xe2\x80\xa8\"");  // valid JSON unescaped
}

TEST_CASE("JSON object keys are escaped like strings, and a number that is not finite is null") {
  auto o = Json::object();
  o.set("k\"\n", 1);
  o.set("inf", std::numeric_limits<double>::infinity());
  o.set("nan", std::numeric_limits<double>::quiet_NaN());
  o.set("x", 0.5);
  CHECK(o.dump(false) == R"({"k\"\n":1,"inf":null,"nan":null,"x":0.5})");
}

TEST_CASE("one-line text escapes C0, DEL, C1 and the Unicode line separators, at the edges of each range") {
  CHECK(printable("\x1f\x20\x7e\x7f") == "\\x1f \x7e\\x7f");
  CHECK(printable("\xc2\x80|\xc2\x9f|\xc2\xa0") == "\\u0080|\\u009f|\xc2\xa0");
  CHECK(printable("\xe2\x80\xa7|\xe2\x80\xa8|\xe2\x80\xa9|\xe2\x80\xaa") == "\xe2\x80\xa7|\\u2028|\\u2029|\xe2\x80\xaa");
}

TEST_CASE("UTF-8 that is overlong, a surrogate or past U+10FFFF becomes U+FFFD, its limits stay") {
  const std::string r = "\xef\xbf\xbd";
  CHECK(valid_utf8("\xc1\xbf") == r + r);                           // overlong U+007F
  CHECK(valid_utf8("\xc2\x80") == "\xc2\x80");                      // U+0080, the first two-byte
  CHECK(valid_utf8("\xe0\x9f\xbf") == r + r + r);                   // overlong U+07FF
  CHECK(valid_utf8("\xe0\xa0\x80") == "\xe0\xa0\x80");              // U+0800
  CHECK(valid_utf8("\xed\x9f\xbf") == "\xed\x9f\xbf");              // U+D7FF
  CHECK(valid_utf8("\xed\xbf\xbf") == r + r + r);                   // U+DFFF, a surrogate
  CHECK(valid_utf8("\xee\x80\x80") == "\xee\x80\x80");              // U+E000
  CHECK(valid_utf8("\xf0\x8f\xbf\xbf") == r + r + r + r);           // overlong U+FFFF
  CHECK(valid_utf8("\xf4\x8f\xbf\xbf") == "\xf4\x8f\xbf\xbf");      // U+10FFFF
  CHECK(valid_utf8("\xf4\x90\x80\x80") == r + r + r + r);           // U+110000
  CHECK(valid_utf8("\xe2\x82") == r + r);                           // cut short
}
