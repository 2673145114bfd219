// A result's text read off the emulator's grid (screen/emulator.hpp, "Result text"): cursor
// moves, erases, spinners and redraws read as the screen shows them; rows that scrolled off
// are kept, wrapped rows join their line, a tab the output wrote stays a tab, the cursor's
// row keeps its trailing blank, and the alternate screen is not the normal screen's text.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "screen/emulator.hpp"
#include "text/head_tail_buffer.hpp"

using dshpty::screen::Emulator;

namespace {

// The text from the start of the screen after `bytes`, on a rows x cols terminal.
std::string text_after(std::string_view bytes, unsigned rows = 24, unsigned cols = 80, std::size_t cap = 1u << 20) {
  Emulator emulator(rows, cols, [](std::string_view) {});
  emulator.start_text(emulator.text_cursor());
  emulator.on_bytes(bytes);
  return emulator.result_text({}, cap).text;
}

}  // namespace

TEST_CASE("cursor moves read as the screen shows them") {
  CHECK(text_after("aaaa\x1b[1Gbb\r\n") == "bbaa\n");          // CHA
  CHECK(text_after("abcdef\x1b[3Dxy") == "abcxyf");            // CUB
  CHECK(text_after("x\x1b[10Cy\r\n") == "x          y\n");     // CUF
  CHECK(text_after("abc\rX\r\n") == "Xbc\n");                  // a lone CR
  CHECK(text_after("abc\bX\r\n") == "abX\n");                  // a backspace
  CHECK(text_after("50%\r\x1b[K100%\r\n") == "100%\n");        // a progress line, erased
}

TEST_CASE("a spinner reads as its last frame; a 3-bar progress redrawn 20 times as 3 lines") {
  CHECK(text_after("frame1\x1b[1G\x1b[0Kframe2\x1b[1G\x1b[0Kframe3\x1b[1G\x1b[0Kdone\r\n") == "done\n");
  std::string npm;
  for (const char* frame : {"\xe2\xa0\x99", "\xe2\xa0\xb9", "\xe2\xa0\xb8", "\xe2\xa0\xbc"}) {
    npm += std::string("\r\x1b[K") + frame;
  }
  CHECK(text_after(npm + "\r\x1b[K" + "dsh> ") == "dsh> ");
  for (unsigned rows : {24u, 4u}) {
    CAPTURE(rows);
    std::string bars = "start\r\n";
    for (int round = 0; round < 20; ++round) {
      if (round > 0) bars += "\x1b[3A";
      for (int bar = 1; bar <= 3; ++bar) {
        bars += "\r\x1b[Kbar " + std::to_string(bar) + ": " + std::to_string(round * 5) + "%\r\n";
      }
    }
    CHECK(text_after(bars + "dsh> ", rows) == "start\nbar 1: 95%\nbar 2: 95%\nbar 3: 95%\ndsh> ");
  }
}

TEST_CASE("rows scrolled off are kept; a wrapped line is one line; a tab stays a tab") {
  std::string seq, expected;
  for (int i = 1; i <= 100; ++i) {
    seq += std::to_string(i) + "\r\n";
    expected += std::to_string(i) + "\n";
  }
  CHECK(text_after(seq, 10, 40) == expected);
  const std::string longline(250, 'a');
  CHECK(text_after(longline + "\r\nb\r\n", 5, 80) == longline + "\nb\n");
  CHECK(text_after(longline + "\r\nb\r\n", 24, 80) == longline + "\nb\n");
  // A wrapped row's blanks are its line's (the next row goes on from the margin).
  CHECK(text_after("ab" + std::string(38, ' ') + "cd\r\n", 5, 40) == "ab" + std::string(38, ' ') + "cd\n");
  CHECK(text_after("a\tb\r\nname\tvalue\t\r\n") == "a\tb\nname\tvalue\t\n");
  // A tab something was written over in part reads as the blanks left of it.
  CHECK(text_after("a\tb\r\x1b[4Cx\r\n") == "a   x   b\n");
}

