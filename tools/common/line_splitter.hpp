// Splits a byte stream into lines, bounded: a line longer than the limit is reported once as
// overlong and its bytes are dropped up to its newline, so a 10 MB line never sits in memory.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace dshpty::tool {

inline constexpr std::size_t kMaxRequestLineBytes = 1u << 20;

class LineSplitter {
 public:
  struct Handlers {
    std::function<void(std::string_view line)> line;  // without its '\n' (or "\r\n")
    std::function<void()> overlong;                   // once per overlong line, at its end
  };

  LineSplitter(std::size_t max_line_bytes, Handlers handlers)
      : max_(max_line_bytes), handlers_(std::move(handlers)) {}

  // Handlers run inside feed(); one may call stop(), after which the rest is dropped.
  void feed(std::string_view bytes);
  // End of input: a last line without '\n' is still a line.
  void finish();
  void stop() noexcept { stopped_ = true; }

 private:
  void emit(std::string_view line);
  std::size_t max_;
  Handlers handlers_;
  std::string partial_;
  bool discarding_ = false;
  bool stopped_ = false;
};

}  // namespace dshpty::tool
