#include "harness.hpp"

#include <ev.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "bash_profile.hpp"

namespace bench {

namespace {

std::string why(const dshpty::Error& e) { return e ? dshpty::describe(e) : "unknown error"; }

}  // namespace

std::string find_supervisor(const Plan& plan) {
  if (!plan.supervisor.empty()) return plan.supervisor;
  if (const char* env = std::getenv("DSHPTY_SUPERVISOR"); env && *env) return env;
  // This executable is <build>/tools/bench/dshpty-bench; the helper is built beside the
  // shell backend.
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto candidate = self.parent_path() / "../../backends/shell/dshpty-supervisor";
    if (std::filesystem::exists(candidate, ec)) return std::filesystem::canonical(candidate);
  }
  return {};
}

Harness::Harness(const Plan& plan, const std::function<void(dshpty::ShellConfig&)>& shell)
    : loop_(ev_loop_new(EVFLAG_AUTO)) {
  if (!loop_) throw std::runtime_error("ev_loop_new failed");
  service_ = std::make_unique<dshpty::Service>(loop_);
  dshpty::ShellConfig config;
  config.rows = kRows;
  config.cols = kCols;
  config.env["HISTFILE"] = "";
  config.supervisor_path = find_supervisor(plan);
  config.on_raw_output = [this](std::string_view, std::string_view bytes) {
    raw_bytes += bytes.size();
    ++raw_chunks;
  };
  if (shell) shell(config);
  auto reg = service_->register_backend(dshpty::make_shell_backend(loop_, std::move(config)));
  if (!reg) throw std::runtime_error(why(reg.error()));
  owner_ = service_->mint_owner("bench");
}

Harness::~Harness() {
  bool done = false;
  service_->dispose([&](dshpty::Status) { done = true; });
  if (!run_until([&] { return done; }, std::chrono::minutes(5))) {
    // Destroying a service mid-disposal aborts the process; leaking it at exit is safe: each
    // helper sees EOF on its socket when this process ends and kills its tree.
    (void)service_.release();
    return;
  }
  service_.reset();
  ev_loop_destroy(loop_);
}

bool Harness::run_until(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  // A timer that only wakes the loop, so a missing completion cannot block forever.
  ev_timer wake;
  ev_timer_init(&wake, [](struct ev_loop*, ev_timer*, int) {}, 0.0, 0.0);
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    auto left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    ev_timer_set(&wake, left.count(), 0.0);
    ev_timer_start(loop_, &wake);
    ev_run(loop_, EVRUN_ONCE);
    ev_timer_stop(loop_, &wake);
  }
  return true;
}

void Harness::spawn_async(std::function<void(dshpty::Result<dshpty::SpawnResult>)> done) {
  dshpty::SpawnOptions opts;
  opts.type = "shell";
  opts.options = {{"rows", std::to_string(kRows)}, {"cols", std::to_string(kCols)}};
  service_->spawn(owner_, std::move(opts), std::move(done));
}

dshpty::SpawnResult Harness::spawn() {
  std::optional<dshpty::Result<dshpty::SpawnResult>> got;
  spawn_async([&](dshpty::Result<dshpty::SpawnResult> r) { got.emplace(std::move(r)); });
  if (!run_until([&] { return got.has_value(); }, std::chrono::seconds(60)))
    throw std::runtime_error("spawn did not complete in 60 s");
  if (!got->ok()) throw std::runtime_error("spawn: " + why(got->error()));
  return std::move(*got).value();
}

dshpty::SendResult Harness::send(const std::string& id, std::string text,
                                 std::chrono::milliseconds timeout) {
  dshpty::SendRequest req;
  req.text = std::move(text);
  req.timeout = timeout;
  std::optional<dshpty::Result<dshpty::SendResult>> got;
  auto started = service_->start_send(owner_, id, std::move(req),
                                      [&](dshpty::Result<dshpty::SendResult> r) {
                                        got.emplace(std::move(r));
                                      });
  if (!started) throw std::runtime_error("send: " + why(started.error()));
  if (!run_until([&] { return got.has_value(); }, timeout + std::chrono::seconds(10)))
    throw std::runtime_error("send did not complete");
  if (!got->ok()) throw std::runtime_error("send: " + why(got->error()));
  return std::move(*got).value();
}

void Harness::close_async(const std::string& id, std::function<void(dshpty::Result<bool>)> done) {
  auto st = service_->kill(owner_, id, std::move(done), "bench");
  if (!st) throw std::runtime_error("kill: " + why(st.error()));
}

void Harness::close(const std::string& id) {
  std::optional<dshpty::Result<bool>> got;
  close_async(id, [&](dshpty::Result<bool> r) { got.emplace(std::move(r)); });
  if (!run_until([&] { return got.has_value(); }, std::chrono::seconds(60)))
    throw std::runtime_error("close did not complete in 60 s");
  if (!got->ok()) throw std::runtime_error("close: " + why(got->error()));
}

}  // namespace bench
