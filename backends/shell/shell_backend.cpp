// make_shell_backend: checks a spawn's inputs (so a bad one fails naming the path before
// anything is created), builds the environment and hands over to ShellSession::start.
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <string>
#include <string_view>

#include "leaving_backend.hpp"
#include "dshpty/linger.hpp"
#include "dshpty/loop.hpp"
#include "dshpty/shell.hpp"
#include "local/environment.hpp"
#include "shell_session.hpp"
#include "local/launch_plan.hpp"
#include "sandbox/sandbox.hpp"
#include "sandbox/seccomp_filter.hpp"
#include "local/local_channel.hpp"
#include "limits/cgroup_location.hpp"
#include "limits/limit_policy.hpp"
#include "dialect/dialect.hpp"
#include "linger/linger_spawn.hpp"
#include "spawn_options.hpp"
#include "record/record_plan.hpp"
#include "spawn_admission.hpp"

extern char** environ;

namespace dshpty {

namespace {

// The per-spawn options this backend takes (dshpty/shell.hpp); any other name is a mistake
// the caller should hear about, not a silent default.
constexpr std::string_view kOptionNames[] = {"shell", "rc", "history", "rows", "cols", "terminal", "sandbox", "network", "linger", "record", "attach"};

Status check_executable(const std::string& what, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) < 0) {
    return make_system_error(Code::BACKEND_FAILED, what + " " + path, errno);
  }
  if (!S_ISREG(st.st_mode) || ::access(path.c_str(), X_OK) < 0) {
    return make_error(Code::BACKEND_FAILED, what + " " + path + " is not an executable file",
                      {}, EACCES);
  }
  return {};
}

