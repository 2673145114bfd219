// The sanitizer's rules, each checked with the input split at every byte offset.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>

#include "split_check.hpp"
#include "text/sanitizer.hpp"

using namespace std::string_literals;
using dshpty::text::PromptMarker;
using dshpty::text::SanitizedText;
using dshpty::text::Sanitizer;
using dshpty::text::SanitizerConfig;
using dshpty::text::testing::kTestNonce;
using dshpty::text::testing::sanitize_every_split;
using dshpty::text::testing::text_of;

namespace {
const std::string FFFD = "\xEF\xBF\xBD";
const std::string ESC = "\x1B";
const std::string BEL = "\x07";
const std::string ST = "\x1B\\";

// Clean text: valid UTF-8 whose only controls are newline, tab and the line editor's
// in-band codes.
bool valid_utf8_without_controls(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      const bool line_code = c == '\r' || c == 0x0B || c == 0x0C || c == 0x0E;
      if ((c < 0x20 && c != '\n' && c != '\t' && !line_code) || c == 0x7F) return false;
      ++i;
      continue;
    }
    int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (int k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}
}  // namespace

TEST_CASE("printable text, newlines, tabs and valid UTF-8 pass through") {
  CHECK(text_of("hello, world\n\tx") == "hello, world\n\tx");
  CHECK(text_of("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xE4\xB8\xAD") ==
        "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xE4\xB8\xAD");
  CHECK(text_of("") == "");
}

TEST_CASE("a multi-byte character split across chunks comes out intact") {
  // Every split of these is checked inside text_of; also check the pieces directly.
  for (std::string ch : {"\xC3\xA9"s, "\xE2\x82\xAC"s, "\xF0\x9F\x98\x80"s}) {
    CHECK(text_of("a" + ch + "b") == "a" + ch + "b");
    for (std::size_t i = 1; i < ch.size(); ++i) {
      Sanitizer s;
      SanitizedText first = s.feed(ch.substr(0, i));
      CHECK(first.text.empty());  // held back, not emitted half
      SanitizedText rest = s.feed(ch.substr(i));
      CHECK(rest.text == ch);
    }
  }
}

TEST_CASE("CSI sequences are removed, whatever their parameters") {
  CHECK(text_of(ESC + "[31mred" + ESC + "[0m plain") == "red plain");
  CHECK(text_of("a" + ESC + "[?25l" + ESC + "[?2004h" + ESC + "[2 q" + ESC + "[K" + ESC + "[1;1Hb") == "a\x0B" "b");
  CHECK(text_of(ESC + "[38;2;255;0;0mx" + ESC + "[>0;1c") == "x");
  CHECK(text_of("a" + ESC + "[" + std::string(5000, '1') + "mb") == "ab");  // long params
}

TEST_CASE("a broken CSI ends at the first byte that cannot belong to it") {
  CHECK(text_of(ESC + "[12\nabc") == "\nabc");
  CHECK(text_of(ESC + "[1\xE2\x82\xAC") == "\xE2\x82\xAC");
  CHECK(text_of(ESC + "[1" + ESC + "[31mx") == "x");  // ESC restarts
  CHECK(text_of(ESC + "[1\x18x") == "x");              // CAN aborts
}

TEST_CASE("OSC strings are removed, terminated by BEL or ST") {
  CHECK(text_of(ESC + "]0;window title" + BEL + "after") == "after");
  CHECK(text_of(ESC + "]0;window title" + ST + "after") == "after");
  CHECK(text_of(ESC + "]8;;http://example.com" + ST + "link" + ESC + "]8;;" + ST) == "link");
  CHECK(text_of(ESC + "]133;A" + BEL + "x") == "x");  // no nonce: not a mark
  CHECK(text_of(ESC + "]133;D;0" + BEL + "x") == "x");
  CHECK(text_of(ESC + "]133;B;dshpty=fedcba9876543210" + BEL + "x") == "x");  // another nonce
}

TEST_CASE("DCS, SOS, PM and APC strings are removed") {
  CHECK(text_of("a" + ESC + "Pq#0;2;0;0;0" + ST + "b") == "ab");
  CHECK(text_of("a" + ESC + "Xsos" + ST + ESC + "^pm" + ST + ESC + "_apc" + BEL + "b") == "ab");
}

