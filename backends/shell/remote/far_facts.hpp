// The far terminal's facts as the host knows them (remote/stream_channel.hpp, top): the
// latest STATE, whether it is fresh, and when to ask again. The far helper binds them to
// the output (a STATE before the output whose facts changed); the costly ones (the stdin
// probe) come only when asked (PROBE). An answer counts only if its probe was sent after
// the session's latest write, mark or signal: frames keep their order both ways, so such
// an answer was measured after those reached the far terminal and arrives after all output
// read before it. Until a fresh answer is in, the latest facts answer and a question goes
// out: the session's polling (its probe and hold ticks) sees the new ones a round trip later.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "link/messages.hpp"

namespace dshpty::shell {

class FarFacts {
 public:
  // `may_ask`: the link can carry a question now; `post`: sends its frames. Asking is no
  // change the session can see, so the const questions below may ask.
  FarFacts(std::function<bool()> may_ask, std::function<void(std::string)> post)
      : may_ask_(std::move(may_ask)), post_(std::move(post)) {}

  // ---- what the link says --------------------------------------------------------------
  void apply(const frames::State& state);  // a STATE
  void on_output();                        // an OUT: the latest answer about readers predates it
  // A WRITTEN: the far side took input up to `bytes_written`.
  void on_written(std::uint64_t bytes_written);

  // ---- what the host did ----------------------------------------------------------------
  // A write (by_input; `bytes_queued` counts it), a resize, a signal or a mark went out.
  void terminal_changed(bool by_input, std::uint64_t bytes_queued);
  // Answers to probes sent before now no longer count (a reconnect: they never come).
  void invalidate();
  void mark_sent() { forget_pending_ = false; }  // a new baseline replaces the old anyway
  void forget() { forget_pending_ = true; }      // a MARK 0 is owed before the next PROBE

  // ---- the questions -----------------------------------------------------------------------
  const frames::TerminalFacts& latest() const { return facts_; }
  // The facts as of now, after asking for fresh ones: `bound`, those bound to output;
  // `probe`, a probe's answer (readers, the leader). No foreground is -1.
  frames::TerminalFacts current(bool bound, bool probe) const;
  bool foreground_reading();
  bool relaying() const { return relay_ != Relay::none; }
  bool relaying_input() const { return relay_ == Relay::input; }

 private:
  enum class Need { bound_facts, probe_answer };
  // Asks for fresh facts unless a fresh answer is in or on its way, or (bound_facts) the
  // facts bound to output read after the latest write are in.
  void refresh(Need need) const;
  bool fresh() const { return answered_seq_ > stale_before_; }

  std::function<bool()> may_ask_;
  std::function<void(std::string)> post_;
  frames::TerminalFacts facts_;
  bool reading_ = false;         // from the latest fresh answer, until output follows it
  // The same answer found a relay (kStateRelaying): on another input (kStateRelayingInput),
  // or on the terminal alone with a short timeout.
  enum class Relay { none, timed, input };
  Relay relay_ = Relay::none;
  bool leader_is_shell_ = true;  // likewise
  mutable std::uint32_t next_seq_ = 0;  // the last PROBE's seq
  std::uint32_t stale_before_ = 0;      // answers to probes up to this seq are stale
  std::uint32_t answered_seq_ = 0;
  // Facts bound to output (see terminal_changed).
  std::optional<std::uint64_t> await_written_;  // the WRITTEN count that covers the latest write
  bool bound_after_written_ = false;  // that WRITTEN came: later output was read after it
  bool bound_current_ = false;        // such output (or its STATE) came
  mutable bool forget_pending_ = false;  // a MARK 0 owed before the next PROBE
};

}  // namespace dshpty::shell
