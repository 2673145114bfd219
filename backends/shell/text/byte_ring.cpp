#include "text/byte_ring.hpp"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "text/utf8.hpp"

namespace dshpty::text {

std::size_t ByteRing::index_of(std::uint64_t offset) const noexcept {
  std::size_t i = head_ + static_cast<std::size_t>(offset - begin_);
  return i >= capacity_ ? i - capacity_ : i;
}

void ByteRing::grow(std::size_t needed) {
  // Doubling keeps growth amortised O(1) a byte; the limit caps what a runaway can pin. A
  // small start: an idle session's rings hold a prompt and a line editor's clear (a few
  // hundred bytes), and a thousand idle sessions should not pin 4 KiB for each ring.
  std::size_t cap = std::max<std::size_t>(capacity_ * 2, 256);
  cap = std::min(std::max(cap, needed), limit_);
  auto fresh = std::make_unique<char[]>(cap);
  if (size_ > 0) {
    std::size_t first = std::min(size_, capacity_ - head_);
    std::memcpy(fresh.get(), buf_.get() + head_, first);
    std::memcpy(fresh.get() + first, buf_.get(), size_ - first);
  }
  buf_ = std::move(fresh);
  capacity_ = cap;
  head_ = 0;
}

void ByteRing::append(std::string_view bytes) {
  assert(size_ + bytes.size() <= limit_);
  if (bytes.empty()) return;
  if (size_ + bytes.size() > capacity_) grow(size_ + bytes.size());
  std::size_t tail = index_of(end());
  std::size_t first = std::min(bytes.size(), capacity_ - tail);
  std::memcpy(buf_.get() + tail, bytes.data(), first);
  std::memcpy(buf_.get(), bytes.data() + first, bytes.size() - first);
  size_ += bytes.size();
}

void ByteRing::drop_front(std::size_t n) noexcept {
  assert(n <= size_);
  if (n == 0) return;
  head_ = index_of(begin_ + n);
  begin_ += n;
  size_ -= n;
}

void ByteRing::reset_at(std::uint64_t offset) noexcept {
  assert(offset >= end());
  begin_ = offset;
  size_ = 0;
  head_ = 0;
}

unsigned char ByteRing::at(std::uint64_t offset) const noexcept {
  assert(offset >= begin_ && offset < end());
  return static_cast<unsigned char>(buf_[index_of(offset)]);
}

void ByteRing::copy_to(std::uint64_t from, std::uint64_t to, std::string& out) const {
  assert(begin_ <= from && from <= to && to <= end());
  std::size_t n = static_cast<std::size_t>(to - from);
  if (n == 0) return;
  std::size_t i = index_of(from);
  std::size_t first = std::min(n, capacity_ - i);
  out.append(buf_.get() + i, first);
  out.append(buf_.get(), n - first);
}

std::uint64_t ByteRing::boundary_at_or_after(std::uint64_t offset) const noexcept {
  for (int i = 0; i < 3 && offset < end() && utf8::is_continuation(at(offset)); ++i) ++offset;
  return offset;
}

std::size_t ByteRing::count(std::uint64_t from, std::uint64_t to, char byte) const noexcept {
  assert(begin_ <= from && from <= to && to <= end());
  const std::size_t n = static_cast<std::size_t>(to - from);
  if (n == 0) return 0;
  const std::size_t i = index_of(from);
  const std::size_t first = std::min(n, capacity_ - i);
  const char* data = buf_.get();
  return static_cast<std::size_t>(std::count(data + i, data + i + first, byte) +
                                  std::count(data, data + (n - first), byte));
}

void ByteRing::append_keeping_newest(std::string_view text) {
  if (text.empty()) return;
  if (text.size() >= limit_) {
    const std::size_t skip = utf8::boundary_at_or_after(text, text.size() - limit_);
    reset_at(end() + skip);
    append(text.substr(skip));
    return;
  }
  if (size_ + text.size() > limit_) {
    const std::uint64_t cut = boundary_at_or_after(begin_ + (size_ + text.size() - limit_));
    drop_front(static_cast<std::size_t>(cut - begin_));
  }
  append(text);
}

}  // namespace dshpty::text
