// The output a lingering session keeps for the next host (docs/outlive.md, "The ring"):
// the last `capacity` bytes the terminal printed, addressed by 64-bit offsets (the offset
// of a byte is the count of bytes the session printed before it, the same numbers OUT
// frames carry). When full, the oldest bytes are dropped: the program never blocks on a
// host that is gone. Pure and bounded; the helper feeds it, a host's attach reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dshpty::linger {

class ReplayRing {
 public:
  explicit ReplayRing(std::size_t capacity) : capacity_(capacity) {}

  void append(std::string_view bytes);
  // Offsets: [start(), end()) is held.
  std::uint64_t start() const noexcept { return end_ - held(); }
  std::uint64_t end() const noexcept { return end_; }
  std::size_t held() const noexcept { return data_.size() - head_; }
  std::size_t capacity() const noexcept { return capacity_; }
  // Up to `max` bytes from offset `from` (clamped into what is held); valid until the next
  // append.
  std::string_view view(std::uint64_t from, std::size_t max) const;
  // Memory the ring holds now (it grows with what it holds, up to about twice capacity
  // between compactions).
  std::size_t memory_bytes() const noexcept { return data_.capacity(); }

 private:
  std::size_t capacity_;
  std::string data_;
  std::size_t head_ = 0;  // data_[head_] is the byte at start()
  std::uint64_t end_ = 0;
};

}  // namespace dshpty::linger
