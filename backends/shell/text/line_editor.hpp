// The line editor: carriage returns and backspaces as a terminal shows them. A lone CR
// goes back to the start of the line and what follows overwrites it (`abc\rX\n` reads
// `Xbc`); a backspace goes back one character (never past the line's start), so `abc\bX`
// reads `abX`, overstrike (`N\bN`, `_\bX`) reads `N`, `X`, and a spinner is one character; an erase in
// line (ESC [ K, ESC [ 2 K) blanks what it covers; so a progress bar redrawn 300 times is
// one line. It sits between the sanitizer and the text sinks and turns the sanitizer's
// in-band codes (kReturn, kBackspace, kCursorForward, kEraseToEnd, kEraseLine) into two kinds
// of delivery (a cursor forward passes over a character, or past the line's end):
//   append   text that only adds to the stream (the common case, passed through as is);
//   rewrite  "the newest line, which no '\n' has ended yet, now reads <line>, changed from
//            byte <from> on": delivered once per chunk, at its end or when the line ends,
//            so a partial line that was redrawn is visible to reads and viewports at once,
//            and a sink never sees the intermediate frames of a redraw within one chunk.
//            <from> lets a sink that started mid-line (a send's output, which starts at
//            the send's write) keep only what was written since: the bytes before it are
//            as they were.
// Characters are overwritten one for one (code points; a wide character counts as one).
// Given the terminal's width (set_columns), a line longer than it wraps as on a terminal
// with automatic margins, and a return or a backspace stays in the row the cursor is on.
// A return to a row after the first, or a backspace the start of one stopped, ends the
// line there: the rows above stay as they were (their trailing blanks show as nothing),
// and the cursor's row reads as a line of its own. So readline's blanks that reach the
// margin after `Password: dsh> `, then a return (or backspaces) and the prompt again, read
// as the rows a terminal shows, not as the prompt written over `Passw`. Without a width
// nothing wraps.
// Pure and O(1) in memory: it mirrors the current line up to kMaxLine bytes; on a longer
// line, returns and erases are ignored until the next '\n' (the text is appended as is).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "text/sanitizer.hpp"

namespace dshpty::text {

class LineEditor {
 public:
  static constexpr std::size_t kMaxLine = 64 * 1024;

  class Output {
   public:
    virtual void append(const SanitizedText& chunk) = 0;
    virtual void rewrite(std::string_view line, std::size_t changed_from) = 0;

   protected:
    ~Output() = default;
  };

  // One chunk of the sanitizer's text (markers positioned in it). At least one delivery
  // is made per call, an empty append when nothing else: output that was all escapes
  // still happened.
  void process(const SanitizedText& chunk, Output& out);

  // The bytes of the current line as displayed now (0 once it outgrew kMaxLine): what a
  // sink that starts now has none of.
  std::size_t line_bytes() const noexcept { return overlong_ ? 0 : line_.size(); }

  // The terminal's width in columns (0: lines never wrap). A resize takes effect from the
  // next byte, as on a terminal that does not reflow.
  void set_columns(std::size_t columns) noexcept { columns_ = columns; }

 private:
  void process_slowly(const SanitizedText& chunk, Output& out);
  void mirror_appended(std::string_view text);
  // The cursor's column counted from the line's start, across its rows (computed when a
  // chunk first needs it, then kept up to date through the chunk).
  std::size_t cursor_cell();
  // The column, counted from the line's start, where the cursor's row begins.
  std::size_t row_start_cell();
  // The byte of line_ where column `cell` begins (past the end: the end plus the columns).
  std::size_t byte_at_cell(std::size_t cell) const;

  std::string line_;        // the current line, as displayed, while it fits kMaxLine
  std::size_t cursor_ = 0;  // byte offset in line_ (a character boundary)
  bool overlong_ = false;   // the current line outgrew kMaxLine: appended as is
  std::size_t columns_ = 0;  // the terminal's width; 0: no wrap
  // The cursor was last put where it is by a return or a backspace, not by writing: at a
  // row's first column it is there, not at the end of the row above waiting to wrap (a
  // terminal's pending wrap after writing the last column).
  bool placed_ = false;
  bool cell_known_ = false;  // cell_ is the cursor's column (the fast path's appends unset it)
  std::size_t cell_ = 0;
  SanitizedText segment_;   // the slow path's append in progress, reused
};

}  // namespace dshpty::text