TEST_CASE("the text starts at its start; the cursor's row keeps its trailing blank") {
  Emulator emulator(24, 80, [](std::string_view) {});
  emulator.on_bytes("earlier output\r\ndsh> ");
  emulator.start_text(emulator.text_cursor());
  CHECK(emulator.result_text({}, 1000).text == "");
  emulator.on_bytes("echo hi\r\nhi\r\ndsh> ");
  CHECK(emulator.result_text({}, 1000).text == "echo hi\nhi\ndsh> ");
  CHECK(emulator.result_text("before\n", 1000).text == "before\necho hi\nhi\ndsh> ");
  emulator.start_text(emulator.text_cursor());
  // A redraw of rows above the start (the cursor moved up) starts the text at them.
  emulator.on_bytes("\x1b[1A\rHI\x1b[1B\r\x1b[Kdsh> ");
  CHECK(emulator.result_text({}, 1000).text == "HI\ndsh> ");
}

TEST_CASE("the alternate screen is not the normal screen's text; leaving it leaves no debris") {
  Emulator emulator(10, 40, [](std::string_view) {});
  emulator.on_bytes("dsh> ");
  emulator.start_text(emulator.text_cursor());
  emulator.on_bytes("echo IMPORTANT; seq 1 3; vim\r\nIMPORTANT\r\n1\r\n2\r\n3\r\n\x1b[?1049h\x1b[H\x1b[2J");
  for (int i = 0; i < 9; ++i) emulator.on_bytes("~\r\n");
  emulator.on_bytes("\x1b[10;1H\"file\" 0L, 0B");
  REQUIRE(emulator.alternate());
  CHECK(emulator.result_text({}, 1000).text == "echo IMPORTANT; seq 1 3; vim\nIMPORTANT\n1\n2\n3\n");
  emulator.start_text(emulator.text_cursor());
  // htop's or watch's exit: the normal screen again, the prompt on a clean row.
  emulator.on_bytes("\x1b[2J\x1b[HF1Help F2Setup F3Search F10Quit\x1b[?1049l\rdsh> ");
  CHECK(!emulator.alternate());
  CHECK(emulator.result_text({}, 1000).text == "dsh> ");
}

TEST_CASE("a long text is cut by the one truncation rule, head and tail kept") {
  std::string seq;
  for (int i = 1; i <= 20000; ++i) seq += std::to_string(i) + "\r\n";
  Emulator emulator(24, 80, [](std::string_view) {});
  emulator.start_text(emulator.text_cursor(), 3000);
  emulator.on_bytes(seq);
  auto cut = emulator.result_text({}, 1000);
  CHECK(cut.truncated);
  CHECK(cut.text.size() <= 1000);
  CHECK(cut.text.starts_with("1\n2\n3\n"));
  CHECK(cut.text.ends_with("19999\n20000\n"));
  CHECK(cut.text.find("[output truncated: ") != std::string::npos);
  CHECK(cut.omitted.lines > 0);
}

TEST_CASE("a resize narrower than where the text starts reads what is there, never past a row") {
  Emulator emulator(10, 80, [](std::string_view) {});
  emulator.on_bytes(std::string(70, 'p'));
  emulator.start_text(emulator.text_cursor());
  emulator.on_bytes(std::string(30, 'x'));  // wraps into the next row
  emulator.resize(10, 20);
  CHECK(emulator.result_text({}, 1000).text == std::string(20, 'x'));
  emulator.on_bytes("\r\nok\r\n");
  for (int i = 0; i < 30; ++i) emulator.on_bytes("line\r\n");
  const std::string text = emulator.result_text({}, 100000).text;
  CHECK(text.find("ok\nline\n") != std::string::npos);
  CHECK(text.ends_with("line\n"));
}

