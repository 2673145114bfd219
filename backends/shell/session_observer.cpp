// The session's observers (session_observer.hpp): who is told, and what input counts as
// hidden.
#include "shell_session.hpp"

#include <algorithm>

namespace dshpty::shell {

void ShellSession::add_observer(SessionObserver& observer) {
  if (telling_observers_ == 0) std::erase(observers_, nullptr);
  observers_.push_back(&observer);
}

void ShellSession::remove_observer(SessionObserver& observer) {
  // During a notification the list is being walked: leave a hole, swept at the next add.
  std::replace(observers_.begin(), observers_.end(), &observer, static_cast<SessionObserver*>(nullptr));
  if (telling_observers_ == 0) std::erase(observers_, nullptr);
}

bool ShellSession::input_hidden_now() const {
  // The rule a result's input_hidden follows: a reader with echo off is waiting for
  // something it does not show (a password). In canonical mode always. Non-canonical
  // programs turn echo off too but mostly draw what they are typed themselves (an editor on
  // the alternate screen, the shell's or a REPL's line editor): there only the shell itself
  // reading while its marks say a command runs is hidden (bash's `read -s -n 8`, `-d X`),
  // never on the alternate screen. A child in raw mode without echo is not told apart from
  // a REPL's line editor, and is shown (docs/watch.md).
  auto modes = channel_ ? channel_->terminal_modes() : std::nullopt;
  if (!modes || modes->echo) return false;
  if (modes->canonical) return true;
  return !emulator_.alternate() && shell_place_ == ShellPlace::command && shell_pid_ &&
         channel_->foreground_group() == *shell_pid_;
}

bool ShellSession::input_relayed_now() {
  // Through a relay the terminal is raw with echo off (the relay's mode) whatever the far
  // side reads: a far `read -s` looks like any far prompt, so nothing typed through a relay
  // is shown. The evidence is the send's: the group in front seen relaying (note_relay),
  // else a look now of the stdin probe at a group in front that is not the shell.
  if (!channel_ || channel_->output_ended() || shell_owns_terminal()) return false;
  const pid_t front = channel_->foreground_group();
  if (front <= 0) return false;
  if (front == relay_group_) return true;
  if (!channel_->proves_readers() || channel_->foreground_reading()) return false;
  return channel_->foreground_relays_input();
}

InputShown ShellSession::input_shown_now() {
  if (input_hidden_now()) return InputShown::hidden;
  return input_relayed_now() ? InputShown::relayed : InputShown::shown;
}

void ShellSession::note_input(std::string_view bytes) {
  const InputShown shown = input_shown_now();
  tell_observers([bytes, shown](SessionObserver& o) { o.on_input(bytes, shown); });
}

void ShellSession::note_send(const SendState& send, std::string_view text) {
  const InputShown shown = input_shown_now();
  const SendNote note{.text = text, .keys = send.key_names, .shown = shown};
  tell_observers([&note, &send, shown](SessionObserver& o) {
    o.on_send(note);
    o.on_input(send.bytes, shown);
  });
}

void ShellSession::note_shown() {
  if (!observers_.empty()) tell_observers([](SessionObserver& o) { o.on_shown(); });
}

void ShellSession::end_observers() {
  if (observers_.empty()) return;
  tell_observers([](SessionObserver& o) { o.on_session_end(); });
  observers_.clear();
}

}  // namespace dshpty::shell
