#include "output_cap.hpp"

namespace dshpty::repl {

namespace {
bool is_continuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

// How many bytes the sequence led by `lead` claims; 1 for ASCII and for invalid leads.
std::size_t sequence_length(unsigned char lead) {
  if (lead >= 0xF0 && lead <= 0xF4) return 4;
  if (lead >= 0xE0) return lead <= 0xEF ? 3 : 1;
  if (lead >= 0xC2) return 2;
  return 1;
}
}  // namespace

std::string_view utf8_prefix(std::string_view text, std::size_t max_bytes) noexcept {
  if (text.size() <= max_bytes) return text;
  std::size_t end = max_bytes;
  // Walk back to the start of the sequence that straddles the cut (at most 3 steps), then
  // keep that sequence only if it ends at or before the cut.
  std::size_t start = end;
  for (int steps = 0; steps < 3 && start > 0 && is_continuation(static_cast<unsigned char>(text[start])); ++steps)
    --start;
  if (start < end) {
    const auto lead = static_cast<unsigned char>(text[start]);
    if (!is_continuation(lead) && sequence_length(lead) > end - start) end = start;
  }
  return text.substr(0, end);
}

CappedText cap_field(std::string_view text, std::size_t cap) {
  const std::string_view kept = utf8_prefix(text, cap);
  return {std::string(kept), kept.size() < text.size()};
}

CappedText cap_display(std::string_view text, std::size_t cap) {
  if (text.size() <= cap) return {std::string(text), false};
  // Room for "\n[output truncated]\n" after the head.
  const std::size_t reserve = kTruncatedMarker.size() + 2;
  const std::size_t room = cap > reserve ? cap - reserve : 0;
  std::string out(utf8_prefix(text, room));
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += kTruncatedMarker;
  return {std::move(out), true};
}

}  // namespace dshpty::repl
