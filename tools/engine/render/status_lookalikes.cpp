#include "status_lookalikes.hpp"

#include <array>
#include <cstdint>

namespace dshpty::render {

namespace {

// The words our bracketed lines start with (text_format.cpp, linger_format.cpp, the
// truncation marker, the MCP progress note). A test renders every status line and checks
// it is recognised, so a new line of ours that is missing here fails it.
constexpr std::array<std::string_view, 15> kWords{
    "wait", "exit", "cwd", "session", "screen", "output truncated", "page truncated", "lines",
    "send ended", "earlier output dropped", "job", "limit", "confined", "queued behind",
    "typed",
};

struct Char {
  std::uint32_t code = 0;
  std::size_t length = 0;  // 0: not UTF-8 (taken as one byte)
};

Char next_char(std::string_view s) noexcept {
  const auto b = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = b(0);
  std::size_t length = lead < 0x80 ? 1 : lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3
                                                    : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
  if (length == 0 || s.size() < length) return {lead, 0};
  std::uint32_t code = length == 1 ? lead : lead & (0x7f >> length);
  for (std::size_t i = 1; i < length; ++i) {
    if ((b(i) & 0xc0) != 0x80) return {lead, 0};
    code = (code << 6) | (b(i) & 0x3f);
  }
  return {code, length};
}

// The length of the line end some reader splits on (LF, CR, VT, FF, NEL, U+2028, U+2029),
// or of a backspace (a terminal draws over what came before it), at byte `i`; 0 for none.
// Byte by byte: this runs over every byte of every result (0xC2 and 0xE2 are lead bytes,
// never inside a character).
std::size_t line_end_at(std::string_view s, std::size_t i) noexcept {
  const auto b = [&](std::size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0u; };
  const unsigned char c = b(i);
  if (c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == '\b') return 1;
  if (c == 0xc2 && b(i + 1) == 0x85) return 2;
  if (c == 0xe2 && b(i + 1) == 0x80 && (b(i + 2) == 0xa8 || b(i + 2) == 0xa9)) return 3;
  return 0;
}

// Blank or invisible: what a reader may not see in front of "[".
bool is_blank(std::uint32_t c) noexcept {
  return c == ' ' || c == '\t' || c < 0x20 || (c >= 0x7f && c <= 0xa0) || c == 0xad || c == 0x34f || c == 0x61c ||
         c == 0x115f || c == 0x1160 || c == 0x17b4 || c == 0x17b5 || (c >= 0x180b && c <= 0x180f) || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200f) || (c >= 0x2028 && c <= 0x202f) || (c >= 0x205f && c <= 0x206f) ||
         c == 0x3000 || c == 0x3164 || (c >= 0xfe00 && c <= 0xfe0f) || c == 0xfeff || c == 0xffa0 ||
         (c >= 0xfff9 && c <= 0xfffb) || (c >= 0xe0000 && c <= 0xe0fff);
}

std::string_view skip_blanks(std::string_view s) noexcept {
  while (!s.empty()) {
    const Char c = next_char(s);
    if (c.length == 0 || !is_blank(c.code)) break;
    s.remove_prefix(c.length);
  }
  return s;
}

char lower(char c) noexcept { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool starts_with_word(std::string_view s, std::string_view word) noexcept {
  if (s.size() < word.size()) return false;
  for (std::size_t i = 0; i < word.size(); ++i)
    if (lower(s[i]) != word[i]) return false;
  // The word ends there ("[exit:", "[screen 24x80", "[lines]"), not inside a longer one.
  if (s.size() == word.size()) return true;
  const char after = lower(s[word.size()]);
  return !(after >= 'a' && after <= 'z') && after != '_';
}

}  // namespace

bool looks_like_status(std::string_view line) noexcept {
  std::string_view s = skip_blanks(line);
  if (s.substr(0, 1) == "[") {
    s.remove_prefix(1);
  } else if (s.substr(0, 3) == "\xef\xbc\xbb") {  // U+FF3B FULLWIDTH LEFT SQUARE BRACKET
    s.remove_prefix(3);
  } else {
    return false;
  }
  s = skip_blanks(s);
  for (std::string_view word : kWords)
    if (starts_with_word(s, word)) return true;
  return false;
}

std::string mark_status_lookalikes(std::string_view text, std::initializer_list<std::string_view> spared) {
  // Most output holds no bracket at all: nothing to look at line by line.
  if (text.find('[') == std::string_view::npos && text.find("\xef\xbc\xbb") == std::string_view::npos)
    return std::string(text);
  // The bytes a line end starts with: the scan below stops only there.
  static constexpr auto kMayEnd = [] {
    std::array<bool, 256> table{};
    for (unsigned char c : {'\n', '\r', '\v', '\f', '\b', '\xc2', '\xe2'}) table[c] = true;
    return table;
  }();
  std::string out;
  out.reserve(text.size() + 16);
  // Each spared line, until its first appearance.
  std::array<std::string_view, 2> left{};
  std::size_t lefts = 0;
  for (std::string_view line : spared)
    if (!line.empty() && lefts < left.size()) left[lefts++] = line;
  std::size_t copied = 0;  // text before this is in `out`
  std::size_t start = 0;   // the current line's first byte
  while (true) {
    // The line runs to the next line end any reader splits on.
    std::size_t end = start, end_length = 0;
    while (end < text.size() &&
           (!kMayEnd[static_cast<unsigned char>(text[end])] || (end_length = line_end_at(text, end)) == 0))
      ++end;
    const std::string_view line = text.substr(start, end - start);
    std::size_t spare = 0;
    while (spare < lefts && left[spare] != line) ++spare;
    if (spare < lefts) {
      left[spare] = left[--lefts];
    } else if (!line.empty() && looks_like_status(line)) {
      out.append(text.substr(copied, start - copied));
      out += '\\';
      copied = start;
    }
    if (end >= text.size()) break;
    start = end + end_length;
  }
  out.append(text.substr(copied));
  return out;
}

}  // namespace dshpty::render
