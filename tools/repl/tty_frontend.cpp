#include "tty_frontend.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <editline/readline.h>

#include "text/utf8.hpp"

namespace dshpty::repl {

namespace {
// libedit's readline interface is global C state with C callbacks: one frontend at a time.
TtyFrontend* g_frontend = nullptr;
std::vector<std::string> g_candidates;
constexpr const char* kPrompt = "dshpty> ";
constexpr char kCtrlC = 0x03;
constexpr char kCtrlD = 0x04;
}  // namespace

TtyFrontend::TtyFrontend(struct ev_loop* loop, TextSession& session, tool::OutputWriter& out,
                         std::function<void(int)> finished)
    : loop_(loop), session_(session), out_(out), finished_(std::move(finished)), deferred_(loop) {
  g_frontend = this;
  have_termios_ = tcgetattr(STDIN_FILENO, &original_) == 0;

  rl_readline_name = "dshpty-repl";
  rl_instream = stdin;
  rl_outstream = stdout;
  // No libedit signal handlers: it would re-raise signals to our whole process group.
  rl_catch_signals = 0;
  rl_catch_sigwinch = 0;
  rl_getc_function = &TtyFrontend::read_key;
  rl_attempted_completion_function = &TtyFrontend::complete;
  rl_initialize();
  rl_parse_and_bind("setty -d -isig");
  // ^Z would kill(0, SIGTSTP) our process group; a REPL holding live sessions stays put.
  rl_parse_and_bind("bind ^Z ed-ignore");

  ev_io_init(&input_, &TtyFrontend::on_input, STDIN_FILENO, EV_READ);
  input_.data = this;
  ev_io_start(loop_, &input_);
}

TtyFrontend::~TtyFrontend() {
  ev_io_stop(loop_, &input_);
  if (handler_installed_) rl_callback_handler_remove();
  restore_terminal();
  g_frontend = nullptr;
}

void TtyFrontend::start(const std::string& first_line) {
  if (first_line.empty()) {
    show_prompt();
    return;
  }
  run_line(first_line);
}

void TtyFrontend::restore_terminal() {
  if (have_termios_) tcsetattr(STDIN_FILENO, TCSANOW, &original_);
}

void TtyFrontend::set_command_mode() {
  if (!have_termios_) return;
  termios raw = original_;
  raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | ISIG | IEXTEN);
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  tcsetattr(STDIN_FILENO, TCSANOW, &raw);
}

void TtyFrontend::show_prompt() {
  if (quitting_) return;
  if (input_eof_) {
    quit();
    return;
  }
  // libedit takes its modes from the terminal as it finds it: hand it the original ones.
  restore_terminal();
  at_prompt_ = true;
  handler_installed_ = true;
  rl_callback_handler_install(kPrompt, &TtyFrontend::on_line);
  feed_libedit();
}

void TtyFrontend::feed_libedit() {
  // One key (or key sequence) per call; a finished line ends the prompt.
  while (at_prompt_ && !typeahead_.empty()) {
    if (typeahead_.front() == kCtrlD && rl_end == 0) {
      // EOF on an empty line, taken here so libedit does not echo it as "^D".
      typeahead_.erase(0, 1);
      on_line(nullptr);
      return;
    }
    const std::size_t before = typeahead_.size();
    rl_callback_read_char();
    if (typeahead_.size() == before) break;  // libedit read from its own queue: next event
  }
}

void TtyFrontend::on_line(char* line) {
  TtyFrontend* self = g_frontend;
  if (!self) {
    std::free(line);
    return;
  }
  self->at_prompt_ = false;
  rl_callback_handler_remove();
  self->handler_installed_ = false;
  if (!line) {  // Ctrl-D on an empty line
    self->out_.write("\n");
    self->quit();
    return;
  }
  std::string text(line);
  std::free(line);
  if (text.find_first_not_of(" \t") != std::string::npos) add_history(text.c_str());
  self->run_line(text);
}

void TtyFrontend::run_line(const std::string& line) {
  set_command_mode();
  session_.run(line, [this] {
    // Posted, so a command that finishes inside run() never re-enters libedit from here.
    deferred_.post([this] { command_done(); });
  });
}

void TtyFrontend::command_done() {
  if (session_.quit_requested()) {
    quit();
    return;
  }
  // The prompt follows the output on the terminal, never the other way round.
  out_.when_drained([this] { show_prompt(); });
}

void TtyFrontend::quit() {
  if (quitting_) return;
  quitting_ = true;
  at_prompt_ = false;
  if (handler_installed_) {
    rl_callback_handler_remove();
    handler_installed_ = false;
  }
  set_command_mode();
  session_.shut_down([this](int code) {
    restore_terminal();
    finished_(code);
  });
}

void TtyFrontend::interrupt() {
  if (!at_prompt_) session_.interrupt();
}

void TtyFrontend::terminate() {
  session_.interrupt();
  quit();
}

void TtyFrontend::window_changed() {
  if (at_prompt_) rl_resize_terminal();
}

void TtyFrontend::on_input(struct ev_loop*, ev_io* watcher, int) {
  auto* self = static_cast<TtyFrontend*>(watcher->data);
  char buffer[4096];
  const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  if (n <= 0) {
    self->input_eof_ = true;
    ev_io_stop(self->loop_, &self->input_);
    if (self->at_prompt_) self->quit();
    return;
  }
  for (ssize_t i = 0; i < n; ++i) {
    if (buffer[i] == kCtrlC && !self->at_prompt_) {
      // Ctrl-C during a command: cancel it and drop what was typed ahead.
      self->typeahead_.clear();
      self->session_.interrupt();
      continue;
    }
    self->typeahead_ += buffer[i];
  }
  self->feed_libedit();
  // A Ctrl-C that came in the same read as the Enter that started the command.
  if (!self->at_prompt_ && self->typeahead_.find(kCtrlC) != std::string::npos) {
    self->typeahead_.clear();
    self->session_.interrupt();
  }
}

// libedit's getc: one character (a code point) from what was typed. Reached only at the
// prompt, where nothing else is running; when a key sequence is split across reads we wait
// for its rest, as a terminal sends it at once.
int TtyFrontend::read_key(FILE*) {
  TtyFrontend* self = g_frontend;
  if (!self) return -1;
  for (;;) {
    const utf8::DecodedChar decoded = utf8::decode(self->typeahead_);
    if (decoded.state == utf8::DecodedChar::State::complete) {
      self->typeahead_.erase(0, decoded.length);
      return static_cast<int>(decoded.code_point);
    }
    if (self->input_eof_) return -1;
    pollfd fd{STDIN_FILENO, POLLIN, 0};
    if (::poll(&fd, 1, -1) < 0 && errno != EINTR) return -1;
    char buffer[256];
    const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      self->input_eof_ = true;
      return -1;
    }
    self->typeahead_.append(buffer, static_cast<std::size_t>(n));
  }
}

char* TtyFrontend::next_candidate(const char*, int state) {
  static std::size_t index = 0;
  if (state == 0) index = 0;
  if (index >= g_candidates.size()) return nullptr;
  return strdup(g_candidates[index++].c_str());
}

char** TtyFrontend::complete(const char* text, int start, int) {
  rl_attempted_completion_over = 1;  // never fall back to file names
  TtyFrontend* self = g_frontend;
  if (!self) return nullptr;
  const std::string before(rl_line_buffer, static_cast<std::size_t>(start));
  g_candidates = self->session_.complete(before, text);
  if (g_candidates.empty()) return nullptr;
  return rl_completion_matches(text, &TtyFrontend::next_candidate);
}

}  // namespace dshpty::repl
