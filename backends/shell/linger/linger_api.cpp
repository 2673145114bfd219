// The public face of lingering (dshpty/linger.hpp) over the rendezvous records
// (linger/record.hpp) of the state directory.
#include <errno.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "dshpty/linger.hpp"
#include "linger/record.hpp"
#include "linger/state_dir.hpp"

namespace dshpty {

Result<std::string> prepare_linger_state_dir(const std::string& configured) {
  return linger::prepare_state_dir(configured);
}

namespace {

// What a listing says of a session, local or remote, from its record.
LingeringSession described(const linger::SessionRecord& r) {
  LingeringSession s;
  s.key = r.key;
  s.owner = r.owner;
  s.name = r.name;
  s.type = r.type;
  if (r.shell_pid > 0) s.pid = r.shell_pid;
  return s;
}

}  // namespace

Result<LingerListing> list_lingering(const std::string& configured, std::string_view owner_label) {
  auto dir = linger::existing_state_dir(configured);
  if (!dir) return dir.error();
  if (!*dir) return LingerListing{};  // never made: nothing lingers
  auto listing = linger::list_records(**dir);
  if (!listing) return listing.error();
  LingerListing out;
  const std::int64_t now = static_cast<std::int64_t>(::time(nullptr));
  for (const auto& r : listing->sessions) {
    if (r.owner != owner_label) continue;
    // A record whose helper is gone (killed by SIGKILL before it could clean up) names
    // nothing: skip it. The pid check is a hint; the attach itself is the proof.
    if (r.helper_pid <= 0 || (::kill(r.helper_pid, 0) < 0 && errno == ESRCH)) continue;
    LingeringSession s = described(r);
    s.attached = r.attached;
    s.left = std::chrono::seconds(r.attached ? r.linger_seconds : std::max<std::int64_t>(0, r.expires_at - now));
    out.sessions.push_back(std::move(s));
  }
  for (const auto& r : listing->remotes) {
    if (r.owner != owner_label) continue;
    // A remote session's record is its host's: held while that host lives. Whether the far
    // side still has it only an attach can tell (it answers with the tombstone if not).
    LingeringSession s = described(r);
    s.attached = r.helper_pid > 0 && ::kill(r.helper_pid, 0) == 0;
    s.left = std::chrono::seconds(r.linger_seconds);  // at most: the far side counts it
    out.sessions.push_back(std::move(s));
  }
  for (const auto& t : listing->tombstones) {
    if (t.owner != owner_label) continue;
    LingerTombstone tomb;
    tomb.key = t.key;
    tomb.owner = t.owner;
    tomb.name = t.name;
    tomb.type = t.type;
    tomb.status.kind = SessionStatus::Kind::exited;
    tomb.status.exit_code = t.exit_code;
    tomb.status.signal = t.signal;
    tomb.status.reason = t.reason;
    tomb.proof = t.proof;
    out.tombstones.push_back(std::move(tomb));
  }
  return out;
}

void forget_linger_tombstone(const std::string& configured, const std::string& key) {
  auto dir = linger::existing_state_dir(configured);
  if (!dir || !*dir) return;
  ::unlink(linger::tomb_path(**dir, key).c_str());
}

}  // namespace dshpty
