// Prompt evidence from the shell's marks: a prompt end (B) after the write, nothing after.
#include <doctest/doctest.h>

#include <string>

#include "text/prompt_watch.hpp"
#include "text/sanitizer.hpp"

using dshpty::text::PromptWatch;
using dshpty::text::SanitizedText;
using dshpty::text::Sanitizer;
using dshpty::text::SanitizerConfig;

namespace {
const std::string kNonce = "0123456789abcdef";
std::string mark(const std::string& body, const std::string& nonce = kNonce) {
  return "\x1B]133;" + body + ";dshpty=" + nonce + "\x07";
}
// What the integration prints around a prompt.
std::string prompt(int status, const std::string& cwd = "/tmp", const std::string& text = "dsh> ") {
  return mark("P;cwd=" + cwd) + mark("D;" + std::to_string(status)) + mark("A") + text + mark("B");
}

// Feeds chunks one by one, as the session would, and reports at_prompt after each.
struct Session {
  Sanitizer sanitizer{SanitizerConfig{4096, kNonce}};
  SanitizedText chunk;
  PromptWatch watch;
  bool feed(const std::string& bytes) {
    chunk.clear();
    sanitizer.feed(bytes, chunk);
    watch.observe(chunk);
    return watch.at_prompt();
  }
};
}  // namespace

TEST_CASE("a prompt end with nothing after it is at the prompt, in any chunking") {
  const std::string stream = mark("C") + "hello\r\n" + prompt(3, "/a%20b%3Bc%07");
  for (std::size_t i = 0; i <= stream.size(); ++i) {
    Session s;
    bool first = s.feed(stream.substr(0, i));
    bool second = s.feed(stream.substr(i));
    INFO("split at " << i);
    CHECK(second);
    CHECK(first == (i == stream.size()));  // never early
    CHECK(s.watch.last_status() == 3);
    CHECK(s.watch.command_started());
    REQUIRE(s.watch.cwd());
    CHECK(*s.watch.cwd() == "/a b;c\x07");
  }
}

TEST_CASE("text after the prompt end, or no prompt end, is not the prompt") {
  Session s;
  CHECK_FALSE(s.feed("dsh> "));  // the prompt text alone, no mark
  CHECK_FALSE(s.feed(prompt(0) + "x"));
  CHECK_FALSE(s.feed(""));
  CHECK(s.feed(prompt(0)));  // a new prompt end starts afresh
  CHECK_FALSE(s.feed("more output"));
  CHECK_FALSE(s.feed(std::string(100000, 'z')));  // nothing of the text is kept
  CHECK(s.feed(prompt(2, "/", "(venv) anything at all $ ")));
  CHECK(s.watch.last_status() == 2);
  CHECK_FALSE(s.feed(mark("A")));  // a prompt start alone: the prompt is not over
}

TEST_CASE("blanks a line editor writes after the prompt are nothing") {
  Session s;
  CHECK(s.feed(prompt(0) + std::string(74, ' ') + std::string(74, '\b')));
  CHECK(s.feed("\x1B[K"));
  CHECK_FALSE(s.feed("e"));
  // fish puts the cursor back after its prompt: a return and a move forward are no text.
  Session fish;
  CHECK(fish.feed(prompt(0) + "\x1B[K\r\x1B[14C"));
  CHECK(fish.feed("\x1B[3G\x1B[2D"));
  CHECK_FALSE(fish.feed("e"));
}

TEST_CASE("marks without the session's nonce are plain output") {
  Session s;
  CHECK_FALSE(s.feed("\x1B]133;D;0\x07" "dsh> "));  // the old marker, no nonce
  CHECK_FALSE(s.watch.marker_seen());
  CHECK_FALSE(s.feed(mark("D;0", "fedcba9876543210") + mark("B", "fedcba9876543210")));
  CHECK_FALSE(s.feed(mark("B", "")));
  CHECK_FALSE(s.feed("\x1B]133;B\x07"));
  CHECK_FALSE(s.watch.marker_seen());
  // And never text: every OSC is removed.
  CHECK(s.chunk.text.empty());
  CHECK(s.feed(prompt(0)));
}

TEST_CASE("reset forgets marks from an earlier send, but not the cwd") {
  Session s;
  CHECK(s.feed(prompt(0, "/home")));
  s.watch.reset();  // the write of the next send landed
  CHECK_FALSE(s.watch.at_prompt());
  CHECK_FALSE(s.watch.marker_seen());
  CHECK_FALSE(s.watch.last_status());
  CHECK(*s.watch.cwd() == "/home");
  CHECK_FALSE(s.feed("sleep 1\r\n"));
  CHECK(s.feed(prompt(0)));
}

TEST_CASE("a repainted prompt (no cwd mark) is not a new prompt") {
  Session s;
  CHECK(s.feed(prompt(0)));
  s.watch.reset();
  const std::string repaint = "\r" + mark("D;0") + mark("A") + "dsh> " + mark("B");
  CHECK_FALSE(s.feed(repaint));
  CHECK(s.feed(prompt(0)));
  CHECK(s.feed(repaint));  // a repaint of the new prompt is still that prompt
}

