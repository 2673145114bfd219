// The pure parts of background jobs: a job's output by offset (text/job_log.hpp) and the
// `until` output matcher (text/output_condition.hpp), on every chunk split.
#include <doctest/doctest.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/job_log.hpp"
#include "text/line_editor.hpp"
#include "text/output_condition.hpp"
#include "text/sanitizer.hpp"

using dshpty::Code;
using dshpty::text::JobLog;
using dshpty::text::JobRead;
using dshpty::text::OutputCondition;

namespace {

// Feeds `stream` in chunks of `size` bytes (the last one shorter); the first match.
std::optional<std::string> feed_in_chunks(OutputCondition c, std::string_view stream,
                                          std::size_t size) {
  for (std::size_t at = 0; at < stream.size(); at += size) {
    if (auto m = c.feed(stream.substr(at, size))) return m;
  }
  return std::nullopt;
}

// The match of `stream` must not depend on how it is cut: every chunk size, and every
// two-way split.
std::optional<std::string> match_every_split(std::string_view pattern, std::string_view typed,
                                             std::string_view stream) {
  auto made = OutputCondition::make(pattern, typed);
  REQUIRE(made.ok());
  std::optional<std::string> whole = feed_in_chunks(*made, stream, stream.size() + 1);
  for (std::size_t size = 1; size <= stream.size(); ++size) {
    INFO("chunk size " << size);
    CHECK(feed_in_chunks(*made, stream, size) == whole);
  }
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    OutputCondition c = *made;
    std::optional<std::string> m = c.feed(stream.substr(0, cut));
    if (!m) m = c.feed(stream.substr(cut));
    INFO("split at " << cut);
    CHECK(m == whole);
  }
  return whole;
}

std::string sanitized(std::string_view raw) {
  dshpty::text::Sanitizer sanitizer({4096, "0123456789abcdef"});
  dshpty::text::SanitizedText out;
  sanitizer.feed(raw, out);
  return out.text;
}

// Wired as the session wires it: the line editor between the sanitizer and the condition,
// its appends fed, its rewrites of the current line said. `raw` is sanitized and edited in
// chunks of `size` bytes.
std::optional<std::string> match_through_editor(std::string_view pattern, std::string_view typed,
                                                std::string_view raw, std::size_t size) {
  auto made = OutputCondition::make(pattern, typed);
  REQUIRE(made.ok());
  struct Wire final : dshpty::text::LineEditor::Output {
    explicit Wire(OutputCondition c) : condition(std::move(c)) {}
    void append(const dshpty::text::SanitizedText& chunk) override {
      if (!match) match = condition.feed(chunk.text);
    }
    void rewrite(std::string_view line, std::size_t) override {
      if (!match) match = condition.rewrite(line);
    }
    OutputCondition condition;
    std::optional<std::string> match;
  } wire(*made);
  dshpty::text::Sanitizer sanitizer({4096, "0123456789abcdef"});
  dshpty::text::LineEditor editor;
  for (std::size_t at = 0; at < raw.size(); at += size) {
    dshpty::text::SanitizedText out;
    sanitizer.feed(raw.substr(at, size), out);
    editor.process(out, wire);
  }
  return wire.match;
}

}  // namespace

TEST_CASE("job log: offsets from the first byte, any number of readers, same bytes") {
  JobLog log(1 << 20);
  std::string all;
  for (int i = 0; i < 200; ++i) {
    std::string line = "line " + std::to_string(i) + " \xC3\xA9\xE2\x82\xAC\n";
    log.append(line);
    all += line;
  }
  // Two readers with different steps read the same bytes, independently.
  for (std::size_t step : {1u, 7u, 4096u}) {
    std::string got;
    std::uint64_t offset = 0;
    for (;;) {
      auto r = log.read(offset, step);
      REQUIRE(r.ok());
      CHECK(r->dropped_bytes == 0);
      if (r->text.empty()) break;
      CHECK(r->next_offset > offset);
      got += r->text;
      offset = r->next_offset;
    }
    CHECK(got == all);
    CHECK(offset == log.end());
  }
}

