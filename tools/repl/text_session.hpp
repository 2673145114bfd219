// Text mode's engine: runs one command line at a time against the Service for the REPL's
// own owner and prints the texts of repl.md through the print hook. Knows nothing of the
// terminal, so the same engine serves libedit, plain stdin and the tests.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/abort.hpp"
#include "dshpty/service.hpp"

namespace dshpty::repl {

class TextSession {
 public:
  TextSession(Service& service, std::size_t max_result_bytes, std::function<void(std::string)> print);
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

  const Owner& owner() const noexcept { return owner_; }
  std::vector<std::string> complete(std::string_view line_before_word, std::string_view word) const;

 private:
  void finish();
  std::string target_id(const std::optional<std::string>& target) const;

  Service& service_;
  std::size_t cap_;
  std::function<void(std::string)> print_;
  Owner owner_;
  std::optional<std::string> current_;  // `use`
  bool busy_ = false;
  bool quit_requested_ = false;
  std::function<void()> done_;
  std::shared_ptr<Send> live_send_;
  std::unique_ptr<AbortController> pending_open_;
};

}  // namespace dshpty::repl
