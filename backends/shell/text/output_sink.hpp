// Output sinks: the consumers of a session's terminal output, fed in order by one
// OutputPipeline. Each sees every byte, as the terminal wrote it (on_bytes: what a terminal
// emulator needs) and as text (on_text and on_line_rewrite: scrollback, the motd, the live
// send's tail and prompt evidence), after the sanitizer and the line editor. Like libvterm's layers, a sink does no I/O
// and is fed in order, so each one is testable alone on any split of the stream.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "text/abandoned_line_filter.hpp"
#include "text/line_editor.hpp"
#include "text/sanitizer.hpp"

namespace dshpty::text {

class OutputSink {
 public:
  // Raw bytes, in order, exactly as read from the terminal.
  virtual void on_bytes(std::string_view /*raw*/) {}
  // The sanitizer's text before the line editor applied its carriage returns and erases
  // (their in-band codes still in it), with its marks: what a prompt watch needs, where a
  // redrawn line is still a redraw and not a line's new text.
  virtual void on_sanitized(const SanitizedText& /*chunk*/) {}
  // Text appended to the stream (markers positioned in this chunk's text).
  virtual void on_text(const SanitizedText& /*chunk*/) {}
  // The newest line, which no '\n' has ended yet, now reads `line` (a carriage return
  // redrew it), its bytes before `changed_from` as they were: replace what was appended of
  // it since the last '\n'.
  virtual void on_line_rewrite(std::string_view /*line*/, std::size_t /*changed_from*/) {}
  // Every sink has had all of one read's bytes (on_sanitized is a whole chunk ahead of the
  // line editor's pieces): the moment to decide on what they mean together.
  virtual void on_chunk_end() {}

 protected:
  ~OutputSink() = default;
};

class OutputPipeline final : private LineEditor::Output {
 public:
  explicit OutputPipeline(SanitizerConfig config = {}) : sanitizer_(std::move(config)) {}

  // fish's abandoned lines become newlines in the text (abandoned_line_filter.hpp).
  void filter_abandoned_lines() { abandoned_ = true; }

  // The terminal's width: lines wrap at it in the text as on the terminal (line_editor.hpp).
  void set_columns(std::size_t columns) noexcept { editor_.set_columns(columns); }

  // Sinks are fed in the order they were added; each must outlive the pipeline's use.
  void add(OutputSink& sink) { sinks_.push_back(&sink); }

  // One read's bytes: every sink's on_bytes, then their text, at least one on_text even
  // when the bytes were all escape sequences and the text is empty (the output still
  // happened: a send's silence timer restarts on it).
  void feed(std::string_view bytes) {
    for (OutputSink* sink : sinks_) sink->on_bytes(bytes);
    chunk_.clear();
    if (abandoned_) {
      filtered_.clear();
      abandoned_filter_.feed(bytes, filtered_);
      bytes = filtered_;
    }
    sanitizer_.feed(bytes, chunk_);
    for (OutputSink* sink : sinks_) sink->on_sanitized(chunk_);
    editor_.process(chunk_, *this);
    for (OutputSink* sink : sinks_) sink->on_chunk_end();
  }

  // The output ended: what the sanitizer still held (a partial character, a CR), if any.
  void finish() {
    chunk_.clear();
    sanitizer_.finish(chunk_);
    for (OutputSink* sink : sinks_) sink->on_sanitized(chunk_);
    if (!chunk_.text.empty()) editor_.process(chunk_, *this);
    for (OutputSink* sink : sinks_) sink->on_chunk_end();
  }

  // The bytes of the current line, as the terminal shows it: a sink starting now (a send's
  // output) has none of them (LineEditor::line_bytes).
  std::size_t current_line_bytes() const noexcept { return editor_.line_bytes(); }

 private:
  void append(const SanitizedText& chunk) override {
    for (OutputSink* sink : sinks_) sink->on_text(chunk);
  }
  void rewrite(std::string_view line, std::size_t changed_from) override {
    for (OutputSink* sink : sinks_) sink->on_line_rewrite(line, changed_from);
  }

  Sanitizer sanitizer_;
  bool abandoned_ = false;
  AbandonedLineFilter abandoned_filter_;
  std::string filtered_;
  LineEditor editor_;
  SanitizedText chunk_;  // the latest feed's text, reused
  std::vector<OutputSink*> sinks_;
};

}  // namespace dshpty::text
