#include "remote/far_facts.hpp"

#include <algorithm>

namespace dshpty::shell {

void FarFacts::apply(const frames::State& state) {
  frames::TerminalFacts facts = state.facts;
  // The ignored signals are measured only for a probe: an unasked STATE keeps the last.
  if (state.seq == 0 && facts.foreground == facts_.foreground) facts.ignored_signals = facts_.ignored_signals;
  facts_ = std::move(facts);
  if (state.seq == 0 && bound_after_written_) bound_current_ = true;
  if (state.seq != 0 && state.seq > stale_before_) {
    answered_seq_ = std::max(answered_seq_, state.seq);
    reading_ = (facts_.flags & frames::kStateReading) != 0;
    relay_ = !(facts_.flags & frames::kStateRelaying)     ? Relay::none
             : (facts_.flags & frames::kStateRelayingInput) ? Relay::input
                                                             : Relay::timed;
    leader_is_shell_ = (facts_.flags & frames::kStateLeaderIsShell) != 0;
  }
}

void FarFacts::on_output() {
  reading_ = false;
  if (bound_after_written_) bound_current_ = true;
}

void FarFacts::on_written(std::uint64_t bytes_written) {
  if (await_written_ && bytes_written >= *await_written_) bound_after_written_ = true;
}

void FarFacts::invalidate() {
  stale_before_ = next_seq_;
  reading_ = false;
}

// The bound facts (foreground group, modes, unread input, cwd) are current once output
// read after the far side took everything sent so far has arrived: only a WRITTEN proves
// that (frames keep their order, so output after it was read after the write), hence a
// resize, a signal or a mark alone waits for the next write or for a probe's answer.
void FarFacts::terminal_changed(bool by_input, std::uint64_t bytes_queued) {
  invalidate();
  bound_current_ = false;
  bound_after_written_ = false;
  await_written_ = by_input ? std::optional<std::uint64_t>(bytes_queued) : std::nullopt;
}

void FarFacts::refresh(Need need) const {
  if (fresh() || !may_ask_()) return;
  // The terminal's facts bound to output read after the latest write are what a local
  // channel would answer for that output: no question needed. (A PROBE asked at every
  // send's prompt cost the far side a whole stdin probe, right before the next send's
  // input when the sends come back to back.)
  if (need == Need::bound_facts && bound_current_) return;
  if (next_seq_ > stale_before_) return;  // a fresh probe is on its way
  std::string out;
  if (forget_pending_) {
    frames::encode(out, frames::Mark{0});
    forget_pending_ = false;
  }
  frames::encode(out, frames::Probe{++next_seq_});
  post_(std::move(out));
}

frames::TerminalFacts FarFacts::current(bool bound, bool probe) const {
  if (bound) refresh(Need::bound_facts);
  if (probe) refresh(Need::probe_answer);
  frames::TerminalFacts f = facts_;
  if (f.foreground <= 0) f.foreground = -1;
  // The leader stays the shell's copy until a fresh answer says otherwise (the caller
  // holds a signal meanwhile, within its own bound).
  f.flags &= static_cast<std::uint8_t>(~frames::kStateLeaderIsShell);
  if (!fresh() || leader_is_shell_) f.flags |= frames::kStateLeaderIsShell;
  return f;
}

bool FarFacts::foreground_reading() {
  refresh(Need::probe_answer);
  if (!fresh() || !reading_) {
    // Not proven now: the next question gets a newer answer.
    if (fresh()) invalidate();
    refresh(Need::probe_answer);
    return false;
  }
  return true;
}

}  // namespace dshpty::shell
