// A local lingering session's recording while no host holds it (docs/outlive.md,
// "Recordings across a gap"). The host that spawned the session hands its helper the
// recording's descriptor (the same open file: one offset) with the recording's start time
// and cap; the helper writes nothing while a host is attached. From the host's going away
// (its death, or its leaving) until a host takes the session over, the helper appends the
// session's output as `o` events, timed from the same start, the nonce cut and ill-formed
// UTF-8 replaced as the host's recorder does, under the same cap. A host that takes the
// session over ends it: one marker says so, and that host records in a file of its own.
// Blocking writes: the helper's loop serves one session and the file is a regular file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "proc/unique_fd.hpp"
#include "record/asciicast.hpp"

namespace dshpty::shell::record {

class DetachedWriter {
 public:
  // `fd` the recording (write-only; its offset is where the host stopped), `start` the
  // recording's start in seconds since the epoch, `max_bytes` its cap.
  DetachedWriter(proc::UniqueFd fd, double start, std::uint64_t max_bytes);
  ~DetachedWriter();
  // The shell integration's nonce, cut from what is written (known once the session opened).
  void set_secret(const std::string& nonce) { scrub_ = SecretScrub(nonce); }
  // Output the session printed while no host was attached.
  void output(std::string_view bytes, double now);
  // A host took the session over: the last marker, then nothing more.
  void host_attached(double now);

 private:
  bool begin(double now);  // false once stopped
  void add(double now, char code, std::string_view data);
  void stop();

  proc::UniqueFd fd_;
  double start_;
  double last_ = 0;
  std::uint64_t max_bytes_;
  std::uint64_t size_ = 0;
  enum class State { waiting, writing, stopped } state_ = State::waiting;
  SecretScrub scrub_{""};
  Utf8Stream utf8_;
  std::string scratch_, clean_;
};

}  // namespace dshpty::shell::record
