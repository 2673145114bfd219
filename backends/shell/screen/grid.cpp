#include "screen/grid.hpp"

#include <algorithm>
#include <cstdlib>

namespace dshpty::screen {
namespace {

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

}  // namespace

Grid::Grid(unsigned rows, unsigned cols) : rows_(rows), cols_(cols) {}

Grid::Marks& Grid::marks_of(Row& row) {
  if (!row.marks) row.marks = std::make_unique<Marks>();
  return *row.marks;
}

void Grid::set(Row& row, unsigned col, char32_t cell) {
  char32_t* cells = cells_of(row);
  if (cells[col] & kCombined) row.marks->erase(col);
  cells[col] = cell;
  if (cell != kBlank && (cell < U' ' || cell >= 0x7F)) row.plain = false;
  if (cell != kBlank && col >= row.used) row.used = col + 1;
}

bool Grid::blank_row(unsigned row) const {
  const Row& r = at(row);
  return !r.cells || std::all_of(r.cells.get(), r.cells.get() + r.used, [](char32_t c) { return c == kBlank; });
}

// A cell's flags and sentinels sit above Unicode's last code point, so only the grid may
// write them: anything else from the parser (libvterm 0.1 decodes 5- and 6-byte forms, and
// hands over a stale 32-bit value after some malformed input) is a replacement character.
char32_t Grid::scalar(char32_t c) noexcept {
  return c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF) ? U'\uFFFD' : c;
}

void Grid::put(unsigned row, unsigned col, std::u32string_view chars, unsigned width) {
  if (row >= rows() || col >= cols_ || chars.empty()) return;
  Row& r = at(row);
  char32_t* cells = cells_of(r);
  // Writing over half of a wide character blanks its other half, as a terminal shows it.
  if (cells[col] == kWideTail && col > 0 && (cells[col - 1] & kWide)) set(r, col - 1, kBlank);
  unsigned end = std::min(col + width, cols_);
  if (end < cols_ && cells[end] == kWideTail) set(r, end, kBlank);
  char32_t base = scalar(chars[0]) | (width > 1 ? kWide : 0);
  set(r, col, chars.size() > 1 ? (base | kCombined) : base);
  if (chars.size() > 1) {
    std::u32string& marks = marks_of(r)[col];
    marks.assign(chars.substr(1));
    for (char32_t& mark : marks) mark = scalar(mark);
  }
  for (unsigned c = col + 1; c < end; ++c) set(r, c, kWideTail);
}

void Grid::put_ascii_over(Row& r, unsigned col, std::string_view text) {
  char32_t* cells = r.cells.get();
  unsigned end = col + static_cast<unsigned>(text.size());
  if (cells[col] == kWideTail && col > 0 && (cells[col - 1] & kWide)) set(r, col - 1, kBlank);
  if (end < cols_ && cells[end] == kWideTail) set(r, end, kBlank);
  if (r.marks) r.marks->erase(r.marks->lower_bound(col), r.marks->lower_bound(end));
  widen_ascii(text.data(), static_cast<unsigned>(text.size()), cells + col);
  if (end > r.used) r.used = end;
}

void Grid::erase(Rect rect) {
  rect.end_row = std::min(rect.end_row, rows());
  rect.end_col = std::min(rect.end_col, cols_);
  for (unsigned row = rect.start_row; row < rect.end_row; ++row) {
    Row& r = at(row);
    if (!r.cells) continue;
    if (rect.start_col == 0 && rect.end_col == cols_) {
      clear_row(r);
      continue;
    }
    // A wide character cut in half goes whole, as a terminal shows it.
    if (rect.start_col > 0 && r.cells[rect.start_col] == kWideTail && (r.cells[rect.start_col - 1] & kWide)) {
      set(r, rect.start_col - 1, kBlank);
    }
    if (rect.end_col < cols_ && r.cells[rect.end_col] == kWideTail) set(r, rect.end_col, kBlank);
    for (unsigned col = rect.start_col; col < rect.end_col; ++col) set(r, col, kBlank);
  }
}