TEST_CASE("a flood of 100k rows reads as the cell-by-cell rule reads it: text and marker numbers exact") {
  // A row of blanks and printable ASCII reads in one copy (screen/grid.hpp, Row::plain); the
  // same rows with a character written over a UTF-8 one read cell by cell. Both must give
  // the text a HeadTailBuffer of the same bounds gives for the lines themselves, so head +
  // omitted + tail is the whole to the byte and the line.
  constexpr unsigned kRows = 24, kCols = 80;
  constexpr int kLines = 100000;
  std::vector<std::string> lines;
  std::string plain, overwritten;
  for (int i = 1; i <= kLines; ++i) {
    std::string line = std::to_string(i);
    std::string bytes = line;
    if (i % 3 == 0) bytes += "   ";  // trailing blanks: dropped
    if (i % 5 == 0) {
      bytes += "\x1b[3Cx";  // a cursor move then a character: the gap is blanks
      line += std::string(i % 3 == 0 ? 6 : 3, ' ') + "x";
    }
    if (i % 7 == 0) line.clear(), bytes = "\x1b[K";  // an empty row
    if (i % 11 == 0) line = bytes = "\xc3\xa9" + std::to_string(i);  // a character past ASCII
    if (i % 13 == 0) line = bytes = std::to_string(i) + "\tt";        // a tab: one byte, several cells
    lines.push_back(line);
    plain += bytes + "\r\n";
    // The same row, its first cell written with a UTF-8 character before.
    overwritten += (line.empty() ? bytes : "\xc3\xa9\r" + bytes) + "\r\n";
  }
  // What scrolled off, then the screen's rows (each after a newline) and the cursor's row.
  std::string pushed, screen;
  for (int i = 0; i < kLines; ++i) {
    if (i < kLines - static_cast<int>(kRows - 1)) {
      pushed += (i > 0 ? "\n" : "") + lines[static_cast<std::size_t>(i)];
    } else {
      screen += "\n" + lines[static_cast<std::size_t>(i)];
    }
  }
  screen += "\n";
  for (std::size_t bytes : {std::size_t{3000}, std::size_t{256} << 10}) {
    for (std::size_t cap : {std::size_t{1000}, std::size_t{64} << 10, std::size_t{1} << 30}) {
      CAPTURE(bytes);
      CAPTURE(cap);
      dshpty::text::HeadTailBuffer reference(bytes / 3, bytes - bytes / 3);
      reference.append(pushed);
      const dshpty::text::Cut expected = reference.cut(cap, "$ seq\n", screen);
      REQUIRE(expected.truncated);
      for (const std::string* flood : {&plain, &overwritten}) {
        Emulator emulator(kRows, kCols, [](std::string_view) {});
        emulator.start_text(emulator.text_cursor(), bytes);
        for (std::size_t at = 0; at < flood->size(); at += 4096) emulator.on_bytes(flood->substr(at, 4096));
        const dshpty::text::Cut cut = emulator.result_text("$ seq\n", cap);
        CHECK(cut.text == expected.text);
        CHECK(cut.omitted.bytes == expected.omitted.bytes);
        CHECK(cut.omitted.lines == expected.omitted.lines);
      }
      // head + omitted + tail = the whole ("$ seq\n", what scrolled off, the screen); a head
      // cut inside a line gets a newline before the marker's line.
      const std::string whole = "$ seq\n" + pushed + screen;
      const std::string marker = dshpty::text::truncation_marker(expected.omitted) + "\n";
      const std::size_t at = expected.text.find(marker);
      REQUIRE(at != std::string::npos);
      std::string head = expected.text.substr(0, at);
      const std::string tail = expected.text.substr(at + marker.size());
      if (!whole.starts_with(head)) head.pop_back();
      CHECK(whole.starts_with(head));
      CHECK(whole.ends_with(tail));
      CHECK(head.size() + expected.omitted.bytes + tail.size() == whole.size());
      const auto newlines = [](std::string_view text) { return static_cast<std::uint64_t>(std::count(text.begin(), text.end(), '\n')); };
      CHECK(newlines(head) + expected.omitted.lines + newlines(tail) == newlines(whole));
    }
  }
}

