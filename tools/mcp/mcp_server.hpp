// The MCP face of the tools (docs/mcp.md): JSON-RPC messages in, the engine's operations for
// the server's one owner (the client is the agent), results rendered by the same text
// renderer as dshpty-repl's text face. Requests overlap: a send may be live while reads,
// signals and other sessions' sends run. No I/O of its own: lines come in through
// handle_line(), messages leave through the write hook.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <ev.h>

#include "dshpty/loop.hpp"
#include "engine.hpp"
#include "progress_pump.hpp"
#include "rpc.hpp"
#include "tool_catalog.hpp"

namespace dshpty::mcp {

class McpServer {
 public:
  // The owner label of the one client.
  static constexpr std::string_view kOwner = "mcp";

  struct Hooks {
    std::function<void(std::string line)> write;  // one message, without its newline
    // After EOF: the service is disposed and every call was answered.
    std::function<void(int exit_code)> finished;
  };

  McpServer(struct ev_loop* loop, engine::Engine& engine, Hooks hooks);
  McpServer(const McpServer&) = delete;
  McpServer& operator=(const McpServer&) = delete;

  void handle_line(std::string_view line);
  // A line over the length limit (its bytes were dropped).
  void handle_overlong_line();
  // EOF on stdin: dispose the service, then finish.
  void end_of_input();
  // The shell backend's raw-output hook: output arrived on `session_id`.
  void output_arrived(std::string_view session_id) { progress_.output_arrived(session_id); }

 private:
  // A tools/call whose result has not gone out yet, by the key of its request id.
  // Every member has a default initializer, so designated initializers are -Wextra clean.
  // A batch (protocol 2025-03-26) whose responses go out together, as one array, once
  // every request in it was answered.
  struct Batch {
    std::size_t waiting = 0;  // calls not answered yet (+1 while its items are handled)
    std::vector<std::string> responses{};
  };
  struct Call {
    RequestId id{};
    std::shared_ptr<Batch> batch{};  // the batch it came in, if any
    bool is_send = false;
    bool is_open = false;
    bool cancelled = false;
    std::string session_id{};
  };

  void handle_message(rpc::Message message, bool in_batch);
  void handle_batch(const std::vector<std::string>& items);
  // One of the batch's calls was answered (or dropped): the last one sends the array.
  void batch_settled(const std::shared_ptr<Batch>& batch);
  void handle_request(rpc::Request request);
  void handle_notification(const rpc::Notification& notification);
  void call_tool(const RequestId& id, const Json& params);
  void run(const std::string& key, ToolCall call, Json progress_token);
  void start_send(const std::string& key, SendCall call, Json progress_token);
  void cancel(const RequestId& request_id);
  // The tools/call's result as text content, unless the call was cancelled (then nothing).
  void finish(const std::string& key, std::string text, bool is_error);
  // An error as the call's isError result ("error: CODE: message").
  void fail(const std::string& key, const Error& error);
  // A result as its text (`format`), or its error: the one way this face renders both.
  template <class T, class Format>
  void reply(const std::string& key, const Result<T>& result, Format format) {
    if (result)
      finish(key, format(*result), false);
    else
      fail(key, result.error());
  }
  // A send's result: the output, then the status lines, as two content items, so no output
  // can pose as a status (render::format_send_parts).
  void finish_send(const std::string& key, const SendResult& result);
  // Output joined from two parts, cut to the cap by the one truncation rule if over it.
  std::string fit(std::string text) const;
  void answer(const std::string& key, Json result);
  void write(const Json& message);
  // A response: into the batch being handled, if any, else out.
  void respond(std::string line);
  std::string session_id(const std::string& word);
  std::size_t cap() const noexcept { return engine_.settings().max_result_bytes; }

  engine::Engine& engine_;
  Hooks hooks_;
  Deferred deferred_;
  ProgressPump progress_;
  std::map<std::string, Call, std::less<>> calls_;
  // Background jobs by the id this server minted (job-N, N from a random start): their session, when they started,
  // and their result once they ended (what terminal_output's status says). Bounded: past
  // kJobsKept ended jobs the oldest ended one is forgotten.
  struct Job {
    std::string session_id;
    double started = 0;  // ev_now
    std::optional<Result<SendResult>> result{};
    std::uint64_t offset = 0;  // how far terminal_output has shown the job's output
  };
  static constexpr std::size_t kJobReadBytes = std::size_t{2} << 20;  // past the engine's window
  void start_job(const std::string& key, SendCall call);
  void read_job(const std::string& key, const OutputCall& call);
  void forget_old_jobs();
  // SEND_ACTIVE naming the background job that holds the session, if one does.
  std::optional<Error> job_active(const std::string& session_id);
  std::map<std::string, Job, std::less<>> jobs_;
  std::uint64_t jobs_minted_ = 0;
  static constexpr std::size_t kJobsKept = 256;
  struct ev_loop* loop_ = nullptr;
  // Output a cancelled send's result held, by session id: the call gets no response, so the
  // session's next send result carries it first (its shown-output cursor moved past it).
  struct Unshown {
    std::string output;
    std::string call;  // the cancelled call's request id, as the client wrote it
  };
  std::map<std::string, Unshown, std::less<>> unshown_;
  bool shutdown_started_ = false;
  std::string version_;             // the revision initialize agreed on ("" before it)
  std::shared_ptr<Batch> batch_;    // the batch whose items are being handled now
};

}  // namespace dshpty::mcp
