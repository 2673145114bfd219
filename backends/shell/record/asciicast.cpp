#include "record/asciicast.hpp"

#include <algorithm>
#include <cstdio>

#include "text/utf8.hpp"

namespace dshpty::shell::record {

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  for (char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (byte < 0x20 || byte == 0x7f) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", byte);
      out += escaped;
      continue;
    }
    out.push_back(c);
  }
  out.push_back('"');
}

std::string encode_header(const CastHeader& h) {
  std::string out = "{\"version\": 2, \"width\": " + std::to_string(h.width) +
                    ", \"height\": " + std::to_string(h.height) + ", \"timestamp\": " + std::to_string(h.timestamp) +
                    ", \"env\": {\"TERM\": ";
  append_json_string(out, h.term);
  out += ", \"SHELL\": ";
  append_json_string(out, h.shell);
  out += "}, \"title\": ";
  append_json_string(out, h.title);
  out += "}\n";
  return out;
}

void Utf8Stream::feed(std::string_view bytes, std::string& out) {
  if (!held_.empty()) {
    joined_.assign(held_).append(bytes);
    held_.clear();
    bytes = joined_;
  }
  std::size_t i = 0;
  std::size_t run = 0;  // start of the pending run of bytes that pass through unchanged
  while (i < bytes.size()) {
    const auto byte = static_cast<unsigned char>(bytes[i]);
    if (byte < 0x80) {
      ++i;
      continue;
    }
    const utf8::DecodedChar decoded = utf8::decode(bytes.substr(i));
    if (decoded.state == utf8::DecodedChar::State::incomplete) {
      // A well-formed start cut by the read's end: the rest comes with the next read.
      out.append(bytes.substr(run, i - run));
      held_.assign(bytes.substr(i));
      return;
    }
    if (decoded.length == 1) {  // ill-formed: that byte alone becomes U+FFFD
      out.append(bytes.substr(run, i - run));
      out.append(utf8::kReplacement);
      i += decoded.length;
      run = i;
      continue;
    }
    i += decoded.length;
  }
  out.append(bytes.substr(run));
}

void Utf8Stream::finish(std::string& out) {
  for (std::size_t i = 0; i < held_.size(); ++i) out.append(utf8::kReplacement);
  held_.clear();
}

void SecretScrub::feed(std::string_view bytes, std::string& out) {
  if (secret_.empty()) {
    out.append(bytes);
    return;
  }
  if (!held_.empty()) {
    joined_.assign(held_).append(bytes);
    held_.clear();
    bytes = joined_;
  }
  std::size_t from = 0;
  for (std::size_t at; (at = bytes.find(secret_, from)) != std::string_view::npos; from = at + secret_.size()) {
    out.append(bytes.substr(from, at - from));
  }
  // The longest end of what is left that the secret starts with waits for more.
  std::string_view rest = bytes.substr(from);
  std::size_t keep = std::min(rest.size(), secret_.size() - 1);
  while (keep > 0 && rest.substr(rest.size() - keep) != std::string_view(secret_).substr(0, keep)) --keep;
  out.append(rest.substr(0, rest.size() - keep));
  held_.assign(rest.substr(rest.size() - keep));
}

void SecretScrub::finish(std::string& out) {
  out.append(held_);
  held_.clear();
}

std::string encode_event(double seconds, char code, std::string_view data) {
  char time[32];
  std::snprintf(time, sizeof time, "[%.6f, \"%c\", ", seconds < 0 ? 0.0 : seconds, code);
  std::string out = time;
  out.reserve(out.size() + data.size() + 8);
  append_json_string(out, data);
  out += "]\n";
  return out;
}

}  // namespace dshpty::shell::record
