// TailBuffer: one send's output, bounded to its newest max_bytes. It serves both views of
// that output from the same storage, so memory is at most max_bytes either way:
//   - the viewport (text(), truncated()): the last max_bytes of everything appended since
//     clear(), cut forward to a UTF-8 boundary; truncated when anything was dropped;
//   - the delta (take_delta()): what arrived since the previous take, truncated when some
//     of it was dropped before it could be taken (the reader was slower than the bound).
// It counts what it dropped (bytes and newlines), so a buffer that keeps the head as well
// (head_tail_buffer.hpp) can say what lies between: the newlines as they come (a caller
// that wrote them may say how many), those dropped only when asked (the newlines held
// taken from all), so a flood pays no count per drop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dshpty/session.hpp"
#include "text/byte_ring.hpp"

namespace dshpty::text {

class TailBuffer {
 public:
  // A bound of 0 is taken as 1.
  explicit TailBuffer(std::size_t max_bytes);

  // Appends sanitized text (whole UTF-8 characters, as the sanitizer emits them).
  void append(std::string_view text);
  // The same, `newlines` being the count of '\n' in `text`.
  void append(std::string_view text, std::size_t newlines);
  // The newest line, if no '\n' has ended it yet, is replaced by `line`: what the buffer
  // holds of it goes. A line that began before clear() keeps out the bytes that came before
  // (clear's `line_before`) for as long as they stay as they were (`changed_from`): a
  // send's output starts at the send's own bytes, not at an earlier program's unended
  // line. A delta already taken keeps the old text; the next one has the new. Returns the
  // bytes of `line` the buffer now holds (its end).
  std::size_t rewrite_line(std::string_view line, std::size_t changed_from = 0);
  // Forgets everything: a new send starts with an empty, untruncated viewport and delta.
  // `line_before`: the bytes of the terminal's current line so far, none of them this
  // buffer's.
  void clear(std::size_t line_before = 0) noexcept;
  // What clear() was told of the current line and still holds: 0 once a '\n' came.
  std::size_t line_before() const noexcept { return line_before_; }

  std::string text() const;
  bool truncated() const noexcept { return ring_.begin() > start_; }
  // Since clear(): every byte (as rewritten), the oldest ones dropped, and their newlines.
  std::uint64_t total_bytes() const noexcept { return ring_.end() - start_; }
  std::uint64_t dropped_bytes() const noexcept { return ring_.begin() - start_; }
  std::uint64_t dropped_lines() const noexcept;
  std::size_t size() const noexcept { return ring_.size(); }
  std::size_t memory_bytes() const noexcept { return ring_.capacity(); }

  // The text since the previous take_delta() (or clear()), and marks it taken.
  OutputDelta take_delta();

 private:

  ByteRing ring_;
  std::uint64_t start_ = 0;  // offset of the first byte since clear()
  std::uint64_t taken_ = 0;  // offset of the first byte not yet taken
  std::uint64_t lines_ = 0;  // newlines among the bytes appended since clear(), held or dropped
  std::size_t line_before_ = 0;      // the current line's bytes from before clear()
};

}  // namespace dshpty::text
