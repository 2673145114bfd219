// A fuzz sequence as data: a list of operations, each a kind plus small numeric fields, so a
// shortened list (what the shrinker makes) replays deterministically and prints as a C++
// initializer that tests/fuzz/regressions_test.cpp can hold.
//
// Fields by kind (references are taken modulo what exists at the time, so any value is valid):
//   register_backend   a: type slot (0 "alpha", 1 "beta", 2 "" = invalid)
//                      b: 0 a new backend instance, n>0 reuse instance n-1 of that type
//   unregister_backend a: registration handle
//   mint_owner         -
//   dispose_owner      a: owner; f: faults of the closes it starts (faults.hpp)
//   spawn              a: owner; b: type slot (0 alpha, 1 beta, 2 "gamma", never registered)
//                      c: name (0-2 none, 3 "", 4-7 "n0".."n3")
//                      d: caller signal (0-1 none, 2 a controller, 3 an aborted controller)
//                      f: the backend's spawn script
//   abort_spawn        a: caller controller (in spawn order)
//   start_send         a: owner; b: session; f: send script
//   cancel, read_output a: send handle
//   read               a: owner; b: session; c: odd = an invalid request
//   signal             a: owner; b: session; c: signal; f: signal script
//   kill               a: owner; b: session; c: odd = reason "fuzz reason"; f: close step
//   list               a: owner
//   release_gate       a: gate slot; b: odd = fail instead of open
//   turn               a: odd = EVRUN_ONCE, else EVRUN_NOWAIT; b: turns - 1 (mod 4)
//   dispose            f: faults of the closes it starts
//   resize             a: owner; b: session; c, d: rows, cols (resize_dimension); f: the
//                      backend's answer (faults.hpp)
//   screen             a: owner; b: session; f: the backend's answer (faults.hpp)
// Owners: 0 is no owner (Owner{}), 1 an owner of another service, n >= 2 the ((n-2) mod
// count)-th minted owner; for ops on a session, 254 is that session's own owner. Sessions: b counts back from the newest id a backend was asked to
// spawn (0 = the newest, mod count); b = 255 is an id never minted.
// nested: instead of running now, the op runs inside the next completion callback.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dshpty::fuzz {

#define DSHPTY_FUZZ_OPS(X) \
  X(register_backend)      \
  X(unregister_backend)    \
  X(mint_owner)            \
  X(dispose_owner)         \
  X(spawn)                 \
  X(abort_spawn)           \
  X(start_send)            \
  X(cancel)                \
  X(read_output)           \
  X(read)                  \
  X(signal)                \
  X(kill)                  \
  X(list)                  \
  X(release_gate)          \
  X(turn)                  \
  X(dispose)               \
  X(resize)                \
  X(screen)

enum class OpKind : std::uint8_t {
#define DSHPTY_FUZZ_OP_ENUM_(name) name,
  DSHPTY_FUZZ_OPS(DSHPTY_FUZZ_OP_ENUM_)
#undef DSHPTY_FUZZ_OP_ENUM_
};
#define DSHPTY_FUZZ_OP_COUNT_(name) +1
inline constexpr int op_kind_count = 0 DSHPTY_FUZZ_OPS(DSHPTY_FUZZ_OP_COUNT_);
#undef DSHPTY_FUZZ_OP_COUNT_

struct Op {
  OpKind kind = OpKind::turn;
  std::uint8_t a = 0, b = 0, c = 0, d = 0;
  std::uint32_t f = 0;
  bool nested = false;
  friend bool operator==(const Op&, const Op&) = default;
};
using Trace = std::vector<Op>;

inline constexpr std::uint8_t unknown_session = 255;
inline constexpr std::uint8_t session_owner = 254;

// A resize op's rows or cols from its byte: mostly 1..252, and now and then a bound or just
// past one (0, 1, 4096, 4097, 5000), so the service's range check is fuzzed too.
unsigned resize_dimension(std::uint8_t v) noexcept;

std::string_view op_kind_name(OpKind kind) noexcept;
std::optional<OpKind> parse_op_kind(std::string_view name) noexcept;
// One line a person can read: "spawn owner 2 alpha name n0 signal=controller [...]".
std::string describe(const Op& op);
// The trace as C++ initializer lines ("{OpKind::spawn, 2, 0, 4, 2, 0x1234, false},  // ..."),
// the inverse of parse_trace.
std::string to_cpp(const Trace& trace);
// Reads every "{OpKind::name, a, b, c, d, f, nested}" in `text` (comments and other text
// ignored); nullopt when one of them is malformed.
std::optional<Trace> parse_trace(std::string_view text);

}  // namespace dshpty::fuzz
