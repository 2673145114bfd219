// Carriage returns as a terminal shows them, through the whole text pipeline (sanitizer,
// line editor, scrollback and a send's tail), for every way of splitting the stream.
#include <doctest/doctest.h>

#include <string>

#include "split_check.hpp"
#include "text/line_editor.hpp"
#include "text/output_sink.hpp"
#include "text/scrollback.hpp"
#include "text/tail_buffer.hpp"

using namespace dshpty::text;
using dshpty::text::testing::printable;

namespace {

const std::string ESC = "\x1B";

// A send's tail as a sink, like the session's.
struct TailSink final : OutputSink {
  TailBuffer tail{1 << 20};
  void on_text(const SanitizedText& chunk) override { tail.append(chunk.text); }
  void on_line_rewrite(std::string_view line, std::size_t changed_from) override {
    tail.rewrite_line(line, changed_from);
  }
};

struct Rendered {
  std::string scrollback;
  std::string tail;
};

Rendered render(const std::vector<std::string_view>& chunks, std::size_t columns = 0) {
  OutputPipeline pipeline(dshpty::text::SanitizerConfig{4096, "0123456789abcdef"});
  pipeline.set_columns(columns);
  Scrollback scrollback;
  TailSink tail;
  pipeline.add(scrollback);
  pipeline.add(tail);
  for (auto chunk : chunks) pipeline.feed(chunk);
  pipeline.finish();
  return {scrollback.text(), tail.tail.text()};
}

// What the stream shows on a terminal `columns` wide (0: no wrap), checked whole, in every
// two-way split, and byte by byte.
std::string shown(std::string_view input, std::size_t columns = 0) {
  INFO("input: " << printable(input) << ", columns: " << columns);
  const Rendered whole = render({input}, columns);
  CHECK(whole.tail == whole.scrollback);
  for (std::size_t cut = 0; cut <= input.size(); ++cut) {
    INFO("cut at " << cut);
    const Rendered split = render({input.substr(0, cut), input.substr(cut)}, columns);
    CHECK(printable(split.scrollback) == printable(whole.scrollback));
    CHECK(printable(split.tail) == printable(whole.tail));
  }
  std::vector<std::string_view> bytes;
  for (std::size_t i = 0; i < input.size(); ++i) bytes.push_back(input.substr(i, 1));
  CHECK(printable(render(bytes, columns).scrollback) == printable(whole.scrollback));
  return whole.scrollback;
}

}  // namespace

TEST_CASE("a lone CR returns to the line's start and later text overwrites it") {
  CHECK(shown("abc\rX\n") == "Xbc\n");
  CHECK(shown("abc\r\n") == "abc\n");  // CR LF: the line stays
  CHECK(shown("one\r\ntwo\rTW\n") == "one\nTWo\n");
  CHECK(shown("abc\rXYZW\n") == "XYZW\n");
  CHECK(shown("partial\rPA") == "PArtial");  // a partial line is shown as redrawn
  CHECK(shown("caf\xC3\xA9!\rab\xE2\x82\xAC" "d\n") == "ab\xE2\x82\xAC" "d!\n");  // characters, not bytes
}

TEST_CASE("a backspace goes back one character and what follows overwrites it") {
  CHECK(shown("a\bb\n") == "b\n");
  CHECK(shown("abc\bX\n") == "abX\n");
  CHECK(shown("abc\b\b\n") == "abc\n");      // moving back erases nothing
  CHECK(shown("\b\bab\n") == "ab\n");        // never past the line's start
  CHECK(shown("x\n\bY\n") == "x\nY\n");      // nor into the line before
  CHECK(shown("caf\xC3\xA9\bE!\n") == "cafE!\n");  // a character, not a byte
  CHECK(shown("abc\b") == "abc");               // a partial line keeps what was drawn
}

TEST_CASE("overstrike reads as the character struck: bold and underline as man writes them") {
  CHECK(shown("N\bN\n") == "N\n");
  CHECK(shown("_\bX\n") == "X\n");
  CHECK(shown("N\bNA\bAM\bME\bE\n") == "NAME\n");
  CHECK(shown("-\b-a\ba, -\b--\b-a\bal\bll\bl\n") == "-a, --all\n");
  CHECK(shown("_\bf_\bi_\bl_\be\n") == "file\n");
}

