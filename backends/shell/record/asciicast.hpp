// asciicast v2 lines (https://docs.asciinema.org/manual/asciicast/v2/): a header object,
// then one JSON array per event, [seconds, code, data], each line ending in "\n". Pure
// encoding: no I/O, no clock. Event data is UTF-8 as asciinema writes it: ill-formed bytes
// become U+FFFD, and a character split across two terminal reads is held until it is whole.
#pragma once

#include <string>
#include <string_view>

namespace dshpty::shell::record {

struct CastHeader {
  unsigned width = 80;   // columns
  unsigned height = 24;  // rows
  long long timestamp = 0;  // the start, in seconds since the epoch
  std::string term{};   // env.TERM
  std::string shell{};  // env.SHELL
  std::string title{};  // the session's name (or id)
};

// The header line, "\n" included.
std::string encode_header(const CastHeader& header);

// `text` as a JSON string (quotes included), well-formed UTF-8 assumed.
void append_json_string(std::string& out, std::string_view text);

// Turns a byte stream into well-formed UTF-8 across calls: what `bytes` ends with that may
// still become a character is kept for the next call (at most 3 bytes); the rest is
// appended to `out` with each ill-formed byte as U+FFFD.
class Utf8Stream {
 public:
  void feed(std::string_view bytes, std::string& out);
  // As feed, but `bytes` themselves when they need no change (no copy), else `scratch`
  // filled with what feed makes of them.
  std::string_view view(std::string_view bytes, std::string& scratch);
  // The held bytes, when no more come: each one U+FFFD.
  void finish(std::string& out);

 private:
  std::string held_;
  std::string joined_;
};

// Removes every occurrence of a secret (the shell integration's mark nonce) from a byte
// stream across calls: a recording is read by people and may be readable where a session's
// programs are (a sandbox's read-only view of the host), and with the nonce a program could
// forge the marks that say the shell is at its prompt. What may be the secret's start at the
// end of a call is held for the next one (fewer bytes than the secret). Letters match in
// either case: the shell can print the nonce upper-cased (`${__dshpty_nonce^^}`).
class SecretScrub {
 public:
  explicit SecretScrub(std::string secret);
  // `text` without the secret, in one go (a marker's words).
  static std::string scrubbed(std::string_view secret, std::string_view text);
  void feed(std::string_view bytes, std::string& out);
  // As feed, but `bytes` themselves when nothing is cut or held (no copy).
  std::string_view view(std::string_view bytes, std::string& scratch);
  void finish(std::string& out);

 private:
  std::string secret_;
  std::string held_;
  std::string joined_;
};

// One event line, "\n" included: [time, "code", "data"] with the time in seconds to the
// microsecond. `data` must be well-formed UTF-8 (Utf8Stream's output, or the host's words).
std::string encode_event(double seconds, char code, std::string_view data);
// The same, appended to `out`.
void append_event(std::string& out, double seconds, char code, std::string_view data);

}  // namespace dshpty::shell::record
