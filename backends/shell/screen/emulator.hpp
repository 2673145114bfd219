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
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/result.hpp"
#include "dshpty/session.hpp"
#include "screen/keys.hpp"
#include "text/output_sink.hpp"

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

  // Heap bytes held for the grid and libvterm's state, for the bench.
  std::size_t memory_bytes() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace dshpty::screen
