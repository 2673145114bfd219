// `--json` mode's engine: turns parsed requests into Service calls and their outcomes into
// response lines. Requests overlap; every request gets exactly one response. No I/O of its
// own: lines come in through handle_line(), responses leave through the write hook.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/service.hpp"
#include "json_protocol.hpp"

namespace dshpty::repl {

class JsonServer {
 public:
  struct Hooks {
    std::function<void(std::string line)> write;  // one response, without its newline
    // After shutdown (or EOF): the service is disposed and every request was answered.
    std::function<void(int exit_code)> finished;
  };

  JsonServer(Service& service, std::size_t max_result_bytes, Hooks hooks);
  ~JsonServer();
  JsonServer(const JsonServer&) = delete;
  JsonServer& operator=(const JsonServer&) = delete;

  void handle_line(std::string_view line);
  // A line over the length limit (its bytes were dropped).
  void handle_overlong_line();
  // EOF on stdin: a shutdown nobody waits for.
  void end_of_input();
  bool shutting_down() const noexcept { return shutting_down_; }
  std::size_t pending() const noexcept { return pending_; }

 private:
  using Json = json_protocol::Json;
  void dispatch(json_protocol::Request request);
  void respond(const Json& id, Json result);
  void respond_error(const Json& id, const Error& error);
  // Answers a completion or a read: its value through `encode`, or its error.
  template <class T, class Encode>
  void answer(const Json& id, const Result<T>& result, Encode encode) {
    if (result)
      respond(id, encode(result.value()));
    else
      respond_error(id, result.error());
  }
  Owner owner_for(const std::string& label);
  void begin_shutdown(std::optional<Json> id);
  void settle_one();
  void maybe_finish();
  std::shared_ptr<Send> find_send(const Json& send_id) const;

  Service& service_;
  std::size_t cap_;
  Hooks hooks_;
  std::map<std::string, Owner> owners_;                  // label -> its current owner
  std::map<std::string, std::shared_ptr<Send>> sends_;   // request id key -> live send
  // Recently settled sends stay reachable for a late cancel/output.
  std::deque<std::pair<std::string, std::shared_ptr<Send>>> settled_;
  std::size_t pending_ = 0;  // requests waiting for an asynchronous completion
  bool shutting_down_ = false;
  bool disposed_ = false;
  bool finished_ = false;
  Error dispose_error_;
  std::vector<Json> shutdown_ids_;
};

}  // namespace dshpty::repl
