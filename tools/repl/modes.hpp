// The two faces of dshpty-repl, each running the loop until it is done. Both return the
// process exit status.
#pragma once

#include <ev.h>

#include "dshpty/service.hpp"
#include "options.hpp"
#include "output_writer.hpp"

namespace dshpty::repl {

// JSON Lines on stdin/stdout until shutdown or EOF.
int run_json_mode(struct ev_loop* loop, Service& service, OutputWriter& out, const Options& options);
// Commands for a person: libedit on a terminal, plain lines otherwise; until quit or EOF.
int run_text_mode(struct ev_loop* loop, Service& service, OutputWriter& out, const Options& options);

}  // namespace dshpty::repl
