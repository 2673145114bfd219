// ScriptedBackend: a fault-injecting backend for tests (ours and hosts' integration tests).
// Every step a backend takes — spawn, close, send, signal — follows a script: succeed,
// fail, fail its cleanup, complete after N loop turns, or wait on a gate the test releases.
// The synchronous calls (read, screen, resize) answer from queues of results. Its sessions'
// processes are simulated (an "alive" set of fake pids that a successful close empties), each
// session has a simulated screen whose size resize() changes, and it records everything it
// was asked to do so a test can assert on it.
//
// It keeps the rules of backend.hpp itself (every callback exactly once, from the loop,
// never inside the call, never after its session is destroyed). The one deliberate
// exception is ScriptedStep::misbehave_call_again, for tests of the service's guards.
//
// Scripts are looked up per call, first match wins:
//   spawn:  spawns.next, spawns.fallback, a plain successful spawn;
//   close/send/signal/resize of session S: S's `next`, every_session().`next`, S's
//           `fallback`, every_session().`fallback`, a plain success (but an unscripted
//           send, signal or resize of a session whose status is not running fails
//           SESSION_EXITED, as a real backend's would);
//   read/screen of session S: S's queue, every_session()'s queue, the session's own state.
// Session scripts are keyed by session id and may be set before the service mints it.
//
// Single-threaded, on the loop given to the constructor. Records stay valid (stable
// references) while the backend or any of its sessions lives. A spawn still pending when
// the backend and all its sessions are gone never completes (the service holds its backends
// while it has work in flight).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "dshpty/backend.hpp"

struct ev_loop;

namespace dshpty {

namespace detail {
struct ScriptedCore;
struct ScriptedGateAccess;
}  // namespace detail

// A gate a scripted step waits on until the test releases it. One gate may hold several
// steps; releasing it releases them all (their completions run on a later loop turn, never
// inside open()/fail()). A step that starts on an already released gate goes straight on.
// Releasing a gate whose session was destroyed is harmless: nothing fires.
class ScriptedGate {
 public:
  // A new, unreleased gate, shared by the test and the steps waiting on it.
  static std::shared_ptr<ScriptedGate> make();

  // Releases the waiting steps to do what they were scripted to do. False (no change) when
  // already released.
  bool open();
  // Releases the waiting steps as failures with `error` (non-null) instead of their script.
  bool fail(Error error);
  // True once open() or fail() released it.
  bool released() const noexcept { return released_; }
  // Steps currently waiting on this gate (a destroyed session's steps stop waiting).
  std::size_t waiting() const noexcept { return waiters_.size(); }

 private:
  friend struct detail::ScriptedGateAccess;
  ScriptedGate() = default;
  bool release(Error error);
  bool released_ = false;
  Error error_;
  std::uint64_t next_waiter_ = 1;
  std::map<std::uint64_t, std::function<void(const Error&)>> waiters_;
};

// One scripted outcome of one step. Build with the factories, then chain the modifiers:
//   ScriptedStep::fail().after_turns(3)
//   ScriptedStep::succeed().on_gate(gate)
// Order of events: wait for the gate (if any), then `turns` extra loop turns, then complete.
// A step with neither completes on the next loop turn.
struct ScriptedStep {
  enum class Kind {
    succeed,
    fail,          // complete with `error` (default BACKEND_FAILED "scripted <step> failure")
    fail_cleanup,  // complete with make_backend_cleanup_error(error, cleanup_error)
                   // (defaults for both); meant for spawn, any step accepts it
    reject,        // start_send/signal only: a synchronous failure returned from the call
                   // (default SESSION_EXITED); done is never called. Elsewhere: as fail.
  };
  Kind kind = Kind::succeed;
  Error error;
  Error cleanup_error;
  int turns = 0;
  std::shared_ptr<ScriptedGate> gate;

  // Misbehaviour, on purpose: after the step completed, invoke the same completion again
  // `turns` loop turns later, with `error` (null: the same success again; spawn always
  // needs an error and gets a default one). Still never after the session is destroyed.
  struct CallAgain {
    Error error;
    int turns = 0;
  };
  std::optional<CallAgain> misbehave_call_again;