TEST_CASE("a spinner drawn with backspaces collapses to its last frame") {
  std::string spin = "working ";
  for (int i = 0; i < 40; ++i) spin += std::string(1, "|/-\\"[i % 4]) + "\b";
  spin += "done\n";
  CHECK(shown(spin) == "working done\n");
}

TEST_CASE("a progress bar redrawn 300 times is one line") {
  std::string bar;
  for (int i = 1; i <= 300; ++i) bar += "\r[" + std::string(static_cast<std::size_t>(i / 10), '#') + "] " + std::to_string(i) + "/300";
  bar += "\r\ndone\r\n";
  OutputPipeline pipeline(dshpty::text::SanitizerConfig{4096, "0123456789abcdef"});
  Scrollback scrollback;
  pipeline.add(scrollback);
  // As a PTY delivers it: a few hundred bytes at a time.
  for (std::size_t at = 0; at < bar.size(); at += 97) pipeline.feed(std::string_view(bar).substr(at, 97));
  pipeline.finish();
  CHECK(scrollback.text() == "[" + std::string(30, '#') + "] 300/300\ndone\n");
  CHECK(scrollback.total_lines() == 2);
}

TEST_CASE("blanks past the cursor at a line's end show as nothing: a dumb terminal's erase") {
  // readline on TERM=dumb clears the rest of the line after each prompt with blanks and as
  // many backspaces: the prompt reads as itself, and so does the line typed over them.
  const std::string clear = std::string(30, ' ') + std::string(30, '\b');
  CHECK(shown("dsh> " + clear) == "dsh> ");
  CHECK(shown("dsh> " + clear + "echo hi\r\nhi\r\ndsh> " + clear) == "dsh> echo hi\nhi\ndsh> ");
  CHECK(shown("Password: ") == "Password: ");    // blanks the cursor passed stay
  CHECK(shown("a  \r\nb\n") == "a  \nb\n");    // a line's own trailing blanks too
  CHECK(shown("50%   \b\b\b\n") == "50%\n");    // shortened by overwriting with blanks
  CHECK(shown("ab  \b\b\b\bX\n") == "Xb\n");     // past the cursor, up to the last non-blank
  CHECK(shown("abcdef\r    Z\b\b\n") == "    Zf\n");
}

TEST_CASE("a line longer than the terminal wraps: a return or a backspace stays in its row") {
  // Nothing returns: a wrapped line reads as one.
  CHECK(shown("abcdefghij\n", 4) == "abcdefghij\n");
  // A return to the row the cursor is on: the rows above stay, and the row is a line now.
  CHECK(shown("abcdefghij\rXY\n", 4) == "abcdefgh\nXY\n");
  CHECK(shown("abcdefghij\rXYZW!\n", 4) == "abcdefgh\nXYZW!\n");
  CHECK(shown("abcdefghijk\rX\n", 4) == "abcdefgh\nXjk\n");
  CHECK(shown("abcdef\r\rX\n", 4) == "abcd\nXf\n");  // a second return stays in that row
  // Written up to the last column, the cursor waits there: still the row it filled.
  CHECK(shown("abcd\rX\n", 4) == "Xbcd\n");
  CHECK(shown("abcdefgh\rX\n", 4) == "abcd\nXfgh\n");
  CHECK(shown("abcd\r\n", 4) == "abcd\n");  // CR LF: the line stays
  // A backspace stops at the row's start; from a pending wrap it goes onto the last column
  // (xterm goes one further: `abcdefgh\bX` on 4 columns shows `efXh` there), as readline's
  // clearing to the margin on a dumb terminal means (below).
  CHECK(shown("abcdef\b\bX\n", 4) == "abcdXf\n");
  CHECK(shown("abcdef\b\b\b\bX\n", 4) == "abcd\nXf\n");  // stopped there: as a return
  CHECK(shown("abcd\bX\n", 4) == "abcX\n");
  CHECK(shown("abcdefgh\bX\n", 4) == "abcdefgX\n");
  CHECK(shown("abcdefgh\b\b\b\bX\n", 4) == "abcdXfgh\n");
  CHECK(shown("abcdefgh\b\b\b\b\bX\n", 4) == "abcd\nXfgh\n");
  // The row's blanks at its end show as nothing once the line ends above the cursor.
  CHECK(shown("ab  cd\rX\n", 4) == "ab\nXd\n");
  // Erasing the line erases the cursor's row; the cursor keeps its column.
  CHECK(shown("abcdef" + ESC + "[2KZ\n", 4) == "abcd  Z\n");
  CHECK(shown("abcdef" + ESC + "[2K\rZ\n", 4) == "abcd\nZ\n");
  // Characters, not bytes, fill a row.
  CHECK(shown("caf\xC3\xA9" "\xC3\xA9\rX\n", 4) == "caf\xC3\xA9\nX\n");
  // Without a width nothing wraps (the line editor's default).
  CHECK(shown("abcdefghij\rXY\n") == "XYcdefghij\n");
}

