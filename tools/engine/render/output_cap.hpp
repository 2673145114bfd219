// The result cap: output longer than the tool's cap is cut at a UTF-8 boundary, so a runaway
// command can never flood a terminal or a JSON reader, and a multibyte character is never
// split. Every face of the tools cuts through here.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace dshpty::render {

inline constexpr std::size_t kDefaultMaxResultBytes = 256u << 10;
inline constexpr std::size_t kMinMaxResultBytes = 64;
inline constexpr std::string_view kTruncatedMarker = "[output truncated]";

struct CappedText {
  std::string text;
  bool truncated = false;
};

// For a structured field (JSON): `text` cut to at most `cap` bytes, with no marker (the
// caller reports `truncated` beside it).
CappedText cap_field(std::string_view text, std::size_t cap);

// For text a person or a model reads: `text` itself when it fits in `cap` bytes; otherwise a UTF-8-safe head
// followed by a line "[output truncated]", the whole at most `cap` bytes including a final
// newline. Precondition: cap >= kMinMaxResultBytes.
CappedText cap_display(std::string_view text, std::size_t cap);

}  // namespace dshpty::render
