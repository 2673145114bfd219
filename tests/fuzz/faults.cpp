#include "faults.hpp"

#include <csignal>

namespace dshpty::fuzz {

namespace {

ScriptedStep::Kind kind_of(std::uint8_t bits, StepUse use) {
  const int k = bits & 7;
  switch (use) {
    case StepUse::spawn:
      if (k == 4 || k == 5) return ScriptedStep::Kind::fail;
      if (k == 6) return ScriptedStep::Kind::fail_cleanup;
      return ScriptedStep::Kind::succeed;
    case StepUse::close:
      return k >= 6 ? ScriptedStep::Kind::fail : ScriptedStep::Kind::succeed;
    case StepUse::send:
    case StepUse::signal:
      if (k == 4 || k == 5) return ScriptedStep::Kind::fail;
      if (k == 6) return ScriptedStep::Kind::fail_cleanup;
      if (k == 7) return ScriptedStep::Kind::reject;
      return ScriptedStep::Kind::succeed;
  }
  return ScriptedStep::Kind::succeed;
}

int gate_of(std::uint8_t bits) {
  const int g = bits >> 5;
  return g >= 5 ? g - 5 : -1;
}

const char* kind_name(ScriptedStep::Kind kind) {
  switch (kind) {
    case ScriptedStep::Kind::succeed: return "ok";
    case ScriptedStep::Kind::fail: return "fail";
    case ScriptedStep::Kind::fail_cleanup: return "fail_cleanup";
    case ScriptedStep::Kind::reject: return "reject";
  }
  return "?";
}

}  // namespace

ScriptedStep decode_step(std::uint8_t bits, StepUse use, const GateSlots& gates) {
  ScriptedStep step;
  step.kind = kind_of(bits, use);
  step.turns = (bits >> 3) & 3;
  if (int g = gate_of(bits); g >= 0) step.gate = gates[static_cast<std::size_t>(g)];
  return step;
}

std::string describe_step(std::uint8_t bits, StepUse use) {
  std::string out = kind_name(kind_of(bits, use));
  if (int turns = (bits >> 3) & 3) out += "+" + std::to_string(turns) + "t";
  if (int g = gate_of(bits); g >= 0) out += "@g" + std::to_string(g);
  return out;
}

ScriptedSpawn decode_spawn(std::uint32_t f, const GateSlots& gates) {
  ScriptedSpawn spawn;
  spawn.step = decode_step(f & 0xff, StepUse::spawn, gates);
  switch ((f >> 8) & 3) {
    case 2: spawn.on_abort = ScriptedAbortPolicy::honour_cleanup_fails; break;
    case 3: spawn.on_abort = ScriptedAbortPolicy::ignore; break;
    default: spawn.on_abort = ScriptedAbortPolicy::honour; break;
  }
  spawn.session.script.closes.set_default(
      decode_step(static_cast<std::uint8_t>(f >> 10), StepUse::close, gates));
  if ((f >> 18) & 1) spawn.session.pid = 1000 + static_cast<int>((f >> 19) & 0xff);
  spawn.session.motd = "motd " + std::to_string(f & 0xffff) + "\n";
  return spawn;
}

std::string describe_spawn(std::uint32_t f) {
  static const char* const policies[] = {"honour", "honour", "honour_cleanup_fails", "ignore"};
  std::string out = "spawn " + describe_step(f & 0xff, StepUse::spawn);
  out += ", on abort " + std::string(policies[(f >> 8) & 3]);
  out += ", closes " + describe_step(static_cast<std::uint8_t>(f >> 10), StepUse::close);
  if ((f >> 18) & 1) out += ", pid " + std::to_string(1000 + ((f >> 19) & 0xff));
  return out;
}

ScriptedSend decode_send(std::uint32_t f, const GateSlots& gates, int serial) {
  ScriptedSend send;
  send.step = decode_step(f & 0xff, StepUse::send, gates);
  send.settle_on_cancel = (f >> 8) & 1;
  const int deltas = (f >> 9) & 3;
  for (int i = 0; i < deltas; ++i)
    send.output.push_back(
        OutputDelta{"out" + std::to_string(serial) + "." + std::to_string(i), i == 0 && ((f >> 11) & 1)});
  send.result.viewport = "view" + std::to_string(serial);
  send.result.wait_reason = static_cast<WaitReason>((f >> 12) & 3);
  send.result.truncated = (f >> 14) & 1;
  // What a shell result adds at its prompt, so the harness checks they reach the caller.
  if ((f >> 15) & 1) send.result.exit_code = serial % 256;
  if ((f >> 16) & 1) send.result.cwd = "/cwd" + std::to_string(serial);
  send.result.input_hidden = (f >> 17) & 1;
  return send;
}

std::string describe_send(std::uint32_t f) {
  std::string out = "send " + describe_step(f & 0xff, StepUse::send);
  if ((f >> 8) & 1) out += ", settles on cancel";
  if (int deltas = (f >> 9) & 3) out += ", " + std::to_string(deltas) + " deltas";
  out += ", " + std::string(wait_reason_name(static_cast<WaitReason>((f >> 12) & 3)));
  if ((f >> 15) & 1) out += ", exit code";
  if ((f >> 16) & 1) out += ", cwd";
  if ((f >> 17) & 1) out += ", input hidden";
  return out;
}

ScriptedSignal decode_signal(std::uint32_t f, const GateSlots& gates) {
  return ScriptedSignal::with(decode_step(f & 0xff, StepUse::signal, gates), ((f >> 8) & 1) ? 4242 : 0);
}

std::string describe_signal(std::uint32_t f) {
  std::string out = "signal " + describe_step(f & 0xff, StepUse::signal);
  if ((f >> 8) & 1) out += ", pgid 4242";
  return out;
}

std::optional<Status> decode_resize(std::uint32_t f) {
  switch (f & 7) {
    case 5: return Status();
    case 6: return Status(make_error(Code::BACKEND_FAILED, "scripted resize failure"));
    case 7: return Status(make_error(Code::SESSION_EXITED));
    default: return std::nullopt;
  }
}

std::string describe_resize(std::uint32_t f) {
  switch (f & 7) {
    case 5: return "resize ok (scripted)";
    case 6: return "resize fail";
    case 7: return "resize SESSION_EXITED";
    default: return "resize ok";
  }
}

std::optional<Result<ScreenSnapshot>> decode_screen(std::uint32_t f) {
  if ((f & 7) != 7) return std::nullopt;
  return Result<ScreenSnapshot>(make_error(Code::BACKEND_FAILED, "scripted screen failure"));
}

std::string describe_screen(std::uint32_t f) { return (f & 7) == 7 ? "screen fail" : "screen ok"; }

std::uint8_t disposal_close_bits(std::uint32_t f, std::size_t i) {
  std::uint32_t x = f ^ static_cast<std::uint32_t>(i * 0x9e3779b9u);
  x ^= x >> 15;
  x *= 0x2c1b3c6du;
  x ^= x >> 12;
  return static_cast<std::uint8_t>(x);
}

}  // namespace dshpty::fuzz
