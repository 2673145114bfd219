// TailBuffer: a send's viewport (the newest bytes) and its consuming delta.
#include <doctest/doctest.h>

#include <string>

#include "text/tail_buffer.hpp"

using dshpty::text::TailBuffer;

TEST_CASE("under the bound it keeps everything, untruncated") {
  TailBuffer tail(16);
  tail.append("hello ");
  tail.append("world");
  CHECK(tail.text() == "hello world");
  CHECK_FALSE(tail.truncated());
}

TEST_CASE("over the bound it keeps the last bytes and says it was truncated") {
  TailBuffer tail(8);
  tail.append("0123456789");
  CHECK(tail.text() == "23456789");
  CHECK(tail.truncated());
  tail.append("ab");
  CHECK(tail.text() == "456789ab");
}

TEST_CASE("cuts land on UTF-8 boundaries") {
  const std::string euro = "\xE2\x82\xAC";
  TailBuffer tail(4);
  tail.append(euro + euro);
  CHECK(tail.text() == euro);
  tail.append("a");
  CHECK(tail.text() == euro + "a");
  tail.append("b");
  CHECK(tail.text() == "ab");  // the euro went whole
  TailBuffer tiny(1);
  tiny.append(euro);
  CHECK(tiny.text() == "");
  CHECK(tiny.truncated());

  // Any split of the same stream (between characters) leaves the same tail.
  const std::string input = euro + "x" + euro + euro + "yz" + euro;
  TailBuffer whole(5);
  whole.append(input);
  for (std::size_t i = 0; i <= input.size(); ++i) {
    if (i < input.size() && (static_cast<unsigned char>(input[i]) & 0xC0) == 0x80) continue;
    TailBuffer split(5);
    split.append(input.substr(0, i));
    split.append(input.substr(i));
    CHECK(split.text() == whole.text());
  }
}

TEST_CASE("take_delta hands out each byte once, and says when some were dropped") {
  TailBuffer tail(8);
  tail.append("abc");
  auto d = tail.take_delta();
  CHECK(d.text == "abc");
  CHECK_FALSE(d.truncated);
  d = tail.take_delta();
  CHECK(d.text == "");
  CHECK_FALSE(d.truncated);
  tail.append("de");
  d = tail.take_delta();
  CHECK(d.text == "de");
  CHECK_FALSE(d.truncated);
  tail.append("0123456789");  // more than the bound between two takes
  d = tail.take_delta();
  CHECK(d.text == "23456789");
  CHECK(d.truncated);
  CHECK(tail.text() == "23456789");  // the viewport is unaffected by taking
}

TEST_CASE("clear starts a new send") {
  TailBuffer tail(4);
  tail.append("0123456789");
  tail.clear();
  CHECK(tail.text() == "");
  CHECK_FALSE(tail.truncated());
  auto d = tail.take_delta();
  CHECK(d.text == "");
  CHECK_FALSE(d.truncated);
  tail.append("xy");
  CHECK(tail.text() == "xy");
  CHECK_FALSE(tail.truncated());
}

TEST_CASE("memory stays within the bound, however much arrives") {
  TailBuffer tail(256 << 10);
  std::string chunk(4096, 'y');
  for (int i = 0; i < 12'000; ++i) tail.append(chunk);  // ~50 MB
  CHECK(tail.size() == 256u << 10);
  CHECK(tail.memory_bytes() <= 256u << 10);
  CHECK(tail.truncated());
}
