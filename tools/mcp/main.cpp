// dshpty-mcp: the sessions of a dshpty::Service (shell backend) as MCP tools over stdio, in
// one libev loop, through the tools' engine (see --help and docs/mcp.md).
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <ev.h>

#include "dshpty/service.hpp"
#include "dshpty/shell.hpp"
#include "engine.hpp"
#include "host_setup.hpp"
#include "host_watch.hpp"
#include "web_face.hpp"
#include "mcp_options.hpp"
#include "mcp_server.hpp"
#include "output_writer.hpp"
#include "stdio_lines.hpp"

using namespace dshpty;

namespace {

// The server over stdio until EOF and the service's disposal; returns the exit status.
// `output_sink` is where the shell backend's raw-output hook finds the server.
int serve(struct ev_loop* loop, engine::Engine& engine, mcp::McpServer*& output_sink) {
  tool::OutputWriter out(loop, STDOUT_FILENO);
  int exit_code = 0;
  tool::StdioLines* input_ptr = nullptr;
  mcp::McpServer server(loop, engine,
                        {[&out](std::string line) {
                           line += '\n';
                           out.write(line);
                         },
                         [&](int code) {
                           exit_code = code;
                           if (input_ptr) input_ptr->stop();
                           out.when_drained([loop] { ev_break(loop, EVBREAK_ALL); });
                         }});
  tool::StdioLines input(loop, STDIN_FILENO, out,
                         {.line = [&server](std::string_view line) { server.handle_line(line); },
                          .overlong = [&server] { server.handle_overlong_line(); },
                          .ended = [&server] { server.end_of_input(); }});
  input_ptr = &input;
  output_sink = &server;
  ev_run(loop, 0);
  output_sink = nullptr;
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  auto parsed = mcp::parse_options(args);
  if (!parsed) {
    std::fprintf(stderr, "dshpty-mcp: %s\nTry 'dshpty-mcp --help'.\n", parsed.error()->message.c_str());
    return 2;
  }
  const mcp::Options& options = parsed.value();
  if (options.help) {
    std::fputs(mcp::usage_text().c_str(), stdout);
    return 0;
  }
  if (options.version) {
    std::fputs(mcp::version_text().c_str(), stdout);
    return 0;
  }

  tool::make_sigpipe_harmless();
  tool::raise_fd_limit();
  // Our own loop, not libev's default one: that one would reap every child with
  // waitpid(-1), the sessions' helpers included.
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  if (!loop) {
    std::fputs("dshpty-mcp: cannot create an event loop\n", stderr);
    return 1;
  }
  int exit_code = 0;
  {
    tool::FlagsGuard in_flags(STDIN_FILENO), out_flags(STDOUT_FILENO);
    in_flags.set_nonblocking();
    out_flags.set_nonblocking();

    mcp::McpServer* output_sink = nullptr;
    ShellConfig config = tool::shell_config(options);
    // Progress notifications learn of new output here, without polling.
    Service service(loop);
    // People watching (docs/watch.md) learn of new output through the same tap.
    watch::HostWatch watch(loop, service);
    config.on_raw_output = [&output_sink, &watch](std::string_view session_id, std::string_view) {
      if (output_sink) output_sink->output_arrived(session_id);
      watch.output_arrived(session_id);
    };
    // The remotes get the hook too: their sessions run the same terminal layer, which calls it
    // (remote.hpp's list of unused fields names it, but ShellSession reads it either way).
    std::vector<std::shared_ptr<Backend>> lingering;
    auto registration = tool::register_backends(service, loop, std::move(config), options, &lingering);
    if (!registration) {
      std::fprintf(stderr, "dshpty-mcp: %s\n", describe(registration.error()).c_str());
      exit_code = 1;
    } else {
      engine::Settings settings = tool::engine_settings(options, std::move(lingering));
      settings.observers = [&watch](std::string_view id) { return watch.observers(id); };
      engine::Engine engine(service, std::move(settings));
      // The watch socket is on by default: a state directory it cannot use is said, not
      // fatal (the sessions work; only `watch` cannot find this host). --web is asked for.
      if (Status watching = watch.start(options, tool::find_supervisor()); !watching)
        std::fprintf(stderr, "dshpty-mcp: dshpty-repl watch cannot reach this host: %s\n", describe(watching.error()).c_str());
      auto page = web::start_web_page(loop, watch.hub(), options, "dshpty-mcp");
      if (!page) {
        std::fprintf(stderr, "dshpty-mcp: %s\n", describe(page.error()).c_str());
        exit_code = 1;
      } else {
        exit_code = serve(loop, engine, output_sink);
      }
    }
  }
  ev_loop_destroy(loop);
  return exit_code;
}
