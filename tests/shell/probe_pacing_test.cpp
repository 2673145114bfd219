// The stdin probe as a send paces it: put off while output arrives (a flood pays no
// /proc reads), but never for good, and never before the shell has taken the input in.
#include <doctest/doctest.h>

#include <string>

#include "fixture.hpp"

using namespace dshpty;
using namespace dshpty::test;

namespace {

// With idle and timeout this long, only stdin evidence completes a send.
SendRequest reader_request(std::string text) {
  SendRequest r;
  r.text = std::move(text);
  r.idle = std::chrono::seconds(30);
  r.timeout = std::chrono::seconds(120);
  return r;
}

}  // namespace

TEST_CASE("a reader is found while another job floods the terminal without a pause") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  // `yes` in the background never lets the output go quiet; `read x` waits in the
  // foreground. Only the probe (run at the latest kProbeBusyInterval after the previous
  // one) can prove it.
  auto r = fx.send(*s.session, reader_request("yes flood > /dev/tty & read x"));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  r = fx.send(*s.session, reader_request("kill %1; wait"));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));  // the line read x took
  r = fx.send(*s.session, reader_request("kill %1 2>/dev/null; wait; echo calm"));
  REQUIRE_MESSAGE(r, show(r));
  CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}

TEST_CASE("a long command line completes only after its output, not while bash reads it") {
  ShellFixture fx;
  auto s = fx.spawn();
  REQUIRE_MESSAGE(s.session, describe(s.error));
  // bash takes the line in one byte at a time and echoes each: a probe between bytes must
  // not take it for a reader waiting on the send's input.
  const std::string word(3000, 'w');
  for (int i = 0; i < 5; ++i) {
    CAPTURE(i);
    auto r = fx.send(*s.session, reader_request("echo " + word + "; echo end-of-output"));
    REQUIRE_MESSAGE(r, show(r));
    CHECK_MESSAGE(r->wait_reason == WaitReason::stdin_read, show(r));
    CHECK_MESSAGE(r->viewport.find(word + "\nend-of-output\n") != std::string::npos, show(r));
  }
  CHECK(fx.close(*s.session).ok());
  CHECK(marked_processes(fx.marker()).empty());
}
