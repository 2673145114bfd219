// A session's recording: an observer (session_observer.hpp) that turns what it sees into
// asciicast v2 events (asciicast.hpp) and writes them to its file without ever blocking the
// loop: events are appended to a buffer, and the buffer is written when the file is
// writable (an ev_io, which for a regular file means the next loop iteration), at most
// kFlushDelay after its first event or at once when kWriteSoonBytes wait: a send's few
// events then cost no system call of their own (a write and libev's epoll_ctl calls per
// event were 10% of a send's round trip), and a flood's are written in large pieces. Two
// moments are written at once (with all that waits before them): a send's marker and input,
// when its input is noted, before it reaches the terminal; and output about to be shown, a
// send's result or a read of a job's output, a page or the screen, before it is answered
// (on_shown). A host killed (SIGKILL) then leaves in the file what it typed and all its
// client was shown; only output nobody was shown yet may be missing, 50 ms at most (two
// writes a send instead of one).
//
// Its life, in RecordingState: recording -> cut (record_max_bytes reached: one last marker
// says so, nothing more is recorded) or failed (a write failed, e.g. ENOSPC, or the buffer
// grew past kMaxPendingBytes: the file ends where it stopped, the error is kept for `list`)
// or closed (the session ended; what was buffered is written before on_session_end
// returns, so a close answers only after its recording is complete). A failure never
// touches the session.
//
// A recorder made for a spawn is provisional until the session starts (keep()): one
// destroyed before that, because the spawn failed after its file was made, removes its file
// (by the directory's descriptor, and only while the name still holds that file), so a
// failed spawn leaves no header-only recording behind.
#pragma once

#include <ev.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "dshpty/session.hpp"
#include "loop/timer.hpp"
#include "record/asciicast.hpp"
#include "record/record_file.hpp"
#include "session_observer.hpp"

namespace dshpty::shell::record {

// What a marker and an input event show instead of what was typed to a reader with echo off.
inline constexpr std::string_view kHiddenInput = "[hidden input]";
// ... and instead of what was typed through a relay (ssh, script) to a far side.
inline constexpr std::string_view kRelayedInput = "[input through a relay]";

// The `m` marker of a send: its text, then its keys' names ("keys: Escape : q Enter"), or
// kHiddenInput, or kRelayedInput, or "[check-in]".
std::string send_marker(const SendNote& note);

class Recorder final : public SessionObserver {
 public:
  // Starts with the header in the buffer. `max_bytes` bounds the whole file. `secret` (the
  // session's mark nonce) never reaches the file: it is cut out of the output.
  Recorder(struct ev_loop* loop, RecordingFile file, const CastHeader& header, std::size_t max_bytes,
           std::string secret = {});
  ~Recorder();  // as on_session_end
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  void on_output(std::string_view raw) override;
  void on_input(std::string_view bytes, InputShown shown) override;
  void on_send(const SendNote& note) override;
  void on_shown() override;
  void on_resize(unsigned rows, unsigned cols) override;
  void on_session_end() override;

  // A marker of the host's own (e.g. a take-over's start), as any `m` event.
  void mark(std::string_view words);

  // What a local lingering session's helper needs to go on with the file while no host is
  // attached (record/detached_writer.hpp): the descriptor (-1 once ended), the start (seconds
  // since the epoch, as ev_now) and the cap.
  int handoff_fd() const { return fd_.get(); }
  double start_time() const { return start_; }
  std::size_t max_bytes() const { return max_bytes_; }

  // Provisional: destroyed before keep(), the file is removed (a spawn that failed).
  void remove_unless_kept() { remove_unless_kept_ = true; }
  void keep() { remove_unless_kept_ = false; }

  // Path, state, bytes (taken in: the file's size once the buffer is written; written, once
  // failed), and the error of a failed one.
  Recording state() const;

  // Buffered and not yet written past this, the disk is not keeping up: the recording fails.
  static constexpr std::size_t kMaxPendingBytes = std::size_t{16} << 20;
  // Room kept below max_bytes for the cut marker.
  static constexpr std::size_t kCutReserve = 192;
  static constexpr std::chrono::milliseconds kFlushDelay{50};
  static constexpr std::size_t kWriteSoonBytes = std::size_t{64} << 10;

 private:
  void add(char code, std::string_view data);
  void input(std::string_view bytes);  // shown input: the nonce cut out, whole characters
  bool write_pending();  // false once failed
  void flush_now();      // what waits, written now (a send's input, a result shown)
  void fail(std::string why);
  void stop_io();
  double elapsed();
  static void on_writable(struct ev_loop* loop, ev_io* w, int revents);
  void on_flush_timer();

  struct ev_loop* loop_;
  ev_io io_{};
  Timer flush_timer_;
  proc::UniqueFd fd_;
  Recording info_;
  std::size_t max_bytes_;
  std::uint64_t accepted_ = 0;  // header and events taken into the file (written or buffered)
  std::uint64_t whole_lines_ = 0;  // the file's bytes up to its last complete line
  std::string pending_;
  std::size_t pending_from_ = 0;  // written already from pending_'s front
  void remove_file();

  std::string secret_;
  SecretScrub output_scrub_;
  SecretScrub input_scrub_;
  std::string scrubbed_;
  Utf8Stream output_utf8_;
  Utf8Stream input_utf8_;
  std::string scratch_;
  double start_ = 0.;
  double last_ = 0.;
  proc::UniqueFd dir_;  // what remove_file() needs (RecordingFile's)
  std::string name_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  bool remove_unless_kept_ = false;
  bool send_input_next_ = false;  // on_send was told: its on_input writes the buffer
};

}  // namespace dshpty::shell::record
