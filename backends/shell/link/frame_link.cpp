#include "link/frame_link.hpp"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "link/write_all.hpp"

namespace dshpty::link {

namespace {
constexpr std::size_t kReadChunk = 64 * 1024;
constexpr int kReadsPerEvent = 8;  // bounded, so a flood cannot starve the loop
}  // namespace

FrameLink::FrameLink(struct ev_loop* loop, Events& events) : loop_(loop), events_(events) {
  ev_io_init(&read_io_, &FrameLink::on_readable, -1, EV_READ);
  ev_io_init(&write_io_, &FrameLink::on_writable, -1, EV_WRITE);
  ev_prepare_init(&flush_before_poll_, &FrameLink::on_before_poll);
  read_io_.data = write_io_.data = flush_before_poll_.data = this;
}

void FrameLink::open(proc::UniqueFd socket, frames::FrameReader reader) {
  const int fd = socket.get();
  close();
  owned_ = std::move(socket);
  reader_ = std::move(reader);
  start(fd, fd, true);
}

void FrameLink::open(int in, int out) {
  close();
  start(in, out, false);
}

void FrameLink::start(int in, int out, bool socket) {
  in_ = in;
  out_ = out;
  socket_ = socket;
  why_broken_.clear();
  reading_ = true;
  ev_io_set(&read_io_, in_, EV_READ);
  ev_io_set(&write_io_, out_, EV_WRITE);
  ev_io_start(loop_, &read_io_);
  touch();
}

void FrameLink::touch() {
  // The loop's cached time may be as old as its last poll (a host busy since, a start
  // right after a slow setup): a silence bound counts from now, not from then.
  ev_now_update(loop_);
  last_rx_ = last_tx_ = ev_now(loop_);
}

void FrameLink::stop_reading() {
  reading_ = false;
  ev_io_stop(loop_, &read_io_);
}

void FrameLink::break_link(std::string why) {
  stop_reading();
  if (why_broken_.empty()) why_broken_ = std::move(why);
}

void FrameLink::stop() {
  stop_reading();
  ev_io_stop(loop_, &write_io_);
  ev_prepare_stop(loop_, &flush_before_poll_);
  outbox_.clear();
}

void FrameLink::shutdown() {
  if (in_ >= 0) ::shutdown(in_, SHUT_RDWR);
}

void FrameLink::close() {
  stop();
  reader_ = frames::FrameReader();
  owned_.reset();
  in_ = out_ = -1;
}

// ---- writing -------------------------------------------------------------------------------

void FrameLink::flush_soon() {
  last_tx_ = ev_now(loop_);
  if (outbox_.empty() || out_ < 0) return;
  ev_io_start(loop_, &write_io_);
  ev_prepare_start(loop_, &flush_before_poll_);
}

void FrameLink::hold() {
  ev_prepare_stop(loop_, &flush_before_poll_);
  ev_io_stop(loop_, &write_io_);
}

void FrameLink::on_writable(struct ev_loop*, ev_io* w, int) { static_cast<FrameLink*>(w->data)->flush(); }

void FrameLink::on_before_poll(struct ev_loop* loop, ev_prepare* w, int) {
  ev_prepare_stop(loop, w);
  static_cast<FrameLink*>(w->data)->flush();
}

void FrameLink::flush() {
  while (!outbox_.empty() && out_ >= 0) {
    const ssize_t n = socket_ ? ::send(out_, outbox_.data(), outbox_.size(), MSG_NOSIGNAL | MSG_DONTWAIT)
                              : ::write(out_, outbox_.data(), outbox_.size());
    if (n > 0) {
      outbox_.erase(0, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      ev_io_start(loop_, &write_io_);
      events_.on_flushed();
      return;
    }
    outbox_.clear();
    ev_io_stop(loop_, &write_io_);
    events_.on_link_end(LinkEnd::write_failed, "");
    return;
  }
  ev_io_stop(loop_, &write_io_);
  events_.on_flushed();
}

void FrameLink::flush_blocking(std::chrono::milliseconds bound) {
  if (out_ < 0) return;
  outbox_.erase(0, write_all(out_, outbox_, std::chrono::steady_clock::now() + bound));
}

void FrameLink::flush_once() {
  if (out_ < 0) return;
  outbox_.erase(0, write_all(out_, outbox_, std::chrono::steady_clock::time_point{}));
}

// ---- reading -------------------------------------------------------------------------------

void FrameLink::on_readable(struct ev_loop*, ev_io* w, int) { static_cast<FrameLink*>(w->data)->read_some(); }

bool FrameLink::read_some() {
  if (in_read_ || !reading_) return false;
  in_read_ = true;
  bool more = true;
  char buf[kReadChunk];
  for (int i = 0; i < kReadsPerEvent && more && reading_; ++i) {
    const ssize_t n = socket_ ? ::recv(in_, buf, sizeof buf, MSG_DONTWAIT) : ::read(in_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      more = false;
      break;
    }
    if (n <= 0) {
      // EOF, or ECONNRESET when the peer went with our frames unread.
      more = false;
      events_.on_link_end(LinkEnd::closed, "");
      break;
    }
    last_rx_ = ev_now(loop_);
    events_.on_received();
    reader_.feed(std::string_view(buf, static_cast<std::size_t>(n)));
    dispatch();
  }
  in_read_ = false;
  events_.on_read_done();
  return more && reading_;
}

void FrameLink::dispatch_buffered() {
  if (!reading_) return;
  dispatch();
}

void FrameLink::dispatch() {
  while (reading_) {
    auto f = reader_.next();
    if (!f) break;
    events_.on_frame(*f);
  }
  if (reading_ && !reader_.error().empty()) events_.on_link_end(LinkEnd::bad_stream, reader_.error());
}

}  // namespace dshpty::link
