// The start offsets of the scrollback's retained lines, oldest first: a growable circular
// array, so evicting the oldest line is O(1) and the index never holds more entries than
// the line cap allows plus a small slack (eviction is done in batches).
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dshpty::text {

class LineIndex {
 public:
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::size_t capacity() const noexcept { return slots_.size(); }

  // Precondition: i < size().
  std::uint64_t operator[](std::size_t i) const noexcept {
    assert(i < size_);
    std::size_t j = head_ + i;
    return slots_[j >= slots_.size() ? j - slots_.size() : j];
  }
  std::uint64_t& front() noexcept {
    assert(size_ > 0);
    return slots_[head_];
  }

  void push_back(std::uint64_t offset) {
    if (size_ == slots_.size()) grow();
    std::size_t j = head_ + size_;
    slots_[j >= slots_.size() ? j - slots_.size() : j] = offset;
    ++size_;
  }
  void pop_front() noexcept {
    assert(size_ > 0);
    if (++head_ == slots_.size()) head_ = 0;
    --size_;
  }
  // Forgets the oldest n. Precondition: n <= size().
  void pop_front(std::size_t n) noexcept {
    assert(n <= size_);
    head_ += n;
    if (head_ >= slots_.size()) head_ -= slots_.size();
    size_ -= n;
    if (size_ == 0) head_ = 0;
  }
  void pop_back() noexcept {
    assert(size_ > 0);
    if (--size_ == 0) head_ = 0;
  }
  void clear() noexcept { head_ = size_ = 0; }

 private:
  void grow() {
    std::vector<std::uint64_t> fresh(slots_.empty() ? 64 : slots_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i) fresh[i] = (*this)[i];
    slots_.swap(fresh);
    head_ = 0;
  }

  std::vector<std::uint64_t> slots_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace dshpty::text
