// The Service's public face: registry, owners, fencing, reads, signals, the table view.
// Spawn, sends, close and disposal live in their own files.
#include "dshpty/service.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "service_core.hpp"

namespace dshpty {

namespace detail {

namespace {
std::uint64_t next_instance() {
  static std::atomic<std::uint64_t> counter{1};
  return counter.fetch_add(1);
}
}  // namespace

ServiceCore::ServiceCore(struct ev_loop* l)
    : loop(l), instance(next_instance()), completions(l), reaper(l) {}

Record* ServiceCore::find(std::uint64_t serial) {
  auto it = records.find(serial);
  return it == records.end() ? nullptr : it->second.get();
}

Record* ServiceCore::find_published(std::string_view id) {
  auto it = by_id.find(std::string(id));
  if (it == by_id.end()) return nullptr;
  Record* rec = find(it->second);
  return rec && rec->published ? rec : nullptr;
}

bool ServiceCore::minted_here(const Owner& owner) const noexcept {
  const OwnerIdentity* id = OwnerAccess::identity(owner);
  return id && id->service == instance;
}

bool ServiceCore::owner_live(const Owner& owner) const noexcept {
  return minted_here(owner) && live_owners.count(OwnerAccess::identity(owner)) != 0;
}

Result<Record*> ServiceCore::fence(const Owner& owner, std::string_view id) {
  if (!owner_live(owner)) return make_error(Code::OWNER_NOT_LIVE);
  Record* rec = find_published(id);
  if (!rec) return make_error(Code::NO_SESSION);
  if (!(rec->owner == owner)) return make_error(Code::FOREIGN_SESSION);
  return rec;
}

std::shared_ptr<Backend> ServiceCore::backend_of(std::string_view type) const {
  for (const auto& b : backends)
    if (b->type() == type) return b;
  return nullptr;
}

bool ServiceCore::name_taken(const Owner& owner, const std::string& name) const {
  auto [from, to] = by_name.equal_range({OwnerAccess::identity(owner), name});
  for (auto it = from; it != to; ++it) {
    auto rec = records.find(it->second);
    if (rec != records.end() && rec->second->holds_name()) return true;
  }
  return false;
}

SessionSnapshot ServiceCore::snapshot(const Record& rec, bool activity) const {
  SessionSnapshot snap;
  snap.id = rec.id;
  snap.name = rec.name;
  snap.type = rec.type;
  if (rec.session) {
    snap.pid = rec.session->pid();
    snap.status = rec.session->status();
    snap.confinement = rec.session->confinement();
    snap.limit_hit = rec.session->limit_hit();
    snap.recording = rec.session->recording();
    if (activity) snap.activity = rec.session->activity();
  }
  return snap;
}

void ServiceCore::settle_send_as_closed(Record& rec) {
  if (!rec.live_send) return;
  LiveSend live = std::move(*rec.live_send);
  rec.live_send.reset();
  live.send->settled_ = true;
  complete(std::move(live.done),
           Result<SendResult>(make_error(Code::SESSION_CLOSING,
                                         "PTY session closed before the send completed")));
}

KeptOutput KeptOutput::take(BackendSendOperation& op) {
  KeptOutput kept;
  const std::uint64_t end = op.output_end();
  auto all = op.output(0, static_cast<std::size_t>(std::min<std::uint64_t>(end, SIZE_MAX / 2)) + 1);
  if (!all) {
    kept.refused = all.error();
    return kept;
  }
  kept.text = std::move(all->text);
  kept.begin = all->next_offset - kept.text.size();
  return kept;
}

Result<JobOutput> KeptOutput::read(std::uint64_t offset, std::size_t max_bytes) const {
  if (refused) return refused;
  if (offset > end())
    return make_error(Code::INVALID_ARGUMENT, "offset " + std::to_string(offset) + " is past the job's output (" +
                                                  std::to_string(end()) + " bytes)");
  if (max_bytes == 0) return make_error(Code::INVALID_ARGUMENT, "max_bytes must be at least 1");
  auto continues = [&](std::uint64_t at) { return (static_cast<unsigned char>(text[at - begin]) & 0xC0) == 0x80; };
  std::uint64_t from = std::max(offset, begin);
  while (from < end() && continues(from)) ++from;
  std::uint64_t to = end() - from > max_bytes ? from + max_bytes : end();
  if (to < end()) {
    std::uint64_t cut = to;
    for (int i = 0; i < 3 && cut > from && continues(cut); ++i) --cut;
    if (cut == from) {
      cut = from + 1;
      while (cut < end() && continues(cut)) ++cut;
    }
    to = cut;
  }
  return JobOutput{.text = text.substr(from - begin, to - from), .next_offset = to, .dropped_bytes = from - offset,
                   .done = true};
}

void ServiceCore::bury(Record& rec) {
  settle_send_as_closed(rec);
  for (auto& [serial, done] : rec.signals)
    complete(std::move(done),
             Result<SignalResult>(make_error(Code::SESSION_CLOSING,
                                             "PTY session closed before the signal completed")));
  rec.signals.clear();
  // Send handles outlive the record; their operations must not outlive the session.
  Grave grave;
  for (auto& weak : rec.sends)
    if (auto send = weak.lock()) {
      // A stop still running loses its session: answered here, as a signal is.
      for (auto& slot : send->stops_) {
        if (!*slot) continue;
        auto answer = std::move(*slot);
        *slot = nullptr;
        complete(std::move(answer), Result<StopResult>(make_error(Code::SESSION_CLOSING,
                                                                  "PTY session closed before the stop completed")));
      }
      send->stops_.clear();
      // What its window kept stays readable by offset (docs/tool-protocol.md, "output").
      if (send->op_) send->kept_ = std::make_unique<KeptOutput>(KeptOutput::take(*send->op_));
      grave.ops.push_back(std::move(send->op_));
    }
  rec.sends.clear();
  grave.session = std::move(rec.session);
  grave.backend = std::move(rec.backend);
  graveyard.push_back(std::move(grave));
  reaper.post([weak = weak_from_this()] {
    if (auto core = weak.lock()) core->flush_graveyard();
  });
}

void ServiceCore::set_state(Record& rec, RecordState to) {
  if (rec.claimed_by) {
    const bool was = rec.state != RecordState::cleanup_failed;
    const bool is = to != RecordState::cleanup_failed;
    if (was && !is) --rec.claimed_by->unsettled;
    if (!was && is) ++rec.claimed_by->unsettled;
  }
  rec.state = to;
}

void ServiceCore::erase(Record& rec) {
  std::uint64_t serial = rec.serial;
  if (rec.claimed_by && rec.state != RecordState::cleanup_failed) --rec.claimed_by->unsettled;
  bury(rec);
  by_id.erase(rec.id);
  if (rec.name) {
    auto [from, to] = by_name.equal_range({OwnerAccess::identity(rec.owner), *rec.name});
    for (auto it = from; it != to; ++it) {
      if (it->second == serial) {
        by_name.erase(it);
        break;
      }
    }
  }
  records.erase(serial);  // rec is gone from here on
}

void ServiceCore::flush_graveyard() {
  std::vector<Grave> dead;
  dead.swap(graveyard);
  for (auto& grave : dead) grave.ops.clear();
  for (auto& grave : dead) grave.session.reset();
  dead.clear();  // backends last
}

Status ServiceCore::signal(const Owner& owner, std::string_view id, Signal sig,
                           Callback<SignalResult> done) {
  auto fenced = fence(owner, id);
  if (!fenced) return fenced.error();
  Record& rec = **fenced;
  if (rec.state == RecordState::closing || rec.state == RecordState::cleanup_failed)
    return make_error(Code::SESSION_CLOSING);
  const std::uint64_t signal_serial = next_attempt++;
  rec.signals.emplace(signal_serial, std::move(done));
  Status started = rec.session->signal(
      sig, [weak = weak_from_this(), serial = rec.serial, signal_serial](Result<SignalResult> r) {
        if (auto core = weak.lock()) core->on_signalled(serial, signal_serial, std::move(r));
      });
  if (!started) {
    if (Record* still = find(rec.serial)) still->signals.erase(signal_serial);
  }
  return started;
}

void ServiceCore::on_signalled(std::uint64_t serial, std::uint64_t signal_serial,
                               Result<SignalResult> result) {
  Record* rec = find(serial);
  if (!rec) return;  // the session died first and the service already answered
  auto it = rec->signals.find(signal_serial);
  if (it == rec->signals.end()) return;  // a repeated completion
  Callback<SignalResult> done = std::move(it->second);
  rec->signals.erase(it);
  complete(std::move(done), std::move(result));
}

}  // namespace detail

using detail::Record;
using detail::ServiceCore;

Send::~Send() = default;

OutputDelta Send::read_output() { return op_ ? op_->read_output() : OutputDelta{}; }

bool Send::cancel() {
  if (settled_ || !op_) return false;
  return op_->cancel();
}

Result<JobOutput> Send::output(std::uint64_t offset, std::size_t max_bytes) {
  if (op_) return op_->output(offset, max_bytes);
  if (kept_) return kept_->read(offset, max_bytes);
  return make_error(Code::INVALID_ARGUMENT, "the send's output is gone with its session");
}

std::uint64_t Send::output_end() const {
  if (op_) return op_->output_end();
  return kept_ ? kept_->end() : 0;
}

std::shared_ptr<const std::function<void()>> Send::when_output(std::uint64_t offset, std::function<void()> ready) {
  auto token = std::make_shared<const std::function<void()>>(std::move(ready));
  if (op_) op_->when_output(offset, token);
  return token;
}

void Send::when_condition(std::function<void(ConditionOutcome)> done) {
  if (op_) op_->when_condition(std::move(done));
}

Status Send::stop(Callback<StopResult> done) {
  if (!op_) return make_error(Code::SESSION_CLOSING, "the session is gone");
  auto slot = std::make_shared<Callback<StopResult>>(std::move(done));
  // Held by both the backend's callback and this handle: whichever answers first clears it.
  Status status = op_->stop([slot](Result<StopResult> result) {
    if (!*slot) return;
    auto answer = std::move(*slot);
    *slot = nullptr;
    answer(std::move(result));
  });
  if (!status) return status;
  std::erase_if(stops_, [](const auto& s) { return !*s; });
  stops_.push_back(std::move(slot));
  return {};
}

bool BackendRegistration::unregister() {
  auto core = core_.lock();
  auto backend = backend_.lock();
  if (!core || !backend) return false;
  auto it = std::find(core->backends.begin(), core->backends.end(), backend);
  if (it == core->backends.end()) return false;
  core->backends.erase(it);
  backend_.reset();
  return true;
}

Service::Service(struct ev_loop* loop) : core_(std::make_shared<ServiceCore>(loop)) {}

Service::~Service() {
  ServiceCore& c = *core_;
  const char* violation = nullptr;
  if (c.completions.pending() != 0) violation = "completions are still undelivered";
  if (!c.owner_disposals.empty() || (c.service_disposal && !c.disposed))
    violation = "a disposal is in flight";
  for (const auto& [serial, rec] : c.records) {
    if (!rec->signals.empty()) violation = "a signal is in flight";
    if (rec->state == RecordState::setup || rec->state == RecordState::closing ||
        rec->state == RecordState::sending)
      violation = "a session is in setup, sending or closing";
  }
  if (violation) {
    // A documented precondition failure: dropping work in flight would break the promise
    // that every operation completes exactly once.
    std::fprintf(stderr, "dshpty: Service destroyed while %s; dispose() it first\n", violation);
    std::abort();
  }
  for (auto& [serial, rec] : c.records) c.bury(*rec);
  c.records.clear();
  c.flush_graveyard();
}

struct ev_loop* Service::loop() const noexcept { return core_->loop; }

Result<BackendRegistration> Service::register_backend(std::shared_ptr<Backend> backend) {
  ServiceCore& c = *core_;
  if (!backend) return make_error(Code::INVALID_ARGUMENT, "PTY backend must not be null");
  if (backend->type().empty())
    return make_error(Code::INVALID_ARGUMENT, "PTY backend type must not be empty");
  if (c.disposing) return make_error(Code::SERVICE_DISPOSING);
  if (c.backend_of(backend->type()))
    return make_error(Code::DUPLICATE_BACKEND,
                      "PTY backend type \"" + backend->type() + "\" is already registered");
  c.backends.push_back(backend);
  BackendRegistration reg;
  reg.core_ = core_;
  reg.backend_ = backend;
  return reg;
}

std::vector<std::string> Service::backend_types() const {
  std::vector<std::string> types;
  for (const auto& b : core_->backends) types.push_back(b->type());
  return types;
}

Owner Service::mint_owner(std::string label) {
  ServiceCore& c = *core_;
  auto id = std::make_shared<const detail::OwnerIdentity>(
      detail::OwnerIdentity{std::move(label), c.next_owner++, c.instance});
  Owner owner = OwnerAccess::make(id);
  if (!c.disposing) c.live_owners.emplace(id.get(), owner);
  return owner;
}

bool Service::is_owner_live(const Owner& owner) const noexcept { return core_->owner_live(owner); }

void Service::spawn(const Owner& owner, SpawnOptions options, Callback<SpawnResult> done) {
  core_->spawn(owner, std::move(options), std::move(done));
}

Result<std::shared_ptr<Send>> Service::start_send(const Owner& owner, std::string_view id,
                                                  SendRequest request, Callback<SendResult> done) {
  return core_->start_send(owner, id, std::move(request), std::move(done));
}

Result<ReadPage> Service::read(const Owner& owner, std::string_view id,
                               const ReadRequest& request) {
  auto rec = core_->fence(owner, id);
  if (!rec) return rec.error();
  return (*rec)->session->read(request);
}

Result<ScreenSnapshot> Service::screen(const Owner& owner, std::string_view id) {
  auto rec = core_->fence(owner, id);
  if (!rec) return rec.error();
  return (*rec)->session->screen();
}

Status Service::resize(const Owner& owner, std::string_view id, unsigned rows, unsigned cols) {
  auto fenced = core_->fence(owner, id);
  if (!fenced) return fenced.error();
  Record& rec = **fenced;
  if (rec.state == RecordState::closing || rec.state == RecordState::cleanup_failed)
    return make_error(Code::SESSION_CLOSING);
  constexpr unsigned kMaxDimension = 4096;
  if (rows < 1 || rows > kMaxDimension || cols < 1 || cols > kMaxDimension) {
    return make_error(Code::INVALID_ARGUMENT, "rows and cols must be 1..4096, got " +
                                                  std::to_string(rows) + "x" + std::to_string(cols));
  }
  return rec.session->resize(rows, cols);
}

Status Service::signal(const Owner& owner, std::string_view id, Signal signal,
                       Callback<SignalResult> done) {
  return core_->signal(owner, id, signal, std::move(done));
}

Status Service::kill(const Owner& owner, std::string_view id, Callback<bool> done,
                     std::string reason) {
  return core_->kill(owner, id, std::move(done), std::move(reason));
}

Result<Observation> Service::observe(std::string_view id) const {
  const Record* rec = core_->find_published(id);
  if (!rec || !rec->session || rec->state == RecordState::closed) return make_error(Code::NO_SESSION);
  auto view = rec->session->observe();
  if (!view) return view;
  view->session = core_->snapshot(*rec);
  view->owner = rec->owner.label();
  view->send_live = rec->live_send.has_value();
  return view;
}

std::optional<SessionSnapshot> Service::snapshot(const Owner& owner, std::string_view id) const {
  auto fenced = core_->fence(owner, id);
  if (!fenced) return std::nullopt;
  return core_->snapshot(**fenced);
}

std::vector<SessionSnapshot> Service::list(const Owner& owner, ListDetail detail) const {
  std::vector<const Record*> mine;
  if (!core_->owner_live(owner)) return {};
  for (const auto& [serial, rec] : core_->records)
    if (rec->published && rec->owner == owner) mine.push_back(rec.get());
  std::sort(mine.begin(), mine.end(),
            [](const Record* a, const Record* b) { return a->publish_order < b->publish_order; });
  std::vector<SessionSnapshot> out;
  out.reserve(mine.size());
  for (const Record* rec : mine) out.push_back(core_->snapshot(*rec, detail == ListDetail::activity));
  return out;
}

bool Service::has_owner_activity(const Owner& owner) const noexcept {
  // Closed records are erased, so "any record of the owner" is "any state but closed".
  for (const auto& [serial, rec] : core_->records)
    if (rec->owner == owner) return true;
  return false;
}

void Service::dispose_owner(const Owner& owner, Callback<void> done) {
  core_->dispose_owner(owner, std::move(done));
}

void Service::dispose(Callback<void> done) { core_->dispose(std::move(done)); }

bool Service::disposing() const noexcept { return core_->disposing; }

std::vector<RecordView> Service::records() const {
  std::vector<RecordView> out;
  out.reserve(core_->records.size());
  for (const auto& [serial, rec] : core_->records)
    out.push_back({rec->id, rec->owner, rec->name, rec->type, rec->state, rec->published,
                   rec->cleanup_error});
  return out;
}

}  // namespace dshpty
