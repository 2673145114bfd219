// The scripted backend's shared state and its step scheduler. Internal to backends/scripted.
//
// Lifetime: the core is shared by the ScriptedBackend and every session it made, so records
// and the Deferred outlive an unregistered backend. Each scheduled step is a PendingOp whose
// only strong reference sits in its owner's OpTable (a session's, or the core's for spawns);
// dropping the table entry — or the whole owner — cancels the step, which is how a destroyed
// session's gates and turns are kept from firing into freed memory.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "dshpty/loop.hpp"
#include "dshpty/scripted.hpp"

namespace dshpty::detail {

struct ScriptedGateAccess {
  // Calls fn(gate_error) when the gate is released (at once if it already is; then returns 0).
  static std::uint64_t wait(ScriptedGate& gate, std::function<void(const Error&)> fn);
  static void forget(ScriptedGate& gate, std::uint64_t waiter) noexcept;
};

struct ScriptedCore;
struct OpTable;

struct PendingOp {
  ScriptedCore* core = nullptr;
  OpTable* table = nullptr;
  std::uint64_t id = 0;
  int turns_left = 0;
  std::shared_ptr<ScriptedGate> gate;
  std::uint64_t waiter = 0;
  Error gate_error;  // set when the gate was released with fail()
  std::function<void(const Error& gate_error)> finish;

  ~PendingOp();
};

struct OpTable {
  std::map<std::uint64_t, std::shared_ptr<PendingOp>> ops;
  void cancel(std::uint64_t id) { ops.erase(id); }
};

struct ScriptedCore {
  ScriptedCore(struct ev_loop* loop, std::string type_name);

  // Runs finish(gate_error) from the loop after the gate (if any) and `turns` more loop
  // turns, unless the entry is dropped from `table` first. Returns the entry's id.
  std::uint64_t schedule(OpTable& table, const std::shared_ptr<ScriptedGate>& gate, int turns,
                         std::function<void(const Error&)> finish);
  std::uint64_t schedule_now(OpTable& table, std::function<void(const Error&)> finish) {
    return schedule(table, nullptr, 0, std::move(finish));
  }

  ScriptedSessionScript& script_of(const std::string& id) { return scripts[id]; }

  std::string type;
  Deferred deferred;
  std::uint64_t next_op = 1;
  std::size_t live_ops = 0;  // declared before the tables, so it outlives their destruction
  int next_fake_pid = 400000;

  ScriptedQueue<ScriptedSpawn> spawns;
  std::map<std::string, ScriptedSessionScript> scripts;
  ScriptedSessionScript every;

  std::deque<ScriptedSpawnRecord> spawn_records;
  std::map<std::string, ScriptedSessionRecord> sessions;
  std::vector<std::string> session_order;
  std::size_t live_sessions = 0;
  std::vector<std::string> close_log;

  OpTable spawn_ops;  // last: destroyed first

 private:
  void tick(const std::weak_ptr<PendingOp>& weak);
};

// The first scripted item: mine.next, every.next, mine.fallback, every.fallback.
template <class T>
std::optional<T> take_script(ScriptedQueue<T>& mine, ScriptedQueue<T>& every) {
  for (ScriptedQueue<T>* q : {&mine, &every}) {
    if (!q->next.empty()) {
      T item = std::move(q->next.front());
      q->next.pop_front();
      return item;
    }
  }
  if (mine.fallback) return mine.fallback;
  if (every.fallback) return every.fallback;
  return std::nullopt;
}

// The error a failing step completes with: its own, or a default naming the step.
Error step_error(const ScriptedStep& step, const char* what);

// Creates the BackendSession for a successful spawn (and its record).
std::unique_ptr<BackendSession> make_scripted_session(const std::shared_ptr<ScriptedCore>& core,
                                                      const SpawnSpec& spec,
                                                      ScriptedSessionConfig config);

}  // namespace dshpty::detail