TEST_CASE("two-byte and nF escapes are dropped") {
  CHECK(text_of(ESC + "=" + ESC + ">" + ESC + "7" + ESC + "8" + ESC + "Mx") == "x");
  CHECK(text_of(ESC + "(B" + ESC + ")0" + ESC + "#8" + ESC + " Fx") == "x");
  CHECK(text_of(ESC + ESC + "[31mx") == "x");      // ESC ESC: the second starts afresh
  CHECK(text_of(ESC + "\nx") == "\nx");            // ESC then a control: the ESC is dropped
  CHECK(text_of(ESC + "\xC3\xA9") == "\xC3\xA9");  // ESC then text
}

TEST_CASE("CR LF becomes a newline, a lone CR stays a return; a CR ending a chunk waits") {
  CHECK(text_of("a\r\nb\rc\r") == "a\nb\rc\r");
  CHECK(text_of("\r\r\n") == "\r\n");
  CHECK(text_of("x\r" + ESC + "[Ky") == "x\r\x0By");

  Sanitizer s;
  SanitizedText out;
  s.feed("line\r", out);
  CHECK(out.text == "line");  // the CR is carried
  s.feed("\nnext\r", out);
  CHECK(out.text == "line\nnext");
  s.finish(out);  // and flushed at the end
  CHECK(out.text == "line\nnext\r");
}

TEST_CASE("erase in line becomes the line editor's codes, in any split; other CSIs vanish") {
  CHECK(text_of("a" + ESC + "[Kb" + ESC + "[0Kc" + ESC + "[2Kd" + ESC + "[1Ke" + ESC + "[3Kf") ==
        "a\x0B" "b\x0B" "c\x0C" "def");
  CHECK(text_of("a" + ESC + "[?2K" + ESC + "[;K" + ESC + "[22Kb") == "ab");
}

TEST_CASE("cursor moves along the line become the line editor's codes; a huge count does not") {
  const std::string F = "\x0E";  // kCursorForward
  // ESC [ n C: n forwards; ESC [ n D: n backspaces; ESC [ n G: a return and n-1 forwards.
  CHECK(text_of("a" + ESC + "[Cb" + ESC + "[3Cc") == "a" + F + "b" + F + F + F + "c");
  CHECK(text_of("50%" + ESC + "[3D100%") == "50%\b\b\b100%");
  CHECK(text_of("abc" + ESC + "[Gx" + ESC + "[3Gy" + ESC + "[0Cz") == "abc\rx\r" + F + F + "y" + F + "z");
  // Past kMaxCursorMove: `ESC [ 999 D` is the start of the row; 999 forward or to column
  // 999 is the margin, whose column is not known: removed.
  CHECK(text_of("abc" + ESC + "[999Dx" + ESC + "[999Cy" + ESC + "[999Gz") == "abc\rxyz");
  // Private, several or non-numeric parameters are not these moves: removed.
  CHECK(text_of("a" + ESC + "[?2Cb" + ESC + "[1;2Dc" + ESC + "[ Gd") == "abcd");
  // SO in the input is a control like any other: dropped, never read as the code.
  CHECK(text_of("a\x0E" "b") == "ab");
}

TEST_CASE("BEL and other C0 controls are dropped; newline and tab are kept; BS is the editor's") {
  CHECK(text_of("a\x07" "b" "c\td\x00" "e\x7F" "f\x01\x1F\x0B\x0C" "g"s) == "abc\tdefg");
  // A backspace stays in-band (kBackspace) for the line editor, which applies it.
  CHECK(text_of("b\x08" "c") == "b\bc");
  CHECK(text_of("b" + ESC + "[1\x08" "c") == "b\bc");  // it ends a broken escape and still counts
}

TEST_CASE("invalid UTF-8 becomes U+FFFD, one per maximal ill-formed subpart") {
  CHECK(text_of("\xFF") == FFFD);
  CHECK(text_of("a\x80" "b") == "a" + FFFD + "b");             // stray continuation
  CHECK(text_of("\xC0\xAF") == FFFD + FFFD);                  // overlong lead
  CHECK(text_of("\xE0\x80\x80") == FFFD + FFFD + FFFD);       // overlong 3-byte
  CHECK(text_of("\xED\xA0\x80") == FFFD + FFFD + FFFD);       // surrogate
  CHECK(text_of("\xF4\x90\x80\x80") == FFFD + FFFD + FFFD + FFFD);  // past U+10FFFF
  CHECK(text_of("\xF0\x90\x41") == FFFD + "A");               // truncated, then ASCII
  CHECK(text_of("\xE2\x82" + ESC + "[mx") == FFFD + "x");     // truncated by an escape
  CHECK(text_of("\xE2\x82\r\n") == FFFD + "\n");
  CHECK(text_of("\xC2\xC3\xA9") == FFFD + "\xC3\xA9");        // truncated by a new lead
  CHECK(text_of("\x9B" "31m") == FFFD + "31m");               // C1 CSI is not honoured
  CHECK(text_of("end\xE2\x82") == "end" + FFFD);              // partial at finish()
}

