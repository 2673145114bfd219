// The one UTF-8 module: cuts at character boundaries, and decoding one character.
#include <doctest/doctest.h>

#include <string>

#include "text/utf8.hpp"

using namespace dshpty;

TEST_CASE("prefix never ends inside a character") {
  const std::string euro = "\xE2\x82\xAC";  // 3 bytes
  const std::string text = "ab" + euro + "cd";
  CHECK(utf8::prefix(text, 100) == text);
  CHECK(utf8::prefix(text, 2) == "ab");
  CHECK(utf8::prefix(text, 3) == "ab");
  CHECK(utf8::prefix(text, 4) == "ab");
  CHECK(utf8::prefix(text, 5) == "ab" + euro);
  CHECK(utf8::prefix(text, 6) == "ab" + euro + "c");
  const std::string emoji = "\xF0\x9F\x98\x80";  // 4 bytes
  for (std::size_t cut = 0; cut < 4; ++cut) CHECK(utf8::prefix(emoji + "x", cut).empty());
  CHECK(utf8::prefix(emoji + "x", 4) == emoji);
  // Stray continuation bytes are single characters: cut like any byte.
  CHECK(utf8::prefix("a\x80\x80\x80\x80", 3) == "a\x80\x80");
}

TEST_CASE("decode: complete, incomplete and ill-formed input") {
  auto one = utf8::decode("a");
  CHECK(one.state == utf8::DecodedChar::State::complete);
  CHECK(one.code_point == U'a');
  CHECK(one.length == 1);
  auto e = utf8::decode("\xC3\xA9z");
  CHECK(e.code_point == 0xE9);
  CHECK(e.length == 2);
  CHECK(utf8::decode("\xE2\x82").state == utf8::DecodedChar::State::incomplete);
  CHECK(utf8::decode("").state == utf8::DecodedChar::State::incomplete);
  auto bad = utf8::decode("\xFFx");
  CHECK(bad.code_point == 0xFFFD);
  CHECK(bad.length == 1);
  CHECK(utf8::decode("\xC3x").code_point == 0xFFFD);
  CHECK(utf8::decode("\xC3x").length == 1);  // the x is read afresh
  CHECK(utf8::decode("\xE0\x80\x80").code_point == 0xFFFD);  // overlong
  CHECK(utf8::decode("\xED\xA0\x80").code_point == 0xFFFD);  // surrogate
  CHECK(utf8::decode("\xF0\x9F\x98\x80").code_point == 0x1F600);
}
