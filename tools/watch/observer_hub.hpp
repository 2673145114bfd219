// The observers of a host's sessions (docs/watch.md): every watch client and web page
// asks here, never the session. The hub turns a session's observation into one frame (a
// JSON line: screen, status line facts), recomputed when output arrived (kFirstFrameDelay
// after it, then at most one frame per kFrameInterval a session) and once a second for the status line, and
// hands it to each observer of that session that can take it. An observer that cannot
// (its socket is full) is skipped and gets the newest frame once it can: frames replace
// one another, so a slow observer never makes the host hold more than one, and never slows
// the session. Nothing here writes to, resizes, signals or closes a session.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/service.hpp"
#include "loop/timer.hpp"
#include "recording_index.hpp"

namespace dshpty::watch {

// One observer of one session, implemented by a face (a watch socket, a web socket).
class Observer {
 public:
  virtual ~Observer() = default;
  // Whether it can take a frame now (its outbox is empty).
  virtual bool ready() const = 0;
  // The session's newest frame, one JSON object without a line break. Must not call the
  // hub's remove() from inside (a failed write closes later, from the loop).
  virtual void deliver(const std::string& frame) = 0;
  // The session is gone (closed, or no longer observable): `why` in words. The observer is
  // removed from the hub before this is called; it may destroy itself.
  virtual void ended(const std::string& why) = 0;
};

class ObserverHub {
 public:
  static constexpr std::chrono::milliseconds kFrameInterval{30};
  // A frame is computed this long after the first output of a quiet spell, not at once: a
  // send's own round trip (its echo, the command, the prompt: well under a millisecond for
  // `true`) then completes before the hub takes the loop to read the screen.
  static constexpr std::chrono::milliseconds kFirstFrameDelay{5};
  static constexpr std::chrono::milliseconds kStatusTick{1000};

  ObserverHub(struct ev_loop* loop, Service& service);
  ~ObserverHub();
  ObserverHub(const ObserverHub&) = delete;
  ObserverHub& operator=(const ObserverHub&) = delete;

  // Starts observing the session `word` names (its id, else its name when exactly one
  // session has it): the first frame comes from the loop. NO_SESSION when nothing matches,
  // INVALID_ARGUMENT when a name is ambiguous, the session's refusal (watchable false).
  // The id observed.
  Result<std::string> add(std::string_view word, Observer* observer);
  // Stops delivering to `observer` (no ended() call). Safe for one not added.
  void remove(Observer* observer);
  // An observer that was not ready became ready: it gets the newest frame if it lacks it.
  void ready_again(Observer* observer);
  // The output tap: the session printed. Cheap when nobody watches it.
  void output_arrived(std::string_view session_id);
  // How many observers watch the session now.
  unsigned count(std::string_view session_id) const;
  // Every session observers may watch: the observation and the observer count of each, in
  // id order.
  std::vector<std::pair<Observation, unsigned>> sessions() const;
  // Which recording each of this host's sessions has, closed ones included.
  RecordingIndex& recordings() { return recordings_; }
  // The frame of one observation (tests and the list): a JSON object.
  static std::string encode_frame(const Observation& view, unsigned observers, std::optional<std::int64_t> busy_ms);

 private:
  struct Watched {
    std::vector<Observer*> observers;
    std::string frame;              // the newest frame
    std::uint64_t version = 0;      // bumped when the frame changed
    std::map<Observer*, std::uint64_t> sent;  // the version each observer has
    // The busy job's start as first seen, for the status line's elapsed time.
    std::optional<std::string> busy_command;
    double busy_since = 0;
    bool busy = false;
    bool dirty = true;
  };

  void on_frame_timer();
  void on_status_tick();
  // Recomputes the session's frame; false when the session is gone (its observers ended).
  bool refresh(const std::string& id, Watched& watched);
  void deliver(Watched& watched);
  void schedule();
  void end_session(const std::string& id, const std::string& why);

  struct ev_loop* loop_;
  Service& service_;
  std::map<std::string, Watched, std::less<>> watched_;
  shell::Timer frame_timer_;
  shell::Timer status_timer_;
  double last_frame_ = 0;
  mutable RecordingIndex recordings_;
};

}  // namespace dshpty::watch
