// Sends: at most one live per session; the record is `sending` while it is.
#include "service_core.hpp"

namespace dshpty::detail {

Result<std::shared_ptr<Send>> ServiceCore::start_send(const Owner& owner, std::string_view id,
                                                      SendRequest request,
                                                      Callback<SendResult> done) {
  auto fenced = fence(owner, id);
  if (!fenced) return fenced.error();
  Record& rec = **fenced;
  if (rec.state == RecordState::closing) return make_error(Code::SESSION_CLOSING);
  if (rec.state == RecordState::cleanup_failed)
    return make_error(Code::SESSION_CLOSING,
                      "PTY session failed to close; kill it again to retry the close");
  if (rec.state == RecordState::sending) return make_error(Code::SEND_ACTIVE);

  std::shared_ptr<Send> send(new Send());
  const std::uint64_t send_serial = next_attempt++;
  // The record is `sending` before the backend runs, so even a misbehaving backend that
  // completes inside start_send finds a consistent record.
  rec.state = RecordState::sending;
  rec.live_send = LiveSend{send_serial, send, std::move(done)};
  auto op = rec.session->start_send(
      std::move(request),
      [weak = weak_from_this(), serial = rec.serial, send_serial](Result<SendResult> result) {
        if (auto core = weak.lock()) core->on_send_done(serial, send_serial, std::move(result));
      });
  if (!op) {
    if (rec.live_send && rec.live_send->serial == send_serial) rec.live_send.reset();
    if (rec.state == RecordState::sending) rec.state = RecordState::published;
    return op.error();
  }
  send->op_ = std::move(op.value());
  std::erase_if(rec.sends, [](const std::weak_ptr<Send>& w) { return w.expired(); });
  rec.sends.push_back(send);
  return send;
}

void ServiceCore::on_send_done(std::uint64_t serial, std::uint64_t send_serial,
                               Result<SendResult> result) {
  Record* rec = find(serial);
  if (!rec || !rec->live_send || rec->live_send->serial != send_serial) return;  // stale
  LiveSend live = std::move(*rec->live_send);
  rec->live_send.reset();
  live.send->settled_ = true;
  if (rec->state == RecordState::sending) rec->state = RecordState::published;
  complete(std::move(live.done), std::move(result));
}

}  // namespace dshpty::detail
