// The far terminal's facts, as the bridge reports them (supervisor/bridge.hpp): a STATE
// before output whose facts changed, and one per PROBE, after the output the terminal
// holds at that moment.
#include <cstdlib>
#include <cstring>

#include "proc/procfs.hpp"
#include "supervisor/bridge.hpp"

namespace dshpty::shell {

void Bridge::drain(int reads) {
  if (!channel_) return;
  for (int i = 0; i < reads && !channel_->output_ended(); ++i) {
    if (!channel_->read_available()) break;
  }
}

frames::TerminalFacts Bridge::cheap_facts() const {
  frames::TerminalFacts f;
  f.foreground = channel_->foreground_group();
  if (auto modes = channel_->terminal_modes()) {
    f.flags |= frames::kStateModesKnown;
    if (modes->echo) f.flags |= frames::kStateEcho;
    if (modes->canonical) f.flags |= frames::kStateCanonical;
  }
  if (auto unread = channel_->input_unread()) f.input_unread = static_cast<std::int32_t>(*unread);
  if (shell_pid_ > 0) f.cwd = channel_->working_directory(shell_pid_).value_or("");
  f.ignored_signals = last_.ignored_signals;
  return f;
}

void Bridge::queue_state(std::uint32_t seq, const frames::TerminalFacts& f) {
  link_.queue(frames::State{seq, sent_, f});
  last_ = f;
  last_.flags &= static_cast<std::uint8_t>(~(frames::kStateReading | frames::kStateRelaying |
                                              frames::kStateRelayingInput | frames::kStateLeaderIsShell));
}

void Bridge::answer_probe(std::uint32_t seq) {
  if (!channel_) {
    queue_state(seq, frames::TerminalFacts{});
    return queue_flush();
  }
  // The output the terminal holds now goes first: the answer follows it. While the window
  // holds output back, some of it may still sit in the terminal, and a reader seen now
  // would be reported ahead of output it printed before reading: not proven then (the
  // host asks again). The pause itself is update_flow's alone.
  drain(ProcessChannel::kProbeDrainReads);
  frames::TerminalFacts f = cheap_facts();
  if (f.foreground > 0) {
    f.ignored_signals = procfs::ignored_signals(f.foreground);
    if (!paused_ && channel_->foreground_reading()) f.flags |= frames::kStateReading;
    if (!paused_ && channel_->foreground_relays()) f.flags |= frames::kStateRelaying;
    if (!paused_ && channel_->foreground_relays_input()) f.flags |= frames::kStateRelayingInput;
    if (shell_pid_ > 0 && channel_->leader_is_shell_copy(f.foreground, shell_pid_)) {
      f.flags |= frames::kStateLeaderIsShell;
    }
  }
  queue_state(seq, f);
  queue_flush();
}

}  // namespace dshpty::shell