TEST_CASE("job log: a reader behind the window learns how many bytes it lost") {
  JobLog log(100);
  std::string all;
  for (int i = 0; i < 50; ++i) {
    std::string chunk = "chunk-" + std::to_string(i) + "\n";
    log.append(chunk);
    all += chunk;
  }
  CHECK(log.end() == all.size());
  CHECK(log.end() - log.begin() <= 100);
  auto r = log.read(0, 1 << 20);
  REQUIRE(r.ok());
  CHECK(r->dropped_bytes == log.begin());
  // Dropped plus given is everything: no silent gap.
  CHECK(r->dropped_bytes + r->text.size() == all.size());
  CHECK(r->text == all.substr(static_cast<std::size_t>(log.begin())));
  CHECK(r->next_offset == all.size());
  // A reader at the end waits with nothing lost.
  auto at_end = log.read(log.end(), 10);
  REQUIRE(at_end.ok());
  CHECK(at_end->text.empty());
  CHECK(at_end->dropped_bytes == 0);
  CHECK(at_end->next_offset == log.end());
}

TEST_CASE("job log: a chunk wider than the window keeps its tail; cuts fall on characters") {
  JobLog log(10);
  std::string euros;
  for (int i = 0; i < 10; ++i) euros += "\xE2\x82\xAC";  // 30 bytes, 3 each
  log.append(euros);
  CHECK(log.end() == 30);
  auto r = log.read(0, 100);
  REQUIRE(r.ok());
  // The window cut at a character: 9 bytes kept, the 21 before them lost.
  CHECK(r->text == euros.substr(21));
  CHECK(r->dropped_bytes == 21);
  // A read bound inside a character stops before it; one narrower than a character gives
  // it whole, so a reader always moves.
  auto two = log.read(21, 4);
  REQUIRE(two.ok());
  CHECK(two->text == "\xE2\x82\xAC");
  CHECK(two->next_offset == 24);
  auto one = log.read(21, 1);
  REQUIRE(one.ok());
  CHECK(one->text == "\xE2\x82\xAC");
  // An offset inside a character reads from the next one, the skipped bytes counted: the
  // text and dropped_bytes always span offset..next_offset.
  for (std::uint64_t inside : {22, 23, 25}) {
    INFO(inside);
    auto r = log.read(inside, 100);
    REQUIRE(r.ok());
    CHECK(r->dropped_bytes == (inside < 24 ? 24 : 27) - inside);
    CHECK(r->text.size() + r->dropped_bytes == r->next_offset - inside);
    CHECK(r->text == euros.substr(inside < 24 ? 24 : 27));
  }
}

TEST_CASE("job log: an offset past the end or a zero max is refused") {
  JobLog log(16);
  log.append("abc");
  auto past = log.read(4, 10);
  REQUIRE_FALSE(past.ok());
  CHECK(past.error()->code == Code::INVALID_ARGUMENT);
  auto zero = log.read(0, 0);
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.error()->code == Code::INVALID_ARGUMENT);
}

TEST_CASE("output condition: the command's line matches, its echo does not") {
  std::string stream = "echo ready\nready\n";
  CHECK(match_every_split("ready", "echo ready\n", stream) == "ready");
  // The echo after a prompt left on the line, and bash's stray CR after the echo.
  CHECK(match_every_split("^ready$", "echo ready\n", "$ echo ready\n\rready\n") == "ready");
  // Without the typed text the echo itself is a line like any other.
  CHECK(match_every_split("ready", "", stream) == "echo ready");
}

TEST_CASE("output condition: a multi-line echo behind continuation prompts is skipped") {
  std::string typed = "for i in 1 2; do\necho ready $i; done\n";
  std::string stream = "for i in 1 2; do\n> echo ready $i; done\nready 1\nready 2\n";
  CHECK(match_every_split("ready \\d", typed, stream) == "ready 1");
}

