// Prompt evidence for one send: "the shell's prompt marker arrived after this send's
// write, and the printable text after it is exactly the prompt". Event-driven: observe()
// is called with each sanitized chunk as it arrives, and at_prompt() answers at once.
// Only the bytes needed to compare with the prompt are kept after the last marker, so a
// command that prints megabytes after a stray marker costs nothing here.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "text/sanitizer.hpp"

namespace dshpty::text {

class PromptWatch {
 public:
  // `prompt`: the exact prompt the shell prints after its marker (the shell backend's is
  // kPrompt in environment.hpp, where PS1 is set).
  explicit PromptWatch(std::string prompt) : prompt_(std::move(prompt)) {}

  // Forget every marker: call it when the send's write lands, so a prompt printed for an
  // earlier send is never this send's.
  void reset() noexcept {
    seen_ = false;
    status_.reset();
    tail_.clear();
    tail_overflow_ = false;
  }

  // One chunk's output: `chunk` holds only what the latest feed() produced (the caller
  // clears it before each feed), its marker positions relative to its own text.
  void observe(const SanitizedText& chunk) {
    if (const PromptMarker* last = chunk.last_marker()) {
      seen_ = true;
      status_ = last->status;
      tail_.clear();
      tail_overflow_ = false;
    } else if (!seen_) {
      return;
    }
    keep(chunk.text_after_last_marker());
  }

  // The current line was redrawn (a carriage return): whatever follows the marker is no
  // longer known to be exactly the prompt, until a new marker.
  void rewrite() noexcept {
    if (!seen_) return;
    tail_overflow_ = true;
    tail_.clear();
  }

  // A marker arrived since reset() and exactly the prompt followed the last one.
  bool at_prompt() const noexcept { return seen_ && !tail_overflow_ && tail_ == prompt_; }
  bool marker_seen() const noexcept { return seen_; }
  // The last marker's status (the exit status of the command before the prompt).
  std::optional<int> last_status() const noexcept { return status_; }
  const std::string& prompt() const noexcept { return prompt_; }

 private:
  void keep(std::string_view text) {
    if (tail_overflow_) return;
    if (tail_.size() + text.size() > prompt_.size()) {
      tail_overflow_ = true;  // more than the prompt: not at the prompt until a new marker
      tail_.clear();
      return;
    }
    tail_.append(text);
  }

  std::string prompt_;
  bool seen_ = false;
  std::optional<int> status_;
  std::string tail_;  // never longer than the prompt
  bool tail_overflow_ = false;
};

}  // namespace dshpty::text
