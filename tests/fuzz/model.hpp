// The reference model of docs/contract.md (and, where the contract is silent,
// of service.hpp's comments): what the service's table, every completion and
// has_owner_activity must be, given what the backends did.
//
// The backends are the environment: the driver reports each backend event (a spawn
// completed, a close failed, ...) to the model *before* the service hears of it, and the
// model says what the service must do in answer — which backend calls it must make (close
// reasons), how each record's state moves, and which completion becomes due with which
// outcome. The driver then checks the service against that. Violations are collected in
// `violations` as "[category] message"; the first one ends a run.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dshpty/service.hpp"

namespace dshpty::fuzz {

// How an expected error is recognised.
struct ErrorMatch {
  Error same;                          // when set: exactly this object
  std::optional<Code> code;
  std::optional<std::string> message;
  bool check_children = false;
  std::vector<ErrorMatch> children;    // matched in any order

  static ErrorMatch exactly(Error error);
  static ErrorMatch of(Code code);     // the code and its default message
  static ErrorMatch of(Code code, std::string message);
  static ErrorMatch code_only(Code code);
};
// "" when `error` matches `want`, else what differs.
std::string mismatch(const ErrorMatch& want, const Error& error);
std::string describe(const ErrorMatch& want);

enum class CompletionKind { spawn, send, signal, kill, dispose_owner, dispose };
std::string_view completion_kind_name(CompletionKind kind) noexcept;

// pending: not decided yet; due: decided, must arrive from the loop; fired: arrived;
// never: its call failed synchronously, so it must never run.
enum class Phase { pending, due, fired, never };

struct Expect {
  bool ok = false;
  ErrorMatch error;  // when !ok
  bool flag = false;            // kill
  SpawnResult spawn;            // spawn
  SendResult send;              // send
  SignalResult signal;          // signal
};

struct Completion {
  CompletionKind kind;
  std::string label;
  Phase phase = Phase::pending;
  Expect expect;
};

// What the model expects of a synchronous call that may reach the backend.
struct SyncExpect {
  std::optional<ErrorMatch> error;  // the service must return this (no backend call)
  bool backend_call = false;        // else: the backend must be called once
};

struct OwnerM {
  Owner handle;
  bool minted_here = false;
  bool live = false;
  int disposal = -1;  // the owner disposal in flight
};

struct CallerM {
  AbortController controller;
  Error reason;  // set when aborted
};

struct SessionFacts {
  std::string motd;
  std::optional<int> pid;
  SessionStatus status;
};

struct RecordM {
  std::string id;
  int owner = -1;
  std::optional<std::string> name;
  std::string type;
  int instance = -1;  // the backend instance that made it
  RecordState state = RecordState::setup;
  bool published = false;
  std::uint64_t publish_order = 0;
  Error cleanup_error;
  int claimed_by = -1;  // the disposal that will consume it

  // setup and rollback
  int spawn_token = -1;
  int caller = -1;
  AbortSignal backend_signal;  // what the backend was given
  bool service_aborted = false;
  Code service_code = Code::ABORTED;
  bool has_session = false;
  bool rolling_back = false;
  ErrorMatch why;  // the rollback's rejection

  bool close_in_flight = false;                      // the backend is closing it
  std::vector<std::pair<int, bool>> close_waiters;   // kill tokens, joined?
  int live_send = -1;                                // index into sends
  // The backend's screen size: the scripted default until a resize succeeds there.
  unsigned rows = 24, cols = 80;

  bool holds_name() const noexcept {
    return name && !(state == RecordState::cleanup_failed && !published);
  }
};

struct SendM {
  std::string record_id;
  int token = -1;
  std::uint64_t serial = 0;  // the spy's serial of the backend send
  bool settled = false;
  bool attached = true;  // the service still holds the backend's operation
};

struct SignalM {
  std::string record_id;
  int token = -1;
  std::uint64_t serial = 0;
};

struct DisposalM {
  bool service = false;
  int owner = -1;
  std::vector<int> waiters;
  std::vector<int> quiet;  // owner disposals that joined the service disposal
  bool finished = false;
};

class Model {
 public:
  // --- the world ---
  int add_owner(Owner handle, bool minted_here);
  int add_instance(std::string type);
  int add_caller();
  int new_token(CompletionKind kind, std::string label);

  // --- registry ---
  // The error code register_backend must return, or nullopt (then it is registered).
  std::optional<Code> on_register(int instance);
  // What unregister() of registration `reg` must return (and its effect).
  bool on_unregister(int reg);
  std::vector<std::string> backend_types() const;

