// The two faces of dshpty-repl over one engine, each running the loop until it is done.
// Both return the process exit status.
#pragma once

#include <ev.h>

#include "engine.hpp"
#include "options.hpp"
#include "output_writer.hpp"

namespace dshpty::repl {

// JSON Lines on stdin/stdout until shutdown or EOF.
int run_json_mode(struct ev_loop* loop, engine::Engine& engine, tool::OutputWriter& out);
// Commands for a person: libedit on a terminal, plain lines otherwise; until quit or EOF.
int run_text_mode(struct ev_loop* loop, engine::Engine& engine, tool::OutputWriter& out, const Options& options);

}  // namespace dshpty::repl
