#include "escape.hpp"

#include <cstdint>

namespace dshpty::render {

namespace {

// One UTF-8 sequence at the start of `s`: its code point and length; length 0 when the
// bytes there are not UTF-8 (a stray byte, an overlong or truncated sequence, a surrogate).
struct Decoded {
  std::uint32_t code = 0;
  std::size_t length = 0;
};

Decoded decode(std::string_view s) noexcept {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return {lead, 1};
  std::size_t length = 0;
  std::uint32_t code = 0, minimum = 0;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2, code = lead & 0x1f, minimum = 0x80;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3, code = lead & 0x0f, minimum = 0x800;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4, code = lead & 0x07, minimum = 0x10000;
  } else {
    return {};
  }
  if (s.size() < length) return {};
  for (std::size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return {};
    code = (code << 6) | (byte(i) & 0x3f);
  }
  if (code < minimum || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return {};
  return {code, length};
}

bool is_c0_control(std::uint32_t c) noexcept { return c < 0x20 || c == 0x7f; }

// Characters that end a line for some reader, or reorder what it shows.
bool is_wide_control(std::uint32_t c) noexcept {
  return (c >= 0x80 && c <= 0x9f) || c == 0x2028 || c == 0x2029 || c == 0x061c || c == 0x200e || c == 0x200f ||
         (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

constexpr char kHex[] = "0123456789abcdef";

void append_byte_escape(std::string& out, unsigned char c) {
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 0xf];
}

}  // namespace

bool has_control(std::string_view value) noexcept {
  while (!value.empty()) {
    const Decoded d = decode(value);
    if (d.length == 0 || is_c0_control(d.code) || is_wide_control(d.code)) return true;
    value.remove_prefix(d.length);
  }
  return false;
}

std::string escape(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  while (!value.empty()) {
    const Decoded d = decode(value);
    if (d.length == 0) {  // not UTF-8: the byte itself, which no reader decodes as a line end
      append_byte_escape(out, static_cast<unsigned char>(value.front()));
      value.remove_prefix(1);
      continue;
    }
    const std::uint32_t c = d.code;
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == 0x1b) {
      out += "\\e";
    } else if (is_c0_control(c)) {
      append_byte_escape(out, static_cast<unsigned char>(c));
    } else if (is_wide_control(c)) {
      out += "\\u";
      for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(c >> shift) & 0xf];
    } else {
      out.append(value.substr(0, d.length));
    }
    value.remove_prefix(d.length);
  }
  return out;
}

}  // namespace dshpty::render