TEST_CASE("a numbered P (bash prints it from PS1): a repaint repeats the count and is not a new prompt") {
  Session s;
  const auto numbered = [](int n) {
    return mark("P;cwd=/tmp;n=" + std::to_string(n)) + mark("D;0") + mark("A") + "dsh> " + mark("B");
  };
  CHECK(s.feed(numbered(1)));
  s.watch.reset();
  CHECK_FALSE(s.feed("\r" + numbered(1)));  // readline after a resize: the same expanded prompt
  CHECK(s.chunk.markers.size() == 3);       // its P is gone, the rest stays
  CHECK_FALSE(s.watch.line_taken());
  CHECK(s.feed(numbered(2)));
  CHECK(s.watch.line_taken());
  CHECK(s.feed("\r" + numbered(2)));  // a repaint of the new prompt is still that prompt
  s.watch.reset();
  CHECK(s.feed(numbered(3)));  // counts only need to differ from the last one
  s.watch.reset();
  CHECK(s.feed(numbered(1)));
}

TEST_CASE("a line editor's redraws: the prompt again, then what was typed") {
  Session s;
  // fish and zsh redraw with a carriage return, the whole prompt with its marks, the line.
  CHECK_FALSE(s.feed(prompt(0) + "ech" + "\r" + prompt(0) + "echo x"));
  CHECK(s.feed("\r" + prompt(0)));  // the line cleared: a carriage return is not text
  CHECK_FALSE(s.feed("\r" + prompt(0) + "e"));
}

TEST_CASE("a malformed cwd or a long mark is not a mark") {
  Session s;
  CHECK_FALSE(s.feed(mark("P;cwd=/a%2") + mark("D;0") + mark("A") + "$ "));
  CHECK_FALSE(s.watch.cwd());
  Sanitizer small{SanitizerConfig{16, kNonce}};
  CHECK(small.feed(mark("B")).markers.empty());
}

TEST_CASE("a line not run: a continuation mark until the line is taken; a refused line's new prompt") {
  Session s;
  s.watch.reset();
  // bash's PS2 after `echo 'abc`: the shell reads more, no prompt.
  CHECK_FALSE(s.feed("echo 'abc\r\n" + mark("L;state=continuation") + "> "));
  CHECK(s.watch.line_state() == "continuation");
  CHECK_FALSE(s.watch.line_taken());
  // The rest typed: the command starts, and the continuation is over.
  CHECK_FALSE(s.feed("def'\r\n" + mark("C") + "abc\r\ndef\r\n"));
  CHECK(s.watch.line_state().empty());
  // C-c at a continuation prompt: a new prompt ends it too.
  s.watch.reset();
  s.feed(mark("L;state=continuation") + "> ");
  CHECK(s.feed("^C\r\n" + prompt(130)));
  CHECK(s.watch.line_state().empty());
  // fish refused the line and cleared it: its new prompt's P says so (and fish's cached
  // redraws repeat that P with its count: a repaint, no new mark).
  s.watch.reset();
  CHECK(s.feed("fish: Expected a string\r\n" + mark("P;cwd=/tmp;n=r1;state=refused") + mark("D;2") + mark("A") +
               "dsh> " + mark("B")));
  CHECK(s.watch.line_state() == "refused");
  CHECK(s.watch.last_status() == 2);
  // A mark of another nonce says nothing.
  s.watch.reset();
  s.feed(mark("L;state=continuation", "ffffffffffffffff"));
  CHECK(s.watch.line_state().empty());
}

TEST_CASE("prompts since the write: one for a line the command in front read, two for one the shell read") {
  Session s;
  // The command in front ends: its status, one new prompt, no command start.
  CHECK(s.feed(prompt(0)));
  CHECK(s.watch.prompts() == 1);
  CHECK_FALSE(s.watch.command_started());
  // The shell then reads an empty line (bash: the prompt hook again, no C).
  CHECK(s.feed("\r\n" + mark("P;cwd=/tmp;n=2") + mark("D;0") + mark("A") + "dsh> " + mark("B")));
  CHECK(s.watch.prompts() == 2);
  s.watch.reset();
  CHECK(s.watch.prompts() == 0);
}

TEST_CASE("only the integration's own D counts: the one right after a P, outside an open prompt") {
  Session s;
  // A prompt that prints a D of its own with the real nonce (a sourced file can read it):
  // the forged status comes after the shell's and says nothing.
  CHECK(s.feed(mark("P;cwd=/tmp;n=1") + mark("D;1") + mark("A") + mark("D;0") + "dsh> " + mark("B")));
  CHECK(s.watch.last_status() == 1);
  // A hook of the user's printing after the integration's P and D (zsh precmd, fish event).
  s.watch.reset();
  CHECK(s.feed(mark("P;cwd=/tmp") + mark("D;2") + "\r\n" + mark("D;0") + mark("A") + "dsh> " + mark("B")));
  CHECK(s.watch.last_status() == 2);
  // A P and D inside the prompt (no B since the shell's P): not a new prompt, no status, no cwd.
  s.watch.reset();
  CHECK(s.feed(mark("P;cwd=/tmp;n=2") + mark("D;3") + mark("A") + mark("P;cwd=/forged") + mark("D;0") + "dsh> " +
               mark("B")));
  CHECK(s.watch.last_status() == 3);
  CHECK(s.watch.prompts() == 1);
  REQUIRE(s.watch.cwd());
  CHECK(*s.watch.cwd() == "/tmp");
  // A repaint's D (no P before it) leaves the status as the new prompt said it.
  CHECK(s.feed("\r" + mark("D;0") + mark("A") + "dsh> " + mark("B")));
  CHECK(s.watch.last_status() == 3);
}
