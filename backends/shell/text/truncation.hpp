// Truncation: the one cut every result that is too long goes through (a send's viewport,
// the motd, a read page, a screen's rows). Head and tail are kept, the end favoured (build
// errors and test summaries are at the end; the command and first errors at the start), and
// a line of its own between them says what was left out:
//   [output truncated: N lines, M bytes left out]
// so head + omitted + tail = the whole. Cuts fall after a newline where the kept part has
// one, else on a UTF-8 boundary; N counts the newlines left out. Pure: no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dshpty::text {

// What a buffer dropped between the head and the tail it kept.
struct Omitted {
  std::uint64_t bytes = 0;
  std::uint64_t lines = 0;  // newlines among those bytes
};

struct Cut {
  std::string text;  // head, the marker line, tail; or the whole when it fits
  bool truncated = false;
  Omitted omitted{};  // everything left out: the buffer's gap and this cut's
};

// "[output truncated: N lines, M bytes left out]", without a newline.
std::string truncation_marker(Omitted omitted);

// The text `head` + (what was dropped: `gap`) + `tail` in at most `cap` bytes: itself when
// nothing was dropped and it fits, else the head's start, the marker line and the tail's
// end (about a third of the room for the head, the rest for the tail). When `cap` is less
// than the marker line needs, the result is the marker line alone.
Cut cut_to_fit(std::string_view head, Omitted gap, std::string_view tail, std::size_t cap);
// The same for one string.
inline Cut cut_to_fit(std::string_view text, std::size_t cap) { return cut_to_fit(text, {}, {}, cap); }

// For streamed deltas (a live send's output, MCP progress): the newest at most `cap` bytes
// of `text` from a UTF-8 boundary; `dropped` says whether anything older was left out.
std::string_view newest(std::string_view text, std::size_t cap, bool& dropped) noexcept;

}  // namespace dshpty::text
