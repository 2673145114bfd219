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

}  // namespace

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
  if (echo_next_ == echo_.size()) matches(line_, LineRegex::Ending::open);
}

bool OutputCondition::matches(const std::string& line, LineRegex::Ending ending) {
  if (!regex_.search(line, ending)) return false;
  match_ = line;
  return true;
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
    } else if (overlong_) {
      // Only the head is kept: the prompt, then the start of the typed line.
      echo = false;
      for (std::size_t p = 0; p < std::min<std::size_t>(shown.size(), 256) && !echo; ++p)
        echo = typed.compare(0, shown.size() - p, shown.substr(p)) == 0;
      if (echo) ++echo_next_;
    } else {
      echo = shown.size() >= typed.size() &&
             shown.compare(shown.size() - typed.size(), typed.size(), typed) == 0;
      if (echo) ++echo_next_;
    }
    if (!echo) echo_next_ = echo_.size();  // the command's output has begun
    if (echo) {
      line_.clear();
      cursor_ = 0;
      overlong_ = false;
      return;
    }
  }
  if (!tried) matches(line_, LineRegex::Ending::ended);
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

std::optional<std::string> OutputCondition::on_quiet() {
  if (match_ || quiet_tried_ || overlong_ || echo_next_ < echo_.size()) return std::nullopt;
  quiet_tried_ = true;
  if (trim_right(line_).empty()) return std::nullopt;
  if (matches(line_, LineRegex::Ending::open)) return match_;
  return std::nullopt;
}

}  // namespace dshpty::text
