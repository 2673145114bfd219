// Shrunk traces the fuzzer once failed on, replayed against the reference model: regression
// cases of the `contract` suite (test contract-fuzz-regressions; the `fuzz` suite runs them
// too). They live beside the model and driver that give them meaning.
// To add one: paste the "trace" lines dshpty-fuzz printed into a new TEST_CASE below, with
// a comment saying what the service got wrong.
#include <doctest/doctest.h>

#include "driver.hpp"

using namespace dshpty::fuzz;

namespace {

void check_clean(const Trace& trace) {
  Outcome outcome = run_trace(trace);
  INFO("op " << outcome.op_index << ": [" << outcome.category << "] " << outcome.message);
  CHECK(outcome.ok);
}

}  // namespace

TEST_CASE("trace: a quiet sequence (spawn, send, kill, dispose) runs clean") {
  check_clean({
      {OpKind::mint_owner, 0, 0, 0, 0, 0x00000000, false},
      {OpKind::register_backend, 0, 0, 0, 0, 0x00000000, false},
      {OpKind::spawn, 2, 0, 4, 0, 0x00000000, false},
      {OpKind::turn, 0, 0, 0, 0, 0x00000000, false},
      {OpKind::start_send, 2, 0, 0, 0, 0x00000000, false},
      {OpKind::turn, 0, 1, 0, 0, 0x00000000, false},
      {OpKind::kill, 2, 0, 0, 0, 0x00000000, false},
      {OpKind::turn, 0, 1, 0, 0, 0x00000000, false},
  });
}

// Found by the fuzzer: an owner disposal aborts a setup whose backend ignores the abort;
// dispose() begins; the backend then returns a session. The contract's order says
// SERVICE_DISPOSING (the epilogue's dispose and gate opening do the rest).
TEST_CASE("regression: a spawn published into a service disposal after an owner disposal") {
  check_clean({
      {OpKind::mint_owner, 0, 0, 0, 0, 0x00000000, false},
      {OpKind::mint_owner, 0, 0, 0, 0, 0x00000000, false},
      {OpKind::register_backend, 0, 0, 0, 0, 0x00000000, false},
      {OpKind::spawn, 7, 0, 0, 0, 0x3b83b3c7, false},
      {OpKind::dispose_owner, 7, 0, 0, 0, 0x00000000, false},
  });
}

// Found by the fuzzer: a signal still in flight when the epilogue's dispose() closes its session
// must still complete exactly once (the backend never will: its session is destroyed).
TEST_CASE("regression: a signal in flight when its session closes") {
  check_clean({
      {OpKind::mint_owner, 0, 0, 0, 0, 0x00000000, false},
      {OpKind::mint_owner, 0, 0, 0, 0, 0x00000000, false},
      {OpKind::register_backend, 0, 0, 0, 0, 0x00000000, false},
      {OpKind::spawn, 2, 0, 0, 0, 0x00000000, false},
      {OpKind::turn, 0, 0, 0, 0, 0x00000000, false},
      {OpKind::signal, 254, 0, 0, 0, 0x00000010, false},  // completes after 2 turns
      {OpKind::kill, 254, 0, 0, 0, 0x00000000, false},
      {OpKind::turn, 0, 3, 0, 0, 0x00000000, false},
  });
}

TEST_CASE("trace: resizes and screen reads in every state run clean") {
  check_clean({
      {OpKind::mint_owner, 0, 0, 0, 0, 0x00000000, false},
      {OpKind::register_backend, 0, 0, 0, 0, 0x00000000, false},
      {OpKind::spawn, 2, 0, 0, 0, 0x00000000, false},
      {OpKind::resize, 254, 0, 30, 90, 0x00000000, false},   // while in setup: NO_SESSION
      {OpKind::turn, 0, 0, 0, 0, 0x00000000, false},
      {OpKind::resize, 254, 0, 30, 90, 0x00000000, false},   // 30x90
      {OpKind::screen, 254, 0, 0, 0, 0x00000000, false},     // shows 30x90
      {OpKind::resize, 254, 0, 0, 90, 0x00000000, false},    // 0 rows: INVALID_ARGUMENT
      {OpKind::resize, 254, 0, 254, 7, 0x00000000, false},   // 4097 rows: INVALID_ARGUMENT
      {OpKind::resize, 254, 0, 40, 253, 0x00000006, false},  // 40x4096, the backend fails
      {OpKind::screen, 254, 0, 0, 0, 0x00000007, false},     // the backend fails
      {OpKind::screen, 254, 0, 0, 0, 0x00000000, false},     // still 30x90
      {OpKind::resize, 0, 0, 30, 90, 0x00000000, false},     // no owner
      {OpKind::screen, 1, 0, 0, 0, 0x00000000, false},       // a foreign service's owner
      {OpKind::resize, 254, 255, 30, 90, 0x00000000, false}, // an unknown id
      {OpKind::kill, 254, 0, 0, 0, 0x000000a6, false},       // close fails once gate 0 opens
      {OpKind::resize, 254, 0, 30, 90, 0x00000000, false},   // closing: SESSION_CLOSING
      {OpKind::screen, 254, 0, 0, 0, 0x00000000, false},     // closing: shown, as read
      {OpKind::release_gate, 0, 0, 0, 0, 0x00000000, false},
      {OpKind::turn, 0, 3, 0, 0, 0x00000000, false},
      {OpKind::resize, 254, 0, 30, 90, 0x00000000, false},   // cleanup_failed: SESSION_CLOSING
      {OpKind::screen, 254, 0, 0, 0, 0x00000000, false},
  });
}

TEST_CASE("trace: round-trips through its printed form") {
  Trace trace = {
      {OpKind::spawn, 2, 1, 5, 2, 0x0004c0de, true},
      {OpKind::release_gate, 1, 1, 0, 0, 0x00000000, false},
      {OpKind::resize, 254, 3, 0, 255, 0x00000006, false},
      {OpKind::screen, 2, 128, 0, 0, 0x00000007, false},
  };
  auto parsed = parse_trace(to_cpp(trace));
  REQUIRE(parsed);
  CHECK(*parsed == trace);
}
