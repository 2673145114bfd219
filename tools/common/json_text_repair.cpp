#include "json_text_repair.hpp"

#include "json_hex.hpp"
#include "text/utf8.hpp"

namespace dshpty::tool {

namespace {

// The code unit of a \uXXXX escape at line[at] (the backslash); -1 when it is not one.
long escape_unit(std::string_view line, std::size_t at) {
  if (at + 2 > line.size() || line[at] != '\\' || line[at + 1] != 'u') return -1;
  return hex_unit(line, at + 2);
}

bool high_surrogate(long unit) { return unit >= 0xD800 && unit <= 0xDBFF; }
bool low_surrogate(long unit) { return unit >= 0xDC00 && unit <= 0xDFFF; }

}  // namespace

RepairedJsonText repair_json_text(std::string_view line) {
  RepairedJsonText out;
  out.text.reserve(line.size());
  bool in_string = false;
  for (std::size_t i = 0; i < line.size();) {
    const auto c = static_cast<unsigned char>(line[i]);
    if (c >= 0x80) {
      const utf8::DecodedChar decoded = utf8::decode(line.substr(i));
      const bool well_formed = decoded.state == utf8::DecodedChar::State::complete &&
                               !(decoded.code_point == 0xFFFD && decoded.length == 1);
      if (well_formed) {
        out.text.append(line.substr(i, decoded.length));
        i += decoded.length;
      } else {
        out.text.append(utf8::kReplacement);
        out.changed = true;
        i += decoded.state == utf8::DecodedChar::State::complete ? decoded.length : line.size() - i;
      }
      continue;
    }
    if (!in_string) {
      in_string = c == '"';
      out.text.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    if (c == '"') {
      in_string = false;
    } else if (c == '\\') {
      const long unit = escape_unit(line, i);
      if (unit < 0) {
        // Any other escape: the backslash and the character it escapes, as they are.
        out.text.push_back('\\');
        if (i + 1 < line.size() && static_cast<unsigned char>(line[i + 1]) < 0x80) out.text.push_back(line[++i]);
        ++i;
        continue;
      }
      if (high_surrogate(unit) && low_surrogate(escape_unit(line, i + 6))) {
        out.text.append(line.substr(i, 12));  // a pair: one character
        i += 12;
      } else if (high_surrogate(unit) || low_surrogate(unit)) {
        out.text.append("\\ufffd");
        out.changed = true;
        i += 6;
      } else {
        out.text.append(line.substr(i, 6));
        i += 6;
      }
      continue;
    }
    out.text.push_back(static_cast<char>(c));
    ++i;
  }
  return out;
}

}  // namespace dshpty::tool
