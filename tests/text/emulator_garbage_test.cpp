// Any byte stream, however malformed, leaves the emulator whole: a cell's flags are the
// grid's alone (a code point the parser hands over above Unicode's last is a replacement
// character), and a few MB of random bytes at several sizes, resized in between, neither
// crash nor leave a cell the grid cannot read back.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "screen/emulator.hpp"
#include "screen/grid.hpp"

using dshpty::screen::Emulator;
using dshpty::screen::Grid;

namespace {

// Well-formed UTF-8 of Unicode scalar values only: what a cell the grid can read back gives.
bool valid_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    unsigned length = lead < 0x80 ? 1 : lead >= 0xC2 && lead < 0xE0 ? 2 : lead >= 0xE0 && lead < 0xF0 ? 3
                      : lead >= 0xF0 && lead < 0xF5                 ? 4
                                                                    : 0;
    if (length == 0 || i + length > text.size()) return false;
    char32_t c = length == 1 ? lead : lead & (0x7F >> length);
    for (unsigned k = 1; k < length; ++k) {
      const auto byte = static_cast<unsigned char>(text[i + k]);
      if ((byte & 0xC0) != 0x80) return false;
      c = (c << 6) | (byte & 0x3F);
    }
    const char32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < least[length] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return false;
    i += length;
  }
  return true;
}

}  // namespace

TEST_CASE("a code point past Unicode's last is a replacement character, not a cell flag") {
  // 0x80000041 carries the bit that says "its marks are in the row's map": the grid would
  // look for a map that was never made when anything is written over it.
  Grid grid(2, 10);
  const std::u32string flagged = {char32_t{0x80000041}};
  grid.put(0, 3, flagged, 1);
  CHECK(grid.lines() == std::vector<std::string>{"   \xEF\xBF\xBD"});
  grid.put(0, 3, U"x", 1);  // was: SIGSEGV in Grid::set (no marks map)
  grid.move({1, 2, 0, 5}, {0, 1, 0, 5});
  CHECK(grid.lines() == std::vector<std::string>{"   x", "   x"});
  // Marks too, and the wide flag (0x40000000) and the grid's sentinels (0x110000..).
  grid.put(0, 0, std::u32string{U'e', char32_t{0xC0000301}}, 1);
  grid.put(0, 1, std::u32string{char32_t{0x40000042}}, 1);
  grid.put(0, 2, std::u32string{char32_t{0x110000}}, 1);
  CHECK(grid.lines()[0] == "e\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDx");
}

TEST_CASE("a six-byte UTF-8 form through the emulator shows a replacement character") {
  // libvterm 0.1 decodes it to 0x7FFFFFFF, which has the grid's wide bit set: the cell read
  // as half a wide character, a blank.
  Emulator emulator(5, 20, nullptr);
  emulator.on_bytes("a\xFD\xBF\xBF\xBF\xBF\xBF" "b");
  emulator.on_bytes("\r\x1b[@\x1b[P");  // insert and delete a character: the row's cells move
  CHECK(emulator.snapshot().lines == std::vector<std::string>{"a\xEF\xBF\xBD" "b"});
}

TEST_CASE("the shortest stream found that hands the grid a stale code point, written over") {
  // Shrunk from `cat` of random bytes: G0 designated an unknown set (so all of it goes
  // through libvterm), a 3-byte lead cut by a control, a stray continuation, a 4-byte lead
  // cut by 'i'. libvterm 0.1 then puts a glyph whose code point is whatever its buffer held
  // (0xfffff954 with ASLR off): the grid took its top bit as "marks in the row's map".
  Emulator emulator(5, 20, nullptr);
  emulator.on_bytes("\x1b(k5\xE9\x06z\xA6\xF6i");
  auto lines = emulator.snapshot().lines;
  REQUIRE(lines.size() == 1);
  CHECK(valid_utf8(lines[0]));
  // Over every cell of the row, through libvterm (a non-ASCII character): was SIGSEGV.
  emulator.on_bytes("\x1b(B\r\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9");
  CHECK(emulator.snapshot().lines == std::vector<std::string>{"\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9"});
}

TEST_CASE("a cursor restored below a shrunk screen writes no row of the ring") {
  // libvterm 0.1 keeps a saved cursor (ESC 7) as it was through a shrink, and ESC 8 puts its
  // cursor back on row 39 of 24: the plain-text path wrote there, which the ring took for
  // row 15 (or, past twice the rows, a row beyond the vector: a leaked row under ASan).
  Emulator emulator(40, 20, nullptr);
  emulator.on_bytes("top\x1b[40;1H\x1b" "7");
  emulator.resize(24, 20);
  emulator.on_bytes("\x1b" "8abc");
  CHECK(emulator.snapshot().rows == 24);
  for (const std::string& line : emulator.snapshot().lines) CHECK(line.find("ab") == std::string::npos);
}

TEST_CASE("megabytes of random bytes at several sizes, resized in between, crash nothing") {
  struct Size {
    unsigned rows, cols;
  };
  const std::vector<Size> sizes = {{40, 120}, {24, 80}, {40, 160}, {5, 7}, {60, 200}, {1, 3}};
  std::mt19937 random(1);
  Emulator emulator(40, 120, [](std::string_view) {});
  std::string chunk;
  std::size_t fed = 0;
  for (int round = 0; round < 3; ++round) {
    for (const Size& size : sizes) {
      emulator.resize(size.rows, size.cols);
      // A read's worth at a time, of sizes a pty hands over.
      for (int read = 0; read < 8; ++read) {
        chunk.resize(std::uniform_int_distribution<std::size_t>(1, 65536)(random));
        for (char& byte : chunk) byte = static_cast<char>(random() & 0xFF);
        emulator.on_bytes(chunk);
        fed += chunk.size();
      }
      // Every cell read back: the snapshot, and a result's text (which reads marks too).
      const auto shot = emulator.snapshot();
      CHECK(shot.rows == size.rows);
      CHECK(shot.cols == size.cols);
      for (const std::string& line : shot.lines) CHECK(valid_utf8(line));
      CHECK(valid_utf8(emulator.result_text("", 1u << 20).text));
      emulator.start_text(emulator.text_cursor());
    }
  }
  CHECK(fed > (2u << 20));
}