TEST_CASE("random plain lines, long and wrapped, in random reads: the text is the lines, to the byte and the line") {
  // Rows of printable ASCII are copied sixteen cells at a time (screen/cell_bytes.hpp), as
  // they are written and as they scroll off: every length around those blocks, rows that
  // wrap (their blanks kept), blanks inside and after a line, a line that starts mid-row,
  // fed in reads of any size, must read as the lines themselves.
  std::uint32_t seed = 12345;
  const auto next = [&seed](std::uint32_t bound) {
    seed = seed * 1103515245u + 12345u;
    return (seed >> 8) % bound;
  };
  struct Shape {
    unsigned rows, cols;
  };
  for (const Shape shape : {Shape{24, 80}, Shape{50, 160}, Shape{5, 17}}) {
    std::vector<std::string> lines;
    std::string bytes;
    for (int i = 0; i < 3000; ++i) {
      std::string line;
      const unsigned length = next(4) == 0 ? next(3 * shape.cols) : next(40);
      for (unsigned j = 0; j < length; ++j) line += static_cast<char>(next(5) == 0 ? ' ' : '!' + next(94));
      if (!line.empty()) line.back() = 'z';  // blanks before a wrap are the line's: none here
      std::string written = line;
      const bool gap = !line.empty() && line.size() + 5 < shape.cols && next(3) == 0;
      if (gap) {
        // A cursor move across a gap: cells never written, read as blanks.
        const std::size_t at = next(static_cast<std::uint32_t>(line.size()));
        written = line.substr(0, at) + "\x1b[4C" + line.substr(at);
        line.insert(at, 4, ' ');
      }
      const unsigned blanks = next(20);
      if (next(4) == 0 && line.size() + blanks + 1 < shape.cols) written += std::string(blanks, ' ');  // dropped
      if (!gap && length > 0 && line.size() < shape.cols - 2 && next(3) == 0) {
        // Overwritten from the row's start: a longer line first, then this one and an erase.
        written = std::string(shape.cols - 2, '#') + "\r" + written + "\x1b[K";
      }
      lines.push_back(line);
      bytes += written + "\r\n";
    }
    // Every line ends with a newline: the cursor's row after the last one is empty.
    std::string expected_text = "$ x\n";
    for (const std::string& line : lines) expected_text += line + "\n";
    for (std::size_t text_bytes : {std::size_t{3000}, std::size_t{256} << 10}) {
      for (int round = 0; round < 3; ++round) {
        CAPTURE(shape.cols);
        CAPTURE(text_bytes);
        CAPTURE(round);
        Emulator emulator(shape.rows, shape.cols, [](std::string_view) {});
        emulator.start_text(emulator.text_cursor(), text_bytes);
        for (std::size_t at = 0; at < bytes.size();) {
          const std::size_t size = round == 0 ? 4096 : 1 + next(round == 1 ? 7 : 5000);
          emulator.on_bytes(std::string_view(bytes).substr(at, size));
          at += size;
        }
        const dshpty::text::Cut cut = emulator.result_text("$ x\n", std::size_t{1} << 30);
        if (text_bytes == 3000) REQUIRE(cut.truncated);
        if (!cut.truncated) {
          CHECK(cut.text == expected_text);
          continue;
        }
        // Cut: what it kept is the whole's head and tail, and the counts are exact.
        const std::string marker = dshpty::text::truncation_marker(cut.omitted) + "\n";
        const std::size_t at = cut.text.find(marker);
        REQUIRE(at != std::string::npos);
        std::string head = cut.text.substr(0, at);
        const std::string tail = cut.text.substr(at + marker.size());
        if (!expected_text.starts_with(head)) head.pop_back();
        CHECK(expected_text.starts_with(head));
        CHECK(expected_text.ends_with(tail));
        CHECK(head.size() + cut.omitted.bytes + tail.size() == expected_text.size());
        const auto newlines = [](std::string_view text) {
          return static_cast<std::uint64_t>(std::count(text.begin(), text.end(), '\n'));
        };
        CHECK(newlines(head) + cut.omitted.lines + newlines(tail) == newlines(expected_text));
      }
    }
  }
}
