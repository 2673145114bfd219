// The far side's hold on a send's frames (docs/remote.md, "One message a send"): from the
// write of the host's input until the shell's prompt ends (its B mark, with the session's
// nonce), the frames made meanwhile (WRITTEN, the echo, the command's output) wait in the
// outbox and go out with the prompt, in one write.
//
// Why: over ssh every write is a message of its own through sshd and the client, with
// their work on both machines, and bash writes a send's answer in three or four pieces
// (the echo, the newline and C, the output, the prompt). The host cannot complete the send
// before the prompt anyway, so holding what comes before it costs the send nothing and
// saves it the messages. Nothing is reordered: the outbox keeps the frames' order, and any
// other frame (a probe's answer, a pong, an exit) ends the hold at once. The bridge bounds
// it by a timer (`--hold-ms`, kDefaultHoldMs unless told), so a command that runs on, or a
// program that prints no marks, still streams. A shell without marks (no nonce) is never
// held.
//
// This class is only the bookkeeping: whether a hold is on, and where the end mark is,
// across reads that split it. The bridge owns the timer and the outbox.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

namespace dshpty::supervisor {

class PromptHold {
 public:
  // The longest a hold lasts by default: far above the gap between bash's echo and its prompt after a
  // quick command (~0.1 ms), far below anything a reader of streamed output notices.
  static constexpr double kDefaultHoldMs = 1.0;

  PromptHold() = default;
  // nonce: the session's mark nonce; empty means the shell prints no marks.
  explicit PromptHold(std::string_view nonce)
      : end_mark_(nonce.empty() ? std::string() : "\x1b]133;B;dshpty=" + std::string(nonce) + "\a") {}

  // The input was written: hold from now. False when this shell cannot be held (no marks).
  bool begin() {
    if (end_mark_.empty()) return false;
    if (!holding_) tail_.clear();
    holding_ = true;
    return true;
  }

  bool holding() const noexcept { return holding_; }

  void end() noexcept { holding_ = false; }

  // Output read while holding. True when it completes the prompt's end mark: the hold is
  // over then. The mark may be split across reads: the last bytes of each are kept.
  bool saw_prompt_end(std::string_view bytes) {
    if (!holding_) return false;
    const std::size_t keep = end_mark_.size() - 1;
    // The mark across the previous read and this one: at most `keep` bytes of each (in a
    // buffer kept between reads, so a read costs no allocation).
    seam_.assign(tail_);
    seam_.append(bytes.substr(0, std::min(bytes.size(), keep)));
    if (seam_.find(end_mark_) != std::string::npos || bytes.find(end_mark_) != std::string_view::npos) {
      holding_ = false;
      return true;
    }
    if (bytes.size() >= keep) {
      tail_.assign(bytes.substr(bytes.size() - keep));
    } else {
      tail_.append(bytes);
      if (tail_.size() > keep) tail_.erase(0, tail_.size() - keep);
    }
    return false;
  }

 private:
  std::string end_mark_;
  std::string tail_;  // the last bytes read while holding, for a mark split across reads
  std::string seam_;  // tail_ and the start of the next read
  bool holding_ = false;
};

}  // namespace dshpty::supervisor
