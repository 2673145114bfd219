#include "linger/linger_spawn.hpp"

#include "remote/stream_channel.hpp"
#include "dshpty/linger.hpp"
#include "linger/record.hpp"
#include "linger/state_dir.hpp"
#include "shell_session.hpp"

namespace dshpty::shell {

namespace {

ChannelFactory stream_opener(StreamLaunch launch) {
  return [launch = std::move(launch)](struct ev_loop* loop, ChannelEvents& events) -> Result<OpenedChannel> {
    auto channel = StreamChannel::launch(loop, events, launch);
    if (!channel) return channel.error();
    return OpenedChannel{std::move(*channel)};
  };
}

}  // namespace

Result<std::uint32_t> parse_linger(const std::map<std::string, std::string>& options) {
  auto it = options.find("linger");
  if (it == options.end()) return 0u;
  const std::string& v = it->second;
  std::uint64_t n = 0;
  bool ok = !v.empty() && v.size() <= 7;
  for (char c : v) {
    if (c < '0' || c > '9') ok = false;
    else n = n * 10 + static_cast<unsigned>(c - '0');
  }
  if (!ok || n > kMaxLingerSeconds) {
    return make_error(Code::INVALID_ARGUMENT, "linger must be whole seconds 0.." + std::to_string(kMaxLingerSeconds) +
                                                  ", not \"" + v + "\"");
  }
  return static_cast<std::uint32_t>(n);
}

Status plan_lingering(StartParams& p, const ShellConfig& config, const SpawnSpec& spec, std::uint32_t seconds,
                      const std::string& term, const std::map<std::string, std::optional<std::string>>& env,
                      const Limits& limits) {
  auto dir = linger::prepare_state_dir(config.state_dir);
  if (!dir) return dir.error();
  StreamLaunch launch;
  // The helper in its --stdio face, one socketpair away, in a session of its own: the
  // host's death closes the pair, which it takes as the order to linger.
  launch.transport = {p.supervisor_path, "--stdio"};
  if (p.recorder && p.recorder->handoff_fd() >= 0) {
    // The helper goes on with the recording while no host holds the session.
    char start[64];
    std::snprintf(start, sizeof start, "%.6f", p.recorder->start_time());
    launch.transport.insert(launch.transport.end(), {"--record-fd", "3", "--record-start", start, "--record-max",
                                                     std::to_string(p.recorder->max_bytes())});
    launch.record_fd = p.recorder->handoff_fd();
  }
  launch.label = "dshpty-supervisor";
  launch.shell_argv = p.argv;
  launch.cwd = p.cwd;
  launch.session_id = spec.session_id;
  launch.term = term;
  for (const auto& [name, value] : env) launch.env.push_back(value ? name + "=" + *value : name);
  launch.rows = p.rows;
  launch.cols = p.cols;
  launch.limits = limits;
  // A local link needs no pings: the socketpair's end is news enough, and the helper idles
  // with no wakeups.
  launch.ping_interval = std::chrono::milliseconds(0);
  launch.link_timeout = std::chrono::milliseconds(0);
  StreamLaunch::Linger l;
  l.seconds = seconds;
  l.ring_bytes = config.linger_ring_bytes;
  l.state_dir = *dir;
  l.owner = spec.owner.label();
  l.name = spec.request.name.value_or("");
  l.type = "shell";
  launch.linger = std::move(l);
  p.open_channel = stream_opener(std::move(launch));
  return {};
}

Result<StartParams> plan_attach(const ShellConfig& config, const SpawnSpec& spec,
                                std::shared_ptr<const bool> host_leaving) {
  const auto& options = spec.request.options;
  const std::string& key = options.at("attach");
  if (options.size() != 1) {
    return make_error(Code::INVALID_ARGUMENT, "the shell option attach takes no other option beside it");
  }
  if (!linger::is_session_key(key)) {
    return make_error(Code::INVALID_ARGUMENT, "attach: \"" + key + "\" is not a lingering session's key");
  }
  auto dir = linger::prepare_state_dir(config.state_dir);
  if (!dir) return dir.error();
  auto record = linger::read_record(linger::info_path(*dir, key));
  if (!record) return make_error(Code::NO_SESSION, "no lingering session " + key);
  if (record->owner != spec.owner.label()) {
    return make_error(Code::FOREIGN_SESSION, "lingering session " + key + " belongs to another owner");
  }
  // A lingering session is never confined: a host whose operator set a floor (a mode, or the
  // network off) must not take one over, whatever an earlier host allowed.
  if (config.sandbox_floor != SandboxMode::none || config.network_floor) {
    return make_error(Code::INVALID_ARGUMENT,
                      "lingering session " + key + " is unconfined, below the operator's floor (" +
                          (config.sandbox_floor != SandboxMode::none ? "sandbox " + std::string(sandbox_mode_name(config.sandbox_floor))
                                                                     : std::string("network off")) +
                          "): it cannot be attached here");
  }
  StartParams p;
  p.session_id = spec.session_id;
  p.signal = spec.signal;
  p.attach = true;
  p.host_leaving = std::move(host_leaving);
  p.argv = {record->shell.empty() ? config.shell : record->shell};  // for messages only: it runs already
  // The shell keeps the marks the first host asked for: read them with its nonce.
  p.mark_nonce = record->mark_nonce;
  p.abandoned_lines = record->shell == "fish";
  p.rows = record->rows > 0 ? record->rows : config.rows;
  p.cols = record->cols > 0 ? record->cols : config.cols;
  StreamLaunch launch;
  launch.label = "lingering session";
  launch.ping_interval = std::chrono::milliseconds(0);
  launch.link_timeout = std::chrono::milliseconds(0);
  launch.attach = StreamLaunch::Attach{linger::socket_path(*dir, key), key, record->token, record->owner};
  p.open_channel = stream_opener(std::move(launch));
  return p;
}

}  // namespace dshpty::shell