TEST_CASE("a password prompt, then readline's blanks up to the margin: the rows a terminal shows") {
  // `read -s -p 'Password: '` answered: no newline was echoed, so the prompt follows the
  // password prompt; readline on a dumb terminal clears what it takes for the rest of the
  // line with blanks (the screen's width less its prompt), which wrap, then returns and
  // draws the prompt again, in the row the blanks wrapped to.
  const std::string marks_a = ESC + "]133;A;dshpty=0123456789abcdef\x07";
  const std::string marks_b = ESC + "]133;B;dshpty=0123456789abcdef\x07";
  const std::string prompt = marks_a + "dsh> " + marks_b;
  const std::string redraw = "Password: " + prompt + std::string(35, ' ') + "\r" + prompt;
  CHECK(shown(redraw, 40) == "Password: dsh>\ndsh> ");
  CHECK(shown(redraw + "echo hi\r\nhi\r\n", 40) == "Password: dsh>\ndsh> echo hi\nhi\n");
  // The same blanks cleared by backspaces instead: they stop at the row's start.
  const std::string backspaced = "Password: " + prompt + std::string(34, ' ') + std::string(34, '\b');
  CHECK(shown(backspaced, 40) == "Password: dsh>\n");
  CHECK(shown(backspaced + "ls\r\n", 40) == "Password: dsh>\nls\n");
  // At the prompt alone the blanks end at the margin: the backspaces land after the prompt.
  const std::string clear = std::string(35, ' ') + std::string(35, '\b');
  CHECK(shown(prompt + clear + "echo hi\r\nhi\r\n" + prompt + clear, 40) == "dsh> echo hi\nhi\ndsh> ");
}

TEST_CASE("erase in line: CR then ESC [ K erases the rest, ESC [ 2 K the whole line") {
  CHECK(shown("abcdef\r" + ESC + "[Kxy\n") == "xy\n");
  CHECK(shown("abcdef\rxy" + ESC + "[K\n") == "xy\n");
  CHECK(shown("abcdef\rxy" + ESC + "[0K!\n") == "xy!\n");
  CHECK(shown("abc" + ESC + "[2K\rxy\n") == "xy\n");
  CHECK(shown("abc" + ESC + "[2KZ\n") == "   Z\n");  // the cursor kept its column
  CHECK(shown("abc" + ESC + "[K\n") == "abc\n");     // nothing after the cursor
}

TEST_CASE("cursor moves along the line: forward over text, back, to a column") {
  CHECK(shown("50%" + ESC + "[3D100%\n") == "100%\n");
  CHECK(shown("abcdef\r" + ESC + "[2CX\n") == "abXdef\n");  // forward passes over text
  CHECK(shown("abcdef" + ESC + "[3GX\n") == "abXdef\n");
  CHECK(shown("ab" + ESC + "[3CX\n") == "ab   X\n");  // past the end: blanks, once text comes
  CHECK(shown("ab" + ESC + "[3C\n") == "ab\n");
  // fish draws a typed line in pieces: each at its column after a return.
  CHECK(shown("$ \r" + ESC + "[2Csleep \r" + ESC + "[8C0.1;\r" + ESC + "[12C echo hi\n") ==
        "$ sleep 0.1; echo hi\n");
  // `ESC [ 999 D` is the row's start; `ESC [ 999 C` is removed.
  CHECK(shown("abc" + ESC + "[999DX\n") == "Xbc\n");
  CHECK(shown("abc\r" + ESC + "[999CX\n") == "Xbc\n");
  // In a wrapped line the moves stay in the cursor's row.
  CHECK(shown("abcdefgh" + ESC + "[2DX\n", 5) == "abcdefXh\n");
}

