// `dshpty-supervisor --stdio`, the far side of a remote session (stdio_bridge.cpp).
#pragma once

// Runs the bridge on stdin/stdout until the session's tree is gone; the exit status.
// `state_dir`: where this machine's lingering sessions wait (nullptr: the default).
// `hold_ms`: the longest a send's answer waits for its prompt before going out
// (supervisor/prompt_hold.hpp; 0: never held).
// `record`: a local lingering session's recording, handed over by the host that spawned
// it (record/detached_writer.hpp): fd -1 when none.
struct RecordHandoff {
  int fd = -1;
  double start = 0;
  unsigned long long max_bytes = 0;
};
int stdio_bridge_main(const char* state_dir, double hold_ms, RecordHandoff record = {});
