// Prompt evidence from the shell's marks (text/sanitizer.hpp, docs/shell-backend.md
// "Marks"): "the last mark is a prompt end (B) that came after this send's write, of a new
// prompt, and nothing followed it". A new prompt is one whose cwd mark (P) came after the
// write too: the integration prints P once per prompt, while a line editor that repaints its
// prompt (fish after a background job, readline after a resize) repeats A, the prompt and B
// but never P (zsh and fish print P from a prompt hook; bash's, in PS1, is repainted with
// its prompt count, and the sanitizer drops a repeated count). Event-driven: observe() is
// called with each sanitized chunk as it arrives, and at_prompt() answers at once. Nothing
// of the text is kept, so a command that prints megabytes after a mark costs nothing here.
//
// It watches the sanitizer's text before the line editor (OutputSink::on_sanitized), so a
// line editor that redraws its line (a carriage return, the prompt with its marks again,
// then what was typed: fish, zsh) is seen as it is written. What "nothing" means: a line
// editor may clear the rest of its line right after the prompt (readline on a dumb
// terminal writes blanks and backspaces), so blanks, carriage returns and the in-band
// erase codes after B are not text. Anything else is.
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
    new_prompt_ = false;
    prompts_ = 0;
    line_state_.clear();
    refused_ = false;
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

  // A new prompt's end arrived since reset() and nothing followed it.
  bool at_prompt() const noexcept { return new_prompt_ && last_kind_ == 'B' && !text_after_; }
  bool marker_seen() const noexcept { return last_kind_ != 0; }
  // The status of the last new prompt since reset() (its D, right after its P).
  std::optional<int> last_status() const noexcept { return status_; }
  // A command start (C) since reset(): the shell read a command line.
  bool command_started() const noexcept { return command_started_; }
  // The shell took a line since reset(): it started a command (C), or printed a new
  // prompt (P: an empty line, a syntax error, or a line of builtins already run).
  bool line_taken() const noexcept { return command_started_ || new_prompt_; }
  // New prompts (P) since reset(): a line typed behind a running command that the shell
  // read itself (empty, a comment, refused) brings a second one after the command's.
  int prompts() const noexcept { return prompts_; }
  // The shell's word for the line typed since reset(), from the last L or P mark
  // ("continuation" from an L that no command start or new prompt followed; "refused" from
  // the new prompt after a line the shell refused; empty: none).
  const std::string& line_state() const noexcept { return line_state_; }
  // A prompt after a refused line since reset(), even if later lines (of one multi-line
  // write) ran after it.
  bool refused_seen() const noexcept { return refused_; }
  // The shell's working directory from its latest cwd mark (P), if any ever came.
  const std::optional<std::string>& cwd() const noexcept { return cwd_; }

 private:
  // Only the integration's own order counts (docs/shell-backend.md, "The nonce"): it prints
  // P and D together, first, before the user's prompt and hooks. A P while a prompt is
  // already open (no B or C since the last P) comes from inside it, and a D not right after
  // an accepted P is a repaint's or a forgery's: code the shell sourced can read the nonce
  // and print marks from its prompt, where they would otherwise win as the last ones.
  void note_mark(const PromptMarker& mark) {
    if (mark.kind == 'P' && prompt_open_) return;
    const bool after_prompt_mark = last_kind_ == 'P';
    last_kind_ = mark.kind;
    text_after_ = false;
    if (mark.kind == 'B' || mark.kind == 'C') prompt_open_ = false;
    if (mark.kind == 'D' && after_prompt_mark) status_ = mark.status;
    if (mark.kind == 'C') {
      command_started_ = true;
      line_state_.clear();
    }
    if (mark.kind == 'P') {
      prompt_open_ = true;
      cwd_ = mark.cwd;
      new_prompt_ = true;
      ++prompts_;
      line_state_ = mark.line_state;
      if (line_state_ == "refused") refused_ = true;
    }
    if (mark.kind == 'L') line_state_ = mark.line_state;
  }

  void note_text(std::string_view text) noexcept {
    if (last_kind_ == 0 || text_after_) return;
    for (char c : text) {
      if (c != ' ' && c != '\b' && c != kReturn && c != kEraseToEnd && c != kEraseLine && c != kCursorForward) {
        text_after_ = true;
        return;
      }
    }
  }

  char last_kind_ = 0;  // the last mark's kind since reset(), 0 for none
  bool text_after_ = false;
  std::optional<int> status_;
  bool command_started_ = false;
  bool new_prompt_ = false;  // a cwd mark since reset(): the prompt hook ran
  int prompts_ = 0;          // cwd marks since reset()
  std::string line_state_;   // the last L mark's state since reset(), until a C or P
  bool refused_ = false;     // a P with state=refused since reset()
  bool prompt_open_ = false;  // a P came and no B or C since: a P now is not the shell's
  std::optional<std::string> cwd_;
};

}  // namespace dshpty::text
