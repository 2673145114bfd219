// Runs one trace against a real Service on a fresh libev loop, with ScriptedBackends behind
// spies, checking the service against the model after every step: after each op, each loop
// turn, each completion and each backend callback. Then it disposes the service, drains the
// loop (opening every gate) and checks that everything is empty and every process gone.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "trace.hpp"

namespace dshpty::fuzz {

struct RunOptions {
  bool verbose = false;  // log every op and backend event to stderr
};

struct Outcome {
  bool ok = true;
  std::string category;     // of the first violation, e.g. "activity", "outcome"
  std::string message;
  std::size_t op_index = 0; // the op during which it was found; trace.size(): the epilogue
  // How often each interesting event happened (coverage at a glance), e.g. "close failed".
  std::map<std::string, long> counts;
};

Outcome run_trace(const Trace& trace, const RunOptions& options = {});

}  // namespace dshpty::fuzz
