// Decoding one UTF-8 character from typed input: libedit's readline interface takes one
// character per call to our getc, so multibyte input must be decoded before it gets there.
#pragma once

#include <cstddef>
#include <string_view>

namespace dshpty::repl {

struct DecodedChar {
  enum class State { complete, incomplete };
  State state = State::incomplete;
  char32_t code_point = 0;  // U+FFFD for an invalid sequence (one byte consumed)
  std::size_t length = 0;   // bytes consumed when complete
};

// The first character of `bytes`. incomplete when `bytes` ends inside a valid sequence
// (more input is needed) or is empty.
DecodedChar decode_utf8_char(std::string_view bytes) noexcept;

}  // namespace dshpty::repl
