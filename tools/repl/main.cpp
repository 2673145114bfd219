// dshpty-repl: one program driving a real dshpty::Service with the shell backend (and any
// --remote ones) in one libev loop, through one engine; text for people, --json for
// programs (see --help and docs/tool-protocol.md).
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <ev.h>

#include "dshpty/service.hpp"
#include "dshpty/shell.hpp"
#include "engine.hpp"
#include "field_dump.hpp"
#include "modes.hpp"
#include "host_setup.hpp"
#include "host_watch.hpp"
#include "web_face.hpp"
#include "watch_client.hpp"
#include "options.hpp"
#include "output_writer.hpp"

using namespace dshpty;
using namespace dshpty::repl;

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  // `dshpty-repl watch ...`: a person's read-only view of another host's session.
  if (!args.empty() && args.front() == "watch") return watch::run_watch({args.begin() + 1, args.end()});
  auto parsed = parse_options(args);
  if (!parsed) {
    std::fprintf(stderr, "dshpty-repl: %s\nTry 'dshpty-repl --help'.\n", parsed.error()->message.c_str());
    return 2;
  }
  const Options& options = parsed.value();
  if (options.help) {
    std::fputs(usage_text().c_str(), stdout);
    return 0;
  }
  if (options.print_fields) {
    std::fputs(field_table_json().c_str(), stdout);
    return 0;
  }
  if (options.version) {
    std::fputs(version_text().c_str(), stdout);
    return 0;
  }

  tool::make_sigpipe_harmless();
  tool::raise_fd_limit();

  // Our own loop, not libev's default one: that one would reap every child with
  // waitpid(-1), the sessions' helpers included.
  struct ev_loop* loop = ev_loop_new(EVFLAG_AUTO);
  if (!loop) {
    std::fputs("dshpty-repl: cannot create an event loop\n", stderr);
    return 1;
  }
  int exit_code = 0;
  {
    tool::FlagsGuard in_flags(STDIN_FILENO), out_flags(STDOUT_FILENO);
    // A terminal's stdin and stdout are one open file (libedit writes it with stdio), so
    // only pipes and files are made non-blocking; a terminal is read only when ready.
    if (options.json || !isatty(STDIN_FILENO)) in_flags.set_nonblocking();
    if (options.json) out_flags.set_nonblocking();

    Service service(loop);
    // People watching (docs/watch.md): the sessions' output tells the hub to redraw.
    watch::HostWatch watch(loop, service);
    ShellConfig config = tool::shell_config(options);
    config.on_raw_output = [&watch](std::string_view session_id, std::string_view) { watch.output_arrived(session_id); };
    std::vector<std::shared_ptr<Backend>> lingering;
    auto registration = tool::register_backends(service, loop, std::move(config), options, &lingering);
    if (!registration) {
      std::fprintf(stderr, "dshpty-repl: %s\n", describe(registration.error()).c_str());
      exit_code = 1;
    } else {
      engine::Settings settings = tool::engine_settings(options, std::move(lingering));
      settings.observers = [&watch](std::string_view id) { return watch.observers(id); };
      engine::Engine engine(service, std::move(settings));
      // The watch socket is on by default: a state directory it cannot use is said, not
      // fatal (the sessions work; only `watch` cannot find this host). --web is asked for.
      if (Status watching = watch.start(options, tool::find_supervisor()); !watching)
        std::fprintf(stderr, "dshpty-repl: dshpty-repl watch cannot reach this host: %s\n", describe(watching.error()).c_str());
      auto page = web::start_web_page(loop, watch.hub(), options, "dshpty-repl");
      if (!page) {
        std::fprintf(stderr, "dshpty-repl: %s\n", describe(page.error()).c_str());
        exit_code = 1;
      } else {
        tool::OutputWriter out(loop, STDOUT_FILENO);
        exit_code = options.json ? run_json_mode(loop, engine, out) : run_text_mode(loop, engine, out, options);
      }
    }
  }
  ev_loop_destroy(loop);
  return exit_code;
}
