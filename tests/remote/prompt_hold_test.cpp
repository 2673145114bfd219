// The far side's hold on a send's answer (backends/shell/supervisor/prompt_hold.hpp): it
// ends at the prompt's end mark with the session's nonce, wherever the reads split the mark,
// and at nothing else; a shell without marks is never held.
#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "supervisor/prompt_hold.hpp"

using dshpty::supervisor::PromptHold;

namespace {

constexpr std::string_view kNonce = "0123456789abcdef";
const std::string kEnd = "\x1b]133;B;dshpty=" + std::string(kNonce) + "\a";

}  // namespace

TEST_CASE("a shell without marks is never held") {
  PromptHold hold("");
  CHECK_FALSE(hold.begin());
  CHECK_FALSE(hold.holding());
  CHECK_FALSE(hold.saw_prompt_end(kEnd));
}

TEST_CASE("the prompt's end ends the hold, split anywhere across reads") {
  const std::string answer = "true\r\n\x1b]133;C;dshpty=" + std::string(kNonce) + "\a\x1b]133;A;dshpty=" +
                             std::string(kNonce) + "\adsh> " + kEnd + " \b";
  for (std::size_t a = 0; a <= answer.size(); ++a) {
    for (std::size_t b = a; b <= answer.size(); b += 7) {
      PromptHold hold(kNonce);
      REQUIRE(hold.begin());
      const std::string_view all = answer;
      const bool first = hold.saw_prompt_end(all.substr(0, a));
      const bool second = !first && hold.saw_prompt_end(all.substr(a, b - a));
      const bool third = !first && !second && hold.saw_prompt_end(all.substr(b));
      const std::size_t mark_end = answer.find(kEnd) + kEnd.size();
      // It ends in the read that completes the mark, and no earlier.
      CHECK(first == (a >= mark_end));
      CHECK(second == (a < mark_end && b >= mark_end));
      CHECK(third == (b < mark_end));
      CHECK_FALSE(hold.holding());
    }
  }
}

TEST_CASE("the mark one byte at a time, after a long read") {
  PromptHold hold(kNonce);
  REQUIRE(hold.begin());
  CHECK_FALSE(hold.saw_prompt_end(std::string(100000, 'x')));
  for (std::size_t i = 0; i + 1 < kEnd.size(); ++i) CHECK_FALSE(hold.saw_prompt_end(kEnd.substr(i, 1)));
  CHECK(hold.saw_prompt_end(kEnd.substr(kEnd.size() - 1)));
  CHECK_FALSE(hold.holding());
}

TEST_CASE("other marks, another nonce and a cut-off mark do not end it") {
  PromptHold hold(kNonce);
  REQUIRE(hold.begin());
  CHECK_FALSE(hold.saw_prompt_end("\x1b]133;A;dshpty=0123456789abcdef\a"));
  CHECK_FALSE(hold.saw_prompt_end("\x1b]133;B;dshpty=fedcba9876543210\a"));
  CHECK_FALSE(hold.saw_prompt_end("\x1b]133;B;dshpty=0123456789abcde"));
  CHECK_FALSE(hold.saw_prompt_end("X\a"));  // the cut-off mark's missing byte was another
  CHECK(hold.holding());
  // A new hold forgets what the last one read: the seam does not reach back into it.
  hold.end();
  CHECK_FALSE(hold.saw_prompt_end(kEnd));  // not holding: nothing to end
  REQUIRE(hold.begin());
  CHECK_FALSE(hold.saw_prompt_end(kEnd.substr(0, 5)));
  hold.end();
  REQUIRE(hold.begin());
  CHECK_FALSE(hold.saw_prompt_end(kEnd.substr(5)));
  CHECK(hold.holding());
}
