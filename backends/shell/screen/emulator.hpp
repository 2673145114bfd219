// The session's terminal emulator: an output sink fed every byte the terminal wrote, kept as
// a person would see it — the visible grid, the cursor, the alternate screen, the modes
// that change what a key sends (application cursor keys), the window title. Built on
// libvterm's parser and state layers; the grid is ours (rows allocated when first written,
// a scroll rotates row pointers), with a fast path for runs of plain text.
//
// Pure: no I/O. What the terminal answers to a query (cursor position, device attributes)
// comes out through `reply`, for the session to give to the reader that asked, or to drop
// when no reader can take it (docs/shell-backend.md, "Terminal answers").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/result.hpp"
#include "dshpty/session.hpp"
#include "screen/keys.hpp"
#include "text/output_sink.hpp"
#include "text/truncation.hpp"

namespace dshpty::screen {

class Emulator final : public text::OutputSink {
 public:
  using Reply = std::function<void(std::string_view bytes)>;

  // rows and cols in 1..4096 (the caller checked them). `reply` may be called from
  // on_bytes(); it must not call back into the emulator.
  Emulator(unsigned rows, unsigned cols, Reply reply);
  ~Emulator();
  Emulator(const Emulator&) = delete;
  Emulator& operator=(const Emulator&) = delete;

  // text::OutputSink: every byte as read from the master, in order, any split.
  void on_bytes(std::string_view raw) override;

  // The new window size (1..4096 each); the grid keeps what fits, as xterm does.
  void resize(unsigned rows, unsigned cols);

  // The grid now (see ScreenSnapshot for the trimming rules).
  ScreenSnapshot snapshot() const;
  bool alternate() const noexcept;

  // The bytes a terminal's keyboard sends for `keys` in the current modes (Up is ESC [ A,
  // or ESC O A once the program asked for application cursor keys). Never replies.
  std::string encode(const std::vector<Key>& keys);

  // Result text (docs/shell-backend.md, "Result text"): a result's text is read off the
  // normal screen, as it shows, from a start position to the end: the rows that scrolled
  // off the top since (kept as text, head and tail), then the screen's rows down to the
  // cursor or the last written row; wrapped rows joined into their line, trailing blanks
  // dropped but the cursor's (a prompt's trailing blank), a tab the output wrote a tab. A
  // row written above the start (a redraw with the cursor moved up) moves the start to it.
  // Rows count from the terminal's first, across the rows scrolled off: a position stays
  // put while the screen scrolls.
  struct TextPos {
    std::uint64_t row = 0;
    unsigned col = 0;
  };
  // Where the next output lands on the normal screen (kept while the alternate one shows).
  TextPos text_cursor() const noexcept;
  // The result text starts at `from` from now on; `bytes` bounds what is kept of the rows
  // that scroll off (a third for the head, the rest for the tail; 0: as before).
  void start_text(TextPos from, std::size_t bytes = 0);
  // The position is still on the screen (not scrolled off).
  bool on_screen(TextPos pos) const noexcept;
  // `before`, then the text from the start, in at most `cap` bytes (truncation.hpp).
  text::Cut result_text(std::string_view before, std::size_t cap);
  // Shell-integration marks carry this nonce (text/sanitizer.hpp): only those count.
  void set_mark_nonce(std::string nonce);
  // Where the cursor stood at the latest command-start mark (C) in the bytes of the last
  // on_bytes() call, if one was there: where a command's own output begins.
  std::optional<TextPos> command_start() const noexcept;

  // Whether the output since the last call grew the screen: wrote a row below the last one
  // written when its read began, scrolled, or switched screens. False for a redraw of what
  // shows (watch's, top's next frame, a spinner or a progress bar on its row): such output
  // is not progress (docs/shell-backend.md, "Send readiness").
  bool take_growth() noexcept;

  // Heap bytes held for the grid and libvterm's state, for the bench.
  std::size_t memory_bytes() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dshpty::screen
