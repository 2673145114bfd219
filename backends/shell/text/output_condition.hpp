// OutputCondition: "settle when the output shows a line matching this regex". Fed a send's
// sanitized byte stream (text/sanitizer.hpp, with its in-band line-editor codes) in chunks of
// any size, and the line editor's rewrites of the current line (text/line_editor.hpp), it
// matches a pattern (text/line_regex.hpp: the ECMAScript subset a linear-time engine runs)
// against each line as a terminal shows it when the line ends, and reports the first line
// that matches, once.
//
// The choices (docs/shell-backend.md, "Output conditions"):
//   - A line ends at '\n' (CR LF is '\n' after the sanitizer; a stray '\r' before '\n' is
//     the same). A lone '\r' returns to the line's start and what follows overwrites it, a
//     backspace steps back one character, a cursor forward (ESC [ n C, and the n-1 of
//     ESC [ n G after its return) passes over one, the erase codes blank the line or its end: a
//     progress bar redrawn 300 times is one line, matched as it reads when it ends. In a
//     session those codes never reach feed(): the line editor consumes them and says what
//     the line now reads (rewrite()), so both ways are taken.
//   - The echo of the typed text is skipped: while typed lines remain unechoed, a line that
//     ends with the next typed line (after the prompt or a continuation prompt) is that
//     line's echo; a blank line there is skipped too; any other line ends the echo and is
//     output. So `echo ready` with the regex `ready` matches the command's line, not its echo.
//     A far line editor (through ssh, script, a nested shell) draws a line wider than the
//     terminal scrolled (`<` and its tail) or wrapped in rows, and redraws: a line ending
//     with the typed line's last kEchoTail bytes is its echo too, and a row of it (its head
//     after the prompt, or a piece of its middle) is skipped. Before the first typed line
//     has shown, other lines are held, not output: dropped when it shows, tried in order
//     when kMaxHeld of them came first or output went quiet (a reader that does not echo).
//     A one-line send typed before the far shell read it is echoed twice: by the terminal
//     as it was typed, then by the far editor after its prompt. So after the echo a line
//     that shows the typed line whole again (after a prompt, or alone, or scrolled) is
//     skipped too: never output that merely ends the same way (`tools` after `ls`).
//   - A partial last line (a prompt such as "Proceed? [y/N] " that no '\n' ends) is
//     matched only when the caller says output has been quiet (on_quiet()): matching it on
//     every chunk would match half-written lines. Never while the echo is still pending,
//     nor when it shows a typed line whole again (a far editor's redraw after its prompt).
//     It may still go on (`printf 'REA'; sleep 1; printf 'DY\n'`), so it is matched as an
//     open line (LineRegex::Ending::open): `$` (and `\b`, `\B`) never hold at its end.
//     `^READY$` waits for the line's real end; `Proceed\? \[y/N\]` matches the prompt.
//   - Lines are bounded: only a line's first max_line_bytes are kept. A line that reaches
//     the bound is matched at once as it stands and the rest of it, up to its '\n', is
//     skipped: a 10 MB line costs O(its bytes) and one match of max_line_bytes. A match
//     costs O(line bytes x program size) whatever the pattern (LineRegex), so one line
//     costs at most 1 KiB x LineRegex::kMaxProgram steps.
//   - '.' matches a byte, not a character, as std::regex over char did. UTF-8 text in the
//     pattern matches the same text in the output.
//   - Match work is budgeted: a flood of lines against a costly pattern (each 1 KiB line
//     up to 1 KiB x LineRegex::kMaxProgram steps, some 5 to 10 ms) would pin the host's one
//     loop. A line is run only while the budget (kStepsPerSecond, refilled by the caller as
//     time passes) lasts; past it lines are not tried as they come, the last of them is
//     kept and tried on quiet, with the unended line. So a flood costs the regex at most
//     about a second's budget a second, plus one line; a line in the middle of such a flood
//     may go untried (the price), the last one never does.
// Pure (no I/O, no clock); the caller owns the quiet timer and says how time passes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/result.hpp"
#include "text/line_regex.hpp"

namespace dshpty::text {

class OutputCondition {
 public:
  static constexpr std::size_t kDefaultMaxLineBytes = 1024;

