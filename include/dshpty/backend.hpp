// The backend seam: what a named factory of sessions implements. The service calls these;
// hosts implement them only to add a backend of their own.
//
// Rules every backend keeps (the service relies on them and guards what it can):
// - every Callback is called exactly once, from the loop, never inside the call that took it
//   (use a dshpty::Deferred), and never after the BackendSession it belongs to is destroyed;
// - a spawn that fails or is cancelled cleans its partial resources before completing; when
//   that cleanup fails too it completes with make_backend_cleanup_error(spawn, cleanup);
// - close() completes successfully only when the session's captured process tree is
//   quiescent and its fds are closed; it settles a live send first; calls while one is in
//   flight join it; a failure clears the backend's own close fence so a later close retries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "dshpty/abort.hpp"
#include "dshpty/owner.hpp"
#include "dshpty/result.hpp"
#include "dshpty/session.hpp"

namespace dshpty {

struct SpawnRequest {
  std::optional<std::string> name;               // owner-local display label, never authority
  std::optional<std::string> cwd;                // working directory; backend default if unset
  std::map<std::string, std::string> options;    // backend-specific (see each backend's header)
  Limits limits{};                               // a backend that cannot enforce them fails
};

struct SpawnSpec {
  std::string session_id;  // minted by the service; unique for the service's life
  Owner owner;
  SpawnRequest request;
  // Fires on the caller's abort or on owner/service disposal; its reason says which.
  AbortSignal signal;
};

// A live send as the backend sees it. Owned by the service; destroyed before its session.
class BackendSendOperation {
 public:
  virtual ~BackendSendOperation() = default;
  // Output since the previous call (consuming).
  virtual OutputDelta read_output() = 0;
  // Asks the backend to interrupt the send (the shell backend: a real SIGINT to the
  // foreground process group). The send then completes through its normal readiness.
  // Returns false once the send has settled, or when nothing could be done (Send::cancel).
  virtual bool cancel() = 0;

  // Jobs (docs/shell-backend.md, "Jobs"). A backend without them keeps these defaults.
  // The send's output from byte `offset` on, at most `max_bytes` (Send::output).
  virtual Result<JobOutput> output(std::uint64_t /*offset*/, std::size_t /*max_bytes*/) {
    return make_error(Code::INVALID_ARGUMENT, "this backend's sends cannot be read by offset");
  }
  // Bytes of output so far: where the next byte's offset will be.
  virtual std::uint64_t output_end() const { return 0; }
  // Calls *ready once, from the loop, when output past `offset` arrives or the send settles,
  // unless the caller dropped it first (the backend holds it weakly).
  virtual void when_output(std::uint64_t /*offset*/, std::weak_ptr<const std::function<void()>> /*ready*/) {}
  // A background send with a condition: `done` once, from the loop, when the condition held
  // or its timeout ran out while the job runs on; never when the send settles first.
  virtual void when_condition(std::function<void(ConditionOutcome)> /*done*/) {}
  // Stops the send's job (Send::stop). A synchronous failure is returned and `done` never runs.
  virtual Status stop(Callback<StopResult> /*done*/) {
    return make_error(Code::INVALID_ARGUMENT, "this backend cannot stop a job");
  }
};

// A session the backend created. Unpublished until the service hands its id to the owner.
// Destroying it releases what is left without waiting (the service destroys it after a
// successful close, or after a disposal reported its failed close).
class BackendSession {
 public:
  virtual ~BackendSession() = default;

  virtual const std::string& motd() const = 0;      // start-up output
  virtual std::optional<int> pid() const = 0;       // the top-level process, if any
  // Running, or how the top-level process exited (fresh each call).
  virtual SessionStatus status() const = 0;

  // Starts one send (the service guarantees at most one live). A synchronous failure
  // (e.g. SESSION_EXITED) is returned and `done` is never called. The returned operation
  // is owned by the service, which destroys it before this session.
  virtual Result<std::unique_ptr<BackendSendOperation>> start_send(SendRequest request,
                                                                   Callback<SendResult> done) = 0;
  // A page of retained output. INVALID_ARGUMENT for a negative offset or a count below 1.
  virtual Result<ReadPage> read(const ReadRequest& request) = 0;
  // Delivers `signal` to the session's foreground process group. A synchronous failure is
  // returned and `done` is never called.
  virtual Status signal(Signal signal, Callback<SignalResult> done) = 0;
  // Tears the session down; see the rules at the top of this file.
  virtual void close(std::string reason, Callback<void> done) = 0;

  // What the session's terminal shows now. A backend without a screen: INVALID_ARGUMENT.
  virtual Result<ScreenSnapshot> screen() {
    return make_error(Code::INVALID_ARGUMENT, "this session has no screen");
  }
  // What an observer sees (dshpty/session.hpp, Observation: screen, activity, command; the
  // service fills the rest). Reads only what the session holds: never the terminal, so a
  // watcher changes nothing the owner sees. A backend without a screen: INVALID_ARGUMENT.
  virtual Result<Observation> observe() const {
    return make_error(Code::INVALID_ARGUMENT, "this session has no screen to observe");
  }
  // A session taken over from a lingering helper (docs/outlive.md): what its start
  // replayed. nullopt for a session this backend started.
  virtual std::optional<AttachReport> attach_report() const { return std::nullopt; }
  // What confines the session, when something does (a confined shell session).
  virtual std::optional<Confinement> confinement() const { return std::nullopt; }
  // What the session runs now (a shell: at its prompt or busy, with what, and its listening
  // ports), read on each call; nullopt when the backend cannot say.
  virtual std::optional<Activity> activity() const { return std::nullopt; }
  // The newest limit the session reached (SpawnRequest::limits), if any.
  virtual std::optional<LimitHit> limit_hit() const { return std::nullopt; }
  // The session's recording, when it is recorded.
  virtual std::optional<Recording> recording() const { return std::nullopt; }
  // The terminal's window size (the service checked 1..4096). A backend without a
  // terminal: INVALID_ARGUMENT.
  virtual Status resize(unsigned /*rows*/, unsigned /*cols*/) {
    return make_error(Code::INVALID_ARGUMENT, "this session has no terminal to resize");
  }
};

using SpawnCallback = std::function<void(Result<std::unique_ptr<BackendSession>>)>;

// A named factory of sessions.
class Backend {
 public:
  virtual ~Backend() = default;
  // Stable, non-empty; one backend per type in a service.
  virtual const std::string& type() const = 0;
  // Creates one unpublished session; completes exactly once (see the rules above).
  virtual void spawn(SpawnSpec spec, SpawnCallback done) = 0;
};

}  // namespace dshpty
