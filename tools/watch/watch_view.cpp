#include "watch_view.hpp"

#include <wchar.h>

#include <algorithm>
#include <cstdint>

namespace dshpty::watch {

using Json = nlohmann::json;

namespace {

// One UTF-8 sequence's code point and length (an invalid byte: itself, length 1).
std::pair<char32_t, std::size_t> decode(const std::string& s, std::size_t i) {
  const auto b = static_cast<unsigned char>(s[i]);
  std::size_t len = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 1;
  if (i + len > s.size()) len = 1;
  if (len == 1) return {b, 1};
  char32_t cp = b & (0x7f >> len);
  for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
  return {cp, len};
}

unsigned width_of(char32_t cp) {
  const int w = ::wcwidth(static_cast<wchar_t>(cp));
  return w < 0 ? 1 : static_cast<unsigned>(w);
}

unsigned get_uint(const Json& frame, const char* key) {
  auto it = frame.find(key);
  return it != frame.end() && it->is_number_unsigned() ? it->get<unsigned>() : 0;
}

std::string get_string(const Json& frame, const char* key) {
  auto it = frame.find(key);
  return it != frame.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Control characters never reach the person's terminal: a name or a command could hold ESC.
std::string printable(std::string text) {
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return text;
}

}  // namespace

std::string clip_columns(const std::string& text, unsigned cols) {
  std::string out;
  unsigned used = 0;
  for (std::size_t i = 0; i < text.size();) {
    auto [cp, len] = decode(text, i);
    const unsigned w = width_of(cp);
    if (used + w > cols) break;
    out.append(text, i, len);
    used += w;
    i += len;
  }
  return out;
}

std::string status_text(const Json& frame, TermSize term) {
  const unsigned rows = get_uint(frame, "rows"), cols = get_uint(frame, "cols");
  std::string name = get_string(frame, "name");
  std::string text = " watch " + printable(get_string(frame, "owner")) + " / " +
                     (name.empty() ? std::string() : printable(name) + " ") + "(" +
                     printable(get_string(frame, "sessionId")) + ")";
  const std::string status = get_string(frame, "status");
  const std::string activity = get_string(frame, "activity");
  if (status != "running") {
    text += " | " + printable(status);
  } else if (activity == "busy") {
    text += " | busy";
    if (auto ms = frame.find("busyMs"); ms != frame.end() && ms->is_number_integer())
      text += " " + std::to_string(ms->get<long long>() / 1000) + "s";
    if (auto command = get_string(frame, "command"); !command.empty()) text += ": " + printable(command);
  } else {
    text += " | " + (activity == "prompt" ? std::string("at the prompt") : activity);
  }
  text += " | " + std::to_string(rows) + "x" + std::to_string(cols);
  const unsigned shown_rows = term.rows > 1 ? term.rows - 1 : 0;
  if (rows > shown_rows || cols > term.cols) {
    text += " clipped to " + std::to_string(std::min(rows, shown_rows)) + "x" + std::to_string(std::min(cols, term.cols));
  }
  text += " | q quits ";
  return clip_columns(text, term.cols);
}

std::string render_frame(const Json& frame, TermSize term) {
  const unsigned shown_rows = term.rows > 1 ? term.rows - 1 : 0;
  const unsigned rows = get_uint(frame, "rows");
  const Json empty = Json::array();
  const Json& lines = frame.contains("lines") && frame["lines"].is_array() ? frame["lines"] : empty;
  unsigned cursor_row = 0, cursor_col = 0;
  bool cursor_visible = false;
  if (auto c = frame.find("cursor"); c != frame.end() && c->is_object()) {
    cursor_row = get_uint(*c, "row");
    cursor_col = get_uint(*c, "col");
    cursor_visible = c->value("visible", false);
  }
  // A taller session shows its top rows, or the rows that end at the cursor when it is below
  // them: a shell's prompt at row 30 stays in view.
  const unsigned top = cursor_row >= shown_rows && shown_rows > 0 ? cursor_row - shown_rows + 1 : 0;
  std::string out = "\x1b[?25l";
  for (unsigned r = 0; r < shown_rows; ++r) {
    out += "\x1b[" + std::to_string(r + 1) + ";1H";
    const unsigned line = top + r;
    if (line < rows && line < lines.size() && lines[line].is_string())
      out += printable(clip_columns(lines[line].get<std::string>(), term.cols));
    out += "\x1b[K";
  }
  if (term.rows >= 1) {
    const std::string status = status_text(frame, term);
    out += "\x1b[" + std::to_string(term.rows) + ";1H\x1b[7m" + status + "\x1b[K\x1b[0m";
  }
  if (cursor_visible && cursor_row >= top && cursor_row - top < shown_rows && cursor_col < term.cols) {
    out += "\x1b[" + std::to_string(cursor_row - top + 1) + ";" + std::to_string(cursor_col + 1) + "H\x1b[?25h";
  }
  return out;
}

}  // namespace dshpty::watch
