// make_remote_backend: the shell session's terminal layer over a stream channel (a
// transport to a far `dshpty-supervisor --stdio`). Checks a spawn's options here; what only
// the far side can check (the shell, the cwd) it reports as a start failure.
#include "leaving_backend.hpp"
#include "dshpty/remote.hpp"

#include "remote/stream_channel.hpp"
#include "dshpty/loop.hpp"
#include "dialect/dialect.hpp"
#include "linger/record.hpp"
#include "linger/state_dir.hpp"
#include "linger/linger_spawn.hpp"
#include "shell_session.hpp"
#include "spawn_options.hpp"
#include "record/record_plan.hpp"
#include "limits/limit_policy.hpp"

namespace dshpty {

namespace {

constexpr std::string_view kOptionNames[] = {"shell", "rc", "history", "rows", "cols", "terminal", "linger", "record", "attach"};

std::string program_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

class RemoteBackend final : public Backend, public shell::LeavingBackend {
 public:
  RemoteBackend(struct ev_loop* loop, RemoteConfig config)
      : loop_(loop), config_(std::move(config)), record_dir_(config_.shell.record_dir), deferred_(loop) {}

  const std::string& type() const override { return config_.type; }

  void spawn(SpawnSpec spec, SpawnCallback done) override {
    auto params = prepare(spec);
    if (!params) {
      deferred_.post([done = std::move(done), error = params.error()] { done(error); });
      return;
    }
    shell::ShellSession::start(loop_, config_.shell, std::move(*params), std::move(done));
  }

 private:
  Result<shell::StartParams> prepare(SpawnSpec& spec) {
    if (spec.signal.aborted()) return spec.signal.reason();
    // This host's policy (defaults, ceilings) decides the limits; the far helper makes the
    // cgroups below its own, or the start fails naming why (never unlimited).
    auto limits = shell::limits::resolve_limits(spec.request.limits, config_.shell.limits, config_.shell.limit_ceilings);
    if (!limits) return limits.error();
    if (config_.transport.empty() || config_.transport.front().empty()) {
      return make_error(Code::INVALID_ARGUMENT, "remote backend " + config_.type + ": the transport's argv is empty");
    }
    if (!config_.shell.argv.empty() && config_.shell.argv.front().empty()) {
      return make_error(Code::INVALID_ARGUMENT, "the shell's argv names no program");
    }
    if (config_.ping_interval.count() <= 0 || config_.link_timeout <= config_.ping_interval) {
      return make_error(Code::INVALID_ARGUMENT,
                        "remote backend " + config_.type + ": the ping interval must be positive and below the link timeout");
    }
    const auto& options = spec.request.options;
    if (Status st = shell::check_option_names(options, kOptionNames, "remote"); !st) return st.error();
    if (options.count("attach")) {
      // A take-over keeps the limits the session was opened with.
      if (spec.request.limits.any()) {
        return make_error(Code::INVALID_ARGUMENT, "limits: not with attach (a session keeps the limits it started with)");
      }
      return prepare_attach(spec);
    }
    auto rows = shell::parse_dimension(options, "rows", config_.shell.rows);
    if (!rows) return rows.error();
    auto cols = shell::parse_dimension(options, "cols", config_.shell.cols);
    if (!cols) return cols.error();
    auto terminal = shell::parse_terminal(options, config_.shell.terminal);
    if (!terminal) return terminal.error();
    // The far helper starts the named shell with the integration it carries.
    auto choice = shell::parse_shell_choice(options, config_.shell);
    if (!choice) return choice.error();
    auto linger = shell::parse_linger(options);
    if (!linger) return linger.error();
    const bool integrated = config_.shell.argv.empty();

    shell::StartParams p;
    p.session_id = spec.session_id;
    p.signal = spec.signal;
    p.host_leaving = host_leaving_;  // a lingering session detaches when its host leaves
    p.rows = *rows;
    p.cols = *cols;
    p.argv = integrated ? shell::dialect_argv(*choice) : config_.shell.argv;
    if (integrated) shell::plan_integration(p, *choice);
    p.cwd = spec.request.cwd ? spec.request.cwd : config_.shell.cwd;
    shell::StreamLaunch launch = link_launch(p);
    launch.shell_argv = p.argv;
    launch.cwd = p.cwd;
    launch.session_id = spec.session_id;
    launch.limits = *limits;
    launch.term = shell::term_name(*terminal);
    if (integrated) launch.env = shell::dialect_env(*choice, p.mark_nonce);
    for (const auto& [name, value] : config_.shell.env) {
      launch.env.push_back(value ? name + "=" + *value : name);
    }
    if (*linger > 0) {
      auto dir = linger::prepare_state_dir(config_.shell.state_dir);
      if (!dir) return dir.error();
      // The far helper keeps the session through a cut link, in the far machine's state
      // directory (its --state-dir, else its default: this host's paths mean nothing
      // there), and this host takes it back over a new transport (docs/outlive.md).
      shell::StreamLaunch::Linger l;
      l.seconds = *linger;
      l.ring_bytes = config_.shell.linger_ring_bytes;
      l.owner = spec.owner.label();
      l.name = spec.request.name.value_or("");
      l.type = config_.type;
      l.record_dir = *dir;
      l.mark_nonce = p.mark_nonce;
      l.shell = program_name(p.argv.front());
      launch.linger = std::move(l);
      launch.reconnect = true;
    }
    // Recorded on this host, from the output the link brings (docs/watch.md).
    auto recorded = shell::record::wants_recording(options, config_.shell);
    if (!recorded) return recorded.error();
    if (*recorded) {
      auto recorder = shell::record::open_recorder(loop_, config_.shell, record_dir_, spec,
                                                   {p.rows, p.cols, launch.term, p.argv.front(), p.mark_nonce});
      if (!recorder) return recorder.error();
      p.recorder = std::move(*recorder);
    }
    open_over_link(p, std::move(launch));
    return p;
  }

