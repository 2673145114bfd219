// The project's one UTF-8 module: what a lead byte promises, where a cut may fall, and how
// to decode one character. The sanitizer validates output with the lead table, the text
// sinks and the tools cut at boundaries with it, the REPL decodes typed input with it.
// Well-formed means Unicode's table 3-7: no overlongs, no surrogates, nothing past U+10FFFF.
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

namespace dshpty::utf8 {

// A continuation byte (10xxxxxx) never starts a character: a cut must not land on one.
constexpr bool is_continuation(unsigned char byte) noexcept { return (byte & 0xC0) == 0x80; }

// A lead byte: the character's length and the range its second byte must fall in (the
// range is what rules out overlongs, surrogates and code points past U+10FFFF). Length 0
// for bytes that start no multibyte character (ASCII, continuations, C0, C1, F5..FF).
struct Lead {
  unsigned char length, lo, hi;
};
inline constexpr std::array<Lead, 256> kLeads = [] {
  std::array<Lead, 256> t{};
  for (int b = 0xC2; b <= 0xDF; ++b) t[b] = {2, 0x80, 0xBF};
  t[0xE0] = {3, 0xA0, 0xBF};
  for (int b = 0xE1; b <= 0xEC; ++b) t[b] = {3, 0x80, 0xBF};
  t[0xED] = {3, 0x80, 0x9F};
  t[0xEE] = t[0xEF] = {3, 0x80, 0xBF};
  t[0xF0] = {4, 0x90, 0xBF};
  t[0xF1] = t[0xF2] = t[0xF3] = {4, 0x80, 0xBF};
  t[0xF4] = {4, 0x80, 0x8F};
  return t;
}();
constexpr Lead lead(unsigned char byte) noexcept { return kLeads[byte]; }

// U+FFFD, which stands in for every ill-formed sequence.
inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// The first character boundary at or after `pos` in `text` (text.size() at most). Looks
// at no more than three bytes, the longest run of continuation bytes in valid UTF-8.
inline std::size_t boundary_at_or_after(std::string_view text, std::size_t pos) noexcept {
  for (int i = 0; i < 3 && pos < text.size() &&
                  is_continuation(static_cast<unsigned char>(text[pos]));
       ++i)
    ++pos;
  return pos;
}

// The longest prefix of `text` of at most `max_bytes` that does not end inside a UTF-8
// sequence. Invalid bytes count as single characters (they are kept or cut like any byte).
std::string_view prefix(std::string_view text, std::size_t max_bytes) noexcept;

struct DecodedChar {
  enum class State { complete, incomplete };
  State state = State::incomplete;
  char32_t code_point = 0;  // U+FFFD for an ill-formed sequence (one byte consumed)
  std::size_t length = 0;   // bytes consumed when complete
};

// The first character of `bytes`. incomplete when `bytes` ends inside a well-formed
// sequence (more input is needed) or is empty.
DecodedChar decode(std::string_view bytes) noexcept;

}  // namespace dshpty::utf8
