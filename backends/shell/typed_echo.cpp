#include "typed_echo.hpp"

#include <vector>

#include "text/sanitizer.hpp"

namespace dshpty::shell {

namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  for (std::size_t at = text.find('\n'); at != std::string_view::npos; at = text.find('\n', start)) {
    lines.push_back(text.substr(start, at - start));
    start = at + 1;
  }
  lines.push_back(text.substr(start));
  return lines;
}

// Printable as the terminal shows it: the sanitizer leaves it as it is.
bool printable(std::string_view line) {
  if (line.empty()) return true;
  text::Sanitizer sanitizer;
  text::SanitizedText out;
  sanitizer.feed(line, out);
  sanitizer.finish(out);
  return out.text == line && out.markers.empty() && !out.line_controls;
}

}  // namespace

std::size_t typed_line_count(std::string_view text) {
  if (text.find('\n') == std::string_view::npos || text.find('\r') != std::string_view::npos ||
      text.back() == '\n')
    return 0;
  const auto lines = split_lines(text);
  for (std::string_view line : lines)
    if (!printable(line)) return 0;
  return lines.size();
}

std::string typed_line(std::size_t lines, std::size_t bytes) {
  return "[typed " + std::to_string(lines) + " lines, " + std::to_string(bytes) + " bytes]";
}

bool echoed_as_typed(std::string_view screen, std::string_view before, std::string_view typed) {
  if (screen.substr(0, before.size()) != before) return false;
  screen.remove_prefix(before.size());
  const auto lines = split_lines(typed);
  std::string_view prompt;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto end = screen.find('\n');
    if (end == std::string_view::npos) return false;
    const std::string_view shown = screen.substr(0, end);
    screen.remove_prefix(end + 1);
    if (shown.size() < lines[i].size() || shown.substr(shown.size() - lines[i].size()) != lines[i]) return false;
    const std::string_view before_line = shown.substr(0, shown.size() - lines[i].size());
    if (i == 0) {
      if (!before_line.empty()) return false;
    } else if (i == 1) {
      prompt = before_line;
    } else if (before_line != prompt) {
      return false;
    }
  }
  return true;
}

}  // namespace dshpty::shell
