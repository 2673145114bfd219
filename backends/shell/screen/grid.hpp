// The emulator's grid: characters only (a model reads text, not colours), one buffer per
// screen. A row costs nothing until something is written to it, and a scroll of the whole
// screen moves the ring's top instead of any cell, so a flood of `seq` output costs a
// pointer step per line, not a copy of the screen (libvterm's own screen layer copies every
// cell of every row per scrolled line: 1.7 MiB/s on `seq`, screen.md).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "screen/cell_bytes.hpp"

namespace dshpty::screen {

struct Rect {
  unsigned start_row, end_row, start_col, end_col;  // half-open
};

class Grid {
 public:
  Grid(unsigned rows, unsigned cols);

  unsigned rows() const noexcept { return static_cast<unsigned>(rows_.size()); }
  unsigned cols() const noexcept { return cols_; }

  // One character cell: `chars` is a base character and its combining marks (non-empty);
  // width 2 also takes the next cell.
  void put(unsigned row, unsigned col, std::u32string_view chars, unsigned width);
  // A run of printable ASCII at (row, col..col+text.size()), all within the row. Inline
  // when it cuts no wide character and the row has no marks: a flood's every line.
  void put_ascii(unsigned row, unsigned col, std::string_view text) {
    Row& r = at(row);
    char32_t* cells = cells_of(r);
    if (text.empty()) return;
    const unsigned end = col + static_cast<unsigned>(text.size());
    if (r.marks || cells[col] == kWideTail || (end < cols_ && cells[end] == kWideTail)) {
      put_ascii_over(r, col, text);
      return;
    }
    widen_ascii(text.data(), static_cast<unsigned>(text.size()), cells + col);
    if (end > r.used) r.used = end;
  }
  void erase(Rect rect);
  // Copy src's cells to dest (same size; they may overlap).
  void move(Rect dest, Rect src);
  // Rows start..end-1, full width, move up by `lines` (down when negative); the rows
  // uncovered are blank. A flood's scroll (the whole screen up a line) is inline.
  void scroll(unsigned start_row, unsigned end_row, int lines) {
    if (lines == 1 && start_row == 0 && end_row >= rows() && rows() > 1) {
      clear_row(at(0));
      top_ = index(1);
      return;
    }
    scroll_rows(start_row, end_row, lines);
  }
  // The new size, keeping what fits, top-left anchored; first drops `drop_top` rows.
  void resize(unsigned rows, unsigned cols, unsigned drop_top);
  // Nothing written on the row (a shrink keeps the rows down to the last written one).
  bool blank_row(unsigned row) const;

  // Trailing spaces trimmed, trailing blank rows dropped, wide characters once. UTF-8.
  std::vector<std::string> lines() const;

  // A tab the output wrote moved the cursor from `from` to `to` on `row`: while the cells
  // it crossed stay blank, the row's text reads it as a tab (row_text), the screen as blanks.
  void mark_tab(unsigned row, unsigned from, unsigned to);
  // The row continues the one above it: the cursor wrapped into it at the margin.
  void set_continued(unsigned row, bool continued);
  bool continued(unsigned row) const { return at(row).continued; }
  // The row's text for a result, from column `from`: wide characters once, a tab as '\t',
  // trailing spaces dropped unless `keep_trailing` (a wrapped row's blanks are part of its
  // line); padded with spaces to `min_end` (the cursor's column: a prompt's trailing blank).
  void row_text(unsigned row, unsigned from, bool keep_trailing, unsigned min_end, std::string& out) const;
  // row_text's text (min_end 0) written to `out`, which has room for cols() bytes, when the
  // row holds only blanks and printable ASCII (a flood's rows): its length. -1 otherwise,
  // nothing written.
  // Inline: a flood reads a row through here per line.
  int plain_text(unsigned row, unsigned from, bool keep_trailing, char* out) const {
    const Row& r = at(row);
    if (!r.plain) return -1;
    const char32_t* cells = r.cells.get();
    unsigned end = r.used;
    if (!keep_trailing) {
      while (end > from && (cells[end - 1] == kBlank || cells[end - 1] == U' ')) --end;
    }
    char* p = out;
    if (end > from) {
      narrow_plain(cells + from, end - from, p);
      p += end - from;
    }
    if (keep_trailing) {
      // Every cell to the margin: the line goes on in the next row.
      for (unsigned col = std::max(std::min(r.used, cols_), from); col < cols_; ++col) *p++ = ' ';
    }
    return static_cast<int>(p - out);
  }
  // The last row anything is written on, or -1.
  int last_written_row() const;
  std::size_t memory_bytes() const noexcept;

 private:
  // A cell holds a code point; kWide flags a wide character's first cell and kWideTail is
  // its second; kCombined flags a base character whose marks are in the row's `marks`.
  // A half without its other half (moved or cut apart) reads as a blank.
  static constexpr char32_t kBlank = 0;  // narrow_plain reads 0 as a blank
  static_assert(kBlank == 0);
  static constexpr char32_t kWideTail = 0x110000;
  static constexpr char32_t kCombined = 0x80000000;
  static constexpr char32_t kWide = 0x40000000;
  // A tab's first cell and the blanks it crossed (mark_tab).
  static constexpr char32_t kTab = 0x110001;
  static constexpr char32_t kTabFill = 0x110002;

  using Marks = std::map<unsigned, std::u32string>;
  // 24 bytes until written: an idle 40-row screen's rows cost under 1 KiB.
  struct Row {
    std::unique_ptr<char32_t[]> cells;  // cols() cells once written; null: blank
    std::unique_ptr<Marks> marks;       // combining marks by column, when any
    // Cells at or past this are blank: clearing a row costs what was written on it (a `yes`
    // line is one cell of 160, and a flood clears a row per line).
    unsigned used = 0;
    bool continued = false;  // set_continued
    // Only blanks and printable ASCII were written since the row was cleared: its text is
    // its cells narrowed, so a flood's rows scrolling off read in one copy (row_text).
    bool plain = true;
  };

  // The ring's row `row` (row < rows()): a compare, not a division, on the flood path.
  unsigned index(unsigned row) const noexcept {
    unsigned i = top_ + row;
    return i >= rows_.size() ? i - static_cast<unsigned>(rows_.size()) : i;
  }
  Row& at(unsigned row) { return rows_[index(row)]; }
  const Row& at(unsigned row) const { return rows_[index(row)]; }
  char32_t* cells_of(Row& row) {
    if (!row.cells) row.cells = std::make_unique<char32_t[]>(cols_);  // zeroed: kBlank
    return row.cells.get();
  }
  static Marks& marks_of(Row& row);
  static char32_t scalar(char32_t c) noexcept;
  void set(Row& row, unsigned col, char32_t cell);
  void clear_row(Row& row) {
    // Keeps the allocation: a flood clears and rewrites the same rows.
    if (row.cells) std::fill(row.cells.get(), row.cells.get() + row.used, kBlank);
    row.used = 0;
    row.marks.reset();
    row.continued = false;
    row.plain = true;
  }
  void scroll_rows(unsigned start_row, unsigned end_row, int lines);
  void put_ascii_over(Row& row, unsigned col, std::string_view text);
  void plain_row_text(unsigned row, unsigned from, bool keep_trailing, unsigned min_end, std::string& out) const;

  std::vector<Row> rows_;
  unsigned top_ = 0;  // the ring's first row
  unsigned cols_;
};

}  // namespace dshpty::screen
