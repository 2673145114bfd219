// fish's "abandoned line" in line-mode text. Before each prompt fish writes the omitted-
// newline mark, blanks to the terminal's last column, a carriage return, the mark again, a
// blank and a carriage return ("⏎   …   \r⏎ \r"): on a terminal that wraps at its margin
// this leaves "output⏎" on its own line when the output did not end with a newline, and
// nothing otherwise (zsh's PROMPT_SP; fish cannot turn it off). Line-mode text does not
// wrap, so the prompt would overwrite the output instead. This filter, for fish sessions'
// text only (the emulator sees the bytes as written), turns the whole sequence into the
// newline it stands for, or into nothing after a newline. Split-safe: a sequence cut by a
// read is held until it completes or turns out to be something else.
#pragma once

#include <string>
#include <string_view>

namespace dshpty::text {

class AbandonedLineFilter {
 public:
  // Appends `bytes`, filtered, to `out`.
  void feed(std::string_view bytes, std::string& out) {
    for (char c : bytes) step(c, out);
  }

 private:
  static constexpr std::string_view kMark = "\xE2\x8F\x8E";  // U+23CE
  static constexpr std::size_t kMaxHeld = 4096 + 8;           // the widest terminal, and more

  void step(char c, std::string& out) {
    // The sequence: kMark, ' '+, '\r', kMark, ' ', '\r'.
    const std::size_t n = held_.size();
    bool fits = false;
    if (n < kMark.size()) {
      fits = c == kMark[n];
    } else if (stage_ == 0) {  // blanks (no wider than a terminal), then the carriage return
      fits = (c == ' ' && n < kMaxHeld) || (c == '\r' && n > kMark.size());
      if (c == '\r' && fits) stage_ = 1, second_ = n + 1;
    } else {
      const std::size_t k = n - second_;  // bytes of the second half so far
      fits = k < kMark.size() ? c == kMark[k] : (k == kMark.size() ? c == ' ' : c == '\r');
    }
    if (!fits) {
      flush(out);
      if (c == kMark[0]) {
        held_.push_back(c);
      } else {
        emit(c, out);
      }
      return;
    }
    held_.push_back(c);
    if (stage_ == 1 && held_.size() == second_ + kMark.size() + 2) {
      held_.clear();
      stage_ = 0;
      if (last_ != '\n') {
        out.append("\r\n");
        last_ = '\n';
      }
    }
  }

  void flush(std::string& out) {
    for (char h : held_) emit(h, out);
    held_.clear();
    stage_ = 0;
  }

  void emit(char c, std::string& out) {
    out.push_back(c);
    // The last byte of text, not of an escape sequence (a mark, a colour): CSI up to its
    // final byte, OSC up to BEL or ESC \, two-byte escapes.
    switch (escape_) {
      case 0:
        if (c == '\x1B') {
          escape_ = 1;
        } else {
          last_ = c;
        }
        break;
      case 1: escape_ = c == '[' ? 2 : c == ']' ? 3 : 0; break;
      case 2: if (c >= 0x40 && c <= 0x7E) escape_ = 0; break;
      case 3: if (c == '\x07') escape_ = 0; else if (c == '\x1B') escape_ = 4; break;
      default: escape_ = 0; break;
    }
  }

  std::string held_;       // a sequence in progress, at most a line of blanks long
  int stage_ = 0;          // 0: first mark and blanks; 1: after the first carriage return
  std::size_t second_ = 0;  // where the second half starts in held_
  char last_ = '\n';       // the last byte of text let through
  int escape_ = 0;         // inside an escape sequence: 1 ESC, 2 CSI, 3 OSC, 4 ESC in OSC
};

}  // namespace dshpty::text
