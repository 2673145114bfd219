// The text face of dshpty-repl: runs one command line at a time as engine operations for the
// REPL's own owner and prints the texts of docs/tool-protocol.md through the print hook.
// Knows nothing of the terminal, so the same face serves libedit, plain stdin and the tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine.hpp"
#include "text_command.hpp"

namespace dshpty::repl {

class TextSession {
 public:
  // The owner label of the person at the REPL.
  static constexpr std::string_view kOwner = "repl";

  TextSession(engine::Engine& engine, std::function<void(std::string)> print);
  TextSession(const TextSession&) = delete;
  TextSession& operator=(const TextSession&) = delete;

  // Runs one line; `done` runs once when its output is printed (inside this call for the
  // commands that need no loop turn). Precondition: !busy().
  void run(std::string_view line, std::function<void()> done);
  bool busy() const noexcept { return busy_; }
  // `quit` was run: the caller ends the REPL with shut_down().
  bool quit_requested() const noexcept { return quit_requested_; }
  // Ctrl-C: cancels the live send (SIGINT to the session's foreground group; a job still
  // waiting for its condition is such a send), aborts a pending open, or ends an
  // `output --wait` at once (the job runs on). False when nothing was interruptible.
  bool interrupt();
  // Disposes the service (every session's tree gone); done(exit code) once it completed.
  void shut_down(std::function<void(int exit_code)> done);

  std::vector<std::string> complete(std::string_view line_before_word, std::string_view word) const;

 private:
  // A background send as this face numbers it (`send --background` prints the number).
  struct Job {
    std::string key;         // the engine's send key
    std::string session_id;
    std::chrono::steady_clock::time_point started;
    std::uint64_t offset = 0;  // the next byte `output` shows: each job has its own reader
    std::optional<Result<SendResult>> result{};  // once it ended
    bool result_shown = false;  // its end was printed whole (it ended before its condition held)
  };
  // Ended jobs kept for `output` and `stop` (the oldest forgotten first), as MCP keeps them.
  static constexpr std::size_t kJobsKept = 256;

  void finish();
  std::string target_id(const std::optional<std::string>& target) const;
  std::size_t cap() const noexcept { return engine_.settings().max_result_bytes; }
  void run_send(TextCommand& command);
  // Jobs (text_jobs.cpp).
  void start_job(engine::SessionSend send);
  void run_output(const TextCommand& command);
  void run_stop(const TextCommand& command);
  void print_output(std::uint64_t number, const engine::SendOutputAnswer& answer);
  std::string job_status(const Job& job) const;
  void forget_old_jobs();
  // SEND_ACTIVE naming the job that holds the session, when one does.
  std::optional<Error> job_active(const std::string& session_id);
  Job* find_job(std::uint64_t number);

  // What the command being run waits for, so Ctrl-C knows what to interrupt.
  enum class Pending { none, send, open, job_condition, output_wait };

  engine::Engine& engine_;
  std::function<void(std::string)> print_;
  std::optional<std::string> current_;  // `use`
  bool busy_ = false;
  bool quit_requested_ = false;
  Pending pending_ = Pending::none;
  std::string pending_key_;  // the send key behind job_condition and output_wait
  std::function<void()> done_;
  std::map<std::uint64_t, Job> jobs_;
  std::uint64_t jobs_started_ = 0;
};

}  // namespace dshpty::repl
