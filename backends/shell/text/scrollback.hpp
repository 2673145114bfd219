// Scrollback: the session's retained output, bounded by lines and bytes, read in pages of
// lines counted back from the newest.
//
// What a line is:
//   The retained text is a sequence of lines. A line is its bytes up to and including its
//   '\n'; the newest line may be partial (no '\n' yet) and grows in place as text arrives.
//   A partial line counts as a line; text ending in '\n' has no empty line after it. So
//   "a\nb" is 2 lines ("a\n", "b"), "a\n" is 1, "" is 0.
//   Lines are numbered from 0, the oldest retained line; eviction renumbers them.
//
// Bounds (both hold after every append; memory never exceeds them):
//   - at most max_lines lines and max_bytes bytes. The oldest whole lines are evicted
//     first. Only a single line longer than max_bytes is cut inside itself: its head is
//     dropped (at a UTF-8 boundary), and the oldest retained line is then a fragment.
//     Precisely: the retained text starts at the earliest line start from which the rest
//     fits both caps, else at the earliest character boundary from which it fits; so the
//     result never depends on how the text was split into appends.
//   - storage is one circular byte buffer of at most max_bytes plus an index of at most
//     max_lines + min(max_lines, 1024) offsets (the line cap is enforced in batches within
//     an append). An append costs O(its length) amortised.
//
// A page (read): for ReadRequest{offset, count}, with T = total_lines:
//   line_end = max(0, T - offset); line_begin = max(0, line_end - count); the text is
//   lines [line_begin, line_end) concatenated exactly as retained (their '\n's included).
//   offset >= T gives an empty page with line_begin = line_end = 0.
//   If that text exceeds page_bytes, the page keeps its newest part and truncated is
//   true: whole lines are dropped from its start, and line_begin is the first line kept;
//   when even line_end - 1 alone is too long, the page is that line's last page_bytes
//   bytes (cut forward to a UTF-8 boundary, so it may be shorter, even empty) and
//   line_begin = line_end - 1. A non-empty range always yields at least one line, so a
//   reader paging with offset += line_end - line_begin always progresses.
//   offset < 0 or count < 1 is INVALID_ARGUMENT.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dshpty/result.hpp"
#include "dshpty/session.hpp"
#include "text/byte_ring.hpp"
#include "text/line_index.hpp"
#include "text/output_sink.hpp"

namespace dshpty::text {

struct ScrollbackLimits {
  std::size_t max_lines = 10'000;
  std::size_t max_bytes = 4u << 20;
  std::size_t page_bytes = 256u << 10;
};

class Scrollback final : public OutputSink {
 public:
  // Limits of 0 are taken as 1 (a scrollback that keeps nothing is not a scrollback).
  explicit Scrollback(ScrollbackLimits limits = {});

  // Appends sanitized text (whole UTF-8 characters, as the sanitizer emits them: cuts are made at
  // character boundaries).
  void append(std::string_view text);
  // The newest line, if no '\n' has ended it yet, is replaced by `line` (appended when
  // the text ends in '\n'). Lines a long partial line evicted do not come back.
  void rewrite_line(std::string_view line);
  // As an output sink: every chunk's text, every rewrite.
  void on_text(const SanitizedText& chunk) override { append(chunk.text); }
  void on_line_rewrite(std::string_view line, std::size_t) override { rewrite_line(line); }
  // A page, as described above. Fails INVALID_ARGUMENT for offset < 0 or count < 1.
  Result<ReadPage> read(const ReadRequest& request) const;

  std::int64_t total_lines() const noexcept { return static_cast<std::int64_t>(lines_.size()); }
  std::size_t retained_bytes() const noexcept { return bytes_.size(); }
  // Storage held: the byte buffer plus the line index (for the memory-bound tests).
  std::size_t memory_bytes() const noexcept {
    return bytes_.capacity() + lines_.capacity() * sizeof(std::uint64_t);
  }
  const ScrollbackLimits& limits() const noexcept { return limits_; }
  // Every retained byte, oldest first (for tests).
  std::string text() const;

 private:
  void evict_oldest_lines(std::size_t n) noexcept;
  std::uint64_t line_end_offset(std::size_t line) const noexcept;

  ScrollbackLimits limits_;
  ByteRing bytes_;
  LineIndex lines_;  // lines_[0] == bytes_.begin() whenever anything is retained
};

}  // namespace dshpty::text
