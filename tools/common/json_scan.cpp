#include "json_scan.hpp"

#include <cmath>
#include <cstdlib>
#include <set>

#include "json_hex.hpp"

#include "json_text_repair.hpp"

namespace dshpty::tool {

namespace {

constexpr std::size_t npos = std::string_view::npos;

bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::size_t skip_space(std::string_view text, std::size_t at) {
  while (at < text.size() && space(text[at])) ++at;
  return at;
}

// One past the closing quote of the string token at text[at] ('"'); npos when unclosed.
std::size_t string_end(std::string_view text, std::size_t at) {
  for (std::size_t i = at + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '"') {
      return i + 1;
    }
  }
  return npos;
}

// One past the value that starts at text[at]; npos when it is cut off or empty.
std::size_t value_end(std::string_view text, std::size_t at) {
  if (at >= text.size()) return npos;
  if (text[at] == '"') return string_end(text, at);
  if (text[at] == '{' || text[at] == '[') {
    std::size_t depth = 0;
    for (std::size_t i = at; i < text.size(); ++i) {
      const char c = text[i];
      if (c == '"') {
        i = string_end(text, i);
        if (i == npos) return npos;
        --i;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
    }
    return npos;
  }
  std::size_t i = at;
  while (i < text.size() && !space(text[i]) && text[i] != ',' && text[i] != ']' && text[i] != '}') ++i;
  return i == at ? npos : i;
}

void append_utf8(std::string& out, unsigned long cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {  // a lone surrogate too: never equal to a real character
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// An open object or array while find_duplicate_key walks the text.
struct Frame {
  bool object = false;
  bool expect_key = false;             // an object's next string is a key
  std::string_view name;               // the key token of the member it is the value of, or ""
  std::string_view last_key;           // an object's latest key token
  std::set<std::string, std::less<>> keys;  // an object's keys so far, decoded
};

}  // namespace

std::string decode_string(std::string_view token) {
  std::string out;
  if (token.empty() || token.front() != '"') return out;
  const std::size_t end = token.size() >= 2 && token.back() == '"' ? token.size() - 1 : token.size();
  for (std::size_t i = 1; i < end;) {
    if (token[i] != '\\') {
      out.push_back(token[i++]);
      continue;
    }
    if (i + 1 >= end) break;
    const char e = token[i + 1];
    i += 2;
    switch (e) {
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'u': {
        const long unit = hex_unit(token.substr(0, end), i);
        if (unit < 0) break;
        i += 4;
        unsigned long cp = static_cast<unsigned long>(unit);
        const bool high = unit >= 0xD800 && unit <= 0xDBFF;
        if (high && i + 1 < end && token[i] == '\\' && token[i + 1] == 'u') {
          const long low = hex_unit(token.substr(0, end), i + 2);
          if (low >= 0xDC00 && low <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + static_cast<unsigned long>(low - 0xDC00);
            i += 6;
          }
        }
        append_utf8(out, cp);
        break;
      }
      default: out.push_back(e);  // '"', '\\', '/'
    }
  }
  return out;
}

std::string DuplicateKey::message() const {
  std::string out = "duplicate key \"" + key + "\"";
  if (path.empty()) return out;
  std::string where;
  for (const std::string& name : path) where += (where.empty() ? "" : ".") + name;
  return out + " in \"" + where + "\"";
}

std::optional<DuplicateKey> find_duplicate_key(std::string_view text) {
  std::vector<Frame> stack;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '"') {
      const std::size_t end = string_end(text, i);
      if (end == npos) return std::nullopt;
      if (!stack.empty() && stack.back().object && stack.back().expect_key) {
        Frame& top = stack.back();
        std::string key = decode_string(text.substr(i, end - i));
        if (top.keys.count(key)) {
          DuplicateKey dup{std::move(key), {}};
          for (const Frame& frame : stack)
            if (!frame.name.empty()) dup.path.push_back(decode_string(frame.name));
          return dup;
        }
        top.last_key = text.substr(i, end - i);
        top.keys.insert(std::move(key));
        top.expect_key = false;
      }
      i = end;
      continue;
    }
    if (c == '{' || c == '[') {
      Frame frame;
      frame.object = c == '{';
      frame.expect_key = frame.object;
      if (!stack.empty() && stack.back().object) frame.name = stack.back().last_key;
      stack.push_back(std::move(frame));
    } else if ((c == '}' || c == ']') && !stack.empty()) {
      stack.pop_back();
    } else if (c == ',' && !stack.empty() && stack.back().object) {
      stack.back().expect_key = true;
    }
    ++i;
  }
  return std::nullopt;
}

std::optional<std::string> shape_refusal(std::string_view text) {
  // One count per open container (arrays too, never counted up); keys as the walk above.
  struct Open {
    bool object;
    bool expect_key;
    std::size_t keys;
  };
  std::vector<Open> stack;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      const std::size_t end = string_end(text, i);
      if (end == npos) break;
      if (!stack.empty() && stack.back().object && stack.back().expect_key) {
        stack.back().expect_key = false;
        if (++stack.back().keys > kMaxKeysPerObject)
          return "an object holds more than " + std::to_string(kMaxKeysPerObject) + " keys";
      }
      i = end - 1;
    } else if (c == '{' || c == '[') {
      if (stack.size() == kMaxDepth) return "nested deeper than " + std::to_string(kMaxDepth) + " levels";
      stack.push_back({c == '{', c == '{', 0});
    } else if ((c == '}' || c == ']') && !stack.empty()) {
      stack.pop_back();
    } else if (c == ',' && !stack.empty() && stack.back().object) {
      stack.back().expect_key = true;
    }
  }
  return std::nullopt;
}