TEST_CASE("output condition: CR LF, overwrites and erases read as the terminal shows them") {
  // Raw CR LF (as a caller that did not sanitize would pass it) is a line end.
  CHECK(match_every_split("^done$", "", "building\r\ndone\r\n") == "done");
  // Through the sanitizer, CR LF is LF.
  CHECK(match_every_split("^done$", "", sanitized("building\r\ndone\r\n")) == "done");
  // A progress bar redrawn in place is one line, matched as it ends.
  CHECK(match_every_split("^100%$", "", " 10%\r 50%\r100%\n") == "100%");
  CHECK_FALSE(match_every_split("50%", "", " 10%\r 50%\r100%\n"));
  // Backspace and erase-to-end.
  CHECK(match_every_split("^abX$", "", "abc\bX\n") == "abX");
  CHECK(match_every_split("^ok$", "", sanitized("okay\b\b\x1b[K\n")) == "ok");
}

TEST_CASE("output condition: cursor moves along the line read as the terminal shows them") {
  // As the sanitizer passes them (kCursorForward, backspaces, a return), fed directly.
  CHECK(match_every_split("^100%$", "", sanitized("50%\x1b[3D100%\n")) == "100%");
  CHECK(match_every_split("^abXdef$", "", sanitized("abcdef\r\x1b[2CX\n")) == "abXdef");
  CHECK(match_every_split("^ab   X$", "", sanitized("ab\x1b[3CX\n")) == "ab   X");
  CHECK_FALSE(match_every_split("READY", "", sanitized("RE\x1b[2CDY\n")));
  // Through the line editor, as in a session: text written at a column after a return.
  for (std::size_t size : {1, 3, 64}) {
    INFO("chunk size " << size);
    CHECK(match_through_editor("^ok: all done$", "", "ok: \x1b[4Cdone\r\x1b[4Call\r\n", size) ==
          "ok: all done");
    CHECK(match_through_editor("^100%$", "", "50%\x1b[3D100%\r\n", size) == "100%");
    CHECK(match_through_editor("^abXdef$", "", "abcdef\x1b[3GX\r\n", size) == "abXdef");
    CHECK_FALSE(match_through_editor("READY", "", "RE\x1b[2CDY\r\n", size));
  }
}

TEST_CASE("output condition: UTF-8 on every split, overwritten whole") {
  CHECK(match_every_split("caf\xC3\xA9 pr\xC3\xAAt", "", "\xE2\x86\x92 caf\xC3\xA9 pr\xC3\xAAt\n") ==
        "\xE2\x86\x92 caf\xC3\xA9 pr\xC3\xAAt");
  // A one-byte character over a three-byte one leaves valid UTF-8.
  CHECK(match_every_split("^ab$", "", "\xE2\x82\xAC" "b\ra\n") == "ab");
}

TEST_CASE("output condition: the first matching line, once") {
  auto made = OutputCondition::make("port (\\d+)", "");
  REQUIRE(made.ok());
  OutputCondition c = *made;
  CHECK_FALSE(c.feed("starting\nlistening on port 5173\nport 9999\n") == std::nullopt);
  CHECK(c.match() == "listening on port 5173");
  CHECK_FALSE(c.feed("port 1\n"));
}

TEST_CASE("output condition: a partial line is matched only once output is quiet") {
  auto made = OutputCondition::make("\\[y/N\\] ", "apt remove foo\n");
  REQUIRE(made.ok());
  OutputCondition c = *made;
  CHECK_FALSE(c.feed("apt remove foo\nProceed? [y/N] "));
  CHECK(c.on_quiet() == "Proceed? [y/N] ");
  // While the echo is pending, the partial line is the typing itself: never matched.
  auto echo = OutputCondition::make("ready", "echo ready\n");
  REQUIRE(echo.ok());
  OutputCondition e = *echo;
  CHECK_FALSE(e.feed("echo rea"));
  CHECK_FALSE(e.on_quiet());
  CHECK_FALSE(e.feed("dy"));
  CHECK_FALSE(e.on_quiet());
  CHECK(e.feed("\nready\n") == "ready");
}

