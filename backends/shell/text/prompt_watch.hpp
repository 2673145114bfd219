// Prompt evidence from the shell's marks (text/sanitizer.hpp, docs/shell-backend.md
// "Marks"): "the last mark is a prompt end (B) that came after this send's write, and
// nothing followed it". Event-driven: observe() is called with each sanitized chunk as it
// arrives, and at_prompt() answers at once. Nothing of the text is kept, so a command that
// prints megabytes after a mark costs nothing here.
//
// What "nothing" means: a line editor may clear the rest of its line right after the
// prompt (readline on a dumb terminal writes blanks and backspaces), so blanks and the
// line editor's in-band erase codes after B are not text. Anything else is, and so is a
// redrawn line (a carriage return): the shell's next B says where the prompt ends again.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "text/sanitizer.hpp"

namespace dshpty::text {

class PromptWatch {
 public:
  // Forget every mark: call it when the send's write lands, so a prompt printed for an
  // earlier send is never this send's. The cwd is the shell's, whenever it said it.
  void reset() noexcept {
    last_kind_ = 0;
    text_after_ = false;
    status_.reset();
    command_started_ = false;
  }

  // One chunk's output: `chunk` holds only what the latest feed() produced (the caller
  // clears it before each feed), its mark positions relative to its own text.
  void observe(const SanitizedText& chunk) {
    std::size_t from = 0;
    for (const PromptMarker& mark : chunk.markers) {
      note_text(std::string_view(chunk.text).substr(from, mark.position - from));
      from = mark.position;
      note_mark(mark);
    }
    note_text(std::string_view(chunk.text).substr(from));
  }

  // The current line was redrawn (a carriage return): whatever follows the last mark is
  // no longer known to be nothing, until the next mark.
  void rewrite() noexcept {
    if (last_kind_ == 'B') text_after_ = true;
  }

  // A prompt end arrived since reset() and nothing followed it.
  bool at_prompt() const noexcept { return last_kind_ == 'B' && !text_after_; }
  bool marker_seen() const noexcept { return last_kind_ != 0; }
  // The status of the last D since reset() (the command before the prompt).
  std::optional<int> last_status() const noexcept { return status_; }
  // A command start (C) since reset(): the shell read a command line.
  bool command_started() const noexcept { return command_started_; }
  // The shell's working directory from its latest cwd mark (P), if any ever came.
  const std::optional<std::string>& cwd() const noexcept { return cwd_; }

 private:
  void note_mark(const PromptMarker& mark) {
    last_kind_ = mark.kind;
    text_after_ = false;
    if (mark.kind == 'D') status_ = mark.status;
    if (mark.kind == 'C') command_started_ = true;
    if (mark.kind == 'P') cwd_ = mark.cwd;
  }

  void note_text(std::string_view text) noexcept {
    if (last_kind_ == 0 || text_after_) return;
    for (char c : text) {
      if (c != ' ' && c != '\b' && c != kEraseToEnd && c != kEraseLine) {
        text_after_ = true;
        return;
      }
    }
  }

  char last_kind_ = 0;  // the last mark's kind since reset(), 0 for none
  bool text_after_ = false;
  std::optional<int> status_;
  bool command_started_ = false;
  std::optional<std::string> cwd_;
};

}  // namespace dshpty::text
