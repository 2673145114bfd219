#include "fixture.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace dshpty::test {

namespace {

std::string read_file(const std::string& path) {
  std::string out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[8192];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

std::vector<pid_t> all_pids() {
  std::vector<pid_t> pids;
  DIR* dir = ::opendir("/proc");
  if (!dir) return pids;
  while (dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (pid > 0 && *end == '\0') pids.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(dir);
  return pids;
}

// state and ppid of a process, from /proc/<pid>/stat.
bool stat_of(pid_t pid, char& state, pid_t& ppid) {
  std::string s = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto paren = s.rfind(')');
  if (paren == std::string::npos) return false;
  int p = 0;
  if (std::sscanf(s.c_str() + paren + 1, " %c %d", &state, &p) != 2) return false;
  ppid = p;
  return true;
}

}  // namespace

std::vector<pid_t> marked_processes(const std::string& marker) {
  std::string needle = "DSHPTY_TEST_MARK=" + marker;
  needle.push_back('\0');
  std::vector<pid_t> out;
  for (pid_t pid : all_pids()) {
    if (pid == ::getpid()) continue;
    std::string env = read_file("/proc/" + std::to_string(pid) + "/environ");
    env.push_back('\0');
    if (env.find(needle) != std::string::npos) out.push_back(pid);
  }
  return out;
}

std::vector<pid_t> marked_processes_named(const std::string& marker, const std::string& comm) {
  std::vector<pid_t> out;
  for (pid_t pid : marked_processes(marker)) {
    std::string c = read_file("/proc/" + std::to_string(pid) + "/comm");
    if (!c.empty() && c.back() == '\n') c.pop_back();
    if (c == comm) out.push_back(pid);
  }
  return out;
}

std::vector<pid_t> zombie_children() {
  std::vector<pid_t> out;
  for (pid_t pid : all_pids()) {
    char state = 0;
    pid_t ppid = 0;
    if (stat_of(pid, state, ppid) && ppid == ::getpid() && state == 'Z') out.push_back(pid);
  }
  return out;
}

void kill_marked(const std::string& marker, const std::vector<pid_t>& own_children) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto pids = marked_processes(marker);
    for (pid_t pid : own_children) {
      char state = 0;
      pid_t ppid = 0;
      if (stat_of(pid, state, ppid) && ppid == ::getpid()) {
        if (state == 'Z') {
          ::waitpid(pid, nullptr, WNOHANG);
        } else {
          pids.push_back(pid);
        }
      }
    }
    if (pids.empty()) return;
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
    // Killed processes need a moment to die; this is cleanup, not a test assertion.
    ::usleep(2000);
  }
}

