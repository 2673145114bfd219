#include "spy.hpp"

namespace dshpty::fuzz {

namespace {

std::uint64_t next_serial() {
  static std::uint64_t serial = 0;  // one process, one thread: unique across runs
  return ++serial;
}

class SpyOperation final : public BackendSendOperation {
 public:
  SpyOperation(std::unique_ptr<BackendSendOperation> inner, std::uint64_t serial, SpyListener* listener)
      : inner_(std::move(inner)), serial_(serial), listener_(listener) {}
  OutputDelta read_output() override {
    OutputDelta delta = inner_->read_output();
    listener_->op_read_output(serial_, delta);
    return delta;
  }
  bool cancel() override {
    bool result = inner_->cancel();
    listener_->op_cancelled(serial_, result);
    return result;
  }

 private:
  std::unique_ptr<BackendSendOperation> inner_;
  std::uint64_t serial_;
  SpyListener* listener_;
};

}  // namespace

void SpyBackend::spawn(SpawnSpec spec, SpawnCallback done) {
  listener_->spawn_called(instance_, spec);
  std::string id = spec.session_id;
  SpyListener* l = listener_;
  inner_->spawn(std::move(spec), [l, id, done = std::move(done)](Result<std::unique_ptr<BackendSession>> result) {
    if (result.ok()) {
      auto spy = std::make_unique<SpySession>(std::move(result.value()), id, l);
      l->before_spawn_done(id, nullptr, spy.get());
      done(std::unique_ptr<BackendSession>(std::move(spy)));
    } else {
      l->before_spawn_done(id, result.error(), nullptr);
      done(result.error());
    }
    l->backend_callback_returned();
  });
}

SpySession::~SpySession() {
  listener_->session_destroyed(id_);
  inner_.reset();
}

Result<std::unique_ptr<BackendSendOperation>> SpySession::start_send(SendRequest request,
                                                                     Callback<SendResult> done) {
  const std::uint64_t serial = next_serial();
  SpyListener* l = listener_;
  auto op = inner_->start_send(std::move(request), [l, serial, done](Result<SendResult> result) {
    l->before_send_done(serial, result);
    done(std::move(result));
    l->backend_callback_returned();
  });
  if (!op) {
    l->start_send_returned(id_, serial, op.error());
    return op.error();
  }
  l->start_send_returned(id_, serial, nullptr);
  return std::unique_ptr<BackendSendOperation>(new SpyOperation(std::move(op.value()), serial, l));
}

Result<ReadPage> SpySession::read(const ReadRequest& request) {
  Result<ReadPage> page = inner_->read(request);
  listener_->read_returned(id_, page);
  return page;
}

Result<ScreenSnapshot> SpySession::screen() {
  Result<ScreenSnapshot> shown = inner_->screen();
  listener_->screen_returned(id_, shown);
  return shown;
}

Status SpySession::resize(unsigned rows, unsigned cols) {
  Status status = inner_->resize(rows, cols);
  listener_->resize_returned(id_, rows, cols, status);
  return status;
}

Status SpySession::signal(Signal signal, Callback<SignalResult> done) {
  const std::uint64_t serial = next_serial();
  SpyListener* l = listener_;
  Status started = inner_->signal(signal, [l, serial, done](Result<SignalResult> result) {
    l->before_signal_done(serial, result);
    done(std::move(result));
    l->backend_callback_returned();
  });
  l->signal_returned(id_, serial, started.ok() ? nullptr : started.error());
  return started;
}

void SpySession::close(std::string reason, Callback<void> done) {
  listener_->close_called(id_, reason);
  SpyListener* l = listener_;
  std::string id = id_;
  inner_->close(std::move(reason), [l, id, done](Status status) {
    l->before_close_done(id, status);
    done(status);
    l->backend_callback_returned();
  });
}

}  // namespace dshpty::fuzz
