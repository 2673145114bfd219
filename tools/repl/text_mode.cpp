// Text mode: the same TextSession behind two front ends, libedit on a terminal and plain
// lines (no prompt, no editing) when stdin is a pipe or a file.
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <memory>

#include "line_splitter.hpp"
#include "modes.hpp"
#include "render/text_format.hpp"
#include "text_session.hpp"
#include "tty_frontend.hpp"

namespace dshpty::repl {

namespace {

constexpr std::size_t kMaxCommandLineBytes = 1u << 20;

// Commands one per line, run one at a time; a line read during a command waits its turn.
class PlainFrontend {
 public:
  PlainFrontend(struct ev_loop* loop, TextSession& session, tool::OutputWriter& out, std::function<void(int)> finished)
      : loop_(loop),
        session_(session),
        out_(out),
        finished_(std::move(finished)),
        deferred_(loop),
        splitter_(kMaxCommandLineBytes, {[this](std::string_view line) { lines_.emplace_back(line); },
                                         [this] { lines_.emplace_back(kOverlong); }}) {
    ev_io_init(&input_, &PlainFrontend::on_input, STDIN_FILENO, EV_READ);
    input_.data = this;
    ev_io_start(loop_, &input_);
  }
  ~PlainFrontend() { ev_io_stop(loop_, &input_); }

  void start(const std::string& first_line) {
    if (!first_line.empty()) lines_.push_front(first_line);
    next();
  }
  void interrupt() { session_.interrupt(); }
  void terminate() {
    session_.interrupt();
    quit();
  }

 private:
  static constexpr const char* kOverlong = "\x01overlong";

  static void on_input(struct ev_loop*, ev_io* watcher, int) {
    auto* self = static_cast<PlainFrontend*>(watcher->data);
    char buffer[64 * 1024];
    const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) {
      self->splitter_.finish();
      self->eof_ = true;
      ev_io_stop(self->loop_, &self->input_);
    } else {
      self->splitter_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    }
    // Reading pauses while commands queue up, so a long script is not read all at once.
    if (!self->lines_.empty()) ev_io_stop(self->loop_, &self->input_);
    self->next();
  }

  void next() {
    if (quitting_ || session_.busy()) return;
    if (lines_.empty()) {
      if (eof_) {
        quit();
      } else {
        ev_io_start(loop_, &input_);
      }
      return;
    }
    std::string line = std::move(lines_.front());
    lines_.pop_front();
    if (line == kOverlong) {
      out_.write(render::format_error(make_error(Code::INVALID_ARGUMENT, "command line is longer than " +
                                                                     std::to_string(kMaxCommandLineBytes) + " bytes")));
      deferred_.post([this] { next(); });
      return;
    }
    session_.run(line, [this] { deferred_.post([this] { command_done(); }); });
  }

  void command_done() {
    if (session_.quit_requested()) {
      quit();
      return;
    }
    next();
  }

  void quit() {
    if (quitting_) return;
    quitting_ = true;
    ev_io_stop(loop_, &input_);
    session_.shut_down([this](int code) { finished_(code); });
  }

  struct ev_loop* loop_;
  TextSession& session_;
  tool::OutputWriter& out_;
  std::function<void(int)> finished_;
  Deferred deferred_;
  tool::LineSplitter splitter_;
  ev_io input_;
  std::deque<std::string> lines_;
  bool eof_ = false;
  bool quitting_ = false;
};

template <class Frontend>
struct TextMode {
  struct ev_loop* loop;
  tool::OutputWriter& out;
  int exit_code = 0;
  TextSession session;
  Frontend frontend;
  ev_signal signals[4];

  TextMode(struct ev_loop* l, engine::Engine& engine, tool::OutputWriter& o)
      : loop(l),
        out(o),
        session(engine, [this](std::string text) { out.write(text); }),
        frontend(l, session, o, [this](int code) {
          exit_code = code;
          out.when_drained([this] { ev_break(loop, EVBREAK_ALL); });
        }) {
    const int numbers[4] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH};
    for (int i = 0; i < 4; ++i) {
      ev_signal_init(&signals[i], &TextMode::on_signal, numbers[i]);
      signals[i].data = this;
      ev_signal_start(loop, &signals[i]);
    }
  }
  ~TextMode() {
    for (auto& s : signals) ev_signal_stop(loop, &s);
  }

  static void on_signal(struct ev_loop*, ev_signal* watcher, int) {
    auto* self = static_cast<TextMode*>(watcher->data);
    switch (watcher->signum) {
      case SIGINT: self->frontend.interrupt(); break;
      case SIGWINCH:
        if constexpr (requires(Frontend& f) { f.window_changed(); }) self->frontend.window_changed();
        break;
      default: self->frontend.terminate(); break;
    }
  }
};

template <class Frontend>
int run_with(struct ev_loop* loop, engine::Engine& engine, tool::OutputWriter& out, const Options& options) {
  TextMode<Frontend> mode(loop, engine, out);
  mode.frontend.start(options.open_main ? "open shell main" : "");
  ev_run(loop, 0);
  return mode.exit_code;
}

}  // namespace

int run_text_mode(struct ev_loop* loop, engine::Engine& engine, tool::OutputWriter& out, const Options& options) {
  if (isatty(STDIN_FILENO)) return run_with<TtyFrontend>(loop, engine, out, options);
  return run_with<PlainFrontend>(loop, engine, out, options);
}

}  // namespace dshpty::repl