TEST_CASE("output condition: `$` holds only at a line's real end, never at a partial line's") {
  // printf 'REA'; sleep 1; printf 'DY\n': quiet after "REA", which is no line yet.
  auto made = OutputCondition::make("^REA$", "");
  REQUIRE(made.ok());
  OutputCondition c = *made;
  CHECK_FALSE(c.feed("REA"));
  CHECK_FALSE(c.on_quiet());
  CHECK_FALSE(c.feed("DY\n"));
  auto ready = OutputCondition::make("^READY$", "");
  REQUIRE(ready.ok());
  OutputCondition r = *ready;
  CHECK_FALSE(r.feed("REA"));
  CHECK_FALSE(r.on_quiet());
  CHECK(r.feed("DY\n") == "READY");
  // A word boundary at the partial line's end is not known either; one inside it is.
  auto word = OutputCondition::make("\\bREA\\b", "");
  REQUIRE(word.ok());
  OutputCondition w = *word;
  CHECK_FALSE(w.feed("REA"));
  CHECK_FALSE(w.on_quiet());
  CHECK(w.feed(" DY\n") == "REA DY");
  // A prompt is matched by what it shows, `$` or not at the end of the alternative that holds.
  auto prompt = OutputCondition::make("\\[y/N\\] $|Proceed\\?", "");
  REQUIRE(prompt.ok());
  OutputCondition p = *prompt;
  CHECK_FALSE(p.feed("Proceed? [y/N] "));
  CHECK(p.on_quiet() == "Proceed? [y/N] ");
  // `$` anchored at the prompt's end waits for a real end.
  auto anchored = OutputCondition::make("\\[y/N\\] $", "");
  REQUIRE(anchored.ok());
  OutputCondition a = *anchored;
  CHECK_FALSE(a.feed("Proceed? [y/N] "));
  CHECK_FALSE(a.on_quiet());
  // The head of an overlong line goes on too: `$` never holds at the bound.
  auto bound = OutputCondition::make("x$", "", 16);
  REQUIRE(bound.ok());
  OutputCondition b = *bound;
  CHECK_FALSE(b.feed(std::string(40, 'x')));
  CHECK_FALSE(b.feed("\n"));
  CHECK(b.feed("ax\n") == "ax");
}

TEST_CASE("output condition: a bad regex is an error with the engine's message") {
  auto bad = OutputCondition::make("(unclosed", "");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error()->code == Code::INVALID_ARGUMENT);
  CHECK(bad.error()->message.rfind("until.output: ", 0) == 0);
  CHECK(bad.error()->message.size() > std::string("until.output: ").size());
  CHECK_FALSE(OutputCondition::make("", "").ok());
  CHECK_FALSE(OutputCondition::make("a[", "").ok());
}

TEST_CASE("output condition: a 10 MB line is bounded, and the next line still matches") {
  auto made = OutputCondition::make("x$", "");
  REQUIRE(made.ok());
  OutputCondition c = *made;
  std::string chunk(64 * 1024, 'a');
  for (int i = 0; i < 160; ++i) CHECK_FALSE(c.feed(chunk));  // 10 MiB, no line break
  // The line's end is past the bound: what lies there is not seen.
  CHECK_FALSE(c.feed("x\n"));
  CHECK(c.feed("then x\n") == "then x");

  // The head of an overlong line is matched when it reaches the bound.
  auto head = OutputCondition::make("^start", "", 16);
  REQUIRE(head.ok());
  OutputCondition h = *head;
  CHECK(h.feed("start" + std::string(100, '.')) == "start" + std::string(11, '.'));
}

