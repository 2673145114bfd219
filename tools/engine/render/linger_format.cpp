#include "linger_format.hpp"

#include "escape.hpp"
#include "text_format.hpp"

namespace dshpty::render {

namespace {
// A name read back from a record on disk: escaped like every value in text.
std::string quoted_name(const std::optional<std::string>& name) {
  return name ? "(" + escape(*name) + ")" : std::string("(unnamed)");
}
}  // namespace

std::string format_attach(const std::vector<engine::AttachOutcome>& outcomes) {
  if (outcomes.empty()) return "(no lingering sessions)\n";
  std::string out;
  for (const auto& o : outcomes) {
    if (o.session) {
      const auto& s = o.session->session;
      const AttachReport report = o.session->attached.value_or(AttachReport{});
      out += "attached terminal session " + session_label(s) + " [" + s.type + "] " + format_status(s.status);
      if (s.pid) out += " pid=" + std::to_string(*s.pid);
      out += ": replayed " + std::to_string(report.replayed_bytes) + " bytes, " +
             (report.gap_bytes ? std::to_string(report.gap_bytes) + " bytes lost before them" : std::string("none lost")) +
             "\n";
      if (report.send_ended) out += "[send ended: " + *report.send_ended + "]\n";
    } else if (o.tombstone) {
      std::string status = format_status(o.tombstone->status);
      if (!o.tombstone->status.reason.empty()) status += " (" + escape(o.tombstone->status.reason) + ")";
      out += "terminal session " + quoted_name(o.tombstone->name) + " ended with no host: " + status + "\n";
    } else {
      out += "terminal session " + quoted_name(o.name) + " could not be attached: " + format_error(o.error);
    }
  }
  return out;
}

std::string format_lingering(const std::vector<engine::LingeringSession>& sessions, const std::string& how) {
  std::string out;
  for (const auto& s : sessions) {
    out += "lingering " + quoted_name(s.name) + " [" + s.type + "]";
    if (s.pid) out += " pid=" + std::to_string(*s.pid);
    out += ", " + std::to_string(s.left.count()) + " s left: " + how + " takes it over\n";
  }
  return out;
}

}  // namespace dshpty::render
