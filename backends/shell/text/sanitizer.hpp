// The sanitizer: turns the PTY's byte stream into plain UTF-8 text and prompt evidence.
// Pure (no I/O, no clock), incremental, and chunk-boundary blind: feeding a stream in any
// split gives exactly the output of feeding it whole. The shell backend runs it on every
// byte read from the master, so the common case (a run of printable bytes) is appended in
// bulk, and feeding into a reused SanitizedText allocates nothing once it has grown.
//
// The rules, in the order the byte stream meets them:
//   - Printable ASCII, '\n' and '\t' pass through; valid UTF-8 passes through, and a
//     character split across chunks comes out whole.
//   - Invalid UTF-8 becomes U+FFFD, one per maximal ill-formed subpart (the Unicode
//     "best practice": F0 90 41 gives U+FFFD 'A'). Bytes 0x80-0x9F are never read as C1
//     controls: in a UTF-8 stream they are continuation bytes.
//   - CR LF becomes '\n'. A lone CR stays '\r' (kReturn): the line editor (line_editor.hpp)
//     moves back to the line's start, as a terminal does. A CR at the end of a chunk waits
//     for the next byte (finish() turns it into '\r').
//   - ESC [ K and ESC [ 0 K (erase to the end of the line) become kEraseToEnd, ESC [ 2 K
//     (erase the line) kEraseLine: in-band codes for the line editor, which no other byte
//     of the output can produce (the C0 controls they use are dropped as input).
//   - BS stays '\b' (kBackspace): the line editor moves back one character and what
//     follows overwrites it, as a terminal does, so overstrike (`N\bN` bold, `_\bX`
//     underline: man's output through PAGER=cat) and spinners read as they are shown.
//   - The cursor moves within a line that spinners, progress lines and line editors redraw
//     with (ora's `ESC [ 1 G ESC [ 0 K`, `50% ESC [ 4 D 100%`, fish's `CR ESC [ 21 C`):
//     ESC [ n G (to column n) becomes kReturn and n-1 kCursorForwards, ESC [ n D (n back)
//     n kBackspaces, ESC [ n C (n forward) n kCursorForwards; a count past kMaxCursorMove
//     is a return for D and removed for G and C. Other cursor moves (up, down) are removed.
//   - Other C0 controls (BEL, ...) and DEL are dropped.
//   - ESC starts an escape sequence, which is removed whole:
//       CSI      ESC [ <0x20-0x3F>* <final 0x40-0x7E>
//       nF       ESC <0x20-0x2F>+ <final 0x30-0x7E>       (e.g. ESC ( B)
//       two-byte ESC <0x30-0x7E>                           (e.g. ESC =, ESC 7)
//       strings  ESC ] (OSC), ESC P (DCS), ESC X, ESC ^, ESC _  ... up to BEL or ESC \.
//     Inside a sequence, ESC restarts a sequence, CAN/SUB abort it (both dropped), and any
//     other byte that cannot belong to it (a C0 control, DEL, a byte >= 0x80) ends it and
//     is then read as ordinary text, so a broken sequence cannot swallow what follows.
//     Inside a string, every byte but BEL, CAN, SUB and ESC is payload; ESC \ ends it,
//     ESC ] starts a new OSC (so a prompt marker is never eaten by an earlier unterminated
//     string), and ESC followed by anything else is a false terminator: both stay payload.
//     A string therefore runs, however long, until its terminator: an unterminated escape
//     longer than the cap is discarded through its terminator, never leaked as text.
//   - ESC ] 133 ; <kind> [; <field>]... terminated by BEL or ESC \ is a shell-integration
//     mark when one of its fields is `dshpty=<nonce>` with this session's nonce (the shell
//     prints them around its prompt: docs/shell-backend.md, "Marks"): removed, and reported
//     with its position in the text, its kind and what it carries. Without the nonce (or
//     with another) it is an ordinary OSC: removed, never a mark, so output that mimics a
//     prompt cannot pose as one. Only an OSC of at most escape_cap payload bytes can be one.
//     A P mark with n=<count> (bash prints P from its PS1) whose count is the previous P's
//     is a repaint of the same prompt (readline after a resize or a Ctrl-L): removed, and
//     not reported.
//
// finish() ends the stream: a carried CR becomes '\r', a partial character U+FFFD, an
// unfinished escape is dropped, and the sanitizer is back in its initial state.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dshpty::text {

// The in-band codes the sanitizer leaves in its text for the line editor.
inline constexpr char kReturn = '\r';
inline constexpr char kBackspace = '\b';
inline constexpr char kEraseToEnd = '\x0B';  // VT: dropped as input, so never ambiguous
inline constexpr char kEraseLine = '\x0C';   // FF: likewise
inline constexpr char kCursorForward = '\x0E';  // SO: one column forward, over what is there

