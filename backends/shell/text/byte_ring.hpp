// A FIFO of bytes in one circular buffer that never holds more than its limit, addressed by
// absolute stream offsets (the count of bytes ever appended before a byte). Scrollback and
// TailBuffer both keep "the newest part of a stream" in one, so dropping the oldest bytes
// is O(1) and an append costs O(its length): no erase-from-front memmove.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace dshpty::text {

class ByteRing {
 public:
  // The storage grows (doubling) as bytes arrive and never exceeds `limit` bytes.
  explicit ByteRing(std::size_t limit) noexcept : limit_(limit) {}

  std::uint64_t begin() const noexcept { return begin_; }  // offset of the oldest byte
  std::uint64_t end() const noexcept { return begin_ + size_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t limit() const noexcept { return limit_; }
  std::size_t capacity() const noexcept { return capacity_; }  // bytes of storage held

  // Precondition: size() + bytes.size() <= limit().
  void append(std::string_view bytes);
  // Appends `bytes` and drops whole UTF-8 characters from the front to stay within the
  // limit (of a chunk longer than the limit, only its own tail is stored).
  void append_keeping_newest(std::string_view bytes);
  // Forgets the bytes from `offset` on: the next byte appended has offset `offset`.
  // Precondition: begin() <= offset <= end().
  void truncate(std::uint64_t offset) noexcept { size_ = static_cast<std::size_t>(offset - begin_); }
  // Forgets the oldest n bytes. Precondition: n <= size().
  void drop_front(std::size_t n) noexcept;
  // Empties the ring; the next byte appended has offset `offset` (>= end()). For a chunk
  // larger than the limit, whose head is never stored.
  void reset_at(std::uint64_t offset) noexcept;

  // Precondition: begin() <= offset < end().
  unsigned char at(std::uint64_t offset) const noexcept;
  // Appends the bytes [from, to) to out. Precondition: begin() <= from <= to <= end().
  void copy_to(std::uint64_t from, std::uint64_t to, std::string& out) const;
  // How many of the bytes [from, to) equal `byte`. Precondition as copy_to().
  std::size_t count(std::uint64_t from, std::uint64_t to, char byte) const noexcept;
  // The first offset at or after `offset` (in [begin(), end()]) that starts a character.
  std::uint64_t boundary_at_or_after(std::uint64_t offset) const noexcept;

 private:
  void grow(std::size_t needed);
  std::size_t index_of(std::uint64_t offset) const noexcept;

  std::size_t limit_;
  std::unique_ptr<char[]> buf_;
  std::size_t capacity_ = 0;
  std::size_t head_ = 0;  // index in buf_ of the byte at begin_
  std::uint64_t begin_ = 0;
  std::size_t size_ = 0;
};

}  // namespace dshpty::text
