// --json: reads request lines with a non-blocking ev_io on stdin while the service works, so
// requests overlap; a slow reader of stdout pauses our reading instead of growing memory.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "json_server.hpp"
#include "line_splitter.hpp"
#include "modes.hpp"

namespace dshpty::repl {

namespace {

// Output beyond this waits for the reader before we take more requests.
constexpr std::size_t kOutputBackpressureBytes = 8u << 20;

struct JsonMode {
  struct ev_loop* loop;
  OutputWriter& out;
  JsonServer server;
  LineSplitter splitter;
  ev_io input;
  ev_signal signals[3];
  int exit_code = 0;
  bool input_done = false;

  JsonMode(struct ev_loop* l, engine::Engine& engine, OutputWriter& o)
      : loop(l),
        out(o),
        server(engine,
               {[this](std::string line) {
                  line += '\n';
                  out.write(line);
                },
                [this](int code) {
                  exit_code = code;
                  stop_input();
                  out.when_drained([this] { ev_break(loop, EVBREAK_ALL); });
                }}),
        splitter(kMaxRequestLineBytes, {[this](std::string_view line) { server.handle_line(line); },
                                        [this] { server.handle_overlong_line(); }}) {
    ev_io_init(&input, &JsonMode::on_input, STDIN_FILENO, EV_READ);
    input.data = this;
    const int numbers[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int i = 0; i < 3; ++i) {
      ev_signal_init(&signals[i], &JsonMode::on_signal, numbers[i]);
      signals[i].data = this;
      ev_signal_start(loop, &signals[i]);
    }
    ev_io_start(loop, &input);
  }

  ~JsonMode() {
    ev_io_stop(loop, &input);
    for (auto& s : signals) ev_signal_stop(loop, &s);
  }

  void stop_input() {
    input_done = true;
    ev_io_stop(loop, &input);
  }

  void end_of_input() {
    if (input_done) return;
    splitter.finish();
    stop_input();
    server.end_of_input();
  }

  static void on_input(struct ev_loop*, ev_io* watcher, int) {
    auto* self = static_cast<JsonMode*>(watcher->data);
    char buffer[64 * 1024];
    const ssize_t n = ::read(STDIN_FILENO, buffer, sizeof buffer);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (n <= 0) {
      self->end_of_input();
      return;
    }
    self->splitter.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    if (self->server.shutting_down()) {
      self->stop_input();
      return;
    }
    if (self->out.pending() > kOutputBackpressureBytes) {
      ev_io_stop(self->loop, &self->input);
      self->out.when_drained([self] {
        if (!self->input_done) ev_io_start(self->loop, &self->input);
      });
    }
  }

  // SIGINT, SIGTERM, SIGHUP: shut down as at EOF, so every session's tree is gone.
  static void on_signal(struct ev_loop*, ev_signal* watcher, int) {
    static_cast<JsonMode*>(watcher->data)->end_of_input();
  }
};

}  // namespace

int run_json_mode(struct ev_loop* loop, engine::Engine& engine, OutputWriter& out) {
  JsonMode mode(loop, engine, out);
  ev_run(loop, 0);
  return mode.exit_code;
}

}  // namespace dshpty::repl
