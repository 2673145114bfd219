// UTF-8 facts the terminal layer needs to cut text without splitting a character.
#pragma once

#include <cstddef>
#include <string_view>

namespace dshpty::terminal::utf8 {

// A continuation byte (10xxxxxx) never starts a character: a cut must not land on one.
constexpr bool is_continuation(unsigned char byte) noexcept { return (byte & 0xC0) == 0x80; }

// The first character boundary at or after `pos` in `text` (text.size() at most). Looks
// at no more than three bytes, the longest run of continuation bytes in valid UTF-8.
inline std::size_t boundary_at_or_after(std::string_view text, std::size_t pos) noexcept {
  for (int i = 0; i < 3 && pos < text.size() &&
                  is_continuation(static_cast<unsigned char>(text[pos]));
       ++i)
    ++pos;
  return pos;
}

}  // namespace dshpty::terminal::utf8
