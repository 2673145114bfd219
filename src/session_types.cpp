#include <strings.h>

#include <csignal>
#include <cstring>

#include "dshpty/service.hpp"
#include "dshpty/session.hpp"

namespace dshpty {

namespace {
struct SignalRow {
  Signal signal;
  std::string_view name;
  int number;
};
constexpr SignalRow kSignals[] = {
    {Signal::sigint, "SIGINT", SIGINT},    {Signal::sigterm, "SIGTERM", SIGTERM},
    {Signal::sigkill, "SIGKILL", SIGKILL}, {Signal::sigtstp, "SIGTSTP", SIGTSTP},
    {Signal::sighup, "SIGHUP", SIGHUP},
};
}  // namespace

std::string_view evidence_name(Evidence evidence) noexcept {
  switch (evidence) {
    case Evidence::prompt_marks: return "prompt_marks";
    case Evidence::stdin_probe: return "stdin_probe";
    case Evidence::relay: return "relay";
    case Evidence::none: break;
  }
  return "none";
}

std::string_view line_state_name(LineState state) noexcept {
  switch (state) {
    case LineState::continuation: return "continuation";
    case LineState::kept: return "kept";
    case LineState::queued: return "queued";
    case LineState::refused: return "refused";
    case LineState::swallowed: return "swallowed";
    case LineState::relayed: return "relayed";
  }
  return "unknown";
}

std::string_view wait_reason_name(WaitReason reason) noexcept {
  switch (reason) {
    case WaitReason::stdin_read: return "stdin_read";
    case WaitReason::inferred_idle: return "inferred_idle";
    case WaitReason::timeout: return "timeout";
    case WaitReason::session_exit: return "session_exit";
    case WaitReason::matched: return "matched";
  }
  return "unknown";
}

std::string_view observed_activity_name(ObservedActivity activity) noexcept {
  switch (activity) {
    case ObservedActivity::unknown: return "unknown";
    case ObservedActivity::prompt: return "prompt";
    case ObservedActivity::busy: return "busy";
  }
  return "unknown";
}

std::string_view limit_kind_name(LimitKind kind) noexcept {
  switch (kind) {
    case LimitKind::pids: return "pids";
    case LimitKind::memory: return "memory";
  }
  return "unknown";
}

std::string_view recording_state_name(RecordingState state) noexcept {
  switch (state) {
    case RecordingState::recording: return "recording";
    case RecordingState::cut: return "cut";
    case RecordingState::failed: return "failed";
    case RecordingState::closed: return "closed";
  }
  return "unknown";
}

std::string_view activity_state_name(Activity::State state) noexcept {
  switch (state) {
    case Activity::State::prompt: return "prompt";
    case Activity::State::busy: return "busy";
    case Activity::State::unknown: return "unknown";
  }
  return "unknown";
}

std::string_view signal_name(Signal signal) noexcept {
  for (const auto& row : kSignals)
    if (row.signal == signal) return row.name;
  return "UNKNOWN";
}

int signal_number(Signal signal) noexcept {
  for (const auto& row : kSignals)
    if (row.signal == signal) return row.number;
  return 0;
}

std::optional<Signal> parse_signal(std::string_view name) noexcept {
  for (const auto& row : kSignals) {
    std::string_view full = row.name, bare = row.name.substr(3);
    auto same = [&](std::string_view want) {
      return name.size() == want.size() && strncasecmp(name.data(), want.data(), want.size()) == 0;
    };
    if (same(full) || same(bare)) return row.signal;
  }
  return std::nullopt;
}

std::string signal_number_name(int signo) {
  if (const char* abbrev = sigabbrev_np(signo)) return std::string("SIG") + abbrev;
  return "SIG" + std::to_string(signo);
}

std::string_view record_state_name(RecordState state) noexcept {
  switch (state) {
    case RecordState::setup: return "setup";
    case RecordState::published: return "published";
    case RecordState::sending: return "sending";
    case RecordState::closing: return "closing";
    case RecordState::closed: return "closed";
    case RecordState::cleanup_failed: return "cleanup_failed";
  }
  return "unknown";
}

}  // namespace dshpty