TEST_CASE("prompt markers keep their place in text around redraws") {
  OutputPipeline pipeline(dshpty::text::SanitizerConfig{4096, "0123456789abcdef"});
  struct Markers final : OutputSink {
    std::string text;
    std::vector<std::size_t> at;
    void on_text(const SanitizedText& chunk) override {
      for (const auto& m : chunk.markers) at.push_back(text.size() + m.position);
      text += chunk.text;
    }
  } sink;
  pipeline.add(sink);
  pipeline.feed("50%\r100%\r\n" + ESC + "]133;D;0;dshpty=0123456789abcdef\x07" "dsh> ");
  REQUIRE(sink.at.size() == 1);
  CHECK(sink.text.substr(sink.at[0]) == "dsh> ");
}

TEST_CASE("a send's tail: a line begun before it is replaced whole; deltas follow") {
  TailBuffer tail(1024);
  tail.append("old line\nhalf");
  auto delta = tail.take_delta();
  CHECK(delta.text == "old line\nhalf");
  tail.rewrite_line("HALF done");
  CHECK(tail.text() == "old line\nHALF done");
  CHECK(tail.take_delta().text == "HALF done");
  TailBuffer fresh(1024);
  fresh.append("xyz");  // the send began in the middle of a line
  fresh.rewrite_line("dsh> redrawn");
  CHECK(fresh.text() == "dsh> redrawn");
}

// A sink that starts in the middle of a line (a send's output starts at its write) holds
// only what was written since: the line's earlier bytes stay out while they stand.
std::string started_mid_line(std::string_view before, const std::vector<std::string_view>& after) {
  OutputPipeline pipeline(dshpty::text::SanitizerConfig{4096, "0123456789abcdef"});
  TailSink sink;
  pipeline.add(sink);
  pipeline.feed(before);
  sink.tail.clear(pipeline.current_line_bytes());
  for (auto chunk : after) pipeline.feed(chunk);
  return sink.tail.text();
}

TEST_CASE("a send's output starts at its own bytes, not at the unended line before it") {
  CHECK(started_mid_line("dsh> ", {"echo hi"}) == "echo hi");
  CHECK(started_mid_line("dsh> ", {"echo hi", "\b\bHI"}) == "echo HI");      // edited in place
  CHECK(started_mid_line("dsh> ", {"echo hi\b\bHI"}) == "echo HI");          // in one read
  CHECK(started_mid_line("vim status junk", {"\x1B[K"}) == "");            // nothing written
  CHECK(started_mid_line("vim status junk", {"\rnew"}) == "new status junk"); // the line as shown
  CHECK(started_mid_line("dsh> ", {"ech", "\rdsh> echo"}) == "dsh> echo");    // redrawn whole
  CHECK(started_mid_line("50%", {"\r", "60%"}) == "60%");
  CHECK(started_mid_line("junk\x01", {"more\nnext\rNE"}) == "more\nNExt");
  CHECK(started_mid_line("a\nbinary junk", {" x", "\b\bY\n"}) == "Yx\n");
  CHECK(started_mid_line("a\nbinary junk", {" x", "\b\b\b\bY\n"}) == "Yk x\n");  // into the old part
  // Blanks dropped past the cursor (a dumb terminal's erase whose backspaces came in a
  // later read) take nothing of the old part with them.
  CHECK(started_mid_line("dsh> " + std::string(10, ' '), {std::string(10, '\b')}) == "");
  CHECK(started_mid_line("dsh> " + std::string(10, ' '), {std::string(10, '\b') + "x"}) == "x");
}

TEST_CASE("the line editor's memory is bounded: an endless line is appended as it comes") {
  OutputPipeline pipeline(dshpty::text::SanitizerConfig{4096, "0123456789abcdef"});
  Scrollback scrollback(ScrollbackLimits{100, 1 << 20, 1 << 20});
  pipeline.add(scrollback);
  const std::string chunk(4096, 'y');
  for (int i = 0; i < 20; ++i) pipeline.feed(chunk);  // 80 KiB with no newline
  pipeline.feed("\rZ\n");
  CHECK(scrollback.text() == std::string(20 * 4096, 'y') + "Z\n");
  pipeline.feed("abc\rX\n");  // the next line is edited again
  CHECK(scrollback.text().substr(20 * 4096 + 2) == "Xbc\n");
}
