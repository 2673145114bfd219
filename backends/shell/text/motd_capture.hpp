// The motd: what the shell printed before its first prompt marker (start-up output),
// bounded, since a shell that prints megabytes before its prompt keeps only the head.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

#include "text/output_sink.hpp"

namespace dshpty::text {

class MotdCapture final : public OutputSink {
 public:
  static constexpr std::size_t kMaxBytes = 64 * 1024;

  void on_text(const SanitizedText& chunk) override {
    if (done_) return;
    const PromptMarker* first = chunk.markers.empty() ? nullptr : &chunk.markers.front();
    std::string_view text = chunk.text;
    if (first) text = text.substr(0, first->position);
    motd_.append(text.substr(0, kMaxBytes - std::min(kMaxBytes, motd_.size())));
    done_ = first != nullptr;
  }

  void on_line_rewrite(std::string_view line, std::size_t) override {
    if (done_) return;
    const std::size_t newline = motd_.rfind('\n');
    motd_.resize(newline == std::string::npos ? 0 : newline + 1);
    motd_.append(line.substr(0, kMaxBytes - std::min(kMaxBytes, motd_.size())));
  }

  // Complete once the first marker arrived.
  bool complete() const noexcept { return done_; }
  const std::string& text() const noexcept { return motd_; }

 private:
  std::string motd_;
  bool done_ = false;
};

}  // namespace dshpty::text