TEST_CASE("the prompt marker is removed and reported with its position and status") {
  SanitizedText out = sanitize_every_split("out\r\n" + ESC + "]133;D;0;dshpty=0123456789abcdef" + BEL + "dsh> ");
  CHECK(out.text == "out\ndsh> ");
  REQUIRE(out.markers.size() == 1);
  CHECK(out.markers[0] == PromptMarker{4, 'D', 0, {}, {}, {}});
  CHECK(out.text_after_last_marker() == "dsh> ");

  out = sanitize_every_split("x" + ESC + "]133;D;127;dshpty=0123456789abcdef" + ST + "dsh> ");
  CHECK(out.text == "xdsh> ");
  REQUIRE(out.markers.size() == 1);
  CHECK(out.markers[0] == PromptMarker{1, 'D', 127, {}, {}, {}});

  out = sanitize_every_split(ESC + "]133;D;dshpty=0123456789abcdef" + BEL + "p");  // no status
  REQUIRE(out.markers.size() == 1);
  CHECK(out.markers[0] == PromptMarker{0, 'D', std::nullopt, {}, {}, {}});

  out = sanitize_every_split(ESC + "]133;D;abc;dshpty=0123456789abcdef" + BEL);  // unparsable status: still a marker
  REQUIRE(out.markers.size() == 1);
  CHECK_FALSE(out.markers[0].status.has_value());

  out = sanitize_every_split(ESC + "]133;D;1;aid=7;dshpty=0123456789abcdef" + BEL);  // extra fields
  REQUIRE(out.markers.size() == 1);
  CHECK(out.markers[0].status == 1);
}

TEST_CASE("several markers: all reported in order, the last one is what counts") {
  SanitizedText out = sanitize_every_split(ESC + "]133;D;1;dshpty=0123456789abcdef" + BEL + "dsh> ls\r\nfile\r\n" + ESC +
                                           "]133;D;0;dshpty=0123456789abcdef" + BEL + "dsh> ");
  CHECK(out.text == "dsh> ls\nfile\ndsh> ");
  REQUIRE(out.markers.size() == 2);
  CHECK(out.markers[0] == PromptMarker{0, 'D', 1, {}, {}, {}});
  CHECK(out.markers[1] == PromptMarker{13, 'D', 0, {}, {}, {}});
  CHECK(out.last_marker()->status == 0);
  CHECK(out.text_after_last_marker() == "dsh> ");
}

TEST_CASE("things that look like the marker are not") {
  CHECK(text_of(ESC + "]133;DX" + BEL) == "");
  CHECK(text_of(ESC + "]1133;D" + BEL) == "");
  CHECK(text_of(ESC + "P133;D;0" + ST) == "");  // a DCS, not an OSC
  CHECK(text_of("]133;D;0" + BEL) == "]133;D;0");
}

TEST_CASE("an unterminated escape longer than the cap is discarded through its terminator") {
  const SanitizerConfig small{16, kTestNonce};
  const std::string junk(100, 'x');
  CHECK(text_of("a" + ESC + "]0;" + junk + BEL + "after", small) == "aafter");
  CHECK(text_of("a" + ESC + "]0;" + junk + ST + "after", small) == "aafter");  // ST split everywhere
  // A false ESC inside (not followed by '\') does not end it, nor does ESC ESC.
  CHECK(text_of("a" + ESC + "]0;" + junk + ESC + "x" + junk + ESC + ESC + "[31m" + BEL + "after", small) ==
        "aafter");
  CHECK(text_of(ESC + "P" + junk + ESC + "[31m" + junk + ST + "after", small) == "after");
  // An overlong marker is not a marker.
  CHECK(text_of(ESC + "]133;D;0;" + junk + BEL + "p", small) == "p");
  CHECK(text_of(ESC + "]133;D;0;dshpty=0123456789abcdef" + BEL, SanitizerConfig{4, kTestNonce}) == "");
  // The default cap, and a lot more than it.
  const std::string huge(10000, 'y');
  CHECK(text_of(ESC + "]0;" + huge + ESC + "\\tail") == "tail");
  CHECK(text_of(ESC + "_" + huge + "\x1B" "x" + huge + BEL + "tail") == "tail");
}

