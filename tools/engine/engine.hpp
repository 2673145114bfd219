// The one engine under the tools' faces (the text REPL, JSON Lines, an MCP server): typed
// operations on a Service, with the state every face needs and none should copy — owners by
// label, live sends by key, pending opens, the count of completions still owed, defaults
// and caps, and a shutdown that settles everything. No I/O and no encoding: a face parses
// its input into these calls and renders what they return. Every callback runs once, from
// the loop; an operation that fails synchronously never calls its callback.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/abort.hpp"
#include "dshpty/linger.hpp"
#include "dshpty/loop.hpp"
#include "dshpty/service.hpp"
#include "owner_table.hpp"
#include "render/result_cap.hpp"
#include "requests.hpp"
#include "send_queue.hpp"
#include "send_table.hpp"

namespace dshpty::engine {

// Every member has a default initializer, so designated initializers are -Wextra clean.
struct Settings {
  // Results are cut to this many bytes: a send's viewport by the backend (the cap travels
  // in the request), the motd, read pages and screens by the face.
  std::size_t max_result_bytes = render::kDefaultMaxResultBytes;
  // For a send that names none; unset: the backend's own default.
  std::optional<std::chrono::milliseconds> send_idle{};
  std::optional<std::chrono::milliseconds> send_timeout{};
  // Lingering sessions (docs/outlive.md): the state directory ("" : the default), and what
  // makes the shell backend detach them when the host leaves (detach_lingering_on_close).
  std::string state_dir{};
  std::function<void()> detach_lingering{};
  // How many people watch a session now (docs/watch.md); unset: nobody can.
  std::function<unsigned(std::string_view session_id)> observers{};
  // The operator's confinement policy as the faces describe it (docs/security.md): the
  // mode a session gets when it names none, the modes it may name, the network fixed off.
  // The backend enforces it; the engine and the MCP schema only say it.
  struct Policy {
    std::string sandbox_default = "none";
    std::vector<std::string> sandbox_allowed = {"none", "workspace-write", "read-only"};
    bool network_off = false;
  } policy{};
};

// One lingering session an attach found: taken over (session), or failed (error), or a
// tombstone saying how it ended while no host held it.
struct AttachOutcome {
  std::optional<SpawnResult> session{};
  std::optional<std::string> name{};  // for a failure: the session's name
  Error error{};
  std::optional<LingerTombstone> tombstone{};
};

// A lingering session as `terminal_list` shows it.
using LingeringSession = dshpty::LingeringSession;

// A send's timeout and idle, when set, are integers of milliseconds in 1..kMaxWaitMs (a
// day): one rule for every face, checked here. INVALID_ARGUMENT naming the field otherwise.
inline constexpr std::int64_t kMaxWaitMs = 86'400'000;
Status check_wait_bounds(const SendRequest& request);
// An open's own checks before the backend's: a session name holds no control characters
// (the text face prints names on status lines), and `network` comes with `sandbox` (or an
// operator's default mode that confines).
Status check_open(const OpenRequest& request, const Settings::Policy& policy = {});

// NO_SESSION for the name of a lingering session (Engine::lingering_named), saying how to
// take it over in a face's words (`attach`: "terminal_attach {\"name\": ...}", ...).
Error lingering_no_session(std::string_view name, std::string_view attach);
// SEND_ACTIVE with what ends or interrupts the live send, in a face's words (`remedy`).
Error send_active(std::string_view remedy);
// Why a cancel of a live send did nothing (Engine::cancel_send false): the JSON face's
// cancel answer `reason`.
inline constexpr std::string_view kCancelDeclined =
    "nothing was taken back or interrupted: the program in front relays the terminal to a far side "
    "(ssh, script) and the text is its own; the send settles as a send to it does, its result says "
    "lineState relayed; send keys [\"C-c\"] to interrupt the far command";

class Engine {
 public:
  // `service` must outlive the engine; its loop runs the engine's own late completions.
  explicit Engine(Service& service, Settings settings = {});
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  const Settings& settings() const noexcept { return settings_; }
  std::vector<std::string> backend_types() const { return service_.backend_types(); }

