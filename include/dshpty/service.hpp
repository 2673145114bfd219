// The session service: an owner-scoped, persistent PTY seam embedded in the host's libev
// loop. It keeps one table of session records, each in one explicit state, creates
// sessions through named backends, fences every operation to the exact live owner, and
// completes teardown only when the backend proved the session's process tree is gone.
//
// Threading: every call on the loop's thread. Completions run from the loop, exactly once,
// never inside the call that started them, and may call back into the service.
// Synchronous failures (returned values) never also run their callback.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/abort.hpp"
#include "dshpty/backend.hpp"
#include "dshpty/owner.hpp"
#include "dshpty/result.hpp"
#include "dshpty/session.hpp"

struct ev_loop;

namespace dshpty {

namespace detail {
struct ServiceCore;
struct KeptOutput;
}

// A session record's state (docs/contract.md, "Session states").
enum class RecordState { setup, published, sending, closing, closed, cleanup_failed };
// "setup", "published", ...
std::string_view record_state_name(RecordState state) noexcept;

// A read-only row of the service's table, for diagnostics, tests and tools.
struct RecordView {
  std::string id;
  Owner owner;
  std::optional<std::string> name;
  std::string type;
  RecordState state = RecordState::setup;
  bool published = false;  // the owner was handed the id
  Error cleanup_error;     // the retained failure, when state is cleanup_failed
};

struct SpawnOptions {
  // Every member has a default initializer, so {.type = "shell"} is -Wextra clean on g++ 12.
  std::string type{};                            // the backend type, e.g. "shell"
  std::optional<std::string> name{};             // must not be empty when set
  std::optional<std::string> cwd{};
  std::map<std::string, std::string> options{};  // passed to the backend as is
  // Resource limits (dshpty/session.hpp); a backend that cannot enforce them fails the
  // spawn. The shell backend: within ShellConfig's ceilings, else INVALID_ARGUMENT.
  Limits limits{};
  AbortSignal signal{};                          // the caller's; never aborts by default
};

struct SpawnResult {
  SessionSnapshot session;
  std::string motd;
  // Set when the spawn took over a lingering session (the shell backend's "attach"
  // option, docs/outlive.md).
  std::optional<AttachReport> attached{};
};

// A send, shared by its caller and the service. Stays usable after the send settled and
// after the session closed (then it has no more output).
class Send {
 public:
  ~Send();  // the caller may drop its handle at any time: the send goes on
  Send(const Send&) = delete;
  Send& operator=(const Send&) = delete;

  // Output since the previous call (consuming). Empty once the session is gone.
  OutputDelta read_output();
  // Asks the backend to interrupt the send; false once it has settled, or when the backend
  // could neither take the text back nor interrupt it (the shell backend: a relay in front
  // has it; the result then says LineState::relayed). Then nothing happens.
  bool cancel();
  // Jobs (docs/shell-backend.md, "Jobs"). The output from byte `offset` on, at most
  // `max_bytes` of it; reading moves no cursor, so any number of readers may follow the same
  // send. INVALID_ARGUMENT for an offset past the end, a max_bytes of 0, or a backend that
  // cannot. Once the session is gone, what the send's window kept when it went stays
  // readable by the same offsets, for as long as this handle is held: every read `done`,
  // nothing more to come.
  Result<JobOutput> output(std::uint64_t offset, std::size_t max_bytes);
  // Bytes of output so far (once the session is gone: all there ever were).
  std::uint64_t output_end() const;
  // Calls `ready` once, from the loop, when output past `offset` arrives or the send
  // settles, for as long as the returned token is held; dropping it ends the wait.
  std::shared_ptr<const std::function<void()>> when_output(std::uint64_t offset, std::function<void()> ready);
  // A background send with a condition (SendRequest::until): `done` once, from the loop,
  // with the match or the timeout while the job runs on; never if the send settles first
  // (its own completion says how).
  void when_condition(std::function<void(ConditionOutcome)> done);
  // Stops the send's job: SIGINT, SIGTERM, SIGKILL, each after a bounded wait, to its
  // processes (not the shell, not an earlier background job); `done` once they are gone and
  // the send settled, or with the processes that remain. A settled send: stopped at once.
  // Synchronous failures: INVALID_ARGUMENT where the backend cannot stop jobs.
  Status stop(Callback<StopResult> done);
  // True once the send's completion was decided (it may still be on its way).
  bool settled() const noexcept { return settled_; }

 private:
  friend struct detail::ServiceCore;
  Send() = default;
  std::unique_ptr<BackendSendOperation> op_;
  // What op_ kept of the output, taken when the session was buried (op_ goes with it).
  std::unique_ptr<detail::KeptOutput> kept_;
  bool settled_ = false;
  // Stops not answered yet: a session buried meanwhile answers them SESSION_CLOSING.
  std::vector<std::shared_ptr<Callback<StopResult>>> stops_;
};

class Service;

// The handle register_backend() returns. unregister() removes the backend only if the
// service still holds that exact backend (a stale handle never removes a replacement).
// Dropping the handle does not unregister. Safe to use after the service is gone.
class BackendRegistration {
 public:
  BackendRegistration() = default;
  // True when this call removed the backend.
  bool unregister();

 private:
  friend class Service;
  std::weak_ptr<detail::ServiceCore> core_;
  std::weak_ptr<Backend> backend_;
};

class Service {
 public:
  // Embeds in `loop` (default or not); the loop must outlive the service.
  explicit Service(struct ev_loop* loop);
  // Precondition: nothing in flight (no setup, send, close, disposal or undelivered
  // completion); dispose() and let it complete first. A violation aborts the process with
  // a message; it is never undefined behaviour. Idle published sessions are destroyed
  // (their backends release them without waiting).
  ~Service();
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // The loop given to the constructor (not owned).
  struct ev_loop* loop() const noexcept;