TEST_CASE("a new OSC inside an unterminated string starts afresh, so a marker is never eaten") {
  SanitizedText out = sanitize_every_split(ESC + "]0;never terminated" + ESC + "]133;D;3;dshpty=0123456789abcdef" + BEL + "dsh> ");
  CHECK(out.text == "dsh> ");
  REQUIRE(out.markers.size() == 1);
  CHECK(out.markers[0] == PromptMarker{0, 'D', 3, {}, {}, {}});
}

TEST_CASE("CAN and SUB abort a string") {
  CHECK(text_of(ESC + "]0;ab\x18" + "cd") == "cd");
  CHECK(text_of(ESC + "]0;ab\x1A" + "cd") == "cd");
}

TEST_CASE("finish() drops an unfinished escape and starts clean") {
  Sanitizer s;
  SanitizedText out;
  s.feed("ab" + ESC + "]133;D;0", out);
  s.finish(out);
  CHECK(out.text == "ab");
  CHECK(out.markers.empty());
  s.feed("cd", out);  // ground state again: not swallowed by the old OSC
  CHECK(out.text == "abcd");
}

TEST_CASE("a P mark that repeats the previous one's count is a repaint: dropped, until finish()") {
  Sanitizer s(SanitizerConfig{4096, kTestNonce});
  const auto p = [](const char* n) { return ESC + "]133;P;cwd=/;n=" + n + ";dshpty=0123456789abcdef" + BEL; };
  SanitizedText out;
  s.feed(p("7") + "a" + p("7") + "b" + p("8") + p("7"), out);
  CHECK(out.text == "ab");
  REQUIRE(out.markers.size() == 3);
  CHECK(out.markers[0].prompt_count == "7");
  CHECK(out.markers[1].prompt_count == "8");
  CHECK(out.markers[2].prompt_count == "7");  // only the previous count is a repaint
  s.finish(out);
  out.clear();
  s.feed(p("7"), out);
  CHECK(out.markers.size() == 1);
  out.clear();
  s.feed(ESC + "]133;P;cwd=/;dshpty=0123456789abcdef" + BEL + ESC + "]133;P;cwd=/;dshpty=0123456789abcdef" + BEL, out);
  CHECK(out.markers.size() == 2);  // no count (zsh, fish): every P is a new prompt
}

TEST_CASE("feeding into a cleared buffer positions markers in that chunk's text") {
  Sanitizer s(SanitizerConfig{4096, kTestNonce});
  SanitizedText chunk;
  s.feed("output\r\n" + ESC + "]133;", chunk);
  CHECK(chunk.text == "output\n");
  CHECK(chunk.markers.empty());
  chunk.clear();
  s.feed("D;0;dshpty=" + kTestNonce + BEL + "dsh> ", chunk);
  CHECK(chunk.text == "dsh> ");
  REQUIRE(chunk.markers.size() == 1);
  CHECK(chunk.markers[0].position == 0);
}

TEST_CASE("random streams: split-invariant, and the output is clean UTF-8") {
  // Bytes chosen to hit every state transition often.
  const std::string alphabet = "ab \n\r\t\x07\x1B\x1B\x1B[]\\P_;0123D\x18\xE2\x82\xAC\xC3\xFF\x80\xF0\x9F";
  std::mt19937 rng(12345);
  for (int round = 0; round < 300; ++round) {
    std::string input;
    std::size_t length = rng() % 40;
    for (std::size_t i = 0; i < length; ++i) input.push_back(alphabet[rng() % alphabet.size()]);
    if (rng() % 3 == 0) input = "\x1B]133;D;dshpty=" + kTestNonce + ";" + input;
    SanitizedText out = sanitize_every_split(input);
    CHECK(valid_utf8_without_controls(out.text));
    for (const PromptMarker& marker : out.markers) CHECK(marker.position <= out.text.size());
  }
}