  // Owners, by label: the first use of a label mints its owner.
  Owner owner(std::string_view label) { return owners_.get(label); }
  // Disposes the label's owner (its sessions closed, its setups aborted); the label names a
  // fresh owner from this call on. False when the label names no owner yet: nothing to
  // dispose, and `done` never runs.
  bool dispose_owner(std::string_view label, Callback<void> done);
  bool has_activity(std::string_view owner);
  // The owner's sessions, in publication order.
  std::vector<SessionSnapshot> list(std::string_view owner);
  // How many observers watch the session (`list` shows it); 0 when nobody can.
  unsigned observers(std::string_view session_id) const {
    return settings_.observers ? settings_.observers(session_id) : 0;
  }
  // The limit one session reached (as list() says it), without a snapshot of every session.
  std::optional<LimitHit> limit_hit(std::string_view owner, std::string_view session_id);
  // The same, each with what it runs (SessionSnapshot::activity): what a face's list shows.
  std::vector<SessionSnapshot> list_activity(std::string_view owner);
  // The id of the owner's session that `word` names (its id, else its name); nullopt if none.
  std::optional<std::string> resolve(std::string_view owner, std::string_view word);
  // The key of `owner`'s live send on the session `word` names (its id or name), if any.
  // Send keys are each owner's own: two owners may both have a send under one key, and
  // every operation by key reaches the caller's own send only (docs/tool-protocol.md).
  std::optional<std::string> live_send_on(std::string_view owner, std::string_view word);

  // Opens a session (check_open(), then the backend); every failure comes through `done`. With an `abort_key`, abort_open()
  // can stop it while it is pending.
  void open(std::string_view owner, OpenRequest request, Callback<SpawnResult> done, std::string abort_key = {});
  // Aborts the pending open under `abort_key` with `reason`; false when none is pending.
  bool abort_open(std::string_view abort_key, Error reason);

  // Starts the session's send, tracked as `send_key` until it settles. INVALID_ARGUMENT when a
  // live send of this owner's already has that key; otherwise the service's synchronous failures. While a
  // send of this owner that cancel_send() interrupted is still settling on the session, the
  // send waits for it (SendQueue) instead of failing SEND_ACTIVE, and starts once it settled;
  // a failure to start then comes through `done`.
  Status send(std::string_view owner, SessionSend request, std::string send_key, Callback<SendResult> done);
  // Interrupts the send under `send_key` (live, or settled lately: then false); a send that
  // waits behind a cancelled one is dropped (true), its `done` getting ABORTED. False for a
  // live send the backend could neither take back nor interrupt (its text went to a relay:
  // Send::cancel); the next send still waits for it, as behind any cancel.
  // INVALID_ARGUMENT when the key names no send; FOREIGN_SESSION when the owner has none
  // under it and another owner has.
  Result<bool> cancel_send(std::string_view owner, std::string_view send_key);
  // The owner's send under `send_key` has not settled yet.
  bool send_live(std::string_view owner, std::string_view send_key) const { return sends_.is_live(owner, send_key); }
  // Live here and not yet ended in its backend: a cancel that came too late (the send ended,
  // its completion still on its way from the loop) is not one the backend declined.
  bool send_running(std::string_view owner, std::string_view send_key) const {
    const auto* entry = sends_.is_live(owner, send_key) ? sends_.find(owner, send_key) : nullptr;
    if (!entry) return false;
    auto end = entry->send->output(entry->send->output_end(), 1);
    return end && !end->done;
  }
  // The send's output since the previous call (consuming). Errors as cancel_send().
  Result<OutputDelta> send_output(std::string_view owner, std::string_view send_key);

  // Jobs (engine_jobs.cpp). The send's output by offset (or, without one, from its
  // consuming cursor), waiting up to `wait` for more when there is none yet: answered once
  // output past it came, the send ended (and its face has its result), or the wait ran out,
  // from the loop, never by polling. Errors as cancel_send(), and INVALID_ARGUMENT for an
  // offset past the output's end.
  Status read_send_output(std::string_view owner, std::string_view send_key, const SendOutputRead& read,
                          Callback<SendOutputAnswer> done);
  // Stops the send's job (Send::stop). Errors as cancel_send(), or the backend's own.
  Status stop_send(std::string_view owner, std::string_view send_key, Callback<StopResult> done);
  // Answers the readers waiting on the send's output now, with what there is (a face's
  // Ctrl-C: the reader stops waiting, the job runs on). False when none waited.
  bool answer_output_waits(std::string_view owner, std::string_view send_key);
  // A background send with a condition: `done` with its outcome while the job runs on
  // (Send::when_condition); never when the send settles first. False when no live send of
  // the owner's has that key.
  bool when_condition(std::string_view owner, std::string_view send_key, std::function<void(ConditionOutcome)> done);

