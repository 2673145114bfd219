// The one truncation (cut_to_fit) and the send buffer that keeps a head and a tail for it.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "text/head_tail_buffer.hpp"
#include "text/truncation.hpp"

using namespace dshpty::text;

namespace {

std::string numbered(int from, int to) {
  std::string out;
  for (int i = from; i <= to; ++i) out += std::to_string(i) + "\n";
  return out;
}

// head + omitted + tail = the whole, read off the cut text.
void check_accounts(const Cut& cut, std::string_view whole) {
  const std::string marker = truncation_marker(cut.omitted);
  const std::size_t at = cut.text.find(marker);
  REQUIRE(at != std::string::npos);
  std::string head = cut.text.substr(0, at);
  const std::string tail = cut.text.substr(at + marker.size() + 1);
  if (!head.empty() && whole.substr(0, head.size()) != head) head.pop_back();  // the newline added before the marker
  CHECK(whole.substr(0, head.size()) == head);
  CHECK(whole.substr(whole.size() - tail.size()) == tail);
  CHECK(head.size() + cut.omitted.bytes + tail.size() == whole.size());
  const auto lines = [](std::string_view s) { return static_cast<std::uint64_t>(std::count(s.begin(), s.end(), '\n')); };
  CHECK(lines(head) + cut.omitted.lines + lines(tail) == lines(whole));
}

}  // namespace

TEST_CASE("what fits is kept whole and untouched") {
  const Cut cut = cut_to_fit("a\nb\n", 64);
  CHECK(cut.text == "a\nb\n");
  CHECK_FALSE(cut.truncated);
  CHECK(cut.omitted.bytes == 0);
}

TEST_CASE("a long text keeps its head and its tail, the tail favoured, the marker between") {
  const std::string whole = numbered(1, 100000);
  for (std::size_t cap : {std::size_t{256}, std::size_t{4096}, std::size_t{65536}}) {
    INFO("cap " << cap);
    const Cut cut = cut_to_fit(whole, cap);
    CHECK(cut.truncated);
    CHECK(cut.text.size() <= cap);
    CHECK(cut.text.rfind("1\n2\n", 0) == 0);          // the head starts at the start
    CHECK(cut.text.size() >= 7);
    CHECK(cut.text.substr(cut.text.size() - 7) == "100000\n");  // the tail ends at the end
    const std::size_t marker = cut.text.find("[output truncated: ");
    REQUIRE(marker != std::string::npos);
    CHECK(cut.text[marker - 1] == '\n');
    // Whole lines on both sides, and more of the tail than of the head.
    CHECK(cut.text.size() - cut.text.find('\n', marker) > marker);
    check_accounts(cut, whole);
  }
}

TEST_CASE("the marker names what was left out, in lines and bytes") {
  const std::string whole = numbered(1, 1000);
  const Cut cut = cut_to_fit(whole, 200);
  CHECK(cut.text.find("[output truncated: " + std::to_string(cut.omitted.lines) + " lines, " +
                      std::to_string(cut.omitted.bytes) + " bytes left out]\n") != std::string::npos);
  CHECK(truncation_marker({1, 1}) == "[output truncated: 1 line, 1 byte left out]");
}

TEST_CASE("one long line is cut on character boundaries") {
  std::string whole;
  for (int i = 0; i < 2000; ++i) whole += "\xE2\x82\xAC";  // 3 bytes each, no newline
  const Cut cut = cut_to_fit(whole, 300);
  CHECK(cut.truncated);
  CHECK(cut.text.size() <= 300);
  const std::size_t marker = cut.text.find("[output truncated: ");
  CHECK(marker % 3 == 1);  // whole euros, then the newline added before the marker
  const std::string tail = cut.text.substr(cut.text.find(']', marker) + 2);
  CHECK(tail.size() % 3 == 0);
  CHECK(cut.omitted.lines == 0);
  check_accounts(cut, whole);
}

TEST_CASE("a long line between its echo and its prompt keeps its head and its end, not only the newlines") {
  // A one-line JSON answer of 40 KB under a 30,000-byte cap: cutting back to the echo's and
  // the prompt's newlines would keep neither end of the line the command printed.
  const std::string line = "{\"k\":[" + std::string(40'000, '1') + "]}";
  const std::string whole = "python3 -c 'print(...)'\n" + line + "\ndsh> ";
  const Cut cut = cut_to_fit(whole, 30'000);
  CHECK(cut.truncated);
  CHECK(cut.text.size() <= 30'000);
  CHECK(cut.text.size() > 25'000);  // the room is used
  CHECK(cut.text.find("{\"k\":[111") != std::string::npos);
  CHECK(cut.text.find("111]}\ndsh> ") != std::string::npos);
  check_accounts(cut, whole);
  // A newline near the cut still gives a clean line start.
  const Cut lines = cut_to_fit(numbered(1, 5000), 3000);
  CHECK(lines.text.substr(lines.text.rfind("]\n") + 2).find('\n') != 0);
  check_accounts(lines, numbered(1, 5000));
}

TEST_CASE("a cap smaller than the marker gives the marker line alone") {
  const Cut cut = cut_to_fit(numbered(1, 100), 10);
  CHECK(cut.text == truncation_marker(cut.omitted) + "\n");
  CHECK(cut.omitted.bytes == numbered(1, 100).size());
}

TEST_CASE("a gap the buffer dropped is counted with the cut's own") {
  const Cut cut = cut_to_fit("1\n2\n", {100, 10}, "9\n", 1000);
  CHECK(cut.truncated);
  CHECK(cut.text == "1\n2\n" + truncation_marker({100, 10}) + "\n9\n");
}

TEST_CASE("newest keeps the last bytes and says it dropped some") {
  bool dropped = false;
  CHECK(newest("abc", 8, dropped) == "abc");
  CHECK_FALSE(dropped);
  CHECK(newest("0123456789", 4, dropped) == "6789");
  CHECK(dropped);
  dropped = false;
  CHECK(newest("a\xE2\x82\xAC" "b", 3, dropped) == "b");  // never half a character
}

TEST_CASE("the send buffer keeps its head and tail and cuts as the whole would be cut") {
  const std::string whole = numbered(1, 100000);
  for (std::size_t cap : {std::size_t{300}, std::size_t{5000}, std::size_t{30000}}) {
    INFO("cap " << cap);
    HeadTailBuffer buffer(30000 / 3, 30000 - 30000 / 3);
    for (std::size_t at = 0; at < whole.size(); at += 4096) buffer.append(std::string_view(whole).substr(at, 4096));
    CHECK(buffer.truncated());
    const Cut from_buffer = buffer.cut(cap);
    const Cut from_whole = cut_to_fit(whole, cap);
    CHECK(from_buffer.text == from_whole.text);
    CHECK(from_buffer.omitted.bytes == from_whole.omitted.bytes);
    CHECK(from_buffer.omitted.lines == from_whole.omitted.lines);
    CHECK(buffer.memory_bytes() <= 30000 + 30000 / 3);
  }
}

TEST_CASE("the send buffer under its bounds: whole, and a redrawn line replaced in both ends") {
  HeadTailBuffer buffer(8, 16);
  buffer.append("ab\ncd");
  CHECK(buffer.cut(100).text == "ab\ncd");
  buffer.rewrite_line("XY");
  CHECK(buffer.cut(100).text == "ab\nXY");
  buffer.append("z\n");
  CHECK(buffer.cut(100).text == "ab\nXYz\n");
  CHECK_FALSE(buffer.truncated());
  CHECK(buffer.take_delta().text == "ab\nXYz\n");
  buffer.clear();
  CHECK(buffer.cut(100).text.empty());
}
