// Sends that wait behind a cancelled one (docs/tool-protocol.md, "cancel, then send"). A
// cancel interrupts the command with a real SIGINT, and the cancelled send settles only once
// the shell is back at its prompt: a client that cancels and sends again at once would
// otherwise meet SEND_ACTIVE for a send it has already given up. So, until the cancelled
// send settles, the next sends of the same owner to that session wait here, in order, and
// start on a fresh loop turn after it settled. Plain data: the engine starts them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/service.hpp"
#include "requests.hpp"

namespace dshpty::engine {

class SendQueue {
 public:
  struct Queued {
    std::string owner{};
    std::string key{};
    SessionSend request{};
    Callback<SendResult> done{};
  };

  // The owner's send under `key` on `session_id` was interrupted and has not settled.
  void wind_down(std::string session_id, std::string owner, std::string key);
  // True when a send of `owner` to `session_id` must wait: its cancelled send has not
  // settled, or the sends behind it have not started yet (they keep their order). Another
  // owner's send goes straight to the service, which answers it as before.
  bool must_wait(std::string_view session_id, std::string_view owner) const;
  void push(Queued queued);
  // The owner's send under `key` settled: true when it was the session's cancelled one
  // (then release() hands out the sends that waited for it).
  bool settled(std::string_view session_id, std::string_view owner, std::string_view key);
  // The sends that waited on `session_id`, in order, once its cancelled send has settled
  // (none while another cancelled one is settling there).
  std::vector<Queued> release(std::string_view session_id);
  // The owner's waiting send under `key` (each owner has its own keys), removed; nullopt
  // when none waits under it.
  std::optional<Queued> take(std::string_view owner, std::string_view key);
  const Queued* find(std::string_view owner, std::string_view key) const;
  // A send of another owner's waits under `key`.
  bool others_have(std::string_view owner, std::string_view key) const;

 private:
  struct Session {
    std::string owner;
    std::string cancelled_key;  // empty once it settled

    std::vector<Queued> waiting;
  };
  std::map<std::string, Session, std::less<>> sessions_;
};

}  // namespace dshpty::engine
