#include "output_cap.hpp"

#include "text/utf8.hpp"

namespace dshpty::render {

CappedText cap_field(std::string_view text, std::size_t cap) {
  const std::string_view kept = utf8::prefix(text, cap);
  return {std::string(kept), kept.size() < text.size()};
}

CappedText cap_display(std::string_view text, std::size_t cap) {
  if (text.size() <= cap) return {std::string(text), false};
  // Room for "\n[output truncated]\n" after the head.
  const std::size_t reserve = kTruncatedMarker.size() + 2;
  const std::size_t room = cap > reserve ? cap - reserve : 0;
  std::string out(utf8::prefix(text, room));
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += kTruncatedMarker;
  return {std::move(out), true};
}

}  // namespace dshpty::render
