// The screen emulator: what a person would see, the replies a program waits for, keys in
// the terminal's modes; and, on random streams of the sequences real programs write, the
// same text in every cell as libvterm's own screen layer (the oracle) on any split.
#include <doctest/doctest.h>
#include <vterm.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "screen/emulator.hpp"
#include "screen/keys.hpp"

namespace doctest {
template <>
struct StringMaker<std::vector<std::string>> {
  static String convert(const std::vector<std::string>& lines) {
    std::string out = "\n";
    for (const std::string& line : lines) out += "|" + line + "|\n";
    return String(out.c_str());
  }
};
template <>
struct StringMaker<dshpty::ScreenSnapshot> {
  static String convert(const dshpty::ScreenSnapshot& shot) {
    std::string out = "cursor " + std::to_string(shot.cursor_row) + "," + std::to_string(shot.cursor_col) +
                      (shot.alternate ? " alternate" : "") + (shot.cursor_visible ? "" : " hidden") + " title=" + shot.title + "\n";
    for (const std::string& line : shot.lines) out += "|" + line + "|\n";
    return String(out.c_str());
  }
};
}  // namespace doctest

using dshpty::ScreenSnapshot;
using dshpty::screen::Emulator;
using dshpty::screen::Key;
using dshpty::screen::parse_keys;

namespace {

ScreenSnapshot render(const std::string& bytes, unsigned rows = 5, unsigned cols = 10) {
  Emulator emulator(rows, cols, nullptr);
  emulator.on_bytes(bytes);
  return emulator.snapshot();
}

std::string keys(Emulator& emulator, std::vector<std::string> names) {
  auto parsed = parse_keys(names);
  REQUIRE(parsed.ok());
  return emulator.encode(*parsed);
}

std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", c);
      out += hex;
    }
  }
  return out;
}

