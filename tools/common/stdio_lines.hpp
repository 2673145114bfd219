// A line protocol's input side on the loop: request lines read from a non-blocking stdin
// while the service works (so requests overlap), bounded per line, paused while the reader
// of our stdout lags behind (a slow reader pauses our reading instead of growing memory).
// EOF, SIGINT, SIGTERM and SIGHUP all end the input the same way, once.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>

#include <ev.h>

#include "line_splitter.hpp"
#include "output_writer.hpp"

namespace dshpty::tool {

class StdioLines {
 public:
  struct Handlers {
    std::function<void(std::string_view line)> line;
    std::function<void()> overlong;  // a line over kMaxRequestLineBytes (its bytes dropped)
    std::function<void()> ended;     // EOF or a terminating signal; once, never after stop()
  };

  // Output beyond this waits for the reader before we take more requests.
  static constexpr std::size_t kOutputBackpressureBytes = 8u << 20;

  // Reads `fd` (made non-blocking by the caller) from now on.
  StdioLines(struct ev_loop* loop, int fd, OutputWriter& out, Handlers handlers);
  ~StdioLines();
  StdioLines(const StdioLines&) = delete;
  StdioLines& operator=(const StdioLines&) = delete;

  // No more input is read or handed out (callable from a handler).
  void stop();

 private:
  static void on_input(struct ev_loop* loop, ev_io* watcher, int revents);
  static void on_signal(struct ev_loop* loop, ev_signal* watcher, int revents);
  void end();

  struct ev_loop* loop_;
  int fd_;
  OutputWriter& out_;
  Handlers handlers_;
  LineSplitter splitter_;
  ev_io input_;
  ev_signal signals_[3];
  bool done_ = false;
};

}  // namespace dshpty::tool
