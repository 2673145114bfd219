// Fault schedules as bits: how an op's `f` field becomes the scripted backend's steps, so a
// trace holds its faults as plain numbers (see trace.hpp).
//
// A step is 8 bits: kind = bits & 7, turns = (bits >> 3) & 3, gate = bits >> 5 (5, 6, 7 wait
// on gate slot 0, 1, 2; below 5 no gate). Kinds per use:
//   spawn:  0-3, 7 succeed; 4-5 fail; 6 fail_cleanup (BackendCleanupError)
//   close:  0-5 succeed; 6-7 fail
//   send, signal: 0-3 succeed; 4-5 fail; 6 fail_cleanup (an error like any other); 7 reject
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "dshpty/scripted.hpp"

namespace dshpty::fuzz {

inline constexpr int gate_slots = 3;
// The gates a step may wait on; a released slot gets a fresh gate (see the driver).
using GateSlots = std::array<std::shared_ptr<ScriptedGate>, gate_slots>;

enum class StepUse { spawn, close, send, signal };

ScriptedStep decode_step(std::uint8_t bits, StepUse use, const GateSlots& gates);
std::string describe_step(std::uint8_t bits, StepUse use);

// spawn f: bits 0-7 the spawn step; 8-9 abort policy (0-1 honour, 2 honour_cleanup_fails,
// 3 ignore); 10-17 the session's default close step (rollbacks and unscripted closes);
// 18 the session has a pid (1000 + bits 19-26).
ScriptedSpawn decode_spawn(std::uint32_t f, const GateSlots& gates);
std::string describe_spawn(std::uint32_t f);

// send f: bits 0-7 the step; 8 settle on cancel; 9-10 output deltas; 11 the first delta is
// truncated; 12-13 wait_reason; 14 the result is truncated; 15 it has an exit code, 16 a
// cwd, 17 input_hidden. `serial` names the texts.
ScriptedSend decode_send(std::uint32_t f, const GateSlots& gates, int serial);
std::string describe_send(std::uint32_t f);

// signal f: bits 0-7 the step; 8 an explicit target pgid (4242).
ScriptedSignal decode_signal(std::uint32_t f, const GateSlots& gates);
std::string describe_signal(std::uint32_t f);

// resize f: bits 0-2 the backend's answer: 0-4 unscripted (the scripted backend's own: a
// success on a running session), 5 a scripted success, 6 BACKEND_FAILED, 7 SESSION_EXITED.
// nullopt: leave it unscripted.
std::optional<Status> decode_resize(std::uint32_t f);
std::string describe_resize(std::uint32_t f);

// screen f: bits 0-2: 7 the backend fails (BACKEND_FAILED); otherwise it shows its screen.
std::optional<Result<ScreenSnapshot>> decode_screen(std::uint32_t f);
std::string describe_screen(std::uint32_t f);

// The close step of the i-th close a disposal starts (mixed from f, so one field scripts many).
std::uint8_t disposal_close_bits(std::uint32_t f, std::size_t i);

}  // namespace dshpty::fuzz
