// The bridge's start: OPEN, which starts the session's local channel, and an ATTACH in its
// place, which makes this program a relay to a lingering session (supervisor/bridge.hpp).
#include <limits.h>
#include <unistd.h>

#include <map>

#include "local/launch_plan.hpp"
#include "local/environment.hpp"
#include "supervisor/bridge.hpp"

extern char** environ;

namespace dshpty::shell {

namespace {

std::string self_executable() {
  char path[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof path);
  return n > 0 && static_cast<std::size_t>(n) < sizeof path ? std::string(path, static_cast<std::size_t>(n)) : "";
}

}  // namespace

void Bridge::open(std::string_view payload) {
  auto open = frames::decode<frames::Open>(payload);
  if (!open || open->argv.empty() || open->rows == 0 || open->cols == 0) return protocol_error("bad OPEN");
  std::map<std::string, std::optional<std::string>> overrides;
  for (const std::string& entry : open->env) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos) {
      overrides[entry] = std::nullopt;
    } else {
      overrides[entry.substr(0, eq)] = entry.substr(eq + 1);
    }
  }
  link_state_ = HostLink::up;
  rows_ = open->rows;
  cols_ = open->cols;
  if (auto nonce = overrides.find("DSHPTY_NONCE"); nonce != overrides.end() && nonce->second) mark_nonce_ = *nonce->second;
  if (hold_ms_ > 0) hold_ = supervisor::PromptHold(mark_nonce_);
  const auto& argv = open->argv;
  shell_name_ = argv.front().substr(argv.front().rfind('/') + 1);
  const std::string self = self_executable();
  LocalLaunch launch{direct_launch(self, argv, open->cwd, build_environment(environ, open->session_id, open->term, overrides)),
                     rows_, cols_, argv.front(), open->cwd};
  limits::Placement placement;  // the cgroups' fds, open until the helper is spawned
  if (!place_limits(*open, launch, placement)) return;
  auto channel = LocalChannel::launch(loop_, *this, std::move(launch));
  if (!channel) {
    link_.queue(frames::StartFailed{clip(channel.error()->message)});
    return queue_flush();
  }
  channel_ = std::move(*channel);
}

// The host opened with ATTACH: it reconnects to a lingering session over a new transport.
// This program only relays (supervisor/attach_relay.hpp), once the loop is left.
void Bridge::relay(const frames::Frame& f) {
  // Only the key is read here: the lingering helper checks the rest.
  frames::PayloadReader r(f.payload);
  RelayOrder order;
  order.key = std::string(r.str());
  order.first_bytes = hello_frame_;
  frames::FrameWriter(order.first_bytes).begin(frames::Type::attach).raw(f.payload).end();
  order.first_bytes += link_.reader().take_rest();
  relay_ = std::move(order);
  link_state_ = HostLink::down;
  link_.flush_blocking(kLastWords);  // our WELCOME
  link_.stop_reading();
  link_timer_.stop();
  ev_break(loop_, EVBREAK_ALL);
}

}  // namespace dshpty::shell
