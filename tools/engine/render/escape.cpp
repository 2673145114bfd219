#include "escape.hpp"

namespace dshpty::render {

namespace {
bool is_control(unsigned char c) noexcept { return c < 0x20 || c == 0x7f; }
}  // namespace

bool has_control(std::string_view value) noexcept {
  for (char c : value)
    if (is_control(static_cast<unsigned char>(c))) return true;
  return false;
}

std::string escape(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\\') {
      out += "\\\\";
    } else if (!is_control(c)) {
      out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == 0x1b) {
      out += "\\e";
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  return out;
}

}  // namespace dshpty::render