std::string fresh_marker(const char* what) {
  static std::atomic<int> counter{0};
  return std::string(what) + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

pid_t foreground_pgid(pid_t pid) {
  std::string s = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto paren = s.rfind(')');
  if (paren == std::string::npos) return -1;
  char state = 0;
  int ppid = 0, pgrp = 0, session = 0, tty = 0, tpgid = -1;
  if (std::sscanf(s.c_str() + paren + 1, " %c %d %d %d %d %d", &state, &ppid, &pgrp, &session,
                  &tty, &tpgid) != 6) {
    return -1;
  }
  return tpgid;
}

int count_open_fds() {
  int n = 0;
  DIR* dir = ::opendir("/proc/self/fd");
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  return n - 1;  // the directory's own fd
}

bool run_until(struct ev_loop* loop, const std::function<bool()>& pred,
               std::chrono::milliseconds timeout) {
  if (pred()) return true;
  ev_timer deadline;
  bool expired = false;
  ev_timer_init(&deadline, [](struct ev_loop*, ev_timer* w, int) {
    *static_cast<bool*>(w->data) = true;
  }, static_cast<double>(timeout.count()) / 1000.0, 0.);
  deadline.data = &expired;
  ev_timer_start(loop, &deadline);
  // Some conditions live outside the loop (/proc): wake up now and then to look again.
  ev_timer recheck;
  ev_timer_init(&recheck, [](struct ev_loop*, ev_timer*, int) {}, 0.002, 0.002);
  ev_timer_start(loop, &recheck);
  bool ok = false;
  while (!(ok = pred()) && !expired) ev_run(loop, EVRUN_ONCE);
  ev_timer_stop(loop, &recheck);
  ev_timer_stop(loop, &deadline);
  return ok;
}

ShellFixture::ShellFixture(struct ev_loop* loop)
    : loop_(loop ? loop : ev_loop_new(EVFLAG_AUTO)), own_loop_(loop == nullptr),
      marker_(fresh_marker("shell")) {
  const char* observe = std::getenv("DSHPTY_TEST_OBSERVE");
  observed_->on = observe && std::string_view(observe) == "1";
}

ShellFixture::~ShellFixture() {
  if (observed_->on) std::fprintf(stderr, "observed sessions %zu times\n", static_cast<std::size_t>(observed_->count));
  kill_marked(marker_, helpers_);
  if (own_loop_) ev_loop_destroy(loop_);
}

ShellConfig ShellFixture::config() const {
  ShellConfig c;
  c.env["DSHPTY_TEST_MARK"] = marker_;
  c.env["HISTFILE"] = "/dev/null";
  if (observed_->on) {
    c.on_raw_output = [observed = observed_](std::string_view id, std::string_view) {
      auto it = observed->sessions.find(id);
      if (it != observed->sessions.end() && it->second->observe()) ++observed->count;
    };
  }
  return c;
}

void ShellFixture::remember(const Spawned& s) {
  if (auto* sh = s.shell(); sh && sh->helper_pid() > 0) helpers_.push_back(sh->helper_pid());
}

Spawned ShellFixture::spawn(ShellConfig config, SpawnRequest request, AbortSignal signal) {
  auto backend = make_shell_backend(loop_, std::move(config));
  return spawn_on(*backend, std::move(request), std::move(signal));
}

Spawned ShellFixture::spawn_on(Backend& backend, SpawnRequest request, AbortSignal signal) {
  SpawnSpec spec;
  spec.session_id = fresh_marker("pty");
  const std::string id = spec.session_id;
  spec.request = std::move(request);
  spec.signal = std::move(signal);
  bool done = false;
  Spawned out;
  backend.spawn(std::move(spec), [&](Result<std::unique_ptr<BackendSession>> r) {
    done = true;
    if (r) {
      out.session = std::move(r.value());
    } else {
      out.error = r.error();
    }
  });
  if (!run_until(loop_, [&] { return done; }, 30s)) {
    throw std::runtime_error("spawn did not complete");
  }
  remember(out);
  if (observed_->on && out.session) observed_->sessions[id] = out.session.get();
  return out;
}

Status ShellFixture::close(BackendSession& session, std::chrono::milliseconds timeout) {
  bool done = false;
  Status result = make_error(Code::BACKEND_FAILED, "close did not complete in the test's time");
  session.close("test", [&](Status st) {
    done = true;
    result = st;
  });
  run_until(loop_, [&] { return done; }, timeout);
  return result;
}

Result<SendResult> ShellFixture::send(BackendSession& session, SendRequest request,
                                      std::unique_ptr<BackendSendOperation>* op,
                                      std::chrono::milliseconds timeout) {
  bool done = false;
  Result<SendResult> result = make_error(Code::BACKEND_FAILED, "send did not complete in the test's time");
  auto started = session.start_send(std::move(request), [&](Result<SendResult> r) {
    done = true;
    result = std::move(r);
  });
  if (!started) return started.error();
  if (done) throw std::runtime_error("send completed inside start_send");
  run_until(loop_, [&] { return done; }, timeout);
  if (op) *op = std::move(started.value());
  return result;
}

void ShellFixture::type(BackendSession& session, const std::string& line) {
  auto* sh = dynamic_cast<shell::ShellSession*>(&session);
  if (!sh) throw std::runtime_error("not a shell session");
  Status st = sh->write(line + "\r");
  if (!st) throw std::runtime_error(describe(st.error()));
}

std::string show(const Result<SendResult>& r) {
  if (!r) return describe(r.error());
  return std::string(wait_reason_name(r->wait_reason)) + " exit=" +
         (r->exit_code ? std::to_string(*r->exit_code) : "null") +
         " cwd=" + r->cwd.value_or("null") + (r->input_hidden ? " hidden" : "") +
         " viewport=[" + r->viewport + "]";
}

SendRequest request(std::string text, std::optional<std::chrono::milliseconds> idle,
                    std::optional<std::chrono::milliseconds> timeout) {
  SendRequest r;
  r.text = std::move(text);
  r.idle = idle;
  r.timeout = timeout;
  return r;
}

}  // namespace dshpty::test
