#include "text/utf8.hpp"

namespace dshpty::utf8 {

std::string_view prefix(std::string_view text, std::size_t max_bytes) noexcept {
  if (text.size() <= max_bytes) return text;
  std::size_t end = max_bytes;
  // Walk back to the start of the sequence that straddles the cut (at most 3 steps), then
  // keep that sequence only if it ends at or before the cut.
  std::size_t start = end;
  for (int steps = 0;
       steps < 3 && start > 0 && is_continuation(static_cast<unsigned char>(text[start]));
       ++steps)
    --start;
  if (start < end) {
    const Lead l = lead(static_cast<unsigned char>(text[start]));
    if (l.length > end - start) end = start;
  }
  return text.substr(0, end);
}

DecodedChar decode(std::string_view bytes) noexcept {
  DecodedChar out;
  if (bytes.empty()) return out;
  const auto first = static_cast<unsigned char>(bytes[0]);
  out.state = DecodedChar::State::complete;
  out.length = 1;
  if (first < 0x80) {
    out.code_point = first;
    return out;
  }
  const Lead l = lead(first);
  out.code_point = 0xFFFD;
  if (l.length == 0) return out;
  char32_t cp = first & (0x7F >> l.length);
  for (std::size_t i = 1; i < l.length; ++i) {
    if (i >= bytes.size()) return DecodedChar{};  // incomplete: wait for the rest
    const auto byte = static_cast<unsigned char>(bytes[i]);
    const unsigned char lo = i == 1 ? l.lo : 0x80, hi = i == 1 ? l.hi : 0xBF;
    if (byte < lo || byte > hi) return out;  // ill-formed: one byte consumed
    cp = (cp << 6) | (byte & 0x3F);
  }
  out.code_point = cp;
  out.length = l.length;
  return out;
}

}  // namespace dshpty::utf8
