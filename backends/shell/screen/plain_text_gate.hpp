// When may plain text skip libvterm? Runs of printable ASCII, CR and LF are most of what a
// terminal receives (`seq`, build logs), and libvterm's per-character path (decode, width,
// combining, one callback per glyph) runs at 57 MiB/s on them (screen.md), below the PTY.
// The emulator writes such runs into the grid itself when libvterm would place them exactly
// as a fresh terminal does. This gate follows every byte libvterm is fed, mirroring its
// parser (0.1's parser.c) and the few modes that change where text lands, and answers
// whether libvterm is between sequences with those modes at their defaults.
//
// Conservative by construction: a mode it does not model (double-width lines, a single
// shift, left/right margins) closes the gate until a reset, which costs speed, never
// correctness. tests/text/emulator_test.cpp holds it to libvterm's own screen layer.
#pragma once

#include <array>
#include <cstdint>

namespace dshpty::screen {

class PlainTextGate {
 public:
  // Follow one byte fed to libvterm, on a screen of `rows` rows.
  void step(unsigned char byte, unsigned rows);
  // libvterm's parser is between sequences (in text).
  bool between_sequences() const noexcept { return state_ == State::normal; }
  // Inside an OSC or DCS string (libvterm 0.1 drops the part of one fed in an earlier write).
  bool in_string() const noexcept { return state_ == State::string || state_ == State::escape_in_string; }
  // Text lands as on a fresh terminal: full-screen margins, no insert, origin or newline
  // mode, autowrap on, ASCII in GL, no pending single shift, no double-width lines.
  bool plain(unsigned rows) const noexcept;
  // The window's new row count (libvterm clamps an explicit bottom margin to it).
  void resize(unsigned rows) noexcept;

 private:
  enum class State { normal, escape, csi_leader, csi_args, csi_intermediate, string, escape_in_string };
  void on_control(unsigned char byte);
  void on_escape(unsigned char final_byte);
  void on_csi(unsigned char final_byte, unsigned rows);
  void reset();

  State state_ = State::normal;
  // The sequence being read.
  unsigned char leader_ = 0;
  unsigned char intermediate_ = 0;
  unsigned intermediates_ = 0;
  static constexpr unsigned kMaxArgs = 16;
  std::array<long, kMaxArgs> args_{};
  unsigned arg_count_ = 0;
  bool arg_present_ = false;

  // The modes that move text.
  unsigned top_margin_ = 0;       // 0-based
  long bottom_margin_ = -1;       // -1: the screen's bottom; else exclusive row
  bool insert_ = false, newline_ = false, origin_ = false, autowrap_ = true, lr_margins_ = false;
  std::array<bool, 4> ascii_set_{true, true, true, true};  // G0..G3 map ASCII to itself
  unsigned gl_ = 0;
  bool unmodelled_ = false;  // seen something this gate does not follow: closed until reset
  bool single_shift_ = false;
};

}  // namespace dshpty::screen