  Result<ReadPage> read(std::string_view owner, const SessionRead& request);
  Result<ScreenSnapshot> screen(std::string_view owner, const SessionScreen& request);
  Status resize(std::string_view owner, const SessionResize& request);
  Status signal(std::string_view owner, const SessionSignal& request, Callback<SignalResult> done);
  // `done` gets true when this call closed the session, false when a close was in flight.
  Status close(std::string_view owner, const SessionClose& request, Callback<bool> done);

  // Takes over the owner's lingering sessions (docs/outlive.md): the one named `name`, or
  // every one no host holds. Tombstones of the owner (of that name) are reported once and
  // forgotten. NO_SESSION when `name` names neither a lingering session nor a tombstone of
  // this owner; BACKEND_FAILED for an unsafe state directory; with a name, that session's
  // own failure. Every outcome through `done`.
  void attach(std::string_view owner, std::optional<std::string> name, Callback<std::vector<AttachOutcome>> done);
  // The owner's lingering sessions that no host of theirs holds (a host attaching takes
  // them); errors as attach.
  Result<std::vector<LingeringSession>> lingering(std::string_view owner);
  // The name of a lingering session of the owner's that `word` names when it names no
  // session here (after a restart, the word an agent still uses): a face's NO_SESSION then
  // says how to take it over. nullopt otherwise.
  std::optional<std::string> lingering_named(std::string_view owner, std::string_view word);

  // The host leaves (EOF, SIGTERM, SIGHUP): sessions with linger > 0 are detached (they
  // outlive it), then the rest is shut down as shutdown() does.
  void leave(Callback<void> done);

  // Disposes the service (every session's process tree gone) and completes, with the
  // disposal's outcome, once every other operation's callback has run. A call while one is
  // in flight joins it; a call after it completed gets the same outcome on a later turn.
  void shutdown(Callback<void> done);
  bool shutting_down() const noexcept { return shutdown_ != Shutdown::none; }
  // Operations whose callback has not run yet.
  std::size_t pending() const noexcept { return pending_; }

 private:
  // `done`, then one fewer owed callback. For calls that can fail synchronously (then the
  // callback never runs), the count goes up only once the call succeeded.
  template <class T>
  Callback<T> counted(Callback<T> done);
  // counted(), owed from now on: for calls whose every outcome comes through the callback.
  template <class T>
  Callback<T> owed(Callback<T> done);
  void settle_if_quiet();
  Status start_send(std::string_view owner, SessionSend request, std::string send_key, Callback<SendResult> done);
  // Starts a send that waited behind a cancelled one; it owes its outcome to `done` already.
  void start_waiting(SendQueue::Queued queued);
  // The owner's send under `send_key`: one waiting behind a cancelled send (queued), else one
  // started (entry). FOREIGN_SESSION when only another owner has a send under that key (a
  // guessed key reaches nothing of theirs), INVALID_ARGUMENT when nobody has.
  struct FoundSend {
    const SendQueue::Queued* queued = nullptr;
    const SendTable::Entry* entry = nullptr;
  };
  Result<FoundSend> find_send(std::string_view owner, std::string_view send_key) const;

  // Readers waiting for a send's output (engine_jobs.cpp), answered when it comes, when
  // their wait runs out, or when the send settles (after its face had the result).
  struct OutputWait;
  // `woken`: by the send's output (then an answer with nothing new waits on); else by the
  // wait's timer or the face (answered as it is).
  void finish_wait(const std::shared_ptr<OutputWait>& wait, bool woken = false);
  void arm_wait(const std::shared_ptr<OutputWait>& wait);
  Result<SendOutputAnswer> take_output(const SendTable::Entry& entry, std::string_view send_key,
                                       const SendOutputRead& read);
  std::vector<std::shared_ptr<OutputWait>> waits_;

  Service& service_;
  Settings settings_;
  Deferred late_;  // completions for calls that arrive after shutdown completed
  OwnerTable owners_;
  SendTable sends_;
  SendQueue waiting_;  // sends behind a cancelled one
  std::map<std::string, AbortController, std::less<>> opens_;  // abortable opens by key
  std::size_t pending_ = 0;
  // The shutdown's one lifecycle: asked (the service disposing), the service disposed
  // (calls still owed may be in flight), settled (every waiter answered; later callers get
  // the same result at once).
  enum class Shutdown { none, disposing, disposed, settled };
  Shutdown shutdown_ = Shutdown::none;
  Status dispose_result_;
  std::vector<Callback<void>> shutdown_waiters_;
};

}  // namespace dshpty::engine
