// Which recording each of this host's sessions has (docs/watch.md, "The web page"), kept
// while the host runs, closed sessions included: the web page's replays are looked up here
// by session id, so a request names a session, never a file. A session is learnt from the
// output tap (outside the tap: at the next loop iteration, then every kLearnDelay until it
// is published), from the list and from an observer's add; a session that closes within
// kLearnDelay of being published and prints nothing after is not in it.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/service.hpp"
#include "loop/timer.hpp"

namespace dshpty::watch {

struct RecordedSession {
  std::string session_id;
  std::string owner;  // the label (display only)
  std::optional<std::string> name;
  std::string file;  // the file's name in the record directory, [A-Za-z0-9._-] only
  bool live = true;  // the session is open
};

class RecordingIndex {
 public:
  // How often a session still being set up is looked at again.
  static constexpr std::chrono::milliseconds kLearnDelay{20};

  RecordingIndex(struct ev_loop* loop, Service& service);
  // The session printed: learnt soon, from the loop (cheap once it is known).
  void output_arrived(std::string_view session_id);
  // Learns it now from its observation (the list's and add's, at hand anyway).
  void learn(const Observation& view);
  // The recorded sessions, in id order, `live` as the service says now.
  std::vector<RecordedSession> sessions() const;
  // One session's, by its id exactly.
  std::optional<RecordedSession> find(std::string_view session_id) const;

 private:
  void on_learn_timer();

  Service& service_;
  std::map<std::string, RecordedSession, std::less<>> recorded_;
  std::set<std::string, std::less<>> known_;    // learnt, recorded or not
  std::set<std::string, std::less<>> pending_;  // to learn at the timer
  shell::Timer learn_timer_;
};

// The last component of a recording's path: its name in the directory ("" when it has a
// character other than [A-Za-z0-9._-], or is "." or "..").
std::string recording_file_name_of(std::string_view path);

}  // namespace dshpty::watch
