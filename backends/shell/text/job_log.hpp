// JobLog: a job's output for any number of readers, each with its own offset. One byte
// log (sanitized text, whole UTF-8 characters) keeps the newest `window` bytes; offsets count
// from the job's first byte and never move, so a reader holds only a number. A reader that
// fell behind the window is told how many bytes it lost (dropped_bytes) and carries on from
// the oldest byte kept: never a silent gap. Reading moves nothing: the log has no cursor of
// its own (the send's one consuming cursor stays in TailBuffer).
//
// Storage is a ByteRing (text/byte_ring.hpp): appending and dropping the oldest bytes are
// O(bytes), reads copy only what they return. Pure: no I/O, no clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dshpty/result.hpp"
#include "text/byte_ring.hpp"

namespace dshpty::text {

struct JobRead {
  std::string text;                // whole UTF-8 characters, at most max_bytes (see read())
  std::uint64_t next_offset = 0;   // where the next read starts
  std::uint64_t dropped_bytes = 0; // bytes between the offset asked and the first byte given
};

class JobLog {
 public:
  // Keeps the newest `window` bytes (a window of 0 is taken as 1).
  explicit JobLog(std::size_t window);

  // Appends sanitized output. The oldest bytes beyond the window are dropped, the cut made
  // at a character boundary (so a read never starts inside a character).
  void append(std::string_view text);

  // The bytes from `offset` on, at most `max_bytes` of them, cut back to a character
  // boundary (a character longer than max_bytes is given whole, so a reader always moves).
  // An offset behind the window reads from the oldest byte kept, with dropped_bytes saying
  // how many it missed. An offset inside a character (one no read returned) reads from the
  // next character, the bytes skipped counted in dropped_bytes too (text + dropped_bytes is
  // always next_offset - offset). INVALID_ARGUMENT for an offset past end() or a max_bytes of 0.
  Result<JobRead> read(std::uint64_t offset, std::size_t max_bytes) const;

  std::uint64_t begin() const noexcept { return ring_.begin(); }  // the oldest byte kept
  std::uint64_t end() const noexcept { return ring_.end(); }      // bytes ever appended
  std::size_t window() const noexcept { return ring_.limit(); }
  std::size_t memory_bytes() const noexcept { return ring_.capacity(); }

 private:
  ByteRing ring_;
};

}  // namespace dshpty::text
