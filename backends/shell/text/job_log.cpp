#include "text/job_log.hpp"

#include <algorithm>

#include "text/utf8.hpp"

namespace dshpty::text {

JobLog::JobLog(std::size_t window) : ring_(std::max<std::size_t>(window, 1)) {}

void JobLog::append(std::string_view text) {
  if (text.empty()) return;
  ring_.append_keeping_newest(text);  // a chunk longer than the window: only its tail is stored
}

Result<JobRead> JobLog::read(std::uint64_t offset, std::size_t max_bytes) const {
  if (offset > ring_.end())
    return make_error(Code::INVALID_ARGUMENT, "offset " + std::to_string(offset) +
                                                  " is past the job's output (" +
                                                  std::to_string(ring_.end()) + " bytes)");
  if (max_bytes == 0) return make_error(Code::INVALID_ARGUMENT, "max_bytes must be at least 1");
  JobRead out;
  std::uint64_t from = offset;
  if (from < ring_.begin()) {
    out.dropped_bytes = ring_.begin() - from;
    from = ring_.begin();
  } else {
    // An offset inside a character (no read returned it) reads from the next one; the
    // bytes skipped are counted, so delta + dropped_bytes always spans offset..next_offset.
    from = ring_.boundary_at_or_after(from);
    out.dropped_bytes = from - offset;
  }
  std::uint64_t to = std::min<std::uint64_t>(ring_.end(), from + max_bytes);
  if (to < ring_.end()) {
    // Back to the start of the character `to` falls in; a lone character wider than
    // max_bytes is given whole instead, so the reader moves on.
    std::uint64_t cut = to;
    for (int i = 0; i < 3 && cut > from && utf8::is_continuation(ring_.at(cut)); ++i) --cut;
    if (cut == from) cut = ring_.boundary_at_or_after(from + 1);
    to = cut;
  }
  ring_.copy_to(from, to, out.text);
  out.next_offset = to;
  return out;
}

}  // namespace dshpty::text
