#include "record/asciicast.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "text/utf8.hpp"

namespace dshpty::shell::record {

namespace {
// The bytes a JSON string cannot hold as they are: C0 controls, DEL (kept out for players
// that print it), the quote and the backslash.
constexpr std::array<bool, 256> kEscaped = [] {
  std::array<bool, 256> t{};
  for (int b = 0; b < 0x20; ++b) t[b] = true;
  t[0x7f] = t['"'] = t['\\'] = true;
  return t;
}();
}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  // Runs of plain bytes go in whole: a flood's output is nearly all of them.
  std::size_t run = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    // Eight plain bytes at a time (any byte below 0x20, or equal to '"', '\\' or DEL, sets
    // a high bit: the classic "has less" and "has zero" word tests).
    while (i + 8 <= text.size()) {
      std::uint64_t w;
      std::memcpy(&w, text.data() + i, 8);
      constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
      auto has_zero = [](std::uint64_t v) { return (v - kOnes) & ~v & kHigh; };
      const std::uint64_t flagged = ((w - kOnes * 0x20) & ~w & kHigh) | has_zero(w ^ (kOnes * '"')) |
                                    has_zero(w ^ (kOnes * '\\')) | has_zero(w ^ (kOnes * 0x7f));
      if (flagged) break;
      i += 8;
    }
    if (i >= text.size()) break;
    const char c = text[i];
    const auto byte = static_cast<unsigned char>(c);
    if (!kEscaped[byte]) continue;
    out.append(text.data() + run, i - run);
    run = i + 1;
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
    char escaped[8];
    std::snprintf(escaped, sizeof escaped, "\\u%04x", byte);
    out += escaped;
  }
  out.append(text.data() + run, text.size() - run);
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

std::string_view Utf8Stream::view(std::string_view bytes, std::string& scratch) {
  if (held_.empty()) {
    // Well-formed and whole, as nearly every read is: no copy.
    std::size_t i = 0;
    while (i < bytes.size()) {
      // ASCII eight bytes at a time: the common case of a flood.
      if (i + 8 <= bytes.size()) {
        std::uint64_t word;
        std::memcpy(&word, bytes.data() + i, 8);
        if ((word & 0x8080808080808080ull) == 0) {
          i += 8;
          continue;
        }
      }
      if (static_cast<unsigned char>(bytes[i]) < 0x80) {
        ++i;
        continue;
      }
      const utf8::DecodedChar d = utf8::decode(bytes.substr(i));
      if (d.state == utf8::DecodedChar::State::incomplete || d.length == 1) break;
      i += d.length;
    }
    if (i == bytes.size()) return bytes;
  }
  scratch.clear();
  feed(bytes, scratch);
  return scratch;
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

namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool same_ci(std::string_view a, std::string_view lowered) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lowered[i]) return false;
  return true;
}

// Where `lowered` (lower case) starts in `bytes` from `from` on, in any letter case.
std::size_t find_ci(std::string_view bytes, std::string_view lowered, std::size_t from) {
  if (lowered.empty() || bytes.size() < lowered.size()) return std::string_view::npos;
  const char first = lowered.front();
  const char upper = (first >= 'a' && first <= 'z') ? static_cast<char>(first - 'a' + 'A') : first;
  for (std::size_t at = from; at + lowered.size() <= bytes.size(); ++at) {
    if ((bytes[at] == first || bytes[at] == upper) && same_ci(bytes.substr(at, lowered.size()), lowered)) return at;
  }
  return std::string_view::npos;
}

// How many of the last bytes of `bytes` may start the secret (fewer than all of it).
std::size_t secret_start_at_end(std::string_view bytes, std::string_view lowered) {
  std::size_t keep = std::min(bytes.size(), lowered.size() - 1);
  while (keep > 0 && !same_ci(bytes.substr(bytes.size() - keep), lowered.substr(0, keep))) --keep;
  return keep;
}

}  // namespace

SecretScrub::SecretScrub(std::string secret) : secret_(std::move(secret)) {
  for (char& c : secret_) c = lower(c);
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
  for (std::size_t at; (at = find_ci(bytes, secret_, from)) != std::string_view::npos; from = at + secret_.size()) {
    out.append(bytes.substr(from, at - from));
  }
  // The longest end of what is left that the secret starts with waits for more.
  std::string_view rest = bytes.substr(from);
  const std::size_t keep = secret_start_at_end(rest, secret_);
  out.append(rest.substr(0, rest.size() - keep));
  held_.assign(rest.substr(rest.size() - keep));
}

std::string_view SecretScrub::view(std::string_view bytes, std::string& scratch) {
  if (secret_.empty()) return bytes;
  // Nothing to cut; unless its end may be the secret's start, nothing to hold either.
  if (held_.empty() && find_ci(bytes, secret_, 0) == std::string_view::npos &&
      secret_start_at_end(bytes, secret_) == 0)
    return bytes;
  scratch.clear();
  feed(bytes, scratch);
  return scratch;
}

std::string SecretScrub::scrubbed(std::string_view secret, std::string_view text) {
  SecretScrub once{std::string(secret)};
  std::string out;
  once.feed(text, out);
  once.finish(out);
  return out;
}

void SecretScrub::finish(std::string& out) {
  out.append(held_);
  held_.clear();
}

void append_event(std::string& out, double seconds, char code, std::string_view data) {
  char time[48];
  const int n = std::snprintf(time, sizeof time, "[%.6f, \"%c\", ", seconds < 0 ? 0.0 : seconds, code);
  out.append(time, static_cast<std::size_t>(n));
  append_json_string(out, data);
  out += "]\n";
}

std::string encode_event(double seconds, char code, std::string_view data) {
  std::string out;
  append_event(out, seconds, code, data);
  return out;
}

}  // namespace dshpty::shell::record
