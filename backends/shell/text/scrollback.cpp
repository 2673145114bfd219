#include "text/scrollback.hpp"

#include <algorithm>
#include <cstring>

#include "dshpty/errors.hpp"
#include "text/utf8.hpp"

namespace dshpty::text {
namespace {

ScrollbackLimits at_least_one(ScrollbackLimits limits) {
  limits.max_lines = std::max<std::size_t>(limits.max_lines, 1);
  limits.max_bytes = std::max<std::size_t>(limits.max_bytes, 1);
  limits.page_bytes = std::max<std::size_t>(limits.page_bytes, 1);
  return limits;
}

}  // namespace

Scrollback::Scrollback(ScrollbackLimits limits)
    : limits_(at_least_one(limits)), bytes_(limits_.max_bytes) {}

std::uint64_t Scrollback::line_end_offset(std::size_t line) const noexcept {
  return line + 1 < lines_.size() ? lines_[line + 1] : bytes_.end();
}


void Scrollback::rewrite_line(std::string_view line) {
  if (bytes_.size() > 0 && bytes_.at(bytes_.end() - 1) != '\n') {
    // lines_ is never empty while bytes are retained; its newest entry starts the partial
    // line (or is the cut head of one).
    bytes_.truncate(lines_[lines_.size() - 1]);
    lines_.pop_back();
  }
  append(line);
}

// Appending keeps one rule, whatever the chunking: after it, the retained text starts at
// the earliest line start from which the rest fits in max_bytes, or, when the newest line
// alone is too long, at the earliest character boundary from which it fits. (Appending
// byte by byte with lazy eviction of the oldest line ends in exactly this state, so the
// result never depends on how the stream was cut into chunks.)
void Scrollback::append(std::string_view text) {
  if (text.empty()) return;
  bool starts_line = bytes_.size() == 0 || bytes_.at(bytes_.end() - 1) == '\n';
  const std::uint64_t old_end = bytes_.end();
  const std::uint64_t new_end = old_end + text.size();
  if (new_end - bytes_.begin() > limits_.max_bytes) {
    const std::uint64_t fit = new_end - limits_.max_bytes;  // the earliest offset that fits
    // A retained line starting at or after `fit`?
    std::size_t lo = 0, hi = lines_.size();
    while (lo < hi) {
      std::size_t mid = lo + (hi - lo) / 2;
      if (lines_[mid] >= fit)
        hi = mid;
      else
        lo = mid + 1;
    }
    if (lo < lines_.size()) {
      evict_oldest_lines(lo);
    } else {
      // A line starting inside the new text at or after `fit`?
      std::size_t keep = text.size();
      const std::size_t first = fit > old_end ? static_cast<std::size_t>(fit - old_end) : 0;
      if (first == 0 && starts_line) {
        keep = 0;
      } else {
        const std::size_t from = first == 0 ? 0 : first - 1;  // a '\n' here starts a line >= fit
        if (const void* hit = std::memchr(text.data() + from, '\n', text.size() - from))
          keep = static_cast<std::size_t>(static_cast<const char*>(hit) - text.data()) + 1;
      }
      if (keep < text.size() || fit >= old_end) {
        // Everything retained goes; so does the new text's head.
        if (keep >= text.size()) keep = utf8::boundary_at_or_after(text, first);  // cut the line
        bytes_.reset_at(old_end + keep);
        lines_.clear();
        text.remove_prefix(keep);
        if (text.empty()) return;
        starts_line = true;
      } else {
        // The newest line, begun before the new text and continued by it, is too long:
        // cut it at the first character boundary that fits.
        std::uint64_t cut = bytes_.boundary_at_or_after(fit);
        bytes_.drop_front(static_cast<std::size_t>(cut - bytes_.begin()));
        lines_.clear();
        if (bytes_.size() > 0) lines_.push_back(bytes_.begin());
        else starts_line = true;
      }
    }
  }

  const std::uint64_t base = bytes_.end();
  bytes_.append(text);
  // The line cap is enforced in batches: the index may run `slack` entries over it within
  // one append, then the oldest lines go in one step (not one eviction per line of `yes`).
  const std::size_t slack = std::min<std::size_t>(limits_.max_lines, 1024);
  auto add_line = [&](std::uint64_t start) {
    lines_.push_back(start);
    if (lines_.size() > limits_.max_lines + slack) evict_oldest_lines(lines_.size() - limits_.max_lines);
  };
  if (starts_line) add_line(base);
  // Every '\n' before the last byte starts a line. Words without one are skipped eight
  // bytes at a time (memchr per line costs more than the line when lines are short).
  const auto* data = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t last = text.size() - 1;  // a '\n' here starts no line (yet)
  std::size_t i = 0;
  constexpr std::uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  while (i < last) {
    if (last - i >= 8) {
      std::uint64_t w;
      std::memcpy(&w, data + i, sizeof w);
      w ^= ones * '\n';  // a '\n' byte becomes zero
      if (((w - ones) & ~w & highs) == 0) {
        i += 8;
        continue;
      }
    }
    if (data[i] == '\n') add_line(base + i + 1);
    ++i;
  }
  if (lines_.size() > limits_.max_lines) evict_oldest_lines(lines_.size() - limits_.max_lines);
}

void Scrollback::evict_oldest_lines(std::size_t n) noexcept {
  if (n == 0) return;
  const std::uint64_t keep_from = n < lines_.size() ? lines_[n] : bytes_.end();
  bytes_.drop_front(static_cast<std::size_t>(keep_from - bytes_.begin()));
  lines_.pop_front(n);
}

Result<ReadPage> Scrollback::read(const ReadRequest& request) const {
  if (request.offset < 0)
    return make_error(Code::INVALID_ARGUMENT, "read offset must be >= 0");
  if (request.count < 1)
    return make_error(Code::INVALID_ARGUMENT, "read count must be >= 1");

  ReadPage page;
  const std::int64_t total = total_lines();
  page.total_lines = total;
  if (request.offset >= total) return page;  // past the end: empty, at line 0

  const std::int64_t end_line = total - request.offset;
  std::int64_t begin_line = request.count >= end_line ? 0 : end_line - request.count;
  const std::uint64_t to = line_end_offset(static_cast<std::size_t>(end_line - 1));
  std::uint64_t from = lines_[static_cast<std::size_t>(begin_line)];

  if (to - from > limits_.page_bytes) {
    page.truncated = true;
    // The oldest line from which the rest of the page fits (starts only grow).
    std::size_t lo = static_cast<std::size_t>(begin_line);
    std::size_t hi = static_cast<std::size_t>(end_line);
    while (lo < hi) {
      std::size_t mid = lo + (hi - lo) / 2;
      if (to - lines_[mid] <= limits_.page_bytes)
        hi = mid;
      else
        lo = mid + 1;
    }
    if (lo < static_cast<std::size_t>(end_line)) {
      begin_line = static_cast<std::int64_t>(lo);
      from = lines_[lo];
    } else {
      // The newest line alone is too long: its tail, never half a character.
      begin_line = end_line - 1;
      from = bytes_.boundary_at_or_after(to - limits_.page_bytes);
    }
  }
  bytes_.copy_to(from, to, page.text);
  page.line_begin = begin_line;
  page.line_end = end_line;
  return page;
}

std::string Scrollback::text() const {
  std::string out;
  bytes_.copy_to(bytes_.begin(), bytes_.end(), out);
  return out;
}

}  // namespace dshpty::text