// libvterm's screen layer, the reference: each row's text as Grid::lines() spells it.
std::vector<std::string> oracle_lines(const std::string& bytes, unsigned rows, unsigned cols) {
  VTerm* vt = vterm_new(static_cast<int>(rows), static_cast<int>(cols));
  vterm_set_utf8(vt, 1);
  VTermScreen* screen = vterm_obtain_screen(vt);
  vterm_screen_enable_altscreen(screen, 1);
  vterm_screen_reset(screen, 1);
  vterm_input_write(vt, bytes.data(), bytes.size());
  std::vector<std::string> lines;
  for (unsigned row = 0; row < rows; ++row) {
    std::string line;
    // libvterm's screen layer keeps half of a wide character that something narrower
    // overwrote; a terminal shows that half blank, as the emulator does.
    auto cell_at = [&](unsigned col) {
      VTermScreenCell cell;
      vterm_screen_get_cell(screen, VTermPos{static_cast<int>(row), static_cast<int>(col)}, &cell);
      return cell;
    };
    constexpr auto kTail = static_cast<uint32_t>(-1);
    for (unsigned col = 0; col < cols; ++col) {
      VTermScreenCell cell = cell_at(col);
      // (A narrow character written over a wide one's first half still reads as wide there:
      // the streams' only wide characters are these three.)
      auto narrow = [](const VTermScreenCell& c) {
        return c.chars[0] != 0x4E2D && c.chars[0] != 0x6587 && c.chars[0] != 0x1F642;  // 中 文 🙂
      };
      bool orphan_tail = cell.chars[0] == kTail && (col == 0 || cell_at(col - 1).width != 2 || narrow(cell_at(col - 1)));
      bool orphan_head = cell.chars[0] != 0 && cell.chars[0] != kTail && !narrow(cell) && cell.width == 1;
      if (orphan_tail || orphan_head) {
        line += ' ';
        continue;
      }
      if (cell.chars[0] == kTail) continue;  // a wide character's second cell
      if (cell.chars[0] == 0) {
        line += ' ';
        continue;
      }
      for (int i = 0; i < VTERM_MAX_CHARS_PER_CELL && cell.chars[i] != 0; ++i) {
        char32_t c = cell.chars[i];
        if (c < 0x80) {
          line += static_cast<char>(c);
        } else if (c < 0x800) {
          line += static_cast<char>(0xC0 | (c >> 6));
          line += static_cast<char>(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
          line += static_cast<char>(0xE0 | (c >> 12));
          line += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
          line += static_cast<char>(0x80 | (c & 0x3F));
        } else {
          line += static_cast<char>(0xF0 | (c >> 18));
          line += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
          line += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
          line += static_cast<char>(0x80 | (c & 0x3F));
        }
      }
    }
    line.erase(line.find_last_not_of(' ') + 1);
    lines.push_back(line);
  }
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  VTermPos cursor;
  vterm_state_get_cursorpos(vterm_obtain_state(vt), &cursor);
  lines.push_back("cursor " + std::to_string(cursor.row) + "," + std::to_string(cursor.col));
  vterm_free(vt);
  return lines;
}

std::vector<std::string> lines_and_cursor(const ScreenSnapshot& shot) {
  std::vector<std::string> lines = shot.lines;
  lines.push_back("cursor " + std::to_string(shot.cursor_row) + "," + std::to_string(shot.cursor_col));
  return lines;
}

// A stream of what shells, pagers and editors write: text (ASCII, wide, combining), line
// ends, cursor moves, erases, scroll regions, inserted and deleted lines and characters,
// the alternate screen, tabs, backspaces.
std::string random_stream(std::mt19937& rng, std::size_t pieces, unsigned rows, unsigned cols,
                          bool charsets = true) {
  const std::vector<std::string> texts = {"hello", "a", "0123456789abcdef", "\xE4\xB8\xAD\xE6\x96\x87",
                                          "e\xCC\x81", "x y  z", "\xF0\x9F\x99\x82", "~"};
  auto pick = [&](unsigned n) { return std::uniform_int_distribution<unsigned>(0, n - 1)(rng); };
  std::string out;
  for (std::size_t i = 0; i < pieces; ++i) {
    switch (pick(17)) {
      case 0: case 1: case 2: case 3: {
        const std::string& text = texts[pick(static_cast<unsigned>(texts.size()))];
        // libvterm 0.1 decodes ASCII after ESC ( B apart from what follows it, so a mark on
        // a last-column character then starts a new line: with charsets, no marks.
        out += charsets && text == "e\xCC\x81" ? "e" : text;
        break;
      }
      case 4: case 5: out += "\r\n"; break;
      case 6: out += "\x1b[" + std::to_string(pick(rows + 2)) + ";" + std::to_string(pick(cols + 2)) + "H"; break;
      case 7: out += "\x1b[" + std::to_string(pick(3)) + "K"; break;
      case 8: out += "\x1b[" + std::to_string(pick(3)) + "J"; break;
      case 9: {
        unsigned top = 1 + pick(rows), bottom = top + pick(rows - top + 1);
        out += "\x1b[" + std::to_string(top) + ";" + std::to_string(bottom) + "r";
        break;
      }
      case 10: out += "\x1b[" + std::to_string(pick(4)) + (pick(2) ? "L" : "M"); break;
      case 11: out += "\x1b[" + std::to_string(pick(4)) + (pick(2) ? "@" : "P"); break;
      case 12: out += pick(2) ? "\x1b[?1049h" : "\x1b[?1049l"; break;
      case 13: out += pick(2) ? "\t" : "\b"; break;
      case 14: out += pick(2) ? "\x1b[" + std::to_string(pick(3)) + "S" : "\x1b[" + std::to_string(pick(3)) + "T"; break;
      case 15: {  // the modes that move text, an OSC and a DCS that must not
        const std::vector<std::string> modes = {"\x1b[4h", "\x1b[4l", "\x1b[?6h", "\x1b[?6l", "\x1b[?7l",
                                                "\x1b[?7h", "\x1b(0", "\x1b(B", "\x0e", "\x0f", "\x1b[!p",
                                                "\x1b]2;t\x07", "\x1bP+q\x1b\\", "\x1b[20h", "\x1b[20l", "\x1b[r"};
        const std::string& mode = modes[pick(static_cast<unsigned>(modes.size()))];
        if (charsets || (mode != "\x1b(0" && mode != "\x1b(B" && mode != "\x0e")) out += mode;
        break;
      }
      default: out += pick(2) ? "\n" : "\x1bM"; break;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("text, line ends and scrolling show the last screenful, trimmed") {
  std::string seq;
  for (int i = 1; i <= 100; ++i) seq += std::to_string(i) + "\r\n";
  ScreenSnapshot shot = render(seq);
  CHECK(shot.rows == 5);
  CHECK(shot.cols == 10);
  CHECK(shot.lines == std::vector<std::string>{"97", "98", "99", "100"});
  CHECK(shot.cursor_row == 4);
  CHECK(shot.cursor_col == 0);
  CHECK_FALSE(shot.alternate);
}

TEST_CASE("any split of the stream renders the same screen") {
  std::mt19937 rng(7);
  std::string stream = random_stream(rng, 60, 5, 10);
  ScreenSnapshot whole = render(stream);
  for (std::size_t i = 0; i <= stream.size(); ++i) {
    Emulator emulator(5, 10, nullptr);
    emulator.on_bytes(std::string_view(stream).substr(0, i));
    emulator.on_bytes(std::string_view(stream).substr(i));
    INFO("split at " << i);
    REQUIRE(emulator.snapshot() == whole);
  }
}

TEST_CASE("wide characters take two cells and appear once; combining marks stay on their base") {
  ScreenSnapshot shot = render("a\xE4\xB8\xAD" "b e\xCC\x81x");
  CHECK(shot.lines == std::vector<std::string>{"a\xE4\xB8\xAD" "b e\xCC\x81x"});
  CHECK(shot.cursor_col == 7);  // a(1) 中(2) b(1) space(1) é(1) x(1)
  // Writing over half of a wide character blanks the other half.
  CHECK(render("\xE4\xB8\xAD\x1b[1;2Hz").lines == std::vector<std::string>{" z"});
}

TEST_CASE("the alternate screen is its own buffer; leaving it shows the main one again") {
  Emulator emulator(5, 10, nullptr);
  emulator.on_bytes("$ vim\r\n\x1b[?1049h\x1b[H\x1b[2Jfile text");
  CHECK(emulator.alternate());
  CHECK(emulator.snapshot().lines == std::vector<std::string>{"file text"});
  emulator.on_bytes("\x1b[?1049l");
  CHECK_FALSE(emulator.alternate());
  CHECK(emulator.snapshot().lines == std::vector<std::string>{"$ vim"});
}

TEST_CASE("the title and the cursor's visibility are as the program set them") {
  Emulator emulator(5, 10, nullptr);
  emulator.on_bytes("\x1b]2;my title\x07\x1b[?25l");
  CHECK(emulator.snapshot().title == "my title");
  CHECK_FALSE(emulator.snapshot().cursor_visible);
  emulator.on_bytes("\x1b]0;other\x1b\\\x1b[?25h");
  CHECK(emulator.snapshot().title == "other");
  CHECK(emulator.snapshot().cursor_visible);
}

TEST_CASE("queries are answered through the reply callback") {
  std::string replies;
  Emulator emulator(5, 10, [&](std::string_view bytes) { replies.append(bytes); });
  emulator.on_bytes("\x1b[3;5H\x1b[6n");
  CHECK(replies == "\x1b[3;5R");
  replies.clear();
  emulator.on_bytes("\x1b[c");  // primary device attributes
  CHECK(replies.rfind("\x1b[?", 0) == 0);
  replies.clear();
  // The colours vim asks for (and waits for on exit), split across reads.
  emulator.on_bytes("\x1b]10;");
  emulator.on_bytes("?\x07\x1b]11;?\x07");
  CHECK(replies == "\x1b]10;rgb:c0c0/c0c0/c0c0\x1b\\\x1b]11;rgb:0000/0000/0000\x1b\\");
}

TEST_CASE("keys follow the terminal's modes") {
  std::string replies;
  Emulator emulator(5, 10, [&](std::string_view bytes) { replies.append(bytes); });
  CHECK(keys(emulator, {"Up", "Down", "Right", "Left"}) == "\x1b[A\x1b[B\x1b[C\x1b[D");
  emulator.on_bytes("\x1b[?1h");  // DECCKM: application cursor keys, as ncurses asks
  CHECK(keys(emulator, {"Up", "Down"}) == "\x1bOA\x1bOB");
  emulator.on_bytes("\x1b[?1l");
  CHECK(keys(emulator, {"Up"}) == "\x1b[A");
  CHECK(keys(emulator, {"Enter", "Tab", "BTab", "S-Tab", "BSpace", "Escape", "Space"}) ==
        "\r\t\x1b[Z\x1b[Z\x7f\x1b ");
  CHECK(keys(emulator, {"C-c", "C-d", "C-[", "C-i", "C-m", "C-Space", "M-x", "C-M-a"}) ==
        std::string("\x03\x04\x1b\x09\x0d\x00\x1bx\x1b\x01", 10));
  CHECK(keys(emulator, {"F1", "F5", "F12", "PageUp", "NPage", "Home", "End", "DC", "IC"}) ==
        "\x1bOP\x1b[15~\x1b[24~\x1b[5~\x1b[6~\x1b[H\x1b[F\x1b[3~\x1b[2~");
  CHECK(keys(emulator, {"y", ":", "\xC3\xA9", "S-Up"}) == "y:\xC3\xA9\x1b[1;2A");
  CHECK(replies.empty());  // encoding never answers anything
}

TEST_CASE("unknown or empty key names fail naming the name") {
  for (std::string bad : {"Enterr", "C-", "C-1", "Foo", "", "ab", "F13", "X-a"}) {
    auto parsed = parse_keys({"Enter", bad});
    INFO(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.error()->code == dshpty::Code::INVALID_ARGUMENT);
    if (!bad.empty()) CHECK(parsed.error()->message.find("\"" + bad + "\"") != std::string::npos);
  }
  auto aliases = parse_keys({"esc", "ArrowUp", "Backspace", "PPage", "C-M-x", "S-Tab", "BTab"});
  REQUIRE(aliases.ok());
  CHECK((*aliases)[0].name == Key::Name::escape);
  CHECK((*aliases)[1].name == Key::Name::up);
  CHECK((*aliases)[4].ctrl);
  CHECK((*aliases)[4].alt);
  CHECK((*aliases)[5] == (*aliases)[6]);
}

TEST_CASE("resize keeps what fits, the cursor's row in view, and answers with the new size") {
  Emulator emulator(5, 10, nullptr);
  emulator.on_bytes("one\r\ntwo\r\nthree\r\nfour\r\n$ abcdefgh");
  emulator.resize(3, 6);
  ScreenSnapshot shot = emulator.snapshot();
  CHECK(shot.rows == 3);
  CHECK(shot.cols == 6);
  CHECK(shot.lines == std::vector<std::string>{"three", "four", "$ abcd"});
  CHECK(shot.cursor_row == 2);
  emulator.resize(4, 12);
  emulator.on_bytes("\x1b[18t");  // report the text area's size
  shot = emulator.snapshot();
  CHECK(shot.rows == 4);
  CHECK(shot.cols == 12);
  CHECK(shot.lines.front() == "three");
}

TEST_CASE("the grid and cursor match libvterm's screen layer on random streams fed whole") {
  for (unsigned seed = 1; seed <= 1000; ++seed) {
    std::mt19937 rng(seed);
    unsigned rows = 3 + seed % 7, cols = 5 + seed % 13;
    std::string stream = random_stream(rng, 80, rows, cols);
    Emulator emulator(rows, cols, nullptr);
    emulator.on_bytes(stream);
    INFO("seed " << seed << " " << rows << "x" << cols << ": " << printable(stream));
    REQUIRE(lines_and_cursor(emulator.snapshot()) == oracle_lines(stream, rows, cols));
  }
}

// (Without charset designations: once one is made, libvterm 0.1 decodes ASCII apart from
// the UTF-8 around it, so what a write boundary separates renders differently.)
TEST_CASE("the grid and cursor match libvterm's screen layer on random streams split at random") {
  for (unsigned seed = 1; seed <= 1000; ++seed) {
    std::mt19937 rng(seed);
    unsigned rows = 3 + seed % 7, cols = 5 + seed % 13;
    std::string stream = random_stream(rng, 80, rows, cols, false);
    Emulator emulator(rows, cols, nullptr);
    std::size_t at = 0;
    while (at < stream.size()) {  // random chunks, as reads split it
      std::size_t n = 1 + rng() % 9;
      // Except between a character and its combining mark: libvterm 0.1 combines across
      // writes only when the base is not in the last column (its pending wrap moved the
      // cursor). A known limit, rare in real output; a split anywhere else is fair.
      auto splits_mark = [&](std::size_t cut) {
        return cut < stream.size() && (stream.compare(cut, 2, "\xCC\x81") == 0 ||
                                       (cut > 0 && stream.compare(cut - 1, 2, "\xCC\x81") == 0));
      };
      while (splits_mark(at + n)) ++n;
      emulator.on_bytes(std::string_view(stream).substr(at, n));
      at += n;
    }
    INFO("seed " << seed << " " << rows << "x" << cols);
    if (lines_and_cursor(emulator.snapshot()) != oracle_lines(stream, rows, cols)) {
      // Name the shortest prefix (fed whole) that differs, to make the failure readable.
      for (std::size_t n = 1; n <= stream.size(); ++n) {
        Emulator prefix(rows, cols, nullptr);
        prefix.on_bytes(std::string_view(stream).substr(0, n));
        if (lines_and_cursor(prefix.snapshot()) == oracle_lines(stream.substr(0, n), rows, cols)) continue;
        INFO("first difference after: " << printable(stream.substr(n > 40 ? n - 40 : 0, std::min<std::size_t>(n, 40))));
        CHECK(lines_and_cursor(prefix.snapshot()) == oracle_lines(stream.substr(0, n), rows, cols));
        break;
      }
    }
    REQUIRE(lines_and_cursor(emulator.snapshot()) == oracle_lines(stream, rows, cols));
  }
}

TEST_CASE("an idle screen costs little: rows are allocated when written") {
  Emulator emulator(50, 160, nullptr);
  std::size_t empty = emulator.memory_bytes();
  emulator.on_bytes("user@host:~$ ");
  CHECK(emulator.memory_bytes() - empty == 160 * sizeof(char32_t));
}
