#include "text/head_tail_buffer.hpp"

#include <algorithm>

#include "text/utf8.hpp"

namespace dshpty::text {

HeadTailBuffer::HeadTailBuffer(std::size_t head_bytes, std::size_t tail_bytes)
    : head_limit_(head_bytes), tail_(tail_bytes) {}

void HeadTailBuffer::extend_head(std::string_view text) {
  // The head is a prefix: once a byte went past it, nothing later may join it.
  if (head_.size() != tail_.total_bytes() || head_.size() >= head_limit_) return;
  head_.append(utf8::prefix(text, head_limit_ - head_.size()));
}

void HeadTailBuffer::append(std::string_view text) {
  extend_head(text);
  tail_.append(text);
}

void HeadTailBuffer::append(std::string_view text, std::size_t newlines) {
  extend_head(text);
  tail_.append(text, newlines);
}

void HeadTailBuffer::rewrite_line(std::string_view line, std::size_t changed_from) {
  line = line.substr(line.size() - tail_.rewrite_line(line, changed_from));
  // Where the rewritten line now starts, counted from clear(): what the head held from
  // there on is the old text of that line.
  const std::uint64_t line_start = tail_.total_bytes() - line.size();
  if (head_.size() > line_start) {
    head_.resize(static_cast<std::size_t>(line_start));
    head_.append(utf8::prefix(line, head_limit_ - head_.size()));
  }
}

void HeadTailBuffer::clear(std::size_t line_before) noexcept {
  head_.clear();
  tail_.clear(line_before);
}

Cut HeadTailBuffer::cut(std::size_t cap, std::string_view before, std::string_view after) const {
  const std::string tail = tail_.text().append(after);
  const std::uint64_t dropped = tail_.dropped_bytes();
  if (dropped <= head_.size()) {
    // Nothing lost: the head's bytes before the tail's start, then the tail.
    std::string head(before);
    head.append(std::string_view(head_).substr(0, static_cast<std::size_t>(dropped)));
    return cut_to_fit(head, {}, tail, cap);
  }
  const auto head_lines = static_cast<std::uint64_t>(std::count(head_.begin(), head_.end(), '\n'));
  const Omitted gap{dropped - head_.size(), tail_.dropped_lines() - std::min(tail_.dropped_lines(), head_lines)};
  return cut_to_fit(std::string(before).append(head_), gap, tail, cap);
}

}  // namespace dshpty::text