  // --- spawn ---
  // True when the spawn must reach the backend; otherwise its rejection is due.
  bool on_spawn(int token, int owner, const std::string& type, const std::optional<std::string>& name,
                int caller);
  void on_backend_spawn_called(int instance, const SpawnSpec& spec);
  bool spawn_call_outstanding() const noexcept { return pending_spawn_.has_value(); }
  // err null: a session with these facts.
  void on_backend_spawned(const std::string& id, const Error& err, const SessionFacts& facts);
  void on_caller_abort(int caller, Error reason);

  // --- close ---
  void on_close_called(const std::string& id, const std::string& reason);
  void on_close_done(const std::string& id, const Status& status);
  std::optional<ErrorMatch> on_kill(int token, int owner, const std::string& id, const std::string& reason);

  // --- sends, signals, reads ---
  SyncExpect on_start_send(int token, int owner, const std::string& id);
  // err null: accepted (then a SendM is added).
  void on_backend_start_send(const std::string& id, std::uint64_t serial, const Error& err);
  void on_backend_send_done(std::uint64_t serial, const Result<SendResult>& result);
  SyncExpect on_signal(int token, int owner, const std::string& id);
  void on_backend_signal(const std::string& id, std::uint64_t serial, const Error& err);
  void on_backend_signal_done(std::uint64_t serial, const Result<SignalResult>& result);
  SyncExpect on_read(int owner, const std::string& id);
  // A screen read: fenced like read, in every state.
  SyncExpect on_screen(int owner, const std::string& id);
  // Fenced like signal, then the size (1..4096 both); then the backend, once, with the
  // caller's rows and cols.
  SyncExpect on_resize(int owner, const std::string& id, unsigned rows, unsigned cols);
  // err null: the backend took the new size.
  void on_backend_resize(const std::string& id, unsigned rows, unsigned cols, const Error& err);

  // --- disposal ---
  void on_dispose_owner(int token, int owner);
  void on_dispose(int token);
  void on_session_destroyed(const std::string& id);

  // --- checks the driver runs ---
  // Setups whose backend signal must (or must not yet) be aborted, with the right reason.
  void check_backend_signals();
  // Backend calls the service should have made by now.
  void check_expected_calls();
  // Every completion fired or never (for the end of a run).
  std::vector<std::string> unsettled() const;

  RecordM* find(std::string_view id);
  const RecordM* find(std::string_view id) const;
  bool has_activity(int owner) const;
  // The registered backend instance of this type, or -1.
  int instance_of(const std::string& type) const;
  void violation(const std::string& category, const std::string& message);

  std::vector<OwnerM> owners;
  std::vector<std::string> instance_types;
  std::vector<int> registered;                     // instances, in registration order
  std::vector<std::pair<int, bool>> registrations; // instance, spent (unregistered through it)
  std::vector<CallerM> callers;
  std::vector<std::unique_ptr<RecordM>> records;   // creation (= id) order
  std::vector<SendM> sends;
  std::vector<SignalM> signals;
  std::vector<DisposalM> disposals;
  int service_disposal = -1;
  bool disposing = false;
  std::vector<Completion> completions;
  std::multiset<std::pair<std::string, std::string>> expected_closes;  // (id, reason)
  std::set<std::string> ids_ever;
  std::vector<std::string> violations;

 private:
  struct PendingSpawn {
    int token, owner, instance, caller;
    std::string type;
    std::optional<std::string> name;
  };
  std::optional<PendingSpawn> pending_spawn_;
  std::uint64_t next_publish_ = 1;
  int pending_send_token_ = -1;    // a start_send that must reach the backend
  int pending_signal_token_ = -1;  // a signal that must reach the backend
  std::optional<std::pair<unsigned, unsigned>> pending_resize_;  // a resize that must too

  void due(int token, Expect expect);
  void due_error(int token, ErrorMatch error);
  std::optional<ErrorMatch> fence(int owner, const std::string& id, RecordM** out);
  bool name_taken(int owner, const std::string& name) const;
  void begin_close(RecordM& rec, const std::string& reason);
  void erase(RecordM& rec);
  void tear_down(int disposal, int owner, Code code, const std::string& reason);
  void settle_disposals();
  bool settled(int disposal) const;
  void finish(int disposal);
};

}  // namespace dshpty::fuzz
