// The JSON Lines face of dshpty-repl (docs/tool-protocol.md): parses each request line into
// an engine operation and encodes what the engine returns into one response line. Requests
// overlap; every request gets exactly one response. No I/O of its own: lines come in
// through handle_line(), responses leave through the write hook.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine.hpp"
#include "json_protocol.hpp"

namespace dshpty::repl {

class JsonServer {
 public:
  struct Hooks {
    std::function<void(std::string line)> write;  // one response, without its newline
    // After shutdown (or EOF): the service is disposed and every request was answered.
    std::function<void(int exit_code)> finished;
  };

  JsonServer(engine::Engine& engine, Hooks hooks);
  JsonServer(const JsonServer&) = delete;
  JsonServer& operator=(const JsonServer&) = delete;

  void handle_line(std::string_view line);
  // A line over the length limit (its bytes were dropped).
  void handle_overlong_line();
  // EOF on stdin: a shutdown nobody waits for.
  void end_of_input();
  bool shutting_down() const noexcept { return shutdown_started_; }

 private:
  using Json = json_protocol::Json;
  using RequestId = json_protocol::RequestId;
  void dispatch(json_protocol::Request request);
  void respond(const RequestId& id, Json result);
  void respond_error(const RequestId& id, const Error& error);
  // Answers a completion or a read: its value through `encode`, or its error.
  template <class T, class Encode>
  void answer(const RequestId& id, const Result<T>& result, Encode encode) {
    if (result)
      respond(id, encode(result.value()));
    else
      respond_error(id, result.error());
  }
  // `leaving`: the host goes (EOF or a signal), lingering sessions stay; a shutdown
  // request kills them all.
  void begin_shutdown(std::optional<RequestId> id, bool leaving = false);
  void answer_shutdowns();

  engine::Engine& engine_;
  Hooks hooks_;
  bool shutdown_started_ = false;
  bool finished_ = false;
  Status shutdown_result_;
  std::vector<RequestId> shutdown_ids_;  // shutdown requests waiting for the engine to settle
  // Background sends (jobs) answer at once; their results, once they ended, wait here by
  // owner and send key (each owner has its own keys) for `output` to show them
  // (docs/tool-protocol.md, "Background sends"). Bounded: past kMaxFinishedJobs the oldest
  // is forgotten.
  using JobKey = std::pair<std::string, std::string>;  // owner, send key
  struct FinishedJob {
    Json result;  // the send's result, or {"error": ...}
  };
  void keep_finished_job(JobKey key, FinishedJob job);
  const FinishedJob* finished_job(const std::string& owner, const std::string& key) const;
  // Another owner has a kept job under `key` (and `owner` has none): FOREIGN_SESSION.
  bool others_finished(const std::string& owner, const std::string& key) const;
  // A job's answer to its send: {job, sessionId} (job: the request's id as written).
  static Json job_ack(const RequestId& id, const std::string& session_id);
  std::map<JobKey, FinishedJob> finished_jobs_;
  std::deque<JobKey> finished_order_;
  static constexpr std::size_t kMaxFinishedJobs = 256;
};

}  // namespace dshpty::repl
