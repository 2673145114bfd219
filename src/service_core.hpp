// The service's internals: one table of session records, each in one explicit state.
//
// Shape of the machine (docs/contract.md, "Session states", says what each state means):
//   setup ──► published ◄──► sending          (send settles: back to published)
//     │           │              │
//     │           └──► closing ◄─┘             (kill, disposal, or a spawn's rollback)
//     │                 │    │
//     └────────────► cleanup_failed ──► closing (retry kill, or disposal's retry)
//                       closed = the record is erased; the id is dead from then on.
//
// How the code keeps the contract's promises:
// - Every user completion is posted to `completions` (a Deferred), never called from inside
//   a backend's callback or the initiating call. State changes happen synchronously when the
//   backend reports, so has_owner_activity() is always the table's truth.
// - Backend callbacks capture a weak core plus the record's serial (and the attempt's
//   serial): a late or repeated callback finds nothing, or a newer attempt, and is ignored.
// - A backend session is never destroyed inside its own callback: it goes to the
//   graveyard, emptied on a later loop turn (its send operation first, its backend last).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "dshpty/loop.hpp"
#include "dshpty/service.hpp"

namespace dshpty {

// The service's access to Owner's identity (Owner names it a friend).
struct OwnerAccess {
  static Owner make(std::shared_ptr<const detail::OwnerIdentity> id) noexcept {
    return Owner(std::move(id));
  }
  static const detail::OwnerIdentity* identity(const Owner& owner) noexcept {
    return owner.id_.get();
  }
};

}  // namespace dshpty

namespace dshpty::detail {

struct Disposal;

// One close of one record; everyone who asks while it is in flight waits on it.
struct CloseAttempt {
  std::uint64_t serial = 0;
  std::vector<std::function<void(const Status&)>> waiters;
};

// A buried send's output: the window its operation kept, taken before the operation goes
// with its session (Send::output from then on), read by the same offsets and rules as
// text::JobLog: an offset behind the window reads from its oldest byte and counts what it
// missed, one inside a character from the next character, a read ends on a character
// boundary (a character wider than max_bytes is given whole). Every read is `done`.
struct KeptOutput {
  Error refused;            // the backend's answer when its sends cannot be read by offset
  std::string text;         // the bytes from `begin` to the end, whole characters
  std::uint64_t begin = 0;  // the offset of text's first byte

  static KeptOutput take(BackendSendOperation& op);
  std::uint64_t end() const noexcept { return begin + text.size(); }
  Result<JobOutput> read(std::uint64_t offset, std::size_t max_bytes) const;
};

// The one live send of a record.
struct LiveSend {
  std::uint64_t serial = 0;
  std::shared_ptr<Send> send;
  Callback<SendResult> done;
};

struct Record {
  std::uint64_t serial = 0;  // creation order; keys the table
  std::string id;
  Owner owner;
  std::optional<std::string> name;
  std::string type;
  RecordState state = RecordState::setup;
  bool published = false;
  std::uint64_t publish_order = 0;

  std::shared_ptr<Backend> backend;  // kept for the record's life: sessions may need it
  std::unique_ptr<BackendSession> session;

  // Setup only.
  AbortSignal caller_signal;
  AbortController service_abort;
  Callback<SpawnResult> spawn_done;

  std::shared_ptr<CloseAttempt> close;  // the fence of the close in flight
  std::optional<LiveSend> live_send;
  std::vector<std::weak_ptr<Send>> sends;  // every handle issued; their ops die with the session
  // Signals the backend has not answered yet, by serial: settled by the service if the
  // session dies first, so each still completes exactly once.
  std::map<std::uint64_t, Callback<SignalResult>> signals;
  Error cleanup_error;                  // why it is cleanup_failed
  Disposal* claimed_by = nullptr;       // the disposal that will consume it

  // The name is held by everything still alive, but an unpublished record whose setup
  // cleanup failed holds only its failure: the owner may retry with the same name.
  bool holds_name() const noexcept {
    return name && !(state == RecordState::cleanup_failed && !published);
  }
};

// An owner disposal or the service's disposal; completes when none of its claimed records
// is still settling (each is erased or cleanup_failed), consuming the failures.
struct Disposal {
  bool service = false;
  // Its claimed records neither erased nor cleanup_failed (ServiceCore::set_state keeps it),
  // so a close's check of the disposals is O(1), not a walk of the table.
  std::size_t unsettled = 0;
  std::vector<Callback<void>> waiters;
  std::vector<Callback<void>> quiet_waiters;  // owner disposals that joined a service disposal
};

struct ServiceCore : std::enable_shared_from_this<ServiceCore> {
  explicit ServiceCore(struct ev_loop* loop);

