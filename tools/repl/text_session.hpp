// The text face of dshpty-repl: runs one command line at a time as engine operations for the
// REPL's own owner and prints the texts of docs/tool-protocol.md through the print hook.
// Knows nothing of the terminal, so the same face serves libedit, plain stdin and the tests.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine.hpp"

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
  // Ctrl-C: cancels the live send (SIGINT to the session's foreground group) or aborts a
  // pending open. False when nothing was interruptible.
  bool interrupt();
  // Disposes the service (every session's tree gone); done(exit code) once it completed.
  void shut_down(std::function<void(int exit_code)> done);

  std::vector<std::string> complete(std::string_view line_before_word, std::string_view word) const;

 private:
  void finish();
  std::string target_id(const std::optional<std::string>& target) const;
  std::size_t cap() const noexcept { return engine_.settings().max_result_bytes; }

  engine::Engine& engine_;
  std::function<void(std::string)> print_;
  std::optional<std::string> current_;  // `use`
  bool busy_ = false;
  bool quit_requested_ = false;
  bool send_live_ = false;
  bool open_pending_ = false;
  std::function<void()> done_;
};

}  // namespace dshpty::repl
