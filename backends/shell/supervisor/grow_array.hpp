// A growable array of trivially copyable values on malloc/realloc. The helper avoids the
// C++ runtime (std::vector's length_error pulls in exceptions, std::string and the
// unwinder): there is one helper per session, so its resident size (about 256 KiB idle) is
// paid a thousand times over on a busy host.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <type_traits>

namespace dshpty::supervisor {

template <class T>
class GrowArray {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  GrowArray() = default;
  GrowArray(const GrowArray&) = delete;
  GrowArray& operator=(const GrowArray&) = delete;
  ~GrowArray() { std::free(data_); }

  // False when memory ran out; the array is unchanged then (callers skip that value, and
  // the next round of the walk finds it again).
  bool push(const T& value) {
    if (size_ == capacity_) {
      std::size_t capacity = capacity_ ? capacity_ * 2 : 64;
      void* grown = std::realloc(static_cast<void*>(data_), capacity * sizeof(T));
      if (!grown) return false;
      data_ = static_cast<T*>(grown);
      capacity_ = capacity;
    }
    data_[size_++] = value;
    return true;
  }

  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void pop() { --size_; }
  void truncate(std::size_t size) { size_ = size < size_ ? size : size_; }

 private:
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace dshpty::supervisor