  // INVALID_ARGUMENT for a null backend or an empty type; DUPLICATE_BACKEND when the type
  // is taken; SERVICE_DISPOSING once dispose() started. The service shares ownership.
  Result<BackendRegistration> register_backend(std::shared_ptr<Backend> backend);
  // Registered types, in registration order.
  std::vector<std::string> backend_types() const;

  // A new live owner (once dispose() started, it is minted not live).
  Owner mint_owner(std::string label);
  // True for an owner minted here and not disposed; false otherwise.
  bool is_owner_live(const Owner& owner) const noexcept;

  // Creates and publishes a session. Every failure comes through `done`, checked in this
  // order: SERVICE_DISPOSING; the caller's exact abort reason; OWNER_NOT_LIVE; NO_BACKEND;
  // INVALID_ARGUMENT (empty name); DUPLICATE_NAME. Then the backend's outcome.
  void spawn(const Owner& owner, SpawnOptions options, Callback<SpawnResult> done);

  // Starts the session's one live send. Synchronous failures: OWNER_NOT_LIVE, NO_SESSION,
  // FOREIGN_SESSION, SESSION_CLOSING, SEND_ACTIVE, or the backend's own (SESSION_EXITED).
  Result<std::shared_ptr<Send>> start_send(const Owner& owner, std::string_view session_id,
                                           SendRequest request, Callback<SendResult> done);
  // A page of retained output. Fails with OWNER_NOT_LIVE, NO_SESSION, FOREIGN_SESSION or
  // the backend's INVALID_ARGUMENT.
  Result<ReadPage> read(const Owner& owner, std::string_view session_id,
                        const ReadRequest& request = {});
  // What the session's terminal shows now. Fails as read(); a backend without a screen
  // says so with INVALID_ARGUMENT.
  Result<ScreenSnapshot> screen(const Owner& owner, std::string_view session_id);
  // Sets the session's window size (its foreground group gets SIGWINCH). Fails with
  // OWNER_NOT_LIVE, NO_SESSION, FOREIGN_SESSION, SESSION_CLOSING, INVALID_ARGUMENT outside
  // 1..4096 (rows and cols), or the backend's own (SESSION_EXITED).
  Status resize(const Owner& owner, std::string_view session_id, unsigned rows, unsigned cols);
  // Signals the foreground process group. Synchronous failures as read(), plus
  // SESSION_CLOSING and the backend's own.
  Status signal(const Owner& owner, std::string_view session_id, Signal signal,
                Callback<SignalResult> done);
  // Closes the session: `done` gets true when this call closed it, false when it joined a
  // close already in flight, or the close error (then the session stays listed as
  // cleanup_failed and a later kill retries). Synchronous failures: OWNER_NOT_LIVE,
  // NO_SESSION, FOREIGN_SESSION.
  Status kill(const Owner& owner, std::string_view session_id, Callback<bool> done,
              std::string reason = "model request");

  // Observers (docs/watch.md, docs/contract.md "Observers"): a read-only look at any
  // published session, whatever its owner, for the host's own watch faces. The host holds
  // every owner already, so this grants it nothing new; whom it shows the view to is its
  // call. Nothing here writes, resizes, signals, closes or reads the terminal. NO_SESSION
  // for an id that names no published session; the backend's refusal (a session without a
  // screen; a shell backend with ShellConfig::watchable false) as it gave it.
  Result<Observation> observe(std::string_view session_id) const;

  // Fresh snapshots of the owner's published sessions, in publication order. Empty for an
  // owner that is not live. With ListDetail::activity (the default) each says what it runs
  // (SessionSnapshot::activity: a look at its processes and ports); basic skips that look.
  enum class ListDetail { basic, activity };
  std::vector<SessionSnapshot> list(const Owner& owner, ListDetail detail = ListDetail::activity) const;
  // A fresh snapshot of one of the owner's published sessions, as list() has it (without its
  // activity), without walking the others; nullopt for an owner not live or an id it does not hold.
  std::optional<SessionSnapshot> snapshot(const Owner& owner, std::string_view session_id) const;

  // True while any record of the owner is in any state but closed.
  bool has_owner_activity(const Owner& owner) const noexcept;

  // Marks the owner not live, aborts its setups (OWNER_NOT_LIVE), closes its sessions
  // ("PTY owner disposed"), waits for all of it, and completes with CLEANUP_FAILED
  // ("failed to clean up PTY lifecycle", children per failure group) if anything failed,
  // consuming those failures. A second call while one is in flight joins it; a call for an
  // owner already disposed succeeds (while a service disposal is in flight: once it
  // completed; it reports the failures); OWNER_NOT_LIVE for an owner this service never minted.
  void dispose_owner(const Owner& owner, Callback<void> done);
  // The same for every owner (SERVICE_DISPOSING, "PTY service disposed"); always clears
  // backends and owners. Afterwards every spawn fails SERVICE_DISPOSING. A second call joins
  // the first, or succeeds at once after it completed.
  void dispose(Callback<void> done);
  // True from the first dispose() call on (also after it completed).
  bool disposing() const noexcept;

  // The whole table, in id order (oldest first); copies, owned by the caller.
  std::vector<RecordView> records() const;

 private:
  std::shared_ptr<detail::ServiceCore> core_;
};

}  // namespace dshpty
