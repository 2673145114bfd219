#include "scripted_core.hpp"

namespace dshpty {

std::shared_ptr<ScriptedGate> ScriptedGate::make() {
  return std::shared_ptr<ScriptedGate>(new ScriptedGate());
}

bool ScriptedGate::open() { return release(nullptr); }

bool ScriptedGate::fail(Error error) {
  if (!error) error = make_error(Code::BACKEND_FAILED, "scripted gate failure");
  return release(std::move(error));
}

bool ScriptedGate::release(Error error) {
  if (released_) return false;
  released_ = true;
  error_ = std::move(error);
  // A waiter only posts to its loop, but take the list first: it also forgets itself.
  auto waiters = std::move(waiters_);
  waiters_.clear();
  for (auto& [id, fn] : waiters) fn(error_);
  return true;
}

namespace detail {

std::uint64_t ScriptedGateAccess::wait(ScriptedGate& gate, std::function<void(const Error&)> fn) {
  if (gate.released_) {
    fn(gate.error_);
    return 0;
  }
  std::uint64_t id = gate.next_waiter_++;
  gate.waiters_.emplace(id, std::move(fn));
  return id;
}

void ScriptedGateAccess::forget(ScriptedGate& gate, std::uint64_t waiter) noexcept {
  gate.waiters_.erase(waiter);
}

PendingOp::~PendingOp() {
  if (gate && waiter != 0) ScriptedGateAccess::forget(*gate, waiter);
  if (core) --core->live_ops;
}

ScriptedCore::ScriptedCore(struct ev_loop* loop, std::string type_name)
    : type(std::move(type_name)), deferred(loop) {}

std::uint64_t ScriptedCore::schedule(OpTable& table, const std::shared_ptr<ScriptedGate>& gate,
                                     int turns, std::function<void(const Error&)> finish) {
  auto op = std::make_shared<PendingOp>();
  op->core = this;
  op->table = &table;
  op->id = next_op++;
  op->turns_left = turns > 0 ? turns : 0;
  op->finish = std::move(finish);
  ++live_ops;
  table.ops.emplace(op->id, op);
  std::weak_ptr<PendingOp> weak = op;
  if (gate) {
    op->gate = gate;
    // The waiter holds the op weakly: a cancelled step leaves nothing for the gate to call.
    op->waiter = ScriptedGateAccess::wait(*gate, [weak](const Error& gate_error) {
      if (auto locked = weak.lock()) {
        locked->waiter = 0;
        locked->gate_error = gate_error;
        ScriptedCore* core = locked->core;
        core->deferred.post([core, weak] { core->tick(weak); });
      }
    });
  } else {
    deferred.post([this, weak] { tick(weak); });
  }
  return op->id;
}

void ScriptedCore::tick(const std::weak_ptr<PendingOp>& weak) {
  auto op = weak.lock();
  if (!op) return;  // cancelled, or its owner is gone
  if (op->turns_left > 0) {
    --op->turns_left;
    deferred.post([this, weak] { tick(weak); });
    return;
  }
  // Leave the table before finishing: finish may destroy the table's owner (and this core).
  auto finish = std::move(op->finish);
  Error gate_error = op->gate_error;
  op->table->ops.erase(op->id);
  finish(gate_error);
}

Error step_error(const ScriptedStep& step, const char* what) {
  switch (step.kind) {
    case ScriptedStep::Kind::succeed:
      return nullptr;
    case ScriptedStep::Kind::fail:
    case ScriptedStep::Kind::reject:
      if (step.error) return step.error;
      return make_error(Code::BACKEND_FAILED, std::string("scripted ") + what + " failure");
    case ScriptedStep::Kind::fail_cleanup: {
      Error first = step.error ? step.error
                               : make_error(Code::BACKEND_FAILED,
                                            std::string("scripted ") + what + " failure");
      Error cleanup = step.cleanup_error
                          ? step.cleanup_error
                          : make_error(Code::BACKEND_FAILED, "scripted cleanup failure");
      return make_backend_cleanup_error(std::move(first), std::move(cleanup));
    }
  }
  return nullptr;
}

}  // namespace detail
}  // namespace dshpty
