// Spawn: the checks in the contract's order, the setup record, the backend call under a
// signal that is the caller's OR the service's, and publication or rollback.
#include "service_core.hpp"

namespace dshpty::detail {

void ServiceCore::spawn(const Owner& owner, SpawnOptions options, Callback<SpawnResult> done) {
  auto reject = [&](Error error) { complete(std::move(done), Result<SpawnResult>(std::move(error))); };
  if (disposing) return reject(make_error(Code::SERVICE_DISPOSING));
  if (options.signal.aborted()) return reject(options.signal.reason());
  // A dead owner wins over a missing backend: the caller's identity is the first question.
  if (!owner_live(owner)) return reject(make_error(Code::OWNER_NOT_LIVE));
  std::shared_ptr<Backend> backend = backend_of(options.type);
  if (!backend)
    return reject(make_error(Code::NO_BACKEND,
                             "no PTY backend is registered for type \"" + options.type + "\""));
  if (options.name && options.name->empty())
    return reject(make_error(Code::INVALID_ARGUMENT, "PTY session name must not be empty"));
  // A NUL would cut a path where the system calls read it ("/\0/etc" opens "/"): refused
  // whole, for every backend, before any of them sees it.
  const auto has_nul = [](const std::string& text) { return text.find('\0') != std::string::npos; };
  if (options.cwd && has_nul(*options.cwd))
    return reject(make_error(Code::INVALID_ARGUMENT, "cwd holds a NUL byte"));
  for (const auto& [key, value] : options.options) {
    if (has_nul(key) || has_nul(value))
      return reject(make_error(Code::INVALID_ARGUMENT, "spawn option \"" + key.substr(0, key.find('\0')) +
                                                           "\" holds a NUL byte"));
  }
  if (options.name && name_taken(owner, *options.name))
    return reject(make_error(Code::DUPLICATE_NAME,
                             "PTY session name \"" + *options.name + "\" already exists for this owner"));

  auto owned = std::make_unique<Record>();
  Record& rec = *owned;
  rec.serial = next_record++;
  rec.id = "pty-" + std::to_string(rec.serial);
  rec.owner = owner;
  rec.name = options.name;
  rec.type = options.type;
  rec.state = RecordState::setup;
  rec.backend = backend;
  rec.caller_signal = options.signal;
  rec.spawn_done = std::move(done);
  records.emplace(rec.serial, std::move(owned));
  by_id.emplace(rec.id, rec.serial);
  if (rec.name) by_name.emplace(std::make_pair(OwnerAccess::identity(owner), *rec.name), rec.serial);

  SpawnSpec spec;
  spec.session_id = rec.id;
  spec.owner = owner;
  spec.request.name = std::move(options.name);
  spec.request.cwd = std::move(options.cwd);
  spec.request.options = std::move(options.options);
  spec.request.limits = options.limits;
  spec.signal = AbortSignal::any({rec.caller_signal, rec.service_abort.signal()});

  // `backend` (not rec.backend) keeps it alive through the call, which may erase `rec`.
  backend->spawn(std::move(spec), [weak = weak_from_this(), serial = rec.serial](
                                      Result<std::unique_ptr<BackendSession>> result) {
    if (auto core = weak.lock()) core->on_spawned(serial, std::move(result));
  });
}

void ServiceCore::on_spawned(std::uint64_t serial, Result<std::unique_ptr<BackendSession>> result) {
  Record* found = find(serial);
  if (!found || found->state != RecordState::setup) {
    // A backend that completed twice: whatever it handed over now has nobody to own it.
    if (result.ok()) {
      Grave grave;
      grave.session = std::move(result.value());
      graveyard.push_back(std::move(grave));
      reaper.post([weak = weak_from_this()] {
        if (auto core = weak.lock()) core->flush_graveyard();
      });
    }
    return;
  }
  Record& rec = *found;
  const bool caller_aborted = rec.caller_signal.aborted();
  const bool service_aborted = rec.service_abort.aborted();

  if (result.ok()) {
    rec.session = std::move(result.value());
    Error why;
    if (caller_aborted) {
      why = rec.caller_signal.reason();
    } else if (disposing) {
      // The contract's order, even when an owner disposal aborted this setup first.
      why = dispose_reason;
    } else if (!owner_live(rec.owner)) {
      why = service_aborted ? rec.service_abort.signal().reason()
                            : make_error(Code::OWNER_NOT_LIVE);
    }
    if (why) return roll_back(rec, std::move(why));

    rec.state = RecordState::published;
    rec.published = true;
    rec.publish_order = next_publish++;
    rec.caller_signal = AbortSignal();
    SpawnResult out{snapshot(rec), rec.session->motd(), rec.session->attach_report()};
    complete(std::move(rec.spawn_done), Result<SpawnResult>(std::move(out)));
    return;
  }

  Error backend_error = result.error();
  Error rejection = caller_aborted    ? rec.caller_signal.reason()
                    : service_aborted ? rec.service_abort.signal().reason()
                                      : backend_error;
  Callback<SpawnResult> done = std::move(rec.spawn_done);
  if (is_backend_cleanup_error(backend_error)) {
    // Partial resources may still exist: the failure stays owner activity until a
    // disposal reports it.
    set_state(rec, RecordState::cleanup_failed);
    rec.cleanup_error = backend_error;
    rec.caller_signal = AbortSignal();
  } else {
    erase(rec);
  }
  complete(std::move(done), Result<SpawnResult>(std::move(rejection)));
  check_disposals();
}

void ServiceCore::roll_back(Record& rec, Error why) {
  Callback<SpawnResult> done = std::move(rec.spawn_done);
  AbortSignal caller = rec.caller_signal;
  rec.caller_signal = AbortSignal();
  begin_close(rec, "PTY spawn rolled back");
  rec.close->waiters.push_back([this, done = std::move(done), caller, why](const Status& closed) {
    if (closed.ok()) return complete(done, Result<SpawnResult>(why));
    // The caller's own cancellation keeps its exact reason; a lifecycle-triggered rollback
    // that failed says both things went wrong.
    Error rejection = caller.aborted()
                          ? caller.reason()
                          : make_error(Code::CLEANUP_FAILED, "PTY spawn and rollback both failed",
                                       {why, closed.error()});
    complete(done, Result<SpawnResult>(std::move(rejection)));
  });
}

}  // namespace dshpty::detail
