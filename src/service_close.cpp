// Close, kill and disposal. A close completes only when the backend says the session is
// quiescent; a failure keeps the record (cleanup_failed) until a retry or a disposal.
#include <algorithm>

#include "service_core.hpp"

namespace dshpty::detail {

void ServiceCore::begin_close(Record& rec, std::string reason) {
  auto attempt = std::make_shared<CloseAttempt>();
  attempt->serial = next_attempt++;
  rec.close = attempt;
  set_state(rec, RecordState::closing);
  rec.cleanup_error.reset();
  rec.session->close(std::move(reason), [weak = weak_from_this(), serial = rec.serial,
                                         attempt = attempt->serial](Status status) {
    if (auto core = weak.lock()) core->on_closed(serial, attempt, std::move(status));
  });
}

void ServiceCore::on_closed(std::uint64_t serial, std::uint64_t attempt, Status status) {
  Record* rec = find(serial);
  // Only the attempt that is still the record's fence may change it: a stale attempt's
  // late word never disturbs a newer retry.
  if (!rec || !rec->close || rec->close->serial != attempt) return;
  std::shared_ptr<CloseAttempt> fence = std::move(rec->close);
  rec->close.reset();
  if (status.ok()) {
    erase(*rec);  // closed: the id is dead from here on
  } else {
    set_state(*rec, RecordState::cleanup_failed);
    rec->cleanup_error = status.error();
  }
  for (auto& waiter : fence->waiters) waiter(status);
  check_disposals();
}

Status ServiceCore::kill(const Owner& owner, std::string_view id, Callback<bool> done,
                         std::string reason) {
  auto fenced = fence(owner, id);
  if (!fenced) return fenced.error();
  Record& rec = **fenced;
  const bool joined = rec.state == RecordState::closing;
  if (!joined) begin_close(rec, std::move(reason));
  rec.close->waiters.push_back([this, done = std::move(done), joined](const Status& closed) {
    if (closed.ok()) return complete(done, Result<bool>(!joined));
    complete(done, Result<bool>(closed.error()));
  });
  return {};
}

void ServiceCore::dispose_owner(const Owner& owner, Callback<void> done) {
  if (!minted_here(owner)) return complete(std::move(done), Status(make_error(Code::OWNER_NOT_LIVE)));
  const OwnerIdentity* id = OwnerAccess::identity(owner);
  if (auto pending = owner_disposals.find(id); pending != owner_disposals.end()) {
    pending->second->waiters.push_back(std::move(done));
    return;
  }
  if (!live_owners.erase(id)) {
    // Already disposed, or swept up by a service disposal still in flight: wait for that
    // one, which reports any failure itself.
    if (service_disposal && !disposed) {
      service_disposal->quiet_waiters.push_back(std::move(done));
      return;
    }
    return complete(std::move(done), Status());
  }

  auto disposal = std::make_unique<Disposal>();
  Disposal& d = *disposal;
  d.waiters.push_back(std::move(done));
  owner_disposals.emplace(id, std::move(disposal));
  tear_down(d, &owner, make_error(Code::OWNER_NOT_LIVE), "PTY owner disposed");
  check_disposals();
}

void ServiceCore::dispose(Callback<void> done) {
  if (disposed) return complete(std::move(done), Status());
  if (service_disposal) {
    service_disposal->waiters.push_back(std::move(done));
    return;
  }
  disposing = true;
  service_disposal = std::make_unique<Disposal>();
  service_disposal->service = true;
  service_disposal->waiters.push_back(std::move(done));
  // Always cleared, even when the disposal later fails.
  backends.clear();
  live_owners.clear();
  dispose_reason = make_error(Code::SERVICE_DISPOSING);
  tear_down(*service_disposal, nullptr, dispose_reason, "PTY service disposed");
  check_disposals();
}

void ServiceCore::tear_down(Disposal& by, const Owner* owner, const Error& abort_reason,
                            const std::string& close_reason) {
  // Aborting a setup runs backend listeners synchronously, and a careless one may complete
  // at once and erase records: walk by serial, looking each up again.
  std::vector<std::uint64_t> serials;
  for (const auto& [serial, rec] : records)
    if (!rec->claimed_by && (!owner || rec->owner == *owner)) serials.push_back(serial);
  for (std::uint64_t serial : serials) {
    Record* rec = find(serial);
    if (!rec || rec->claimed_by) continue;
    rec->claimed_by = &by;
    if (rec->state != RecordState::cleanup_failed) ++by.unsettled;
    switch (rec->state) {
      case RecordState::setup:
        rec->service_abort.abort(abort_reason);
        break;
      case RecordState::published:
      case RecordState::sending:
        begin_close(*rec, close_reason);
        break;
      case RecordState::cleanup_failed:
        // A session whose close failed gets one more try; a failed setup has nothing left
        // to close and is only reported.
        if (rec->published && rec->session) begin_close(*rec, close_reason);
        break;
      case RecordState::closing:
      case RecordState::closed:
        break;
    }
  }
}

bool ServiceCore::settled(const Disposal& d) const { return d.unsettled == 0; }

void ServiceCore::finish(Disposal& d) {
  std::vector<Error> rollbacks, closes;
  std::vector<std::uint64_t> consumed;
  for (const auto& [serial, rec] : records) {
    if (rec->claimed_by != &d) continue;
    (rec->published ? closes : rollbacks).push_back(rec->cleanup_error);
    consumed.push_back(serial);
  }
  for (std::uint64_t serial : consumed) erase(*find(serial));

  Status status;
  if (!rollbacks.empty() || !closes.empty()) {
    std::vector<Error> groups;
    if (!rollbacks.empty())
      groups.push_back(make_error(Code::CLEANUP_FAILED, "failed to roll back unpublished PTY setup",
                                  std::move(rollbacks)));
    if (!closes.empty()) {
      std::string message = "failed to close " + std::to_string(closes.size()) + " PTY session(s)";
      groups.push_back(make_error(Code::CLEANUP_FAILED, std::move(message), std::move(closes)));
    }
    status = make_error(Code::CLEANUP_FAILED, "failed to clean up PTY lifecycle", std::move(groups));
  }
  for (auto& waiter : d.waiters) complete(std::move(waiter), status);
  for (auto& waiter : d.quiet_waiters) complete(std::move(waiter), Status());
  d.waiters.clear();
  d.quiet_waiters.clear();
}

void ServiceCore::check_disposals() {
  // finish() erases records, which may settle other disposals: loop to a fixed point, and
  // let a nested call (from inside finish) just ask for another round.
  if (checking_disposals) {
    recheck_disposals = true;
    return;
  }
  checking_disposals = true;
  do {
    recheck_disposals = false;
    for (auto it = owner_disposals.begin(); it != owner_disposals.end();) {
      if (settled(*it->second)) {
        finish(*it->second);
        it = owner_disposals.erase(it);
      } else {
        ++it;
      }
    }
    // The service disposal waits for owner disposals in flight: they report their own.
    if (service_disposal && !disposed && owner_disposals.empty() && settled(*service_disposal)) {
      finish(*service_disposal);
      disposed = true;
    }
  } while (recheck_disposals);
  checking_disposals = false;
}

}  // namespace dshpty::detail
