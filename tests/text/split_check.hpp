// Feeding a stream in any split must give what feeding it whole gives: the helpers that
// split a test input at every byte offset (and into single bytes) and compare.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <string_view>

#include "text/sanitizer.hpp"

namespace dshpty::text::testing {

// The nonce the tests' marks carry (a session has its own: text/sanitizer.hpp).
inline const std::string kTestNonce = "0123456789abcdef";

inline SanitizedText sanitize_whole(std::string_view input, SanitizerConfig config = {4096, kTestNonce}) {
  Sanitizer sanitizer(config);
  SanitizedText out;
  sanitizer.feed(input, out);
  sanitizer.finish(out);
  return out;
}

inline std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  return out;
}

// Every two-way split, every three-way split for short inputs, and 1-byte chunks.
inline SanitizedText sanitize_every_split(std::string_view input, SanitizerConfig config = {4096, kTestNonce}) {
  const SanitizedText whole = sanitize_whole(input, config);
  INFO("input: " << printable(input));
  for (std::size_t i = 0; i <= input.size(); ++i) {
    Sanitizer sanitizer(config);
    SanitizedText out;
    sanitizer.feed(input.substr(0, i), out);
    sanitizer.feed(input.substr(i), out);
    sanitizer.finish(out);
    INFO("split at " << i);
    REQUIRE(out == whole);
  }
  if (input.size() <= 48) {
    for (std::size_t i = 0; i <= input.size(); ++i)
      for (std::size_t j = i; j <= input.size(); ++j) {
        Sanitizer sanitizer(config);
        SanitizedText out;
        sanitizer.feed(input.substr(0, i), out);
        sanitizer.feed(input.substr(i, j - i), out);
        sanitizer.feed(input.substr(j), out);
        sanitizer.finish(out);
        INFO("split at " << i << " and " << j);
        REQUIRE(out == whole);
      }
  }
  Sanitizer sanitizer(config);
  SanitizedText out;
  for (char c : input) sanitizer.feed(std::string_view(&c, 1), out);
  sanitizer.finish(out);
  INFO("one-byte chunks");
  REQUIRE(out == whole);
  return whole;
}

// The text of `input` (checked at every split), with no markers expected.
inline std::string text_of(std::string_view input, SanitizerConfig config = {4096, kTestNonce}) {
  SanitizedText out = sanitize_every_split(input, config);
  CHECK(out.markers.empty());
  return out.text;
}

}  // namespace dshpty::text::testing
