// The session's observer seam: read-only taps on what passes through a session, for a
// recording (record/recorder.hpp) or a live view. An observer sees the terminal's output as
// it arrived, the input the host wrote (flagged hidden when the terminal's reader had echo
// off: a password; relayed when a relay in front passed it to a far side whose echo cannot
// be seen), one note per send, and resizes. It cannot write, resize, signal or close:
// the session hands it copies of facts, never itself. It is called from inside the session's
// event handling, so it must not call back into the session, and it does no blocking I/O.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace dshpty::shell {

// What an observer may show of input the host wrote. `hidden`: the terminal's reader had
// echo off (a password). `relayed`: the foreground relays the terminal's input to a far
// side (ssh, script: the relay evidence a send uses), whose echo is not this terminal's, so
// a far password prompt cannot be told apart; what the far side shows of it comes back as
// output anyway.
enum class InputShown : std::uint8_t { shown, hidden, relayed };

// One send as the host made it: its text and key names, and what of its input may be shown
// (hidden: observers see "[hidden input]", relayed: "[input through a relay]").
struct SendNote {
  std::string_view text{};
  std::span<const std::string> keys{};
  InputShown shown = InputShown::shown;
  bool check_in = false;  // nothing typed: a look at the session
};

class SessionObserver {
 public:
  // Raw bytes, in order, exactly as read from the terminal (a take-over's replay too).
  virtual void on_output(std::string_view /*raw*/) {}
  // Bytes the host queued for the terminal (a send's text, keys and Enter; a raw write).
  // `shown`: whether the bytes may be shown (see InputShown).
  virtual void on_input(std::string_view /*bytes*/, InputShown /*shown*/) {}
  // A send began writing (before its on_input), or a check-in began looking.
  virtual void on_send(const SendNote& /*note*/) {}
  // Output is about to be shown to a caller: a send's (or a check-in's) result, a live
  // job's output read by offset or by its cursor, a page of the scrollback, the screen.
  // What it shows has been told (on_output).
  virtual void on_shown() {}
  // The terminal's new size.
  virtual void on_resize(unsigned /*rows*/, unsigned /*cols*/) {}
  // The session is over for this host (closed, detached, or destroyed): nothing follows.
  virtual void on_session_end() {}

 protected:
  ~SessionObserver() = default;
};

}  // namespace dshpty::shell
