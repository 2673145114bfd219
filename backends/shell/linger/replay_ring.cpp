#include "linger/replay_ring.hpp"

#include <algorithm>

namespace dshpty::linger {

void ReplayRing::append(std::string_view bytes) {
  end_ += bytes.size();
  if (bytes.size() >= capacity_) {
    data_.assign(bytes.substr(bytes.size() - capacity_));
    head_ = 0;
    return;
  }
  data_.append(bytes);
  if (held() > capacity_) head_ += held() - capacity_;
  // Dropping moves a head index; the bytes before it go in one erase once they are as many
  // as the ring holds, so each byte is moved at most once more on average.
  if (head_ >= capacity_) {
    data_.erase(0, head_);
    head_ = 0;
  }
}

std::string_view ReplayRing::view(std::uint64_t from, std::size_t max) const {
  from = std::clamp(from, start(), end_);
  const std::size_t at = head_ + static_cast<std::size_t>(from - start());
  return std::string_view(data_).substr(at, std::min<std::size_t>(max, data_.size() - at));
}

}  // namespace dshpty::linger