// One shell-integration mark (OSC 133 with the session's nonce), by its kind:
//   A  prompt start     B  prompt end: the shell reads input from here
//   C  a command line was read and starts       D ; <status>  the last command's status
//   P ; cwd=<percent-encoded> [; n=<count>] [; state=refused]  a new prompt, in the shell's
//       working directory; with state=refused, after a line the shell refused and cleared
//       (fish's syntax errors)
//   L ; state=continuation  the line just typed was not a whole command: the shell waits
//       for the rest of it (a continuation prompt)
struct PromptMarker {
  std::size_t position = 0;   // byte offset in SanitizedText::text where the marker stood
  char kind = 'D';
  std::optional<int> status;  // D: <status> when it is a decimal number of at most 9 digits
  std::string cwd;            // P: decoded
  std::string prompt_count;   // P: n=<count>, when the shell numbers its prompts
  std::string line_state{};   // L, P: state=<word>
  friend bool operator==(const PromptMarker&, const PromptMarker&) = default;
};

// What feed() appends to. Clear it before each feed to get "this chunk's output", or keep
// appending to collect a whole stream: marker positions always index `text`.
struct SanitizedText {
  std::string text;
  std::vector<PromptMarker> markers;  // in order of position

  // The text holds a line editor code (kReturn, kBackspace, kCursorForward, kEraseToEnd,
  // kEraseLine): the editor's slow path is needed only then.
  bool line_controls = false;

  void clear() noexcept {
    text.clear();
    markers.clear();
    line_controls = false;
  }
  // The last marker, or nullptr when there is none.
  const PromptMarker* last_marker() const noexcept {
    return markers.empty() ? nullptr : &markers.back();
  }
  // The printable text after the last marker; the whole text when there is none.
  std::string_view text_after_last_marker() const noexcept {
    std::string_view t = text;
    return markers.empty() ? t : t.substr(markers.back().position);
  }
  friend bool operator==(const SanitizedText&, const SanitizedText&) = default;
};

struct SanitizerConfig {
  // The longest escape sequence worth remembering; longer ones are still discarded
  // through their terminator, but are never a mark. Memory is O(1) regardless: only an
  // OSC's first escape_cap bytes are kept.
  std::size_t escape_cap = 4096;
  // The session's mark nonce: only marks that carry it are marks. Empty: none is.
  std::string mark_nonce;
};

class Sanitizer {
 public:
  // A cursor move by more than this many columns is not spelled out (see the header): one
  // escape never turns into more than this many bytes of text.
  static constexpr std::size_t kMaxCursorMove = 128;

  explicit Sanitizer(SanitizerConfig config = {}) noexcept : config_(std::move(config)) {}

  // Appends the text of `bytes` (and any markers completed in it) to `out`.
  void feed(std::string_view bytes, SanitizedText& out);
  // End of stream: see the header comment. Appends to `out`.
  void finish(SanitizedText& out);

  // Convenience for tests: feed one chunk into a fresh SanitizedText.
  SanitizedText feed(std::string_view bytes) {
    SanitizedText out;
    feed(bytes, out);
    return out;
  }

 private:
  enum class State : unsigned char {
    ground,
    escape,        // after ESC
    intermediate,  // ESC <0x20-0x2F>+
    csi,           // ESC [
    string,        // OSC, DCS, SOS, PM, APC payload
    string_escape  // ESC inside a string: terminator or not?
  };
  using Byte = unsigned char;

  const Byte* ground(const Byte* p, const Byte* end, SanitizedText& out);
  const Byte* escape(const Byte* p);
  const Byte* intermediate(const Byte* p);
  const Byte* csi(const Byte* p, const Byte* end, SanitizedText& out);
  // CSI K (erase in line), G (cursor to column), D (back) and C (forward): the line
  // editor's in-band codes for them (see the header).
  static void line_control(char final, std::string_view params, SanitizedText& out);
  static void erase_in_line(std::string_view params, SanitizedText& out);
  const Byte* string(const Byte* p, const Byte* end, SanitizedText& out);
  const Byte* string_escape(const Byte* p, SanitizedText& out);

  // UTF-8 decoding of a character that did not arrive whole (or is invalid).
  const Byte* utf8_continue(const Byte* p, const Byte* end, std::string& text);
  const Byte* utf8_start(const Byte* p, const Byte* end, std::string& text);

  void start_string(bool osc) noexcept;
  void end_string(SanitizedText& out);


  SanitizerConfig config_;
  State state_ = State::ground;
  bool cr_pending_ = false;  // a CR ended the last chunk
  // The CSI in progress: its first parameter bytes (enough to tell an erase in line).
  char csi_params_[4] = {};
  std::size_t csi_params_length_ = 0;
  // A character in progress: its bytes so far, how many it needs, the next byte's range.
  Byte utf8_bytes_[4] = {};
  unsigned char utf8_have_ = 0;
  unsigned char utf8_need_ = 0;
  // The string in progress.
  bool string_is_osc_ = false;
  std::size_t string_length_ = 0;  // payload bytes seen (saturating at cap + 1 is enough)
  std::string osc_kept_;  // an OSC's first escape_cap bytes (grown on the first OSC only)
  std::string last_prompt_count_;  // the last P mark's n=, to tell a repaint from a prompt
};

}  // namespace dshpty::text
