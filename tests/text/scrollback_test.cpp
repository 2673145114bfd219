// Scrollback: line and byte caps, UTF-8-safe cuts, paging from the newest line.
#include <doctest/doctest.h>

#include <string>

#include "dshpty/errors.hpp"
#include "text/scrollback.hpp"

using dshpty::Code;
using dshpty::ReadPage;
using dshpty::ReadRequest;
using dshpty::text::Scrollback;
using dshpty::text::ScrollbackLimits;

namespace {

ReadPage page_of(const Scrollback& sb, std::int64_t offset, std::int64_t count) {
  auto page = sb.read(ReadRequest{offset, count});
  REQUIRE(page.ok());
  return *page;
}

void check_page(const ReadPage& page, const std::string& text, std::int64_t begin, std::int64_t end,
                bool truncated) {
  CHECK(page.text == text);
  CHECK(page.line_begin == begin);
  CHECK(page.line_end == end);
  CHECK(page.truncated == truncated);
}

std::string numbered_lines(int from, int to) {
  std::string s;
  for (int i = from; i < to; ++i) s += "L" + std::to_string(i) + "\n";
  return s;
}

bool is_char_boundary(const std::string& s, std::size_t i) {
  return i == s.size() || (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
}

// The state a whole-text append leaves must not depend on how the text was split (at
// character boundaries: appends are whole characters, as the sanitizer emits them).
void check_every_split(ScrollbackLimits limits, const std::string& input) {
  Scrollback whole(limits);
  whole.append(input);
  INFO("input: " << input);
  for (std::size_t i = 0; i <= input.size(); ++i) {
    if (!is_char_boundary(input, i)) continue;
    Scrollback split(limits);
    split.append(std::string_view(input).substr(0, i));
    split.append(std::string_view(input).substr(i));
    INFO("split at " << i);
    REQUIRE(split.text() == whole.text());
    REQUIRE(split.total_lines() == whole.total_lines());
  }
  Scrollback bytes(limits);  // character by character
  for (std::size_t i = 0, j = 1; i < input.size(); i = j++) {
    while (!is_char_boundary(input, j)) ++j;
    bytes.append(std::string_view(input).substr(i, j - i));
  }
  REQUIRE(bytes.text() == whole.text());
  REQUIRE(bytes.total_lines() == whole.total_lines());
}

}  // namespace

TEST_CASE("an empty scrollback has no lines and reads an empty page") {
  Scrollback sb;
  CHECK(sb.total_lines() == 0);
  ReadPage page = page_of(sb, 0, 500);
  check_page(page, "", 0, 0, false);
  CHECK(page.total_lines == 0);
}

TEST_CASE("a partial last line counts as a line and grows in place") {
  Scrollback sb;
  sb.append("a\nb");
  CHECK(sb.total_lines() == 2);
  check_page(page_of(sb, 0, 500), "a\nb", 0, 2, false);
  check_page(page_of(sb, 0, 1), "b", 1, 2, false);
  sb.append("c\n");
  CHECK(sb.total_lines() == 2);  // "a\n", "bc\n": no empty line after the last '\n'
  check_page(page_of(sb, 0, 1), "bc\n", 1, 2, false);
  sb.append("d");
  CHECK(sb.total_lines() == 3);
}

TEST_CASE("pages count lines back from the newest") {
  Scrollback sb;
  sb.append(numbered_lines(0, 10));
  CHECK(sb.total_lines() == 10);
  check_page(page_of(sb, 0, 3), "L7\nL8\nL9\n", 7, 10, false);
  check_page(page_of(sb, 3, 3), "L4\nL5\nL6\n", 4, 7, false);
  check_page(page_of(sb, 8, 5), "L0\nL1\n", 0, 2, false);
  check_page(page_of(sb, 0, 500), numbered_lines(0, 10), 0, 10, false);
  check_page(page_of(sb, 9, 1), "L0\n", 0, 1, false);
  CHECK(page_of(sb, 0, 3).total_lines == 10);
}

TEST_CASE("an offset past the end gives an empty page at that offset") {
  Scrollback sb;
  sb.append(numbered_lines(0, 4));
  for (std::int64_t offset : std::initializer_list<std::int64_t>{4, 5, 1000, INT64_MAX}) {
    ReadPage page = page_of(sb, offset, 10);
    check_page(page, "", 0, 0, false);
    CHECK(page.total_lines == 4);
  }
}

TEST_CASE("a negative offset or a count below 1 is INVALID_ARGUMENT") {
  Scrollback sb;
  sb.append("x\n");
  for (ReadRequest bad : {ReadRequest{-1, 10}, ReadRequest{0, 0}, ReadRequest{0, -5},
                          ReadRequest{INT64_MIN, 1}}) {
    auto page = sb.read(bad);
    REQUIRE_FALSE(page.ok());
    CHECK(page.error()->code == Code::INVALID_ARGUMENT);
  }
  CHECK(sb.read(ReadRequest{0, INT64_MAX}).ok());
  CHECK(ReadRequest{}.count == 500);  // the default count
}

TEST_CASE("the line cap evicts the oldest lines") {
  Scrollback sb({3, 1 << 20, 1 << 20});
  sb.append(numbered_lines(0, 5));
  CHECK(sb.total_lines() == 3);
  CHECK(sb.text() == "L2\nL3\nL4\n");
  sb.append("partial");
  CHECK(sb.total_lines() == 3);
  CHECK(sb.text() == "L3\nL4\npartial");
  check_every_split({3, 1 << 20, 1 << 20}, numbered_lines(0, 6) + "tail");
}

TEST_CASE("the byte cap evicts the oldest whole lines") {
  const ScrollbackLimits limits{100, 10, 1 << 20};
  Scrollback sb(limits);
  sb.append("aaaa\n");
  sb.append("bbbb\n");
  CHECK(sb.retained_bytes() == 10);
  sb.append("c");
  CHECK(sb.text() == "bbbb\nc");  // "aaaa\n" went whole, not one byte of it
  sb.append("cc\n");
  CHECK(sb.text() == "bbbb\nccc\n");
  sb.append("dd");
  CHECK(sb.text() == "ccc\ndd");

  check_every_split(limits, "aaaa\nbbbb\ncc");
  check_every_split(limits, "aaaaaaaa" "a\nbb");
  check_every_split(limits, "a\nb\nc\nd\ne\nf\ng\n");
  check_every_split(limits, "0123456789\n0123456789\n");
}

TEST_CASE("only a line longer than the byte cap is cut inside itself") {
  const ScrollbackLimits limits{100, 10, 1 << 20};
  Scrollback sb(limits);
  sb.append("head\n");
  for (int i = 0; i < 5; ++i) sb.append("xxxxxxx");
  CHECK(sb.text() == "xxxxxxxxxx");
  CHECK(sb.total_lines() == 1);
  sb.append("\n");
  CHECK(sb.text() == "xxxxxxxxx\n");
  sb.append("y");
  CHECK(sb.text() == "y");  // the complete long line goes whole
  check_every_split(limits, "head\n" + std::string(35, 'x') + "\nyy");
  check_every_split(limits, std::string(25, 'x'));
}

TEST_CASE("cuts land on UTF-8 boundaries") {
  const std::string euro = "\xE2\x82\xAC";
  {
    Scrollback sb({100, 4, 1 << 20});
    sb.append(euro + euro);  // 6 bytes into 4: the first euro goes whole
    CHECK(sb.text() == euro);
    sb.append(euro);
    CHECK(sb.text() == euro);
  }
  check_every_split({100, 4, 1 << 20}, euro + euro + euro + "a" + euro);
  check_every_split({100, 8, 1 << 20}, "\xF0\x9F\x98\x80" "\xF0\x9F\x98\x80" "\xF0\x9F\x98\x80" "b");
  {
    Scrollback sb({100, 2, 1 << 20});  // smaller than one character: it is dropped, not split
    sb.append(euro);
    CHECK(sb.text() == "");
    CHECK(sb.total_lines() == 0);
  }
}

TEST_CASE("a page is bounded in bytes and keeps its newest whole lines") {
  Scrollback sb({100, 1 << 20, 5});
  sb.append("aa\nbb\ncc\n");
  check_page(page_of(sb, 0, 3), "cc\n", 2, 3, true);
  check_page(page_of(sb, 0, 2), "cc\n", 2, 3, true);
  check_page(page_of(sb, 1, 1), "bb\n", 1, 2, false);
  sb.append("0123456789");  // a line longer than the page: its tail
  check_page(page_of(sb, 0, 1), "56789", 3, 4, true);
  check_page(page_of(sb, 0, 10), "56789", 3, 4, true);
}

TEST_CASE("a one-byte page drops a 3-byte character rather than splitting it") {
  const std::string euro = "\xE2\x82\xAC";
  Scrollback sb({100, 1 << 20, 1});
  sb.append(euro);
  check_page(page_of(sb, 0, 1), "", 0, 1, true);
  sb.append("\n");
  check_page(page_of(sb, 0, 1), "\n", 0, 1, true);
  sb.append("a" + euro);
  check_page(page_of(sb, 0, 1), "", 1, 2, true);
}

TEST_CASE("paging with offset += lines returned walks every line exactly once") {
  Scrollback sb({1000, 1 << 20, 20});
  sb.append(numbered_lines(0, 50));
  std::string all;
  std::int64_t offset = 0;
  for (int guard = 0; guard < 100; ++guard) {
    ReadPage page = page_of(sb, offset, 7);
    if (page.line_end == page.line_begin) break;
    all = page.text + all;
    offset += page.line_end - page.line_begin;
  }
  CHECK(all == numbered_lines(0, 50));
}

TEST_CASE("a runaway producer never grows memory past the caps") {
  // `yes | head -c 50000000` through the default caps, in PTY-sized chunks.
  Scrollback sb;
  const ScrollbackLimits& limits = sb.limits();
  std::string chunk;
  for (int i = 0; i < 2048; ++i) chunk += "y\n";
  std::size_t peak = 0;
  for (std::size_t written = 0; written < 50'000'000; written += chunk.size()) {
    sb.append(chunk);
    peak = std::max(peak, sb.memory_bytes());
  }
  CHECK(sb.total_lines() == 10'000);
  CHECK(sb.retained_bytes() == 20'000);
  CHECK(peak <= limits.max_bytes + 2 * (limits.max_lines + 1) * sizeof(std::uint64_t));

  // One endless line: bytes capped.
  Scrollback line;
  std::string xs(65536, 'x');
  for (int i = 0; i < 200; ++i) line.append(xs);
  CHECK(line.retained_bytes() == line.limits().max_bytes);
  CHECK(line.total_lines() == 1);
  CHECK(line.memory_bytes() <= line.limits().max_bytes + 2 * (10'001) * sizeof(std::uint64_t));
}
