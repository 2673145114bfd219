// FrameLink: one end of the stream protocol's byte pipe (link/frames.hpp) on a libev loop,
// the same for the host (remote/stream_channel.cpp) and the far helper
// (supervisor/stdio_bridge.cpp): the fd, the frame reader, the outbox, the flush before
// the loop polls, the bounded read loop and, for the helper's last words, a blocking flush
// with a deadline. What a frame means, and what the link's end means, is the owner's: the
// link reports and never decides.
//
// Frames made while handling one event leave together, in one write once the loop is back
// in its poll: over TCP (ssh) separate small writes would wait on Nagle and delayed ACKs,
// which cost milliseconds a send. The write is made by a prepare watcher, which libev runs
// before it updates its kernel state and polls: no EPOLLOUT to ask for and wait for (that
// cost two epoll_ctl and a loop turn a flush, and libev's lazy removal one more wake-up).
// The writable watcher is started too, as the fallback for a full link or a frame made
// while the prepare watchers run; when the prepare flush empties the outbox it is stopped
// before libev ever tells the kernel.
#pragma once

#include <ev.h>

#include <chrono>
#include <string>
#include <string_view>

#include "link/frames.hpp"
#include "link/messages.hpp"
#include "proc/unique_fd.hpp"

namespace dshpty::link {

// How a link ended, as its reader or writer saw it.
enum class LinkEnd {
  closed,       // EOF, or a reset: the peer's side says the rest
  write_failed, // EPIPE: nobody reads us any more (the outbox is dropped)
  bad_stream,   // bytes that are no frame (the text says why): a protocol error
};

class FrameLink {
 public:
  struct Events {
    virtual void on_frame(const frames::Frame& frame) = 0;
    virtual void on_link_end(LinkEnd end, const std::string& why) = 0;
    virtual void on_received() {}    // bytes arrived (a silence bound counts from here)
    virtual void on_read_done() {}   // a read pass ended (an ACK may be due)
    virtual void on_flushed() {}     // a flush ran (the outbox shrank, or is full)
   protected:
    ~Events() = default;
  };

  FrameLink(struct ev_loop* loop, Events& events);
  ~FrameLink() { close(); }
  FrameLink(const FrameLink&) = delete;
  FrameLink& operator=(const FrameLink&) = delete;

  // Starts reading `socket` (owned; written with MSG_NOSIGNAL), with `reader` holding what
  // was read from it before.
  void open(proc::UniqueFd socket, frames::FrameReader reader = {});
  // Starts reading `in` and writing `out`, which stay the caller's (stdin and stdout).
  void open(int in, int out);
  // Stops every watcher, drops the outbox and the reader's bytes, closes an owned fd.
  void close();
  // Stops reading: no more frames are handed out, also from a read under way. Writing
  // goes on (a helper's last words to a host that closed only its sending side).
  void stop_reading();
  // Breaks the link for `why` ("": the peer ended it): no frame is read any more, and the
  // first reason given stays (why_broken) until the next open. Writing goes on, as for
  // stop_reading: the owner stops it or says its last words.
  void break_link(std::string why);
  const std::string& why_broken() const { return why_broken_; }
  // Stops reading and writing (the outbox is dropped), keeping the fd for shutdown().
  void stop();
  void shutdown();  // SHUT_RDWR: the peer sees the end
  bool is_open() const { return in_ >= 0; }
  bool reading() const { return reading_; }
  bool owns_fd() const { return owned_.valid(); }
  int fd() const { return in_; }

  // ---- writing ---------------------------------------------------------------------------
  // Appends the frame to the outbox and flushes before the loop's next poll.
  template <class F>
  void post(const F& frame) {
    frames::encode(outbox_, frame);
    flush_soon();
  }
  // Appends without flushing (the helper holds output while a send waits for its prompt).
  template <class F>
  void queue(const F& frame) { frames::encode(outbox_, frame); }
  void queue_bytes(std::string_view bytes) { outbox_.append(bytes); }
  std::string& outbox() { return outbox_; }
  void flush_soon();   // the write before the next poll
  void hold();         // cancels a flush_soon (the outbox waits for the next one)
  void flush();        // writes what the link takes now; the writable watcher does the rest
  // Writes the outbox waiting for the link, at most `bound`: the helper's last words,
  // when nothing else is left to do. Blocks: never on the host's loop.
  void flush_blocking(std::chrono::milliseconds bound);
  // One pass that never waits.
  void flush_once();
  std::size_t outbox_size() const { return outbox_.size(); }
  ev_tstamp last_tx() const { return last_tx_; }

  // ---- reading ---------------------------------------------------------------------------
  // Reads what the link holds, a bounded number of times so a flood cannot starve the
  // loop, and hands out each whole frame. True when more may be waiting.
  bool read_some();
  // Frames the reader holds already (an adopted link's first bytes).
  void dispatch_buffered();
  frames::FrameReader& reader() { return reader_; }
  ev_tstamp last_rx() const { return last_rx_; }
  void touch();  // counts both directions from now (a new link: its silence starts now)

 private:
  static void on_readable(struct ev_loop*, ev_io* w, int);
  static void on_writable(struct ev_loop*, ev_io* w, int);
  static void on_before_poll(struct ev_loop*, ev_prepare* w, int);
  void start(int in, int out, bool socket);
  void dispatch();

  struct ev_loop* loop_;
  Events& events_;
  proc::UniqueFd owned_;
  int in_ = -1;
  int out_ = -1;
  bool socket_ = false;   // send(MSG_NOSIGNAL) and recv, else write and read
  bool in_read_ = false;  // read_some is not re-entered from a frame's handling
  bool reading_ = false;  // until stop_reading: a frame's handling may end the link mid-read
  frames::FrameReader reader_;
  std::string outbox_;
  std::string why_broken_;
  ev_io read_io_{};
  ev_io write_io_{};
  ev_prepare flush_before_poll_{};
  ev_tstamp last_rx_ = 0;
  ev_tstamp last_tx_ = 0;
};

}  // namespace dshpty::link
