#include "text/tail_buffer.hpp"

#include <algorithm>

#include "text/utf8.hpp"

namespace dshpty::text {

TailBuffer::TailBuffer(std::size_t max_bytes) : ring_(std::max<std::size_t>(max_bytes, 1)) {}

void TailBuffer::append(std::string_view text) {
  append(text, static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')));
}

void TailBuffer::append(std::string_view text, std::size_t newlines) {
  if (text.empty()) return;
  lines_ += newlines;
  if (line_before_ != 0 && newlines > 0) line_before_ = 0;
  ring_.append_keeping_newest(text);
}

std::size_t TailBuffer::rewrite_line(std::string_view line, std::size_t changed_from) {
  std::uint64_t cut = ring_.end();
  while (cut > ring_.begin() && ring_.at(cut - 1) != '\n') --cut;
  ring_.truncate(cut);
  taken_ = std::min(taken_, cut);
  // The line began before clear(): what came before is not this buffer's while it stands.
  line_before_ = std::min({line_before_, changed_from, line.size()});
  line.remove_prefix(line_before_);
  append(line);
  return line.size();
}

// Bytes leave the ring at its front (dropped) or its end (a rewritten line, which holds no
// newline): the newlines not held were dropped.
std::uint64_t TailBuffer::dropped_lines() const noexcept {
  return lines_ - ring_.count(ring_.begin(), ring_.end(), '\n');
}

void TailBuffer::clear(std::size_t line_before) noexcept {
  line_before_ = line_before;
  ring_.reset_at(ring_.end());
  start_ = taken_ = ring_.end();
  lines_ = 0;
}

std::string TailBuffer::text() const {
  std::string out;
  ring_.copy_to(ring_.begin(), ring_.end(), out);
  return out;
}

OutputDelta TailBuffer::take_delta() {
  OutputDelta delta;
  std::uint64_t from = std::max(taken_, ring_.begin());
  delta.truncated = from > taken_;
  delta.dropped_bytes = from - std::min(from, taken_);
  ring_.copy_to(from, ring_.end(), delta.text);
  taken_ = ring_.end();
  return delta;
}

}  // namespace dshpty::text
