// Writes stdout from the loop: lines are appended whole and written in order, so responses
// never interleave; when the fd is non-blocking and full, the rest waits for an ev_io.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <ev.h>

namespace dshpty::tool {

class OutputWriter {
 public:
  OutputWriter(struct ev_loop* loop, int fd);
  ~OutputWriter();
  OutputWriter(const OutputWriter&) = delete;
  OutputWriter& operator=(const OutputWriter&) = delete;

  void write(std::string_view bytes);
  std::size_t pending() const noexcept { return buffer_.size() - written_; }
  // The reader went away (EPIPE and the like): output is dropped from then on.
  bool broken() const noexcept { return broken_; }
  // Runs fn once nothing is pending (at once, from inside this call, when nothing is).
  void when_drained(std::function<void()> fn);

 private:
  static void on_writable(struct ev_loop* loop, ev_io* watcher, int revents);
  void flush();
  void notify_if_drained();

  struct ev_loop* loop_;
  int fd_;
  ev_io watcher_;
  std::string buffer_;
  std::size_t written_ = 0;
  bool broken_ = false;
  std::vector<std::function<void()>> drained_;
};

}  // namespace dshpty::tool