void Grid::move(Rect dest, Rect src) {
  // Read the source whole first: the two may overlap in either direction.
  struct Cell {
    char32_t value;
    std::u32string marks;
  };
  unsigned height = std::min(src.end_row - src.start_row, dest.end_row - dest.start_row);
  unsigned width = std::min(src.end_col - src.start_col, dest.end_col - dest.start_col);
  std::vector<std::vector<Cell>> copy(height);
  for (unsigned i = 0; i < height; ++i) {
    const Row& r = at(src.start_row + i);
    copy[i].resize(width, Cell{kBlank, {}});
    if (!r.cells) continue;
    for (unsigned j = 0; j < width; ++j) {
      char32_t value = r.cells[src.start_col + j];
      copy[i][j].value = value;
      if (value & kCombined) copy[i][j].marks = r.marks->at(src.start_col + j);
    }
  }
  for (unsigned i = 0; i < height; ++i) {
    Row& r = at(dest.start_row + i);
    for (unsigned j = 0; j < width; ++j) {
      set(r, dest.start_col + j, copy[i][j].value);
      if (copy[i][j].value & kCombined) marks_of(r)[dest.start_col + j] = copy[i][j].marks;
    }
  }
}

void Grid::scroll_rows(unsigned start_row, unsigned end_row, int lines) {
  end_row = std::min(end_row, rows());
  if (start_row >= end_row || lines == 0) return;
  unsigned height = end_row - start_row;
  unsigned count = static_cast<unsigned>(std::abs(lines));
  if (count >= height) {
    for (unsigned row = start_row; row < end_row; ++row) clear_row(at(row));
    return;
  }
  unsigned total = rows();
  if (start_row == 0 && end_row == total) {
    // The whole screen: turn the ring, then blank the rows that came round.
    if (lines > 0) {
      for (unsigned row = 0; row < count; ++row) clear_row(at(row));
      top_ = index(count);
    } else {
      top_ = index(total - count);
      for (unsigned row = 0; row < count; ++row) clear_row(at(row));
    }
    return;
  }
  if (lines > 0) {
    for (unsigned row = start_row; row + count < end_row; ++row) std::swap(at(row), at(row + count));
    for (unsigned row = end_row - count; row < end_row; ++row) clear_row(at(row));
  } else {
    for (unsigned row = end_row - 1; row >= start_row + count; --row) std::swap(at(row), at(row - count));
    for (unsigned row = start_row; row < start_row + count; ++row) clear_row(at(row));
  }
}

void Grid::resize(unsigned rows, unsigned cols, unsigned drop_top) {
  std::rotate(rows_.begin(), rows_.begin() + top_, rows_.end());
  top_ = 0;
  drop_top = std::min<unsigned>(drop_top, static_cast<unsigned>(rows_.size()));
  rows_.erase(rows_.begin(), rows_.begin() + drop_top);
  rows_.resize(rows);
  if (cols != cols_) {
    for (Row& r : rows_) {
      if (!r.cells) continue;
      bool splits_wide = cols < cols_ && r.cells[cols] == kWideTail;
      auto cells = std::make_unique<char32_t[]>(cols);
      std::copy(r.cells.get(), r.cells.get() + std::min(cols, cols_), cells.get());
      r.cells = std::move(cells);
      r.used = std::min(r.used, cols);
      if (r.marks) r.marks->erase(r.marks->lower_bound(cols), r.marks->end());
      if (splits_wide) {
        if (r.marks) r.marks->erase(cols - 1);
        r.cells[cols - 1] = kBlank;
      }
    }
    cols_ = cols;
  }
}

