// Progress for sends whose tools/call carried a progressToken: the new output of each such
// send, as it arrives, in notifications. Poll-free: the shell backend's raw-output hook says
// "output arrived on session S", which arms one short timer; when it fires, each send that
// saw output hands over its delta (consuming) and one notification per send goes out. So a
// flood costs a notification per interval, not per chunk, and silence costs nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "engine.hpp"
#include "loop/timer.hpp"
#include "rpc.hpp"

namespace dshpty::mcp {

class ProgressPump {
 public:
  // The interval that bounds the notification rate.
  static constexpr std::chrono::milliseconds kInterval{100};
  // The most output one notification carries; the rest of a burst is dropped from it
  // (the send's result still has the whole viewport).
  static constexpr std::size_t kMaxMessageBytes = 16u << 10;

  // `emit(token, progress, text)`: one notifications/progress to write.
  using Emit = std::function<void(const Json& token, std::uint64_t progress, std::string text)>;

  // `owner`: the label whose sends it watches (the MCP server's one owner).
  ProgressPump(struct ev_loop* loop, engine::Engine& engine, std::string owner, Emit emit);
  ProgressPump(const ProgressPump&) = delete;
  ProgressPump& operator=(const ProgressPump&) = delete;

  // Reports the send under `send_key` (the engine's key) on `session_id` against `token`.
  void watch(std::string send_key, std::string session_id, Json token);
  // No more notifications for that send (call before its result goes out, so none follows it).
  void forget(std::string_view send_key);
  // From the backend's raw-output hook.
  void output_arrived(std::string_view session_id);

 private:
  struct Watched {
    std::string session_id;
    Json token;
    std::uint64_t progress = 0;
    bool dirty = false;
  };
  void flush();

  engine::Engine& engine_;
  std::string owner_;
  Emit emit_;
  std::map<std::string, Watched, std::less<>> watched_;
  shell::Timer timer_;  // last: stopped before the table it reads goes
};

}  // namespace dshpty::mcp