  static ScriptedStep succeed() { return {}; }
  static ScriptedStep fail(Error error = {}) { return with(Kind::fail, std::move(error)); }
  static ScriptedStep fail_cleanup(Error error = {}, Error cleanup_error = {}) {
    ScriptedStep s = with(Kind::fail_cleanup, std::move(error));
    s.cleanup_error = std::move(cleanup_error);
    return s;
  }
  static ScriptedStep reject(Error error = {}) { return with(Kind::reject, std::move(error)); }
  static ScriptedStep gated(std::shared_ptr<ScriptedGate> gate) {
    return succeed().on_gate(std::move(gate));
  }

  ScriptedStep after_turns(int n) const {
    ScriptedStep s = *this;
    s.turns = n;
    return s;
  }
  ScriptedStep on_gate(std::shared_ptr<ScriptedGate> g) const {
    ScriptedStep s = *this;
    s.gate = std::move(g);
    return s;
  }
  ScriptedStep then_call_again(Error late_error, int late_turns = 0) const {
    ScriptedStep s = *this;
    s.misbehave_call_again = CallAgain{std::move(late_error), late_turns};
    return s;
  }

 private:
  static ScriptedStep with(Kind kind, Error error) {
    ScriptedStep s;
    s.kind = kind;
    s.error = std::move(error);
    return s;
  }
};

// A queue of scripted outcomes, one consumed per call, and what to do once it is empty.
template <class T>
struct ScriptedQueue {
  std::deque<T> next;
  std::optional<T> fallback;

  ScriptedQueue& push(T item) {
    next.push_back(std::move(item));
    return *this;
  }
  ScriptedQueue& set_default(T item) {
    fallback = std::move(item);
    return *this;
  }
};

// What one send does.
struct ScriptedSend {
  ScriptedStep step;
  SendResult result;                 // what a successful send completes with
  std::vector<OutputDelta> output;   // read_output() returns these in order, then empty ones
  // cancel() completes the send (on a later turn) with `result`, its wait_reason replaced by
  // `cancel_wait_reason`, even while it waits on its gate or turns.
  bool settle_on_cancel = false;
  WaitReason cancel_wait_reason = WaitReason::stdin_read;

  static ScriptedSend with(ScriptedStep step, SendResult result = {}) {
    ScriptedSend s;
    s.step = std::move(step);
    s.result = std::move(result);
    return s;
  }
};

// What one signal does. target_pgid 0: the session's pid (or 0 when it has none).
struct ScriptedSignal {
  ScriptedStep step;
  int target_pgid = 0;

  static ScriptedSignal with(ScriptedStep step, int target_pgid = 0) {
    return ScriptedSignal{std::move(step), target_pgid};
  }
};

// The scripts of one session (or, through every_session(), of all of them).
struct ScriptedSessionScript {
  ScriptedQueue<ScriptedStep> closes;
  ScriptedQueue<ScriptedSend> sends;
  ScriptedQueue<ScriptedSignal> signals;
  // What resize() returns. A failure leaves the size as it was; a success sets it (also on
  // an exited session: the script wins, as for signals).
  ScriptedQueue<Status> resizes;
  std::deque<Result<ReadPage>> reads;          // read() answers these first (after validation)
  std::deque<Result<ScreenSnapshot>> screens;  // screen() answers these first, as given
};

// The rows and cols of one resize() call.
struct ScriptedSize {
  unsigned rows = 0;
  unsigned cols = 0;
  friend bool operator==(const ScriptedSize&, const ScriptedSize&) = default;
};

// What a successful spawn creates.
struct ScriptedSessionConfig {
  std::string motd = "scripted\n";
  std::optional<int> pid;          // the top-level pid the snapshot shows; none by default
  std::set<int> processes;         // the simulated tree; empty: {pid}, or one made-up pid
  SessionStatus status;
  ReadPage page;                   // what read() returns when no scripted read is queued
  // What screen() returns when no scripted screen is queued; resizes change its rows and
  // cols (nothing else: its lines and cursor are the test's to keep consistent).
  ScreenSnapshot screen{.rows = 24, .cols = 80};
  ScriptedSessionScript script;    // merged into session_script(id) when created
};

// What a spawn does when its signal aborts before it completed.
enum class ScriptedAbortPolicy {
  honour,                // stop waiting; complete (next turn) with the abort reason
  honour_cleanup_fails,  // the same, but with make_backend_cleanup_error(reason, cleanup)
  ignore,                // record it and carry on with the script (may return a session)
};

struct ScriptedSpawn {
  ScriptedStep step;
  ScriptedAbortPolicy on_abort = ScriptedAbortPolicy::honour;
  Error abort_cleanup_error;  // for honour_cleanup_fails; default BACKEND_FAILED
  ScriptedSessionConfig session;