std::optional<std::string_view> member_token(std::string_view object, std::string_view key) {
  std::size_t i = skip_space(object, 0);
  if (i >= object.size() || object[i] != '{') return std::nullopt;
  for (i = skip_space(object, i + 1); i < object.size() && object[i] == '"';) {
    const std::size_t key_end = string_end(object, i);
    if (key_end == npos) return std::nullopt;
    const bool wanted = decode_string(object.substr(i, key_end - i)) == key;
    i = skip_space(object, key_end);
    if (i >= object.size() || object[i] != ':') return std::nullopt;
    i = skip_space(object, i + 1);
    const std::size_t end = value_end(object, i);
    if (end == npos) return std::nullopt;
    if (wanted) return object.substr(i, end - i);
    i = skip_space(object, end);
    if (i >= object.size() || object[i] != ',') return std::nullopt;
    i = skip_space(object, i + 1);
  }
  return std::nullopt;
}

std::optional<std::vector<std::string_view>> array_items(std::string_view array) {
  std::size_t i = skip_space(array, 0);
  if (i >= array.size() || array[i] != '[') return std::nullopt;
  std::vector<std::string_view> items;
  i = skip_space(array, i + 1);
  if (i < array.size() && array[i] == ']') return items;
  while (i < array.size()) {
    const std::size_t end = value_end(array, i);
    if (end == npos) return std::nullopt;
    items.push_back(array.substr(i, end - i));
    i = skip_space(array, end);
    if (i < array.size() && array[i] == ']') return items;
    if (i >= array.size() || array[i] != ',') return std::nullopt;
    i = skip_space(array, i + 1);
  }
  return std::nullopt;
}

ReadableLine make_readable(std::string_view line) {
  ReadableLine out;
  RepairedJsonText repaired = repair_json_text(line);
  out.bad_bytes = repaired.changed;
  out.text = std::move(repaired.text);
  const std::string_view text = out.text;
  out.parse_text.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '"') {
      const std::size_t end = string_end(text, i);
      const std::size_t stop = end == npos ? text.size() : end;
      out.parse_text.append(text.substr(i, stop - i));
      i = stop;
      continue;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      const std::size_t end = value_end(text, i);
      const std::size_t stop = end == npos ? text.size() : end;
      const std::string number(text.substr(i, stop - i));
      if (!std::isfinite(std::strtod(number.c_str(), nullptr))) {
        out.huge.emplace_back(i, stop - i);
        out.parse_text.push_back('0');
      } else {
        out.parse_text.append(number);
      }
      i = stop;
      continue;
    }
    out.parse_text.push_back(c);
    ++i;
  }
  return out;
}

bool ReadableLine::huge_outside(std::string_view token) const noexcept {
  const std::size_t begin = token.empty() ? 0 : static_cast<std::size_t>(token.data() - text.data());
  for (const auto& [at, length] : huge)
    if (token.empty() || at < begin || at + length > begin + token.size()) return true;
  return false;
}

bool RequestId::is_integer() const noexcept {
  std::size_t i = !token_.empty() && token_[0] == '-' ? 1 : 0;
  if (i >= token_.size()) return false;
  for (; i < token_.size(); ++i)
    if (token_[i] < '0' || token_[i] > '9') return false;
  return true;
}

std::string RequestId::key() const {
  if (is_string()) return '"' + decode_string(token_) + '"';
  // An object or an array (the JSON face takes any id): its text without the spaces
  // between tokens, as a compact dump would write it.
  std::string out;
  for (std::size_t i = 0; i < token_.size();) {
    if (token_[i] == '"') {
      const std::size_t end = string_end(token_, i);
      const std::size_t stop = end == npos ? token_.size() : end;
      out += '"' + decode_string(std::string_view(token_).substr(i, stop - i)) + '"';
      i = stop;
      continue;
    }
    if (!space(token_[i])) out.push_back(token_[i]);
    ++i;
  }
  return out;
}

std::string with_id(const RequestId& id, std::string_view object) {
  std::string out = "{\"id\":" + id.token();
  if (object.size() > 2) out += ',';
  out += object.substr(object.empty() ? 0 : 1);
  return out;
}

}  // namespace dshpty::tool
