// libFuzzer entry point (built with clang and -Dfuzz=enabled): bytes become the same
// operations the seeded driver runs; a violation prints the trace and aborts, so libFuzzer
// keeps the input as a crash. Replay a crash file with dshpty-libfuzzer FILE.
#include <cstdio>
#include <cstdlib>

#include "driver.hpp"
#include "generate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dshpty::fuzz;
  Trace trace = decode_bytes(data, size);
  Outcome outcome = run_trace(trace);
  if (!outcome.ok) {
    std::fprintf(stderr, "VIOLATION at op %zu: [%s] %s\ntrace:\n%s", outcome.op_index, outcome.category.c_str(),
                 outcome.message.c_str(), to_cpp(trace).c_str());
    std::abort();
  }
  return 0;
}
