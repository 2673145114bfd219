#include "text/output_condition.hpp"

#include <algorithm>
#include <cstring>

#include "text/sanitizer.hpp"
#include "text/utf8.hpp"

namespace dshpty::text {
namespace {

std::string_view trim_right(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The typed text as the lines the shell will echo: CR LF and lone CRs end lines as LF
// does, and the line breaks at the end (the Enter that runs it) are no lines of their own.
std::vector<std::string> typed_lines(std::string_view typed) {
  std::vector<std::string> lines(1);
  for (std::size_t i = 0; i < typed.size(); ++i) {
    char c = typed[i];
    if (c == '\r' && i + 1 < typed.size() && typed[i + 1] == '\n') continue;
    if (c == '\r' || c == '\n') {
      lines.emplace_back();
    } else {
      lines.back().push_back(c);
    }
  }
  while (!lines.empty() && trim_right(lines.back()).empty()) lines.pop_back();
  for (auto& line : lines) line.resize(trim_right(line).size());
  return lines;
}

bool ends_with(std::string_view s, std::string_view end) {
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

// How many bytes `a` and `b` end with in common.
std::size_t common_suffix(std::string_view a, std::string_view b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[a.size() - 1 - n] == b[b.size() - 1 - n]) ++n;
  return n;
}

// How much of a typed line's end shows its echo: a far line editor that scrolls a line
// wider than the terminal (`<` and the tail) or wraps it (the last row) keeps at least that.
constexpr std::size_t kEchoTail = 16;

}  // namespace

OutputCondition::EchoPart OutputCondition::echo_part(std::string_view shown, std::string_view typed, bool begun) {
  if (ends_with(shown, typed)) return EchoPart::whole;
  const std::size_t k = std::min(typed.size(), kEchoTail);
  const std::size_t common = common_suffix(shown, typed);
  // Scrolled: the far editor shows `<` and the tail. Never a line that only ends like the
  // typed line (`echo ABC…Z` prints the typed line's last bytes alone).
  if (common >= k && common < shown.size() && shown[shown.size() - common - 1] == '<') return EchoPart::whole;
  if (begun) {
    // Wrapped, its first row shown: a row that ends the typed line is its last, any other
    // piece of it a middle row. Only after the first: alone they may be output.
    if (common == shown.size()) return EchoPart::whole;
    if (typed.find(shown) != std::string_view::npos) return EchoPart::piece;
  }
  // The first row (a prompt, then the typed line's head), or a draw the editor redraws.
  if (shown.size() < k) return EchoPart::none;
  const std::string_view head = typed.substr(0, k);
  for (std::size_t at = shown.find(head); at != std::string_view::npos; at = shown.find(head, at + 1)) {
    if (typed.compare(0, shown.size() - at, shown.substr(at)) == 0) return EchoPart::piece;
  }
  return EchoPart::none;
}

bool OutputCondition::shown_again(std::string_view shown, bool head_only) {
  // Only a one-line send's line: a far editor draws it again after the terminal's own echo
  // when it was typed before the far shell read (typed ahead of a command there).
  if (echo_.size() != 1 || echo_[0].empty() || shown.empty()) return false;
  const std::string& typed = echo_[0];
  // Its first row: the prompt, then the typed line's start.
  auto first_row = [&] {
    for (std::size_t p = 0; p < std::min<std::size_t>(shown.size(), 256); ++p)
      if ((p == 0 || shown[p - 1] == ' ') && typed.compare(0, shown.size() - p, shown.substr(p)) == 0) return true;
    return false;
  };
  if (head_only) return first_row();
  // All of it after a prompt (or alone), or its tail scrolled: never text that merely ends
  // the same way (`tools` after typing `ls`, `ABC…Z` after typing `echo ABC…Z`).
  if (ends_with(shown, typed)) {
    again_begun_ = false;
    return shown.size() == typed.size() || shown[shown.size() - typed.size() - 1] == ' ';
  }
  const std::size_t common = common_suffix(shown, typed);
  const std::size_t k = std::min(typed.size(), kEchoTail);
  if (common >= k && common < shown.size() && shown[shown.size() - common - 1] == '<') return true;
  // Wrapped in rows: the first, then middle rows, then the one that ends it.
  if (again_begun_) {
    if (common == shown.size()) {
      again_begun_ = false;
      return true;
    }
    if (typed.find(shown) != std::string_view::npos) return true;
    again_begun_ = false;
  }
  if (shown.size() >= k && first_row()) {
    again_begun_ = true;
    return true;
  }
  return false;
}

Result<OutputCondition> OutputCondition::make(std::string_view pattern, std::string_view typed,
                                              std::size_t max_line_bytes) {
  if (pattern.empty())
    return make_error(Code::INVALID_ARGUMENT, "until.output: the pattern is empty");
  if (max_line_bytes == 0)
    return make_error(Code::INVALID_ARGUMENT, "until.output: max_line_bytes must be at least 1");
  auto regex = LineRegex::compile(pattern);
  if (!regex) return make_error(Code::INVALID_ARGUMENT, "until.output: " + regex.error()->message);
  return OutputCondition(std::move(*regex), typed, max_line_bytes);
}

OutputCondition::OutputCondition(LineRegex regex, std::string_view typed,
                                 std::size_t max_line_bytes)
    : regex_(std::move(regex)), max_line_bytes_(max_line_bytes), echo_(typed_lines(typed)) {}

std::optional<std::string> OutputCondition::feed(std::string_view chunk) {
  if (match_ || chunk.empty()) return std::nullopt;
  quiet_tried_ = false;
  const char* p = chunk.data();
  const char* end = p + chunk.size();
  while (p < end) {
    if (overlong_) {
      // The rest of a bounded line: nothing to keep up to its end.
      const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(end - p));
      if (!nl) break;
      p = static_cast<const char*>(nl);
    }
    if (cursor_ == line_.size() && !overlong_) {
      // The common case: printable text appended at the line's end, in bulk.
      const char* run = p;
      std::size_t room = max_line_bytes_ - line_.size();
      while (run < end && static_cast<std::size_t>(run - p) < room) {
        auto b = static_cast<unsigned char>(*run);
        if ((b < 0x20 && b != '\t') || b == 0x7F) break;
        ++run;
      }
      if (run != p) {
        line_.append(p, run);
        cursor_ = line_.size();
        p = run;
        if (line_.size() >= max_line_bytes_) cap_line();
        if (match_) return match_;
        continue;
      }
    }
    edit(*p++);
    if (match_) return match_;
  }
  return std::nullopt;
}

void OutputCondition::edit(char c) {
  if (c == '\n') {
    end_line();
    return;
  }
  if (overlong_) return;
  switch (c) {
    case kReturn:
      cursor_ = 0;
      return;
    case kBackspace:
      while (cursor_ > 0 && utf8::is_continuation(static_cast<unsigned char>(line_[cursor_ - 1]))) --cursor_;
      if (cursor_ > 0) --cursor_;
      return;
    case kEraseToEnd:
      line_.resize(cursor_);
      return;
    case kEraseLine:
      line_.assign(cursor_, ' ');
      return;
    case kCursorForward:
      // Over the character there, or a blank past the line's end.
      if (cursor_ == line_.size()) line_.push_back(' ');
      ++cursor_;
      while (cursor_ < line_.size() && utf8::is_continuation(static_cast<unsigned char>(line_[cursor_]))) ++cursor_;
      if (line_.size() >= max_line_bytes_) cap_line();
      return;
    default:
      break;
  }
  auto b = static_cast<unsigned char>(c);
  if ((b < 0x20 && c != '\t') || b == 0x7F) return;
  if (cursor_ == line_.size() || utf8::is_continuation(b)) {
    line_.insert(cursor_, 1, c);
  } else {
    // Over the character under the cursor: it goes whole, so the line stays UTF-8.
    std::size_t len = 1;
    while (cursor_ + len < line_.size() &&
           utf8::is_continuation(static_cast<unsigned char>(line_[cursor_ + len])))
      ++len;
    line_.replace(cursor_, len, 1, c);
  }
  ++cursor_;
  if (line_.size() >= max_line_bytes_) cap_line();
}

void OutputCondition::cap_line() {
  line_.resize(utf8::prefix(line_, max_line_bytes_).size());
  cursor_ = std::min(cursor_, line_.size());
  overlong_ = true;
  // An echo may be this long: it is judged at its end, from its head. The head goes on.
  if (echo_next_ == echo_.size() && !shown_again(line_, /*head_only=*/true)) matches(line_, LineRegex::Ending::open);
}

bool OutputCondition::matches(const std::string& line, LineRegex::Ending ending, bool unbounded) {
  if (!unbounded && budget_ <= 0) {
    skipped_ = Skipped{line, ending};  // over the budget: tried on quiet if it is the last such line
    return false;
  }
  std::uint64_t steps = 0;
  const bool found = regex_.search(line, ending, &steps);
  budget_ -= static_cast<std::int64_t>(steps);
  spent_ += steps;
  if (found) match_ = line;
  return found;
}

void OutputCondition::refill(double seconds) {
  if (!(seconds > 0)) return;
  const double room = static_cast<double>(kStepsPerSecond) - static_cast<double>(budget_);
  budget_ += static_cast<std::int64_t>(std::min(room, seconds * static_cast<double>(kStepsPerSecond)));
}

void OutputCondition::end_line() {
  bool tried = overlong_ && echo_next_ == echo_.size();
  if (echo_next_ < echo_.size()) {
    std::string_view shown = trim_right(line_);
    const std::string& typed = echo_[echo_next_];
    bool echo;
    if (shown.empty()) {
      echo = true;  // a blank line before or within the echo
    } else if (typed.empty()) {
      // An empty line typed inside a multi-line text: its echo is a continuation prompt.
      echo = shown.size() <= 32 && shown.back() == '>';
      if (echo) ++echo_next_;
      echo_begun_ = false;
    } else if (overlong_) {
      // Only the head is kept: the prompt, then the start of the typed line.
      echo = false;
      for (std::size_t p = 0; p < std::min<std::size_t>(shown.size(), 256) && !echo; ++p)
        echo = typed.compare(0, shown.size() - p, shown.substr(p)) == 0;
      if (echo) ++echo_next_;
      echo_begun_ = false;
    } else {
      const EchoPart part = echo_part(shown, typed, echo_begun_);
      echo = part != EchoPart::none;
      echo_begun_ = part == EchoPart::piece;
      if (part == EchoPart::whole) ++echo_next_;
    }
    if (!echo && echo_next_ == 0) {
      // Before the first typed line has shown, a line that is none of it is held: a far
      // line editor draws the line in pieces and redraws, and what shows it may come after
      // (fish's error quoting the line it refused). The line that shows it drops them.
      held_.push_back(line_);
      line_.clear();
      cursor_ = 0;
      overlong_ = false;
      if (held_.size() >= kMaxHeld) try_held();  // so many lines first: it has no echo
      return;
    }
    if (!echo) echo_next_ = echo_.size();  // the command's output has begun
    if (!echo || echo_next_ == echo_.size()) echo_begun_ = false;
    if (echo_next_ > 0) held_.clear();
    if (echo) {
      line_.clear();
      cursor_ = 0;
      overlong_ = false;
      return;
    }
  }
  // The typed line drawn again (see shown_again) is no output either.
  if (!tried && !shown_again(trim_right(line_), overlong_)) matches(line_, LineRegex::Ending::ended);
  line_.clear();
  cursor_ = 0;
  overlong_ = false;
}

std::optional<std::string> OutputCondition::rewrite(std::string_view line) {
  if (match_) return std::nullopt;
  quiet_tried_ = false;
  const std::string_view head = utf8::prefix(line, max_line_bytes_);
  if (overlong_ && head.size() == line_.size() && head == line_) return std::nullopt;  // judged already
  line_.assign(head);
  cursor_ = line_.size();
  overlong_ = false;
  if (line.size() >= max_line_bytes_) cap_line();
  return match_;
}

void OutputCondition::try_held(bool unbounded) {
  echo_next_ = echo_.size();
  for (const std::string& line : held_)
    if (matches(line, LineRegex::Ending::ended, unbounded)) break;
  held_.clear();
}

std::optional<std::string> OutputCondition::on_quiet() {
  // Quiet: no flood now, so what the budget put off is tried whatever it costs (once: a
  // line at most; the budget is spent all the same).
  if (!match_ && skipped_) {
    const Skipped put_off = std::move(*skipped_);
    skipped_.reset();
    if (matches(put_off.line, put_off.ending, /*unbounded=*/true)) return match_;
  }
  if (!match_ && echo_next_ == 0 && !held_.empty()) {
    // Quiet before the typed line showed, after other lines: a reader that does not echo.
    try_held(/*unbounded=*/true);
    if (match_) return match_;
  }
  if (match_ || quiet_tried_ || overlong_ || echo_next_ < echo_.size()) return std::nullopt;
  quiet_tried_ = true;
  const std::string_view shown = trim_right(line_);
  if (shown.empty()) return std::nullopt;
  // A typed line drawn again after a prompt (a far editor's redraw, fish keeping a line it
  // refused) is its echo, not output.
  for (const std::string& typed : echo_)
    if (!typed.empty() && echo_part(shown, typed, /*begun=*/false) == EchoPart::whole) return std::nullopt;
  if (matches(line_, LineRegex::Ending::open, /*unbounded=*/true)) return match_;
  return std::nullopt;
}

}  // namespace dshpty::text