TEST_CASE("output condition: a pathological pattern costs no more than the bound allows") {
  // `(a|b)*c` backtracks quadratically with a frame per byte; the bound keeps a 10 MB line
  // to one match of 1 KiB (a crash of the stack without it).
  auto made = OutputCondition::make("(a|b)*c", "");
  REQUIRE(made.ok());
  OutputCondition c = *made;
  std::string chunk(1 << 20, 'a');
  for (int i = 0; i < 10; ++i) CHECK_FALSE(c.feed(chunk));
  CHECK_FALSE(c.feed("\n"));
}

TEST_CASE("output condition: match work is budgeted: a flood against a costly pattern puts lines off, the last is tried on quiet") {
  // `[ab]{0,500}c` against lines of 1000 a's: about half a million steps a line.
  auto made = OutputCondition::make("[ab]{0,500}c", "");
  REQUIRE(made.ok());
  OutputCondition c = *made;
  const std::string costly = std::string(1000, 'a') + "\n";
  std::string flood;
  for (int i = 0; i < 200; ++i) flood += costly;
  CHECK_FALSE(c.feed(flood));
  // The work stopped at the budget (plus the line that crossed it), not 200 lines' worth.
  CHECK(c.steps_spent() >= static_cast<std::uint64_t>(OutputCondition::kStepsPerSecond));
  CHECK(c.steps_spent() < static_cast<std::uint64_t>(OutputCondition::kStepsPerSecond) + 1024u * 1024u);
  // A matching line in the flood, past the budget, is put off ...
  CHECK_FALSE(c.feed("aac late\n"));
  const std::uint64_t before = c.steps_spent();
  CHECK_FALSE(c.feed(flood));
  CHECK(c.steps_spent() == before);
  // ... the last one put off is tried once output is quiet (here a costly one: no match).
  CHECK_FALSE(c.on_quiet());
  // With time the budget comes back, and lines are tried as they come again.
  c.refill(1.0);
  CHECK(c.feed("ac again\n") == "ac again");

  // The last line of a flood is never lost: tried on quiet.
  OutputCondition last = *made;
  CHECK_FALSE(last.feed(flood + "the end: ac\n"));
  CHECK(last.on_quiet() == "the end: ac");

  // Ordinary output against a cheap pattern stays far below the budget.
  auto cheap = OutputCondition::make("ready", "");
  REQUIRE(cheap.ok());
  OutputCondition quick = *cheap;
  std::string lines;
  for (int i = 0; i < 20000; ++i) lines += "compiling module " + std::to_string(i) + " of 20000\n";
  CHECK(quick.feed(lines + "server ready\n") == "server ready");
}

TEST_CASE("output condition: a long echo of a long typed line is still skipped") {
  std::string word(3000, 'w');
  std::string typed = "echo " + word + " ready\n";
  auto made = OutputCondition::make("ready", typed);
  REQUIRE(made.ok());
  OutputCondition c = *made;
  CHECK_FALSE(c.feed("$ " + typed));
  CHECK(c.feed("ok ready\n") == "ok ready");
}

