// The session's observer seam: read-only taps on what passes through a session, for a
// recording (record/recorder.hpp) or a live view. An observer sees the terminal's output as
// it arrived, the input the host wrote (flagged hidden when the terminal's reader had echo
// off: a password), one note per send, and resizes. It cannot write, resize, signal or close:
// the session hands it copies of facts, never itself. It is called from inside the session's
// event handling, so it must not call back into the session, and it does no blocking I/O.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace dshpty::shell {

// One send as the host made it: its text and key names, and whether its input went to a
// reader with echo off (then neither may be shown: observers see "[hidden input]").
struct SendNote {
  std::string_view text{};
  std::span<const std::string> keys{};
  bool hidden = false;
  bool check_in = false;  // nothing typed: a look at the session
};

class SessionObserver {
 public:
  // Raw bytes, in order, exactly as read from the terminal (a take-over's replay too).
  virtual void on_output(std::string_view /*raw*/) {}
  // Bytes the host queued for the terminal (a send's text, keys and Enter; a raw write).
  // `hidden`: the reader had echo off in canonical mode (a password prompt).
  virtual void on_input(std::string_view /*bytes*/, bool /*hidden*/) {}
  // A send began writing (before its on_input), or a check-in began looking.
  virtual void on_send(const SendNote& /*note*/) {}
  // The terminal's new size.
  virtual void on_resize(unsigned /*rows*/, unsigned /*cols*/) {}
  // The session is over for this host (closed, detached, or destroyed): nothing follows.
  virtual void on_session_end() {}

 protected:
  ~SessionObserver() = default;
};

}  // namespace dshpty::shell
