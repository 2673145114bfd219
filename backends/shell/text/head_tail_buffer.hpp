// HeadTailBuffer: one send's output, bounded at both ends: its first head_bytes and its
// newest tail_bytes (a TailBuffer, which also serves the consuming delta), with the count
// of bytes and lines dropped between them. A result is cut from it with cut_to_fit()
// (truncation.hpp), so a flood keeps the command and its first lines as well as the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dshpty/session.hpp"
#include "text/tail_buffer.hpp"
#include "text/truncation.hpp"

namespace dshpty::text {

class HeadTailBuffer {
 public:
  // Bounds of 0 are taken as 1 (the tail) and 0 (no head kept).
  HeadTailBuffer(std::size_t head_bytes, std::size_t tail_bytes);

  // Appends sanitized text (whole UTF-8 characters, as the sanitizer emits them).
  void append(std::string_view text);
  // The same, `newlines` being the count of '\n' in `text` (TailBuffer::append).
  void append(std::string_view text, std::size_t newlines);
  // The newest line, if no '\n' has ended it yet, now reads `line` (TailBuffer's rule; the
  // head gives up what it held of the line's part the tail still has).
  void rewrite_line(std::string_view line, std::size_t changed_from = 0);
  void clear(std::size_t line_before = 0) noexcept;

  // Everything since clear() in at most `cap` bytes (truncation.hpp).
  Cut cut(std::size_t cap) const { return cut(cap, {}, {}); }
  // The same with `before` ahead of everything and `after` behind it (a result's text: a
  // typed line, then the rows scrolled off, then the screen's).
  Cut cut(std::size_t cap, std::string_view before, std::string_view after) const;
  // The newest part alone, and whether anything before it was dropped.
  std::string tail_text() const { return tail_.text(); }
  bool truncated() const noexcept { return tail_.dropped_bytes() > head_.size(); }
  std::size_t memory_bytes() const noexcept { return head_.capacity() + tail_.memory_bytes(); }

  // The text since the previous take_delta() (or clear()), and marks it taken.
  OutputDelta take_delta() { return tail_.take_delta(); }

 private:
  // Keeps what of `text` still fits the head, when the head holds every byte before it.
  void extend_head(std::string_view text);

  std::size_t head_limit_;
  std::string head_;  // the first bytes since clear(), a prefix of the stream
  TailBuffer tail_;
};

}  // namespace dshpty::text
