#include "text/truncation.hpp"

#include <algorithm>

#include "text/utf8.hpp"

namespace dshpty::text {

namespace {

std::uint64_t newlines(std::string_view text) noexcept {
  return static_cast<std::uint64_t>(std::count(text.begin(), text.end(), '\n'));
}

// The head's length: at most `room` bytes, after its last newline when that keeps at least
// half of them. A long line (a one-line JSON answer, a minified file) is cut on a UTF-8
// boundary instead: cut back to the echo's newline it would give away the whole room.
std::size_t head_length(std::string_view head, std::size_t room) noexcept {
  const std::string_view kept = utf8::prefix(head, room);
  if (kept.size() == head.size()) return kept.size();
  const std::size_t newline = kept.rfind('\n');
  if (newline == std::string_view::npos || (newline + 1) * 2 < kept.size()) return kept.size();
  return newline + 1;
}

// Where the tail's kept part starts: its last at most `room` bytes, from a line's start
// when a newline falls inside the first half of them (else on a UTF-8 boundary: the end of
// a long line is kept rather than only the prompt after it).
std::size_t tail_start(std::string_view tail, std::size_t room) noexcept {
  if (room >= tail.size()) return 0;
  const std::size_t from = tail.size() - room;
  if (from > 0 && tail[from - 1] == '\n') return from;
  const std::size_t newline = tail.find('\n', from);
  if (newline != std::string_view::npos && newline + 1 < tail.size() && (newline + 1 - from) * 2 <= room) {
    return newline + 1;
  }
  return utf8::boundary_at_or_after(tail, from);
}

}  // namespace

std::string truncation_marker(Omitted omitted) {
  return "[output truncated: " + std::to_string(omitted.lines) + (omitted.lines == 1 ? " line, " : " lines, ") +
         std::to_string(omitted.bytes) + (omitted.bytes == 1 ? " byte" : " bytes") + " left out]";
}

Cut cut_to_fit(std::string_view head, Omitted gap, std::string_view tail, std::size_t cap) {
  const std::uint64_t total = head.size() + gap.bytes + tail.size();
  if (gap.bytes == 0 && total <= cap) return {std::string(head) + std::string(tail), false, {}};
  // Room for the marker at its longest (every byte left out) and the newlines around it.
  const Omitted most{total, gap.lines + newlines(head) + newlines(tail)};
  const std::size_t reserve = truncation_marker(most).size() + 2;
  const std::size_t room = cap > reserve ? cap - reserve : 0;
  std::size_t head_room = room / 3;
  std::size_t tail_room = room - head_room;
  std::string joined;
  if (gap.bytes == 0) {
    // One contiguous text: its head is cut first, and the tail comes from what follows.
    joined = std::string(head) + std::string(tail);
    head = joined;
    tail = {};
  } else if (tail.size() < tail_room) {
    head_room += tail_room - tail.size();  // a short tail lends the rest to the head
  }
  const std::size_t keep_head = head_length(head, head_room);
  // What the head did not use (short, or cut back to a newline) goes to the tail.
  tail_room += head_room - keep_head;
  if (gap.bytes == 0) {
    tail = std::string_view(joined).substr(keep_head);
    head = std::string_view(joined).substr(0, keep_head);
  }
  const std::size_t from = tail_start(tail, tail_room);
  const Omitted omitted{head.size() - keep_head + gap.bytes + from,
                        newlines(head.substr(keep_head)) + gap.lines + newlines(tail.substr(0, from))};
  Cut cut{std::string(head.substr(0, keep_head)), true, omitted};
  if (!cut.text.empty() && cut.text.back() != '\n') cut.text += '\n';
  cut.text += truncation_marker(omitted) + "\n";
  cut.text += tail.substr(from);
  return cut;
}

std::string_view newest(std::string_view text, std::size_t cap, bool& dropped) noexcept {
  if (text.size() <= cap) return text;
  dropped = true;
  return text.substr(utf8::boundary_at_or_after(text, text.size() - cap));
}

}  // namespace dshpty::text