  // `pattern`: LineRegex's dialect. `typed`: the text the send wrote, whose echo is skipped.
  // INVALID_ARGUMENT ("until.output: <what was refused>") for a pattern LineRegex refuses,
  // an empty pattern or a max_line_bytes of 0.
  static Result<OutputCondition> make(std::string_view pattern, std::string_view typed,
                                      std::size_t max_line_bytes = kDefaultMaxLineBytes);

  // The next chunk of the stream. Returns the matching line (without its line break) the
  // first time one matches; nothing after that.
  std::optional<std::string> feed(std::string_view chunk);

  // The line editor's word: the current (unended) line now reads `line`, whole. Returns
  // the matching line if `line` reached the bound and matched (as feed() would).
  std::optional<std::string> rewrite(std::string_view line);

  // Output has been quiet: matches the unended last line, once per change of it.
  std::optional<std::string> on_quiet();

  // The line that matched, once one has.
  const std::optional<std::string>& match() const noexcept { return match_; }

  // The match work allowed: kStepsPerSecond (LineRegex steps, about 7 ns each: some 0.1 s
  // of CPU) a second, at most one second's worth saved. The caller says how much time
  // passed (the condition has no clock); a new condition starts with a full second's.
  static constexpr std::int64_t kStepsPerSecond = 16'000'000;
  void refill(double seconds);
  // The LineRegex steps run so far.
  std::uint64_t steps_spent() const noexcept { return spent_; }

 private:
  OutputCondition(LineRegex regex, std::string_view typed, std::size_t max_line_bytes);

  // What a line shows of the typed line whose echo is pending: nothing, a piece (its head
  // after the prompt; once `begun`, a middle row of it wrapped), or all of it (it ends with
  // the typed line; or `<` and at least its last kEchoTail bytes: a far editor scrolled the
  // rest off to the left; or, once `begun`, a row that ends it).
  enum class EchoPart { none, piece, whole };
  static EchoPart echo_part(std::string_view shown, std::string_view typed, bool begun);
  // After the echo: `shown` is a one-line send's typed line drawn again, whole after a
  // prompt (or alone) or scrolled to its tail; or, `head_only` (an overlong line's kept
  // head), a prompt and the typed line's start.
  // Wrapped, it is drawn in rows: the first row starts it, the one that ends it ends it.
  bool shown_again(std::string_view shown, bool head_only);

  // The byte `c` of the current line, as a terminal shows it.
  void edit(char c);
  // The current line ended: skipped as echo, or matched.
  void end_line();
  // Runs the regex on `line` (which ends as `ending` says) within the budget (unless
  // `unbounded`); past it, the line is kept as skipped_ instead.
  bool matches(const std::string& line, LineRegex::Ending ending, bool unbounded = false);
  // The first typed line will not show: the held lines are output, tried in order.
  void try_held(bool unbounded = false);
  void cap_line();

  LineRegex regex_;
  std::size_t max_line_bytes_;
  std::vector<std::string> echo_;  // the typed lines not yet echoed, next first
  // Lines that came before the first typed line showed, none of it (see end_line).
  static constexpr std::size_t kMaxHeld = 16;
  std::vector<std::string> held_;
  std::size_t echo_next_ = 0;      // index in echo_ of the next one
  bool echo_begun_ = false;        // a row of echo_[echo_next_] has shown, not its end yet
  bool again_begun_ = false;       // shown_again() saw the first row of a wrapped redraw
  std::string line_;               // the current line as shown, at most max_line_bytes_
  std::size_t cursor_ = 0;         // byte offset in line_ (a character boundary)
  bool overlong_ = false;          // the line reached the bound: skipped to its '\n'
  bool quiet_tried_ = false;       // on_quiet() already tried the line as it is
  std::optional<std::string> match_;
  std::int64_t budget_ = kStepsPerSecond;  // may go below 0 by one line's work
  std::uint64_t spent_ = 0;
  struct Skipped {
    std::string line;
    LineRegex::Ending ending;
  };
  std::optional<Skipped> skipped_;  // the last line the budget put off
};

}  // namespace dshpty::text