  static ScriptedSpawn with(ScriptedStep step,
                            ScriptedAbortPolicy on_abort = ScriptedAbortPolicy::honour) {
    ScriptedSpawn s;
    s.step = std::move(step);
    s.on_abort = on_abort;
    return s;
  }
};

// One spawn() call as the backend saw it.
struct ScriptedSpawnRecord {
  SpawnSpec spec;                     // as received; spec.signal still observes later aborts
  bool aborted_at_start = false;      // the signal was already aborted when spawn() ran
  bool aborted_while_pending = false; // it aborted before the spawn completed
  Error abort_reason;                 // the reason object it carried (either case)
  int completions = 0;                // times done was called (1, or more when misbehaving)
  bool completed = false;
  Error error;                        // the first completion's error; null: a session
};

// One session: its live simulated state and everything done to it.
struct ScriptedSessionRecord {
  std::string id;
  Owner owner;
  std::string motd;
  std::optional<int> pid;
  SessionStatus status;               // what status() reports; tests may change it
  ReadPage page;
  ScreenSnapshot screen;              // what screen() reports; tests may change it
  std::set<int> alive;                // simulated processes still running
  std::set<int> killed_on_destroy;    // still alive when the session was destroyed: a real
                                      // backend kills those without proof, so they leave `alive`

  std::vector<std::string> close_reasons;  // every close() call, in order (joins too)
  int close_calls = 0;        // close() calls
  int close_attempts = 0;     // closes actually started (a call while one runs joins it)
  std::vector<Error> close_results;  // per finished attempt; null: success
  bool closed = false;        // a close succeeded (the tree is quiescent)
  bool destroyed = false;     // the service destroyed the BackendSession

  std::vector<SendRequest> sends;  // every start_send() request, in order, as given (keys too)
  int start_send_calls = 0;
  int send_completions = 0;
  int cancel_calls = 0;
  int read_output_calls = 0;
  int read_calls = 0;
  std::vector<Signal> signals;     // every signal() call, in order
  int signal_calls = 0;
  int signal_completions = 0;
  std::vector<ScriptedSize> resizes;  // every resize() call, in order (failed ones too)
  int resize_calls = 0;
  int screen_calls = 0;
};

class ScriptedBackend final : public Backend {
 public:
  // Completes on `loop` (which must outlive the backend and its sessions).
  explicit ScriptedBackend(struct ev_loop* loop, std::string type = "scripted");
  ~ScriptedBackend() override;
  ScriptedBackend(const ScriptedBackend&) = delete;
  ScriptedBackend& operator=(const ScriptedBackend&) = delete;

  const std::string& type() const override;  // as given to the constructor
  // Follows the next spawn script (see the lookup order above); completes from the loop.
  void spawn(SpawnSpec spec, SpawnCallback done) override;

  // --- scripting (references stay valid while the backend lives) ---
  // The spawn scripts: one consumed per spawn() call, then the fallback.
  ScriptedQueue<ScriptedSpawn>& spawns();
  // The script of the session with this id (created empty if needed, also before spawn).
  ScriptedSessionScript& session_script(const std::string& session_id);
  // The script every session falls back on (see the lookup order above).
  ScriptedSessionScript& every_session();

  // --- records ---
  // Every spawn() call, in order.
  const std::deque<ScriptedSpawnRecord>& spawn_records() const;
  // Null when no session with that id was ever created.
  ScriptedSessionRecord* session(const std::string& session_id);
  const ScriptedSessionRecord* session(const std::string& session_id) const;
  // Ids of every session created, in creation order.
  std::vector<std::string> session_ids() const;
  // Sessions created and not yet destroyed.
  std::size_t live_sessions() const;
  // Scheduled steps not yet completed (spawns, closes, sends, signals, misbehaviours).
  std::size_t pending() const;
  // No session has a simulated process alive (destroyed sessions' leftovers were killed).
  bool all_processes_gone() const;
  // Every close reason this backend received, in order, as "<id>: <reason>".
  const std::vector<std::string>& close_log() const;

 private:
  std::shared_ptr<detail::ScriptedCore> core_;
};

}  // namespace dshpty
