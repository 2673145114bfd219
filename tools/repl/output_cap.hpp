// The result cap: output longer than --max-result-bytes is cut at a UTF-8 boundary, so a
// runaway command can never flood the terminal or a JSON reader, and a multibyte character
// is never split.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dshpty::repl {

inline constexpr std::size_t kDefaultMaxResultBytes = 256u << 10;
inline constexpr std::size_t kMinMaxResultBytes = 64;
inline constexpr std::string_view kTruncatedMarker = "[output truncated]";

struct CappedText {
  std::string text;
  bool truncated = false;
};

// For JSON: `text` cut to at most `cap` bytes, with no marker (the caller reports
// `truncated`).
CappedText cap_field(std::string_view text, std::size_t cap);

// For the terminal: `text` itself when it fits in `cap` bytes; otherwise a UTF-8-safe head
// followed by a line "[output truncated]", the whole at most `cap` bytes including a final
// newline. Precondition: cap >= kMinMaxResultBytes.
CappedText cap_display(std::string_view text, std::size_t cap);

}  // namespace dshpty::repl
