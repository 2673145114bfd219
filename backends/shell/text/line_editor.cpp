#include "text/line_editor.hpp"

#include <algorithm>
#include <array>

#include "text/utf8.hpp"

namespace dshpty::text {
namespace {

// The bytes that end a run of plain text in the slow path.
constexpr std::array<bool, 256> kStops = [] {
  std::array<bool, 256> t{};
  t[static_cast<unsigned char>('\n')] = true;
  t[static_cast<unsigned char>(kReturn)] = true;
  t[static_cast<unsigned char>(kBackspace)] = true;
  t[static_cast<unsigned char>(kEraseToEnd)] = true;
  t[static_cast<unsigned char>(kEraseLine)] = true;
  t[static_cast<unsigned char>(kCursorForward)] = true;
  return t;
}();

// The length of the character starting at text[i] (1 for anything not a valid lead: the
// sanitizer emits only well-formed UTF-8, so that is ASCII).
std::size_t char_length(std::string_view text, std::size_t i) {
  const utf8::Lead lead = utf8::lead(static_cast<unsigned char>(text[i]));
  return std::min<std::size_t>(lead.length == 0 ? 1 : lead.length, text.size() - i);
}

}  // namespace

void LineEditor::process(const SanitizedText& chunk, Output& out) {
  // The common case: the cursor is at the end of the line and nothing moves it back.
  if ((overlong_ || cursor_ == line_.size()) && !chunk.line_controls) {
    out.append(chunk);
    mirror_appended(chunk.text);
    return;
  }
  process_slowly(chunk, out);
}

void LineEditor::mirror_appended(std::string_view text) {
  cell_known_ = false;
  if (!text.empty()) placed_ = false;
  std::size_t newline = text.rfind('\n');
  if (newline != std::string_view::npos) {
    line_.clear();
    overlong_ = false;
    text.remove_prefix(newline + 1);
  }
  if (overlong_) return;
  if (line_.size() + text.size() > kMaxLine) {
    overlong_ = true;
    line_.clear();
    cursor_ = 0;
    return;
  }
  line_.append(text);
  cursor_ = line_.size();
}

std::size_t LineEditor::cursor_cell() {
  if (!cell_known_) {
    std::size_t cells = 0;
    const std::size_t end = std::min(cursor_, line_.size());
    for (std::size_t j = 0; j < end; ++j)
      if (!utf8::is_continuation(static_cast<unsigned char>(line_[j]))) ++cells;
    cell_ = cells + (cursor_ > line_.size() ? cursor_ - line_.size() : 0);
    cell_known_ = true;
  }
  return cell_;
}

std::size_t LineEditor::row_start_cell() {
  if (columns_ == 0) return 0;
  const std::size_t cell = cursor_cell();
  // Written up to a row's last column, the cursor waits there to wrap: still that row.
  if (!placed_ && cell > 0 && cell % columns_ == 0) return cell - columns_;
  return cell - cell % columns_;
}

std::size_t LineEditor::byte_at_cell(std::size_t cell) const {
  std::size_t cells = 0;
  for (std::size_t j = 0; j < line_.size(); ++j) {
    if (utf8::is_continuation(static_cast<unsigned char>(line_[j]))) continue;
    if (cells == cell) return j;
    ++cells;
  }
  return line_.size() + (cell - cells);
}

void LineEditor::process_slowly(const SanitizedText& chunk, Output& out) {
  const std::string_view text = chunk.text;
  segment_.clear();
  bool delivered = false;
  bool dirty = false;  // line_ differs from what the sinks were given
  std::size_t changed_from = 0;  // while dirty: the first byte of line_ that differs
  auto change_at = [&](std::size_t at) {
    changed_from = dirty ? std::min(changed_from, at) : at;
    dirty = true;
  };
  std::size_t marker = 0;
  auto flush_segment = [&] {
    if (segment_.text.empty() && segment_.markers.empty()) return;
    out.append(segment_);
    segment_.clear();
    delivered = true;
  };
  // Blanks past the cursor at the line's end show as nothing, like the columns after them:
  // they go. What a terminal without an erase-in-line gets for one is blanks and as many
  // backspaces (readline on a dumb terminal clears the rest of the line after every prompt
  // this way: a screen width of them a send), and a progress line shortened by overwriting
  // with blanks reads the same. Blanks the cursor has passed (`Password: `) stay.
  auto drop_blanks_past_cursor = [&] {
    if (overlong_ || cursor_ >= line_.size()) return;
    std::size_t end = line_.size();
    while (end > cursor_ && line_[end - 1] == ' ') --end;
    if (end == line_.size()) return;
    change_at(end);
    line_.resize(end);
  };
  auto flush_line = [&] {
    drop_blanks_past_cursor();
    if (!dirty) return;
    flush_segment();
    out.rewrite(line_, std::min(changed_from, line_.size()));
    dirty = false;
    delivered = true;
  };
  // The cursor put back at the start of a row after the line's first (a return, or a
  // backspace that stopped there): the rows above stay as they are, so the line ends before
  // the cursor's row (its blanks at the end show as nothing), and that row is a line of its
  // own from here.
  auto end_line_at = [&](std::size_t row_start) {
    std::string row;
    if (row_start < line_.size()) {
      row.assign(line_, row_start);
      change_at(row_start);
      line_.resize(row_start);
    }
    std::size_t end = line_.size();
    while (end > 0 && line_[end - 1] == ' ') --end;
    if (end < line_.size()) {
      change_at(end);
      line_.resize(end);
    }
    cursor_ = line_.size();
    flush_line();
    segment_.text.push_back('\n');
    segment_.text.append(row);
    line_ = std::move(row);
  };

  for (std::size_t i = 0; i <= text.size();) {
    for (; marker < chunk.markers.size() && chunk.markers[marker].position <= i; ++marker) {
      segment_.markers.push_back(chunk.markers[marker]);
      segment_.markers.back().position = segment_.text.size();
    }
    if (i == text.size()) break;
    const char c = text[i];
    if (c == '\n') {
      flush_line();
      segment_.text.push_back('\n');
      line_.clear();
      cursor_ = 0;
      cell_ = 0;
      cell_known_ = true;
      overlong_ = false;
      ++i;
      continue;
    }
    if (c == kReturn || c == kBackspace || c == kEraseToEnd || c == kEraseLine || c == kCursorForward) {
      ++i;
      if (overlong_) continue;  // too long to edit: the line is appended as it comes
      if (c == kReturn) {
        const std::size_t row = row_start_cell();
        if (row > 0) end_line_at(byte_at_cell(row));
        cursor_ = 0;
        cell_ = 0;
        cell_known_ = true;
        placed_ = true;
      } else if (c == kBackspace) {
        // One character back, never past the start of the cursor's row; past the line's
        // end (the column an erase kept) one column. From a pending wrap (the row written
        // to its last column) back onto that column: what a program that counts on no wrap
        // means (readline on a dumb terminal clears to the margin with blanks and as many
        // backspaces, to land after its prompt), where xterm goes one column further.
        // Stopped at the start of a row after the first, the cursor is where a return
        // would have put it: the line ends above it, as after one.
        bool stopped = false;
        if (columns_) {
          const std::size_t row = row_start_cell();
          stopped = cursor_cell() == row;
          if (stopped && row > 0) {
            end_line_at(byte_at_cell(row));
            cursor_ = 0;
            cell_ = 0;
          }
        }
        if (!stopped && cursor_ > 0) {
          if (cursor_ > line_.size()) {
            --cursor_;
          } else {
            while (cursor_ > 0 && utf8::is_continuation(static_cast<unsigned char>(line_[--cursor_]))) {
            }
          }
          if (cell_known_) --cell_;
        }
        placed_ = true;
      } else if (c == kCursorForward) {
        // One column on, over the character there (it stays) or past the line's end (blanks
        // are made only if text comes, as after an erase).
        if (cursor_ < line_.size()) cursor_ += char_length(line_, cursor_);
        else ++cursor_;
        if (cell_known_) ++cell_;
        placed_ = true;
      } else if (c == kEraseToEnd) {
        if (cursor_ < line_.size()) {
          change_at(cursor_);
          line_.resize(cursor_);
        }
      } else {
        // The cursor's row goes, the cursor stays in its column: text written there lands
        // after blanks, which are only made if it comes (after a return, nothing is left
        // of the row).
        const std::size_t cell = cursor_cell();
        const std::size_t row = row_start_cell();
        const std::size_t at = byte_at_cell(row);
        if (at < line_.size()) {
          change_at(at);
          line_.resize(at);
          cursor_ = at + (cell - row);
        }
      }
      continue;
    }
    // A run of plain text, up to the next control or marker.
    std::size_t stop = i + 1;
    const std::size_t limit =
        marker < chunk.markers.size() ? std::min(text.size(), chunk.markers[marker].position) : text.size();
    while (stop < limit && !kStops[static_cast<unsigned char>(text[stop])]) ++stop;
    std::string_view run = text.substr(i, stop - i);
    i = stop;
    if (overlong_) {
      segment_.text.append(run);
      continue;
    }
    if (cursor_ > line_.size()) {
      // Blanks up to the cursor's column (it stayed there through an erase of the line).
      if (!dirty) segment_.text.append(cursor_ - line_.size(), ' ');
      line_.append(cursor_ - line_.size(), ' ');
    }
    if (!run.empty()) placed_ = false;
    // Overwrite what the cursor is over, character by character.
    if (!run.empty() && cursor_ < line_.size()) change_at(cursor_);
    while (!run.empty() && cursor_ < line_.size()) {
      const std::size_t length = char_length(run, 0);
      line_.replace(cursor_, char_length(line_, cursor_), run.substr(0, length));
      cursor_ += length;
      run.remove_prefix(length);
      if (cell_known_) ++cell_;
    }
    if (run.empty()) continue;
    // The rest extends the line.
    if (line_.size() + run.size() > kMaxLine) {
      // Too long to edit: from here the line is appended as it comes.
      flush_line();
      overlong_ = true;
      line_.clear();
      cursor_ = 0;
      cell_known_ = false;
      segment_.text.append(run);
      continue;
    }
    if (!dirty) segment_.text.append(run);
    line_.append(run);
    cursor_ += run.size();
    if (cell_known_)
      for (char byte : run)
        if (!utf8::is_continuation(static_cast<unsigned char>(byte))) ++cell_;
  }
  flush_line();
  if (!delivered || !segment_.text.empty() || !segment_.markers.empty()) {
    out.append(segment_);
    segment_.clear();
  }
}

}  // namespace dshpty::text
