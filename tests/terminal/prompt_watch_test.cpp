// Prompt evidence: a marker after the write, then exactly the prompt.
#include <doctest/doctest.h>

#include <string>

#include "text/prompt_watch.hpp"
#include "text/sanitizer.hpp"

using dshpty::text::PromptWatch;
using dshpty::text::SanitizedText;
using dshpty::text::Sanitizer;

namespace {
// Feeds chunks one by one, as the session would, and reports at_prompt after each.
struct Session {
  Sanitizer sanitizer;
  SanitizedText chunk;
  PromptWatch watch{"dsh> "};
  bool feed(const std::string& bytes) {
    chunk.clear();
    sanitizer.feed(bytes, chunk);
    watch.observe(chunk);
    return watch.at_prompt();
  }
};
const std::string MARK0 = "\x1B]133;D;0\x07";
}  // namespace

TEST_CASE("marker then exactly the prompt is at the prompt, in any chunking") {
  const std::string stream = "hello\r\n" + MARK0 + "dsh> ";
  for (std::size_t i = 0; i <= stream.size(); ++i) {
    Session s;
    bool first = s.feed(stream.substr(0, i));
    bool second = s.feed(stream.substr(i));
    INFO("split at " << i);
    CHECK(second);
    CHECK(first == (i == stream.size()));  // never early
    CHECK(s.watch.last_status() == 0);
  }
}

TEST_CASE("text after the prompt, or no marker, is not the prompt") {
  Session s;
  CHECK_FALSE(s.feed("dsh> "));  // the prompt text alone, no marker
  CHECK_FALSE(s.feed(MARK0 + "dsh> x"));
  CHECK_FALSE(s.feed(""));
  CHECK(s.feed(MARK0 + "dsh> "));  // a new marker starts a new tail
  CHECK_FALSE(s.feed("more output"));
  CHECK_FALSE(s.feed(std::string(100000, 'z')));  // bounded: nothing kept past the prompt
  CHECK(s.feed("\x1B]133;D;2\x07" "dsh> "));
  CHECK(s.watch.last_status() == 2);
}

TEST_CASE("reset forgets a marker from an earlier send") {
  Session s;
  CHECK(s.feed(MARK0 + "dsh> "));
  s.watch.reset();  // the write of the next send landed
  CHECK_FALSE(s.watch.at_prompt());
  CHECK_FALSE(s.watch.marker_seen());
  CHECK_FALSE(s.feed("sleep 1\r\n"));
  CHECK(s.feed(MARK0 + "dsh> "));
}

TEST_CASE("a configured prompt") {
  PromptWatch watch("$ ");
  Sanitizer sanitizer;
  SanitizedText chunk = sanitizer.feed(MARK0 + "$ ");
  watch.observe(chunk);
  CHECK(watch.at_prompt());
}