// A bare shell name, looked up once here in the PATH the shell will get (the config's, else
// the host's): left to the helper's execvp, each directory before the right one costs a
// failed execve (ten, 0.6 ms of a spawn, on a machine whose PATH starts with tool
// directories). Unchanged when nothing is found, or a relative entry comes first (it means
// the shell's cwd): the helper's execvp then decides, and reports a failure.
std::string resolve_in_path(const std::string& name, const ShellConfig& config) {
  if (name.empty() || name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  if (auto it = config.env.find("PATH"); it != config.env.end()) path = it->second ? it->second->c_str() : nullptr;
  if (!path) return name;
  std::string_view dirs(path);
  while (true) {
    const std::size_t colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    if (dir.empty() || dir.front() != '/') return name;
    std::string candidate = std::string(dir) + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    if (colon == std::string_view::npos) return name;
    dirs.remove_prefix(colon + 1);
  }
}

class ShellBackend final : public Backend, public shell::LeavingBackend {
 public:
  ShellBackend(struct ev_loop* loop, ShellConfig config)
      : loop_(loop), config_(std::move(config)), record_dir_(config_.record_dir), deferred_(loop), admission_(loop) {}

  const std::string& type() const override { return type_; }

  // Admitted in order, as many at once as the CPUs can start (spawn_admission.hpp); the
  // checks run when a spawn's turn comes, so a queued spawn holds no fd.
  void spawn(SpawnSpec spec, SpawnCallback done) override {
    AbortSignal signal = spec.signal;
    admission_.admit(
        std::move(signal),
        [this, spec = std::move(spec)](SpawnCallback admitted) mutable { start(std::move(spec), std::move(admitted)); },
        std::move(done));
  }

 private:
  void start(SpawnSpec spec, SpawnCallback done) {
    auto params = spec.request.options.count("attach") ? attach(spec) : prepare(spec);
    if (!params) {
      deferred_.post([done = std::move(done), error = params.error()] { done(error); });
      return;
    }
    shell::ShellSession::start(loop_, config_, std::move(*params), std::move(done));
  }

  Result<shell::StartParams> attach(SpawnSpec& spec) {
    if (spec.signal.aborted()) return spec.signal.reason();
    if (Status st = shell::check_option_names(spec.request.options, kOptionNames, "shell"); !st) return st.error();
    // The lingering helper was started with its limits, or none: a take-over cannot change them.
    if (spec.request.limits.any()) {
      return make_error(Code::INVALID_ARGUMENT, "limits: not with attach (a session keeps the limits it started with)");
    }
    auto p = shell::plan_attach(config_, spec, host_leaving_);
    if (!p || config_.record_dir.empty()) return p;
    // The new host records what it sees of the session from here on: the replay first.
    auto recorder = shell::record::open_recorder(
        loop_, config_, record_dir_, spec, {p->rows, p->cols, shell::term_name(config_.terminal), p->argv.front(), p->mark_nonce});
    if (!recorder) return recorder.error();
    (*recorder)->mark("[taken over by a new host: the lingering session's replay follows]");
    p->recorder = std::move(*recorder);
    return p;
  }

  Result<shell::StartParams> prepare(SpawnSpec& spec) {
    if (spec.signal.aborted()) return spec.signal.reason();
    shell::StartParams p;
    p.session_id = spec.session_id;
    p.signal = spec.signal;
    if (Status st = shell::check_option_names(spec.request.options, kOptionNames, "shell"); !st) return st.error();
    auto rows = shell::parse_dimension(spec.request.options, "rows", config_.rows);
    if (!rows) return rows.error();
    auto cols = shell::parse_dimension(spec.request.options, "cols", config_.cols);
    if (!cols) return cols.error();
    p.rows = *rows;
    p.cols = *cols;
    auto terminal = shell::parse_terminal(spec.request.options, config_.terminal);
    if (!terminal) return terminal.error();
    auto sandbox = shell::parse_sandbox_options(spec.request.options, config_);
    if (!sandbox) return sandbox.error();
    p.sandbox = std::move(*sandbox);
    // The mask goes where the recordings do: the directory held open, wherever it is now.
    if (std::string now = record_dir_.where_now(); !now.empty()) p.sandbox.record_dir = std::move(now);
    auto linger = shell::parse_linger(spec.request.options);
    if (!linger) return linger.error();
    // A confined helper dies with its parent and cannot see a later host's peers.
    if (*linger > 0 && p.sandbox.confined()) {
      return make_error(Code::INVALID_ARGUMENT, "linger is not available for confined sessions");
    }
    auto recorded = shell::record::wants_recording(spec.request.options, config_);
    if (!recorded) return recorded.error();
    auto limits = shell::limits::resolve_limits(spec.request.limits, config_.limits, config_.limit_ceilings);
    if (!limits) return limits.error();
    // A confined spawn's failures name its mode, whichever check finds them.
    const std::string mode_words =
        p.sandbox.confined()
            ? "sandbox " + std::string(shell::sandbox_mode_name(p.sandbox.mode)) + ": "
            : "";
    auto choice = shell::parse_shell_choice(spec.request.options, config_);
    if (!choice) return choice.error();
    if (!config_.argv.empty() && config_.argv.front().empty()) {
      return make_error(Code::INVALID_ARGUMENT, "the shell's argv names no program");
    }
    // A configured argv is a raw start, without the integration (dshpty/shell.hpp).
    const bool integrated = config_.argv.empty();
    p.argv = integrated ? shell::dialect_argv(*choice) : config_.argv;
    if (!p.sandbox.confined()) p.argv.front() = resolve_in_path(p.argv.front(), config_);
    if (integrated) shell::plan_integration(p, *choice);
    p.cwd = spec.request.cwd ? spec.request.cwd : config_.cwd;
    if (p.cwd) {
      struct stat st {};
      if (::stat(p.cwd->c_str(), &st) < 0) {
        return make_system_error(Code::BACKEND_FAILED, mode_words + "working directory " + *p.cwd,
                                 errno);
      }
      if (!S_ISDIR(st.st_mode)) {
        return make_error(Code::BACKEND_FAILED,
                          mode_words + "working directory " + *p.cwd + " is not a directory",
                          {}, ENOTDIR);
      }
    }
    // A relative shell path is resolved by execve in the shell's cwd; the helper reports it.
    if (p.argv.front().front() == '/') {
      if (Status st = check_executable("shell", p.argv.front()); !st) return st.error();
    }
    p.supervisor_path = shell::resolve_supervisor_path(config_.supervisor_path);
    if (Status st = check_executable("PTY supervisor", p.supervisor_path); !st) {
      return st.error();
    }
    // What only a confined spawn needs (bwrap, namespaces, the workspace), checked last:
    // none of it starts anything.
    if (Status st = shell::check_sandbox(p.sandbox, p.cwd, config_.bwrap_path, p.supervisor_path); !st) {
      return st.error();
    }
    if (p.sandbox.confined()) {
      auto program = seccomp_program();
      if (!program) return make_error(Code::BACKEND_FAILED, mode_words + program.error()->message, {},
                                      program.error()->sys_errno);
      p.sandbox.seccomp_program = *program;
    }
    // Where the session's cgroups go, found last of the checks: it opens the host's cgroup
    // directories, which the helper then makes the session's cgroups in. A lingering
    // session's helper makes its own, below its own cgroup (it outlives this host).
    if (limits->any() && *linger == 0) {
      auto placement = shell::limits::place_session_cgroups(*limits);
      if (!placement) return make_error(Code::BACKEND_FAILED, mode_words + placement.error()->message, {},
                                        placement.error()->sys_errno);
      p.cgroup = std::move(*placement);
    }
    auto overrides = config_.env;
    if (integrated) {
      for (const std::string& entry : shell::dialect_env(*choice, p.mark_nonce)) {
        const auto eq = entry.find('=');
        overrides.emplace(entry.substr(0, eq), entry.substr(eq + 1));  // the config's win
      }
    }
    const std::string term = shell::term_name(*terminal);
    p.env = shell::build_environment(environ, spec.session_id, term, overrides,
                                     {.allow_list_only = p.sandbox.confined(), .pass = config_.env_pass});
    // The recording's file, last of all: a spawn refused above leaves none behind.
    if (*recorded) {
      auto recorder = shell::record::open_recorder(loop_, config_, record_dir_, spec, {p.rows, p.cols, term, p.argv.front(), p.mark_nonce});
      if (!recorder) return recorder.error();
      p.recorder = std::move(*recorder);
    }
    if (*linger > 0) {
      p.host_leaving = host_leaving_;
      if (Status st = shell::plan_lingering(p, config_, spec, *linger, term, overrides, *limits); !st) return st.error();
    } else {
      // The helper on this machine, directly or inside its sandbox.
      shell::LaunchPlan plan = shell::direct_launch(p.supervisor_path, p.argv, p.cwd, p.env);
      // Limits: the helper makes the cgroups from these flags and fds (limits/cgroup_wire.hpp);
      // the fds stay open in the session's params until its launch.
      plan.argv.insert(plan.argv.begin() + 1, p.cgroup.helper_args.begin(), p.cgroup.helper_args.end());
      if (p.sandbox.confined()) {
        p.sandbox.host_death_kills = p.cgroup.dirs.empty();
        plan = shell::wrap_in_bwrap(plan, p.sandbox, p.cwd);
      }
      for (const auto& dir : p.cgroup.dirs) plan.passed_fds.push_back(dir.get());
      p.open_channel = shell::local_channel_factory(shell::LocalLaunch{std::move(plan), p.rows, p.cols, p.argv.front(),
                                                                       p.cwd, std::move(p.cgroup.made)});
    }
    return p;
  }

  // The confined sessions' system-call filter, built at the first confined spawn and
  // shared by every later one (sandbox/seccomp_filter.hpp).
  Result<std::shared_ptr<const std::string>> seccomp_program() {
    if (!seccomp_) {
      auto built = shell::build_seccomp_program();
      if (!built) return built.error();
      seccomp_ = *built;
    }
    return seccomp_;
  }

  std::string type_ = "shell";
  std::shared_ptr<const std::string> seccomp_;
  struct ev_loop* loop_;
  ShellConfig config_;
  shell::record::RecordDir record_dir_;  // opened once, here: recordings go where it was then
  Deferred deferred_;
  shell::SpawnAdmission admission_;
};

}  // namespace

Status check_shell_options(const std::map<std::string, std::string>& options) {
  if (auto choice = shell::parse_shell_choice(options, ShellConfig{}); !choice) return choice.error();
  return {};
}

Status detach_lingering_on_close(Backend& shell_backend) {
  auto* backend = dynamic_cast<shell::LeavingBackend*>(&shell_backend);
  if (!backend) return make_error(Code::INVALID_ARGUMENT, "not a backend whose sessions linger");
  backend->leave();
  return {};
}

std::shared_ptr<Backend> make_shell_backend(struct ev_loop* loop, ShellConfig config) {
  return std::make_shared<ShellBackend>(loop, std::move(config));
}

}  // namespace dshpty
