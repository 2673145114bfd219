#include "screen/plain_text_gate.hpp"

namespace dshpty::screen {
namespace {

constexpr long kMissing = -1;
bool is_intermediate(unsigned char byte) { return byte >= 0x20 && byte <= 0x2F; }

}  // namespace

bool PlainTextGate::plain(unsigned rows) const noexcept {
  return !unmodelled_ && !single_shift_ && !insert_ && !newline_ && !origin_ && autowrap_ &&
         !lr_margins_ && ascii_set_[gl_] && top_margin_ == 0 &&
         (bottom_margin_ == -1 || bottom_margin_ >= static_cast<long>(rows));
}

void PlainTextGate::resize(unsigned rows) noexcept {
  if (bottom_margin_ > static_cast<long>(rows)) bottom_margin_ = rows;
}

void PlainTextGate::reset() {
  top_margin_ = 0;
  bottom_margin_ = -1;
  insert_ = newline_ = origin_ = lr_margins_ = false;
  autowrap_ = true;
  ascii_set_ = {true, true, true, true};
  gl_ = 0;
  single_shift_ = false;
  unmodelled_ = false;  // the reset also clears every line's double width
}

// The transitions of libvterm 0.1's vterm_input_write, byte for byte.
void PlainTextGate::step(unsigned char byte, unsigned rows) {
  if (byte == 0x00 || byte == 0x7F) return;
  if (byte == 0x18 || byte == 0x1A) {  // CAN, SUB
    state_ = State::normal;
    return;
  }
  if (byte == 0x1B) {
    intermediates_ = 0;
    state_ = state_ == State::string ? State::escape_in_string : State::escape;
    return;
  }
  if (!(byte == 0x07 && state_ == State::string) && byte < 0x20) {
    on_control(byte);  // executed in every state, the state kept
    return;
  }
  switch (state_) {
    case State::escape_in_string:
      if (byte == 0x5C) {
        state_ = State::normal;
        return;
      }
      state_ = State::escape;
      [[fallthrough]];
    case State::escape:
      if (byte == 0x50 || byte == 0x5D) {  // DCS, OSC
        state_ = State::string;
      } else if (byte == 0x5B) {
        leader_ = 0;
        state_ = State::csi_leader;
      } else if (is_intermediate(byte)) {
        if (intermediates_++ == 0) intermediate_ = byte;
      } else if (intermediates_ == 0 && byte >= 0x40 && byte < 0x60) {
        on_control(static_cast<unsigned char>(byte + 0x40));  // a C1 control, 7-bit form
        state_ = State::normal;
      } else if (byte >= 0x30 && byte < 0x7F) {
        on_escape(byte);
        state_ = State::normal;
      }
      return;
    case State::csi_leader:
      if (byte >= 0x3C && byte <= 0x3F) {
        leader_ = leader_ == 0 ? byte : 0xFF;  // libvterm ignores a CSI with two leader bytes
        return;
      }
      arg_count_ = 0;
      args_[0] = kMissing;
      state_ = State::csi_args;
      [[fallthrough]];
    case State::csi_args:
      if (byte >= '0' && byte <= '9') {
        if (arg_count_ < kMaxArgs) {
          long& arg = args_[arg_count_];
          arg = (arg == kMissing ? 0 : arg) * 10 + (byte - '0');
          if (arg > 100000) arg = 100000;
        }
        return;
      }
      if (byte == ':' || byte == ';') {
        if (++arg_count_ < kMaxArgs) args_[arg_count_] = kMissing;
        return;
      }
      ++arg_count_;
      intermediates_ = 0;
      state_ = State::csi_intermediate;
      [[fallthrough]];
    case State::csi_intermediate:
      if (is_intermediate(byte)) {
        if (intermediates_++ == 0) intermediate_ = byte;
        return;
      }
      if (byte >= 0x40 && byte <= 0x7E) on_csi(byte, rows);
      state_ = State::normal;
      return;
    case State::string:
      if (byte == 0x07) state_ = State::normal;
      return;
    case State::normal:
      single_shift_ = false;  // the shifted character was printed
      return;
  }
}

void PlainTextGate::on_control(unsigned char byte) {
  switch (byte) {
    case 0x0E: gl_ = 1; break;  // LS1 (SO)
    case 0x0F: gl_ = 0; break;  // LS0 (SI)
    case 0x8E: case 0x8F: single_shift_ = true; break;  // SS2, SS3
    default: break;
  }
}

void PlainTextGate::on_escape(unsigned char final_byte) {
  if (intermediates_ == 0) {
    if (final_byte == 'c') reset();  // RIS
    if (final_byte == 'n') gl_ = 2;  // LS2
    if (final_byte == 'o') gl_ = 3;  // LS3
    return;
  }
  if (intermediates_ != 1) return;  // libvterm ignores these
  if (intermediate_ >= '(' && intermediate_ <= '+') {
    // A designation: only US-ASCII maps ASCII to itself (an unknown one may or may not
    // change the set in libvterm: assume it does).
    ascii_set_[intermediate_ - '('] = final_byte == 'B';
  } else if (intermediate_ == '#' && (final_byte == '3' || final_byte == '4' || final_byte == '6')) {
    unmodelled_ = true;  // a double-width or double-height line
  }
}

void PlainTextGate::on_csi(unsigned char final_byte, unsigned rows) {
  auto arg = [&](unsigned i) { return i < arg_count_ && i < kMaxArgs ? args_[i] : kMissing; };
  if (leader_ == 0 && intermediates_ == 0 && final_byte == 'r') {  // DECSTBM, as libvterm clamps it
    long top = (arg(0) == kMissing ? 1 : arg(0)) - 1;
    long bottom = arg_count_ < 2 || arg(1) == kMissing ? -1 : arg(1);
    if (top < 0) top = 0;
    if (top > static_cast<long>(rows)) top = rows;
    if (bottom < -1) bottom = -1;
    if (top == 0 && bottom == static_cast<long>(rows)) {
      bottom = -1;
    } else if (bottom > static_cast<long>(rows)) {
      bottom = rows;
    }
    if ((bottom == -1 ? static_cast<long>(rows) : bottom) <= top) top = 0, bottom = -1;
    top_margin_ = static_cast<unsigned>(top);
    bottom_margin_ = bottom;
    return;
  }
  if ((leader_ == 0 || leader_ == '?') && intermediates_ == 0 && (final_byte == 'h' || final_byte == 'l')) {
    for (unsigned i = 0; i < arg_count_ && i < kMaxArgs; ++i) {
      long mode = args_[i];
      bool on = final_byte == 'h';
      if (leader_ == 0) {
        if (mode == 4) insert_ = on;
        if (mode == 20) newline_ = on;
      } else {
        if (mode == 6) origin_ = on;
        if (mode == 7) autowrap_ = on;
        if (mode == 69) lr_margins_ = on;
      }
    }
    return;
  }
  // DECSTR (CSI ! p) is left alone: libvterm 0.1 never matches it (its case is written as
  // a leader), and a later libvterm's soft reset only makes text plainer than assumed here.
}

}  // namespace dshpty::screen