std::vector<std::string> Grid::lines() const {
  std::vector<std::string> out(rows());
  for (unsigned row = 0; row < rows(); ++row) {
    const Row& r = at(row);
    std::string& line = out[row];
    for (unsigned col = 0; col < r.used; ++col) {
      char32_t value = r.cells[col];
      bool lone_tail = value == kWideTail && (col == 0 || !(r.cells[col - 1] & kWide));
      bool lone_head = (value & kWide) && (col + 1 == cols_ || r.cells[col + 1] != kWideTail);
      if (value == kWideTail && !lone_tail) continue;
      if (value == kBlank || lone_tail || lone_head || value == kTab || value == kTabFill) {
        line += ' ';
        continue;
      }
      append_utf8(line, value & ~(kCombined | kWide));
      if (value & kCombined) {
        for (char32_t mark : r.marks->at(col)) append_utf8(line, mark);
      }
    }
    line.erase(line.find_last_not_of(' ') + 1);
  }
  while (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

void Grid::mark_tab(unsigned row, unsigned from, unsigned to) {
  if (row >= rows() || from >= to || to > cols_) return;
  Row& r = at(row);
  if (r.cells && std::any_of(r.cells.get() + from, r.cells.get() + std::min(to, r.used),
                             [](char32_t c) { return c != kBlank; })) {
    return;  // it crossed something written: the screen's cells are what they are
  }
  set(r, from, kTab);
  for (unsigned col = from + 1; col < to; ++col) set(r, col, kTabFill);
}

void Grid::set_continued(unsigned row, bool continued) {
  if (row < rows()) at(row).continued = continued;
}

int Grid::last_written_row() const {
  for (unsigned row = rows(); row > 0; --row) {
    if (!blank_row(row - 1)) return static_cast<int>(row - 1);
  }
  return -1;
}

void Grid::row_text(unsigned row, unsigned from, bool keep_trailing, unsigned min_end, std::string& out) const {
  const Row& r = at(row);
  if (r.plain) {
    plain_row_text(row, from, keep_trailing, min_end, out);
    return;
  }
  // Where the text up to the last cell that is not blank ends: in `out`, and on the grid.
  std::size_t kept_bytes = out.size();
  unsigned kept_col = from;
  unsigned col = from;
  if (col < r.used) {
    // The common row, printable ASCII and blanks, in one branch-free pass (rows scrolling
    // off in a flood come through here); a row with anything else is read cell by cell.
    const char32_t* cells = r.cells.get();
    const std::size_t base = out.size();
    const unsigned n = r.used - col;
    out.resize(base + n);
    char* p = out.data() + base;
    char32_t other = 0;  // non-zero: a cell that is neither printable ASCII nor blank
    for (unsigned i = 0; i < n; ++i) {
      const char32_t c = cells[col + i];
      other |= (c >= 0x7F) | (c != kBlank && c < U' ');
      p[i] = static_cast<char>(c == kBlank ? U' ' : c);
    }
    if (other == 0) {
      unsigned last = n;
      while (last > 0 && p[last - 1] == ' ') --last;
      if (last > 0) {
        kept_bytes = base + last;
        kept_col = col + last;
      }
      col = r.used;
    } else {
      out.resize(base);
    }
  }
  bool in_tab = false;  // after a tab: its blanks are the tab
  for (; col < r.used; ++col) {
    char32_t value = r.cells[col];
    if (value == kTabFill && in_tab) {
      kept_col = col + 1;
      continue;
    }
    in_tab = value == kTab;
    if (in_tab) {
      // A tab reads as one while its blanks still reach a tab stop (the default, every 8
      // columns); cut short by a character written over them, it reads as the blanks.
      unsigned end = col + 1;
      while (end < r.used && r.cells[end] == kTabFill) ++end;
      in_tab = end % 8 == 0 || end == cols_;
    }
    bool lone_tail = value == kWideTail && (col == 0 || !(r.cells[col - 1] & kWide));
    bool lone_head = (value & kWide) && (col + 1 == cols_ || r.cells[col + 1] != kWideTail);
    if (value == kWideTail && !lone_tail && col != from) {
      kept_col = col + 1;
      continue;
    }
    if (in_tab) {
      out += '\t';
    } else if (value == kBlank || lone_tail || lone_head || value == kTab || value == kTabFill || value == kWideTail) {
      out += ' ';
      continue;
    } else {
      append_utf8(out, value & ~(kCombined | kWide));
      if (value & kCombined) {
        for (char32_t mark : r.marks->at(col)) append_utf8(out, mark);
      }
    }
    kept_bytes = out.size();
    kept_col = col + 1;
  }
  if (keep_trailing) {
    // Every cell to the margin: the line goes on in the next row.
    const unsigned filled = std::max(std::min(r.used, cols_), from);
    if (filled < cols_) out.append(cols_ - filled, ' ');
    return;
  }
  out.resize(kept_bytes);
  if (min_end > kept_col) out.append(min_end - kept_col, ' ');
}

void Grid::plain_row_text(unsigned row, unsigned from, bool keep_trailing, unsigned min_end, std::string& out) const {
  const std::size_t base = out.size();
  out.resize(base + cols_);
  const int length = plain_text(row, from, keep_trailing, out.data() + base);
  out.resize(base + static_cast<std::size_t>(length));
  // Where the text ends on the grid: past the last cell kept, and never before `from`.
  const unsigned kept_col = from + static_cast<unsigned>(length);
  if (!keep_trailing && min_end > kept_col) out.append(min_end - kept_col, ' ');
}

std::size_t Grid::memory_bytes() const noexcept {
  std::size_t bytes = rows_.capacity() * sizeof(Row);
  for (const Row& r : rows_) {
    if (r.cells) bytes += cols_ * sizeof(char32_t);
    if (!r.marks) continue;
    bytes += sizeof(Marks);
    for (const auto& [col, marks] : *r.marks) bytes += 64 + marks.capacity() * sizeof(char32_t);
  }
  return bytes;
}

}  // namespace dshpty::screen
