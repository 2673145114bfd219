// The four hex digits of a JSON \uXXXX escape, shared by the tools' two text scanners
// (json_scan.hpp, json_text_repair.hpp).
#pragma once

#include <cstddef>
#include <string_view>

namespace dshpty::tool {

// The code unit of the four hex digits at text[at]; -1 when they are not four hex digits.
inline long hex_unit(std::string_view text, std::size_t at) {
  if (at + 4 > text.size()) return -1;
  long unit = 0;
  for (std::size_t i = at; i < at + 4; ++i) {
    const char c = text[i];
    int digit = -1;
    if (c >= '0' && c <= '9') digit = c - '0';
    if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') digit = c - 'A' + 10;
    if (digit < 0) return -1;
    unit = unit * 16 + digit;
  }
  return unit;
}

}  // namespace dshpty::tool
