#include "stdio_lines.hpp"

#include <signal.h>
#include <unistd.h>

#include <cerrno>

namespace dshpty::tool {

StdioLines::StdioLines(struct ev_loop* loop, int fd, OutputWriter& out, Handlers handlers)
    : loop_(loop),
      fd_(fd),
      out_(out),
      handlers_(std::move(handlers)),
      splitter_(kMaxRequestLineBytes, {[this](std::string_view line) {
                                         if (handlers_.line) handlers_.line(line);
                                       },
                                       [this] {
                                         if (handlers_.overlong) handlers_.overlong();
                                       }}) {
  ev_io_init(&input_, &StdioLines::on_input, fd_, EV_READ);
  input_.data = this;
  const int numbers[3] = {SIGINT, SIGTERM, SIGHUP};
  for (int i = 0; i < 3; ++i) {
    ev_signal_init(&signals_[i], &StdioLines::on_signal, numbers[i]);
    signals_[i].data = this;
    ev_signal_start(loop_, &signals_[i]);
  }
  ev_io_start(loop_, &input_);
}

StdioLines::~StdioLines() {
  ev_io_stop(loop_, &input_);
  for (auto& s : signals_) ev_signal_stop(loop_, &s);
}

void StdioLines::stop() {
  done_ = true;
  splitter_.stop();
  ev_io_stop(loop_, &input_);
}

void StdioLines::end() {
  if (done_) return;
  splitter_.finish();
  if (done_) return;  // the last line stopped us
  stop();
  if (handlers_.ended) handlers_.ended();
}

void StdioLines::on_input(struct ev_loop*, ev_io* watcher, int) {
  auto* self = static_cast<StdioLines*>(watcher->data);
  char buffer[64 * 1024];
  const ssize_t n = ::read(self->fd_, buffer, sizeof buffer);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n <= 0) {
    self->end();
    return;
  }
  self->splitter_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
  if (self->done_) return;
  if (self->out_.pending() > kOutputBackpressureBytes) {
    ev_io_stop(self->loop_, &self->input_);
    self->out_.when_drained([self] {
      if (!self->done_) ev_io_start(self->loop_, &self->input_);
    });
  }
}

// A terminating signal ends the input as EOF does, so every session's tree is gone.
void StdioLines::on_signal(struct ev_loop*, ev_signal* watcher, int) {
  static_cast<StdioLines*>(watcher->data)->end();
}

}  // namespace dshpty::tool