TEST_CASE("output condition: a far line editor's echo is no output, scrolled, wrapped or redrawn") {
  // Through a relay (ssh -tt, script, a nested shell) the far editor draws the typed line.
  const std::string typed = "sleep 2; echo " + std::string(200, 'x') + " ; echo fin-''2 ; : fin-2";
  // readline scrolled it: `<` and its tail after the prompt.
  CHECK(match_every_split("fin-2", typed + "\r", "bash-5.2# <" + typed.substr(typed.size() - 78) +
                                                     "\nfin-2\n") == "fin-2");
  // Wrapped in rows that end with line breaks: the prompt and its head, a middle, the tail.
  const std::string rows = "$ " + typed.substr(0, 60) + "\n" + typed.substr(60, 80) + "\n" + typed.substr(140) + "\n";
  CHECK(match_every_split("x{40}", typed + "\r", rows + std::string(50, 'x') + "\n") == std::string(50, 'x'));
  // Drawn in pieces first (fish: each at its column), then whole: the pieces are held and
  // dropped when the whole line shows, and the command's line matches.
  const std::string fish = "sleep \r\x1b[20C0.1;\r\x1b[24C \r\x1b[25Cecho \r\x1b[30C" + std::string(10, 'x') +
                           " \x1b[A\r\r\n\x1b[41C;\x1b[A\r\r\n\x1b[43Cfin-2\x1b[A\r\r\n\x1b[48C\x1b[A\x1b[41D" +
                           "root@vm ~# sleep 0.1; echo " + std::string(10, 'x') + " ; : fin-2\r\n" +
                           std::string(10, 'x') + "\r\nfin-2 done\r\n";
  const std::string fish_typed = "sleep 0.1; echo " + std::string(10, 'x') + " ; : fin-2\r";
  for (std::size_t size : {1, 7, 4096}) {
    INFO("chunk size " << size);
    CHECK(match_through_editor("fin-2", fish_typed, fish, size) == "fin-2 done");
  }
  // A reader that never echoes: what came is held, then tried on quiet.
  auto made = OutputCondition::make("accepted", "hunter2\n");
  REQUIRE(made.ok());
  OutputCondition quiet = *made;
  CHECK_FALSE(quiet.feed("password accepted\n"));
  CHECK(quiet.on_quiet() == "password accepted");
  // ... or once many lines came first.
  OutputCondition flood = *made;
  std::string lines;
  for (int i = 0; i < 20; ++i) lines += "line " + std::to_string(i) + (i == 3 ? " accepted\n" : "\n");
  CHECK(flood.feed(lines) == "line 3 accepted");
  // The typed line shown again after a prompt, unended (fish keeps a line it refused), is
  // not output on quiet either.
  auto again = OutputCondition::make("done-42", "echo done-42\n");
  REQUIRE(again.ok());
  OutputCondition redrawn = *again;
  CHECK_FALSE(redrawn.feed("$ echo done-42\nfish: an error\n$ echo done-42"));
  CHECK_FALSE(redrawn.on_quiet());
}

TEST_CASE("output condition: a line typed ahead of a far shell is echoed twice, neither is output") {
  // The terminal echoes it as it is typed, the far editor draws it again after its prompt.
  const std::string typed = "sleep 1; echo done-4''2; : done-42";
  CHECK(match_every_split("done-42", typed + "\r", typed + "\nvm# " + typed + "\ndone-42\n") == "done-42");
  CHECK(match_every_split("done-42", typed + "\r", typed + "\n" + typed + "\ndone-42\n") == "done-42");
  const std::string wide = "sleep 1; echo " + std::string(200, 'x') + " ; : fin-2";
  CHECK(match_every_split("fin-2", wide + "\r", wide + "\nbash-5.2# <" + wide.substr(wide.size() - 70) +
                                                  "\nfin-2\n") == "fin-2");
  // Past the line bound: the head of the second echo is the prompt and the typed line's start.
  const std::string long_line = "echo sleepy " + std::string(2000, 'z');
  CHECK(match_every_split("sleepy", long_line + "\r", long_line + "\nvm# " + long_line + "\nsleepy ok\n") ==
        "sleepy ok");
  // Output that merely ends like the typed line is output.
  CHECK(match_every_split("tools", "ls\r", "$ ls\ntools\n") == "tools");
  CHECK(match_every_split("ls", "ls\r", "$ ls\nls\n") == std::nullopt);
}

