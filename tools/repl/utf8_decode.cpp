#include "utf8_decode.hpp"

namespace dshpty::repl {

DecodedChar decode_utf8_char(std::string_view bytes) noexcept {
  DecodedChar out;
  if (bytes.empty()) return out;
  const auto lead = static_cast<unsigned char>(bytes[0]);
  auto invalid = [&] {
    out.state = DecodedChar::State::complete;
    out.code_point = 0xFFFD;
    out.length = 1;
    return out;
  };
  if (lead < 0x80) {
    out.state = DecodedChar::State::complete;
    out.code_point = lead;
    out.length = 1;
    return out;
  }
  std::size_t length;
  char32_t cp;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
    cp = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    cp = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    cp = lead & 0x07;
  } else {
    return invalid();
  }
  for (std::size_t i = 1; i < length; ++i) {
    if (i >= bytes.size()) return out;  // incomplete: wait for the rest
    const auto byte = static_cast<unsigned char>(bytes[i]);
    if ((byte & 0xC0) != 0x80) return invalid();
    cp = (cp << 6) | (byte & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not characters.
  if ((length == 3 && cp < 0x800) || (length == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return invalid();
  out.state = DecodedChar::State::complete;
  out.code_point = cp;
  out.length = length;
  return out;
}

}  // namespace dshpty::repl