  // What every session of this backend's link shares: the transport, its words, the
  // terminal's size and the link's pacing.
  shell::StreamLaunch link_launch(const shell::StartParams& p) const {
    shell::StreamLaunch launch;
    launch.transport = config_.transport;
    launch.label = program_name(config_.transport.front());
    launch.rows = p.rows;
    launch.cols = p.cols;
    launch.ping_interval = config_.ping_interval;
    launch.link_timeout = config_.link_timeout;
    return launch;
  }

  static void open_over_link(shell::StartParams& p, shell::StreamLaunch launch) {
    p.open_channel = [launch = std::move(launch)](struct ev_loop* loop, shell::ChannelEvents& events)
        -> Result<shell::OpenedChannel> {
      auto channel = shell::StreamChannel::launch(loop, events, launch);
      if (!channel) return channel.error();
      return shell::OpenedChannel{std::move(*channel)};
    };
  }

  // A remote session a previous host of this state directory held (its KEY.remote): the
  // same transport, and ATTACH with the token the record keeps; the far side relays it to
  // the lingering helper (docs/outlive.md, "Links that reconnect").
  Result<shell::StartParams> prepare_attach(const SpawnSpec& spec) {
    const auto& options = spec.request.options;
    const std::string& key = options.at("attach");
    if (options.size() != 1) return make_error(Code::INVALID_ARGUMENT, "the option attach takes no other option beside it");
    if (!linger::is_session_key(key)) {
      return make_error(Code::INVALID_ARGUMENT, "attach: \"" + key + "\" is not a lingering session's key");
    }
    auto dir = linger::prepare_state_dir(config_.shell.state_dir);
    if (!dir) return dir.error();
    auto record = linger::read_record(linger::remote_path(*dir, key));
    if (!record || record->type != config_.type) return make_error(Code::NO_SESSION, "no lingering session " + key);
    if (record->owner != spec.owner.label()) {
      return make_error(Code::FOREIGN_SESSION, "lingering session " + key + " belongs to another owner");
    }
    shell::StartParams p;
    p.session_id = spec.session_id;
    p.signal = spec.signal;
    p.host_leaving = host_leaving_;  // a lingering session detaches when its host leaves
    p.attach = true;
    p.argv = {record->shell.empty() ? "sh" : record->shell};  // for messages only: it runs already
    p.mark_nonce = record->mark_nonce;
    p.abandoned_lines = record->shell == "fish";
    p.rows = record->rows > 0 ? record->rows : config_.shell.rows;
    p.cols = record->cols > 0 ? record->cols : config_.shell.cols;
    shell::StreamLaunch launch = link_launch(p);
    launch.attach = shell::StreamLaunch::Attach{"", key, record->token, record->owner};
    shell::StreamLaunch::Linger l;
    l.seconds = record->linger_seconds;
    l.ring_bytes = config_.shell.linger_ring_bytes;
    l.owner = record->owner;
    l.name = record->name.value_or("");
    l.type = config_.type;
    l.record_dir = *dir;
    l.mark_nonce = record->mark_nonce;
    l.shell = record->shell;
    launch.linger = std::move(l);
    launch.reconnect = true;
    // The new host records what it sees of the session from here on: the replay first.
    if (!config_.shell.record_dir.empty()) {
      auto recorder = shell::record::open_recorder(
          loop_, config_.shell, record_dir_, spec,
          {p.rows, p.cols, shell::term_name(config_.shell.terminal), p.argv.front(), p.mark_nonce});
      if (!recorder) return recorder.error();
      (*recorder)->mark("[taken over by a new host: the lingering session's replay follows]");
      p.recorder = std::move(*recorder);
    }
    open_over_link(p, std::move(launch));
    return p;
  }

  struct ev_loop* loop_;
  RemoteConfig config_;
  shell::record::RecordDir record_dir_;  // opened once, here: recordings go where it was then
  Deferred deferred_;
};

}  // namespace

std::shared_ptr<Backend> make_remote_backend(struct ev_loop* loop, RemoteConfig config) {
  return std::make_shared<RemoteBackend>(loop, std::move(config));
}

}  // namespace dshpty