TEST_CASE("output condition: through a relay, output that ends like the typed line is output; a wrapped echo's rows are not") {
  // `echo` of a marker prints the typed line's last bytes alone: output, not a redraw (it
  // was never matched through ssh, script or a nested zsh).
  const std::string marker = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  const std::string typed = "sleep 1; echo " + marker;
  CHECK(match_every_split(marker, typed + "\r", "$ " + typed + "\n" + marker + "\n") == marker);
  CHECK(match_every_split(marker, typed + "\r", "bash-5.2# <" + typed.substr(10) + "\n" + marker + "\n") == marker);
  // Typed ahead, drawn twice, then the marker.
  CHECK(match_every_split(marker, typed + "\r", typed + "\nvm# " + typed + "\n" + marker + "\n") == marker);
  // Wrapped at 40 columns by a far editor: the last row is short and holds the pattern; the
  // command prints nothing of it (it matched `pp TAILTOKEN` at once).
  const std::string wide = "sleep 2; : " + std::string(40, 'p') + " TAILTOKEN";
  for (std::size_t last : {9, 12, 15, 30}) {
    INFO("last row " << last << " bytes");
    const std::size_t cut = wide.size() - last;
    const std::string rows = "$ " + wide.substr(0, cut) + "\n" + wide.substr(cut) + "\n";
    CHECK(match_every_split("TAILTOKEN", wide + "\r", rows + "done\n") == std::nullopt);
    auto made = OutputCondition::make("TAILTOKEN", wide + "\r");
    REQUIRE(made.ok());
    OutputCondition quiet = *made;
    CHECK_FALSE(quiet.feed(rows + "done\n"));
    CHECK_FALSE(quiet.on_quiet());  // the rows are the echo, not lines held for want of one
    // ... and drawn again, wrapped, after the terminal's own echo.
    CHECK(match_every_split("TAILTOKEN", wide + "\r", wide + "\nvm# " + wide.substr(0, cut) + "\n" +
                                                          wide.substr(cut) + "\nreal TAILTOKEN\n") ==
          "real TAILTOKEN");
  }
}

TEST_CASE("output condition: a line redrawn after a CR matches as the terminal shows it") {
  // Through the line editor, as in a session: the CR and what it overwrote reach the
  // condition only as the editor's rewrite of the line.
  const std::string typed = "run\r";
  const std::string echo = "dsh> run\r\n";
  for (std::size_t size : {1, 2, 3, 5, 64}) {
    INFO("chunk size " << size);
    CHECK(match_through_editor("100%", typed, echo + "\r10%\r50%\r100%\r\n", size) == "100%");
    CHECK(match_through_editor("^100%$", typed, echo + "10%\r50%\r100%\r\n", size) == "100%");
    CHECK(match_through_editor("^DONE", typed, echo + "working...\rDONE\r\n", size) == "DONEing...");
    CHECK(match_through_editor("^done", typed, echo + "frame1\r\x1b[Kframe2\rdone\r\n", size) == "donee2");
    CHECK(match_through_editor("^ready$", typed, echo + "x\rready\r\n", size) == "ready");
    // What was overwritten is gone.
    CHECK_FALSE(match_through_editor("working", typed, echo + "working...\rDONE\x1b[K\r\nnext\r\n", size));
    // A CR at the line's start, as before.
    CHECK(match_through_editor("ready", typed, echo + "\r\x1b[K  VITE ready in 300 ms\r\n", size) ==
          "  VITE ready in 300 ms");
  }
  // The echo is still skipped when readline redraws it.
  CHECK_FALSE(match_through_editor("ready", "echo ready\r", "dsh> echo rea\rdsh> echo ready\r\n", 4));
  CHECK(match_through_editor("ready", "echo ready\r", "dsh> echo rea\rdsh> echo ready\r\nready\r\n", 4) ==
        "ready");
}

TEST_CASE("output condition: a pattern that makes a backtracker exponential answers at once") {
  std::string words;
  for (int i = 0; i < 40; ++i) words += "word ";
  CHECK_FALSE(match_every_split("(\\w+\\s?)+$", "", words + "word!\n"));
  CHECK(match_every_split("(\\w+\\s?)+$", "", words + "word\n") == words + "word");
  auto refused = OutputCondition::make("(a)\\1", "");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error()->code == Code::INVALID_ARGUMENT);
  CHECK(refused.error()->message == "until.output: backreferences are not supported (\\1 at offset 3)");
}
