// dshpty-fuzz: seeded random lifecycles against the service, checked against the model.
//
//   dshpty-fuzz [--iterations N] [--seed S] [--minutes M]    sequences S, S+1, ...
//   dshpty-fuzz --seed S --replay [--verbose]                 one sequence, logged, shrunk
//   dshpty-fuzz --trace FILE [--verbose]                      a saved (printed) trace
//
// A failure prints the seed, the violation, and the shrunk trace as C++ initializer lines
// to paste into tests/fuzz/regressions_test.cpp. Exit status: 0 clean, 1 a violation, 2 usage.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "driver.hpp"
#include "generate.hpp"
#include "shrink.hpp"

using namespace dshpty::fuzz;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: dshpty-fuzz [--iterations N] [--seed S] [--minutes M] [--replay] [--trace FILE]\n"
               "                   [--verbose] [--no-shrink]\n");
  return 2;
}

void report(const Trace& trace, const Outcome& outcome, bool shrink_it, const char* origin) {
  std::printf("VIOLATION (%s) at op %zu: [%s] %s\n", origin, outcome.op_index, outcome.category.c_str(),
              outcome.message.c_str());
  Trace shown = trace;
  if (shrink_it) {
    shown = shrink(trace, [&](const Trace& candidate) {
      Outcome o = run_trace(candidate);
      return !o.ok && o.category == outcome.category;
    });
    Outcome again = run_trace(shown);
    std::printf("shrunk from %zu to %zu ops; it fails with: [%s] %s (at op %zu)\n", trace.size(), shown.size(),
                again.category.c_str(), again.message.c_str(), again.op_index);
  }
  std::printf("trace (paste into tests/fuzz/regressions_test.cpp, or save and run with --trace FILE):\n%s",
              to_cpp(shown).c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  long long iterations = 1000;
  std::uint64_t seed = 1;
  double minutes = 0;
  bool replay = false, verbose = false, shrink_it = true;
  std::string trace_file;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    if (arg == "--iterations") {
      const char* v = value();
      if (!v) return usage();
      iterations = std::atoll(v);
    } else if (arg == "--seed") {
      const char* v = value();
      if (!v) return usage();
      seed = std::strtoull(v, nullptr, 10);
    } else if (arg == "--minutes") {
      const char* v = value();
      if (!v) return usage();
      minutes = std::atof(v);
    } else if (arg == "--trace") {
      const char* v = value();
      if (!v) return usage();
      trace_file = v;
    } else if (arg == "--replay") {
      replay = true;
    } else if (arg == "--verbose") {
      verbose = true;
    } else if (arg == "--no-shrink") {
      shrink_it = false;
    } else {
      return usage();
    }
  }

  if (!trace_file.empty()) {
    std::ifstream in(trace_file);
    std::stringstream text;
    text << in.rdbuf();
    auto trace = parse_trace(text.str());
    if (!in || !trace) {
      std::fprintf(stderr, "dshpty-fuzz: cannot read a trace from %s\n", trace_file.c_str());
      return 2;
    }
    Outcome outcome = run_trace(*trace, RunOptions{verbose});
    if (outcome.ok) {
      std::printf("trace of %zu ops: no violation\n", trace->size());
      return 0;
    }
    report(*trace, outcome, shrink_it, trace_file.c_str());
    return 1;
  }

  if (replay) {
    Trace trace = generate(seed);
    std::printf("seed %llu: %zu ops\n%s", static_cast<unsigned long long>(seed), trace.size(), to_cpp(trace).c_str());
    std::fflush(stdout);
    Outcome outcome = run_trace(trace, RunOptions{verbose});
    if (outcome.ok) {
      std::printf("seed %llu: no violation\n", static_cast<unsigned long long>(seed));
      return 0;
    }
    report(trace, outcome, shrink_it, ("seed " + std::to_string(seed)).c_str());
    return 1;
  }

  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                    std::chrono::duration<double>(minutes * 60.0));
  long long done = 0;
  std::size_t ops = 0;
  std::map<std::string, long> counts;
  for (;; ++done) {
    if (minutes > 0 ? std::chrono::steady_clock::now() >= deadline : done >= iterations) break;
    const std::uint64_t s = seed + static_cast<std::uint64_t>(done);
    Trace trace = generate(s);
    ops += trace.size();
    Outcome outcome = run_trace(trace);
    for (const auto& [what, n] : outcome.counts) counts[what] += n;
    if (!outcome.ok) {
      std::printf("after %lld clean sequences:\n", done);
      report(trace, outcome, shrink_it, ("seed " + std::to_string(s)).c_str());
      std::printf("replay: dshpty-fuzz --seed %llu --replay --verbose\n", static_cast<unsigned long long>(s));
      return 1;
    }
    if (minutes > 0 && done % 20000 == 0 && done > 0) {
      std::printf("... %lld sequences\n", done);
      std::fflush(stdout);
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (verbose)
    for (const auto& [what, n] : counts) std::printf("  %8ld  %s\n", n, what.c_str());
  std::printf("dshpty-fuzz: %lld sequences (seeds %llu..%llu), %zu ops, 0 violations, %.1f s\n", done,
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed + done - 1), ops, secs);
  return 0;
}
