#include "text/line_editor.hpp"

#include <algorithm>
#include <cstring>

#include "text/utf8.hpp"

namespace dshpty::text {
namespace {

bool has_line_controls(std::string_view text) {
  for (char c : text)
    if (c == kReturn || c == kEraseToEnd || c == kEraseLine) return true;
  return false;
}

// The length of the character starting at text[i] (1 for anything not a valid lead: the
// sanitizer emits only well-formed UTF-8, so that is ASCII).
std::size_t char_length(std::string_view text, std::size_t i) {
  const utf8::Lead lead = utf8::lead(static_cast<unsigned char>(text[i]));
  return std::min<std::size_t>(lead.length == 0 ? 1 : lead.length, text.size() - i);
}

}  // namespace

void LineEditor::process(const SanitizedText& chunk, Output& out) {
  // The common case: the cursor is at the end of the line and nothing moves it back.
  if ((overlong_ || cursor_ == line_.size()) && !has_line_controls(chunk.text)) {
    out.append(chunk);
    mirror_appended(chunk.text);
    return;
  }
  process_slowly(chunk, out);
}

void LineEditor::mirror_appended(std::string_view text) {
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

void LineEditor::process_slowly(const SanitizedText& chunk, Output& out) {
  const std::string_view text = chunk.text;
  segment_.clear();
  bool delivered = false;
  bool dirty = false;  // line_ differs from what the sinks were given
  std::size_t marker = 0;
  auto flush_segment = [&] {
    if (segment_.text.empty() && segment_.markers.empty()) return;
    out.append(segment_);
    segment_.clear();
    delivered = true;
  };
  auto flush_line = [&] {
    if (!dirty) return;
    flush_segment();
    out.rewrite(line_);
    dirty = false;
    delivered = true;
  };

  for (std::size_t i = 0; i <= text.size();) {
    for (; marker < chunk.markers.size() && chunk.markers[marker].position <= i; ++marker)
      segment_.markers.push_back({segment_.text.size(), chunk.markers[marker].status});
    if (i == text.size()) break;
    const char c = text[i];
    if (c == '\n') {
      flush_line();
      segment_.text.push_back('\n');
      line_.clear();
      cursor_ = 0;
      overlong_ = false;
      ++i;
      continue;
    }
    if (overlong_) {
      if (c != kReturn && c != kEraseToEnd && c != kEraseLine) segment_.text.push_back(c);
      ++i;
      continue;
    }
    if (c == kReturn) {
      cursor_ = 0;
      ++i;
      continue;
    }
    if (c == kEraseToEnd) {
      if (cursor_ < line_.size()) {
        line_.resize(cursor_);
        dirty = true;
      }
      ++i;
      continue;
    }
    if (c == kEraseLine) {
      // The cursor stays in its column: text written there lands after blanks, which are
      // only made if it comes (after a return, nothing is left of the line).
      std::size_t columns = 0;
      for (std::size_t j = 0; j < std::min(cursor_, line_.size()); ++j)
        if (!utf8::is_continuation(static_cast<unsigned char>(line_[j]))) ++columns;
      if (cursor_ > line_.size()) columns += cursor_ - line_.size();
      if (!line_.empty()) dirty = true;
      line_.clear();
      cursor_ = columns;
      ++i;
      continue;
    }
    const std::size_t length = char_length(text, i);
    const std::string_view ch = text.substr(i, length);
    i += length;
    if (cursor_ > line_.size()) {
      // Blanks up to the cursor's column (it stayed there through an erase of the line).
      if (!dirty) segment_.text.append(cursor_ - line_.size(), ' ');
      line_.append(cursor_ - line_.size(), ' ');
    }
    if (cursor_ == line_.size()) {
      if (line_.size() + length > kMaxLine) {
        // Too long to edit: from here the line is appended as it comes.
        flush_line();
        overlong_ = true;
        line_.clear();
        cursor_ = 0;
        segment_.text.append(ch);
        continue;
      }
      if (!dirty) segment_.text.append(ch);
      line_.append(ch);
      cursor_ += length;
      continue;
    }
    // Overwrite the character under the cursor.
    const std::size_t old = char_length(line_, cursor_);
    line_.replace(cursor_, old, ch);
    cursor_ += length;
    dirty = true;
  }
  flush_line();
  if (!delivered || !segment_.text.empty() || !segment_.markers.empty()) {
    out.append(segment_);
    segment_.clear();
  }
}

}  // namespace dshpty::text
