// --json: request lines from stdin (tool::StdioLines: non-blocking, overlapping, paused while
// stdout lags) into the JSON server; its responses out through the writer.
#include <unistd.h>

#include "json_server.hpp"
#include "modes.hpp"
#include "stdio_lines.hpp"

namespace dshpty::repl {

namespace {

struct JsonMode {
  struct ev_loop* loop;
  tool::OutputWriter& out;
  JsonServer server;
  tool::StdioLines input;
  int exit_code = 0;

  JsonMode(struct ev_loop* l, engine::Engine& engine, tool::OutputWriter& o)
      : loop(l),
        out(o),
        server(engine,
               {[this](std::string line) {
                  line += '\n';
                  out.write(line);
                },
                [this](int code) {
                  exit_code = code;
                  input.stop();
                  out.when_drained([this] { ev_break(loop, EVBREAK_ALL); });
                }}),
        input(loop, STDIN_FILENO, out,
              {.line =
                   [this](std::string_view line) {
                     server.handle_line(line);
                     if (server.shutting_down()) input.stop();
                   },
               .overlong = [this] { server.handle_overlong_line(); },
               .ended = [this] { server.end_of_input(); }}) {}
};

}  // namespace

int run_json_mode(struct ev_loop* loop, engine::Engine& engine, tool::OutputWriter& out) {
  JsonMode mode(loop, engine, out);
  ev_run(loop, 0);
  return mode.exit_code;
}

}  // namespace dshpty::repl