  struct ev_loop* loop;
  std::uint64_t instance;  // identifies owners minted here
  Deferred completions;
  Deferred reaper;

  std::vector<std::shared_ptr<Backend>> backends;  // registration order
  std::map<const OwnerIdentity*, Owner> live_owners;
  std::uint64_t next_owner = 1;

  std::map<std::uint64_t, std::unique_ptr<Record>> records;  // by serial
  std::unordered_map<std::string, std::uint64_t> by_id;
  // Every named record by (owner, name), so a spawn's name check does not walk the table:
  // more than one only while failed setups still wait for their disposal.
  std::multimap<std::pair<const OwnerIdentity*, std::string>, std::uint64_t> by_name;
  std::uint64_t next_record = 1;
  std::uint64_t next_publish = 1;
  std::uint64_t next_attempt = 1;

  std::map<const OwnerIdentity*, std::unique_ptr<Disposal>> owner_disposals;
  std::unique_ptr<Disposal> service_disposal;
  bool disposing = false;
  bool disposed = false;  // the service disposal completed

  Error dispose_reason;  // SERVICE_DISPOSING, one object for the whole disposal

  struct Grave {
    std::vector<std::unique_ptr<BackendSendOperation>> ops;
    std::unique_ptr<BackendSession> session;
    std::shared_ptr<Backend> backend;
  };
  std::vector<Grave> graveyard;

  bool checking_disposals = false;
  bool recheck_disposals = false;

  // Helpers (service.cpp).
  template <class T>
  void complete(Callback<T> done, Result<T> result) {
    completions.post([done = std::move(done), result = std::move(result)]() mutable {
      done(std::move(result));
    });
  }
  Record* find(std::uint64_t serial);
  Record* find_published(std::string_view id);
  bool owner_live(const Owner& owner) const noexcept;
  bool minted_here(const Owner& owner) const noexcept;
  Result<Record*> fence(const Owner& owner, std::string_view id);
  std::shared_ptr<Backend> backend_of(std::string_view type) const;  // null: none
  bool name_taken(const Owner& owner, const std::string& name) const;
  // `activity`: also what the session runs now (a look at its processes and ports).
  SessionSnapshot snapshot(const Record& rec, bool activity = false) const;
  // Every change into or out of cleanup_failed goes through here (Disposal::unsettled).
  void set_state(Record& rec, RecordState to);
  // Erases the record; its session, send and backend go to the graveyard.
  void erase(Record& rec);
  void bury(Record& rec);
  void flush_graveyard();

  // Spawn (service_spawn.cpp).
  void spawn(const Owner& owner, SpawnOptions options, Callback<SpawnResult> done);
  void on_spawned(std::uint64_t serial, Result<std::unique_ptr<BackendSession>> result);
  void roll_back(Record& rec, Error why);

  // Sends (service_send.cpp).
  Result<std::shared_ptr<Send>> start_send(const Owner& owner, std::string_view id,
                                           SendRequest request, Callback<SendResult> done);
  void on_send_done(std::uint64_t serial, std::uint64_t send_serial, Result<SendResult> result);
  void settle_send_as_closed(Record& rec);

  // Signals (service.cpp).
  Status signal(const Owner& owner, std::string_view id, Signal signal, Callback<SignalResult> done);
  void on_signalled(std::uint64_t serial, std::uint64_t signal_serial, Result<SignalResult> result);

  // Close and disposal (service_close.cpp).
  void begin_close(Record& rec, std::string reason);
  void on_closed(std::uint64_t serial, std::uint64_t attempt, Status status);
  Status kill(const Owner& owner, std::string_view id, Callback<bool> done, std::string reason);
  void dispose_owner(const Owner& owner, Callback<void> done);
  void dispose(Callback<void> done);
  void tear_down(Disposal& by, const Owner* owner, const Error& abort_reason,
                 const std::string& close_reason);
  void check_disposals();
  bool settled(const Disposal& d) const;
  void finish(Disposal& d);
};

}  // namespace dshpty::detail
