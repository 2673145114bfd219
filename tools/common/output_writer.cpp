#include "output_writer.hpp"

#include <unistd.h>

#include <cerrno>

namespace dshpty::tool {

OutputWriter::OutputWriter(struct ev_loop* loop, int fd) : loop_(loop), fd_(fd) {
  ev_io_init(&watcher_, &OutputWriter::on_writable, fd, EV_WRITE);
  watcher_.data = this;
}

OutputWriter::~OutputWriter() { ev_io_stop(loop_, &watcher_); }

void OutputWriter::write(std::string_view bytes) {
  if (broken_ || bytes.empty()) return;
  buffer_.append(bytes);
  if (!ev_is_active(&watcher_)) flush();
}

void OutputWriter::when_drained(std::function<void()> fn) {
  drained_.push_back(std::move(fn));
  notify_if_drained();
}

void OutputWriter::flush() {
  while (written_ < buffer_.size()) {
    const ssize_t n = ::write(fd_, buffer_.data() + written_, buffer_.size() - written_);
    if (n > 0) {
      written_ += static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      ev_io_start(loop_, &watcher_);
      return;
    }
    broken_ = true;  // EPIPE, EIO (terminal hung up): nobody will read the rest
    break;
  }
  ev_io_stop(loop_, &watcher_);
  buffer_.clear();
  written_ = 0;
  notify_if_drained();
}

void OutputWriter::notify_if_drained() {
  if (pending() != 0 || drained_.empty()) return;
  auto callbacks = std::move(drained_);
  drained_.clear();
  for (auto& fn : callbacks) fn();
}

void OutputWriter::on_writable(struct ev_loop*, ev_io* watcher, int) {
  static_cast<OutputWriter*>(watcher->data)->flush();
}

}  // namespace dshpty::tool
