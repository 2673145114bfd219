// A transparent layer between the service and a ScriptedBackend: every call the service
// makes and every completion the backend delivers passes through here, so the driver can
// tell the model about backend events *before* the service reacts, and check the service
// right after it did. It forwards everything unchanged.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "dshpty/scripted.hpp"

namespace dshpty::fuzz {

class SpySession;

// What the spies report; the driver implements it. `before_*` hooks run before the service's
// callback, backend_callback_returned() right after it returned.
class SpyListener {
 public:
  virtual ~SpyListener() = default;
  virtual void spawn_called(int instance, const SpawnSpec& spec) = 0;
  virtual void before_spawn_done(const std::string& id, const Error& error, SpySession* session) = 0;
  virtual void close_called(const std::string& id, const std::string& reason) = 0;
  virtual void before_close_done(const std::string& id, const Status& status) = 0;
  virtual void start_send_returned(const std::string& id, std::uint64_t serial, const Error& error) = 0;
  virtual void before_send_done(std::uint64_t serial, const Result<SendResult>& result) = 0;
  virtual void signal_returned(const std::string& id, std::uint64_t serial, const Error& error) = 0;
  virtual void before_signal_done(std::uint64_t serial, const Result<SignalResult>& result) = 0;
  virtual void read_returned(const std::string& id, const Result<ReadPage>& result) = 0;
  virtual void screen_returned(const std::string& id, const Result<ScreenSnapshot>& result) = 0;
  virtual void resize_returned(const std::string& id, unsigned rows, unsigned cols, const Status& status) = 0;
  virtual void op_cancelled(std::uint64_t serial, bool result) = 0;
  virtual void op_read_output(std::uint64_t serial, const OutputDelta& delta) = 0;
  virtual void session_destroyed(const std::string& id) = 0;
  virtual void backend_callback_returned() = 0;
};

class SpyBackend final : public Backend {
 public:
  SpyBackend(std::shared_ptr<ScriptedBackend> inner, int instance, SpyListener* listener)
      : inner_(std::move(inner)), instance_(instance), listener_(listener) {}
  const std::string& type() const override { return inner_->type(); }
  void spawn(SpawnSpec spec, SpawnCallback done) override;
  ScriptedBackend& scripted() { return *inner_; }

 private:
  std::shared_ptr<ScriptedBackend> inner_;
  int instance_;
  SpyListener* listener_;
};

class SpySession final : public BackendSession {
 public:
  SpySession(std::unique_ptr<BackendSession> inner, std::string id, SpyListener* listener)
      : inner_(std::move(inner)), id_(std::move(id)), listener_(listener) {}
  ~SpySession() override;

  const std::string& motd() const override { return inner_->motd(); }
  std::optional<int> pid() const override { return inner_->pid(); }
  SessionStatus status() const override { return inner_->status(); }
  Result<std::unique_ptr<BackendSendOperation>> start_send(SendRequest request,
                                                           Callback<SendResult> done) override;
  Result<ReadPage> read(const ReadRequest& request) override;
  Status signal(Signal signal, Callback<SignalResult> done) override;
  Result<ScreenSnapshot> screen() override;
  Status resize(unsigned rows, unsigned cols) override;
  void close(std::string reason, Callback<void> done) override;

 private:
  std::unique_ptr<BackendSession> inner_;
  std::string id_;
  SpyListener* listener_;
};

}  // namespace dshpty::fuzz
