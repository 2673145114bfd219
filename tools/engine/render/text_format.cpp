#include "text_format.hpp"

#include <cstdio>

#include "escape.hpp"
#include "status_lookalikes.hpp"
#include "text/truncation.hpp"

namespace dshpty::render {

namespace {
// Output `body` (look-alikes of our lines marked) cut to `cap` (head, marker line, tail),
// ending in a newline; `placeholder` when it is empty.
std::string body_lines(const std::string& body, std::size_t cap, const char* placeholder) {
  if (body.empty()) return std::string(placeholder) + "\n";
  std::string out = text::cut_to_fit(mark_status_lookalikes(body), cap).text;
  if (out.empty() || out.back() != '\n') out += '\n';
  return out;
}

// A viewport, already cut by the backend: its marker line, when it was cut, is ours and
// stays as it is; every other line that looks like one of ours is marked.
std::string viewport_lines(const SendResult& result, const char* placeholder) {
  if (result.viewport.empty()) return std::string(placeholder) + "\n";
  const std::string marker =
      result.truncated ? text::truncation_marker({result.omitted_bytes, result.omitted_lines}) : std::string();
  std::string out = mark_status_lookalikes(result.viewport, {marker, result.typed_line});
  if (out.back() != '\n') out += '\n';
  return out;
}

std::string session_head(const SessionSnapshot& session) { return "terminal session " + session_label(session); }

// A protected path as it reads beside the writable roots: relative to the root it lies in.
std::string relative_to_roots(const std::string& path, const std::vector<std::string>& roots) {
  for (const auto& root : roots)
    if (path.size() > root.size() + 1 && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/')
      return path.substr(root.size() + 1);
  return path;
}

// A line the shell did not run, and what clears it, inside the wait line.
std::string line_state_words(const SendResult& result) {
  if (!result.line_state) return {};
  switch (*result.line_state) {
    case LineState::continuation: return ", continuation: send keys [\"C-c\"] to clear it";
    case LineState::kept: return ", line kept: send keys [\"C-c\"] to clear it";
    case LineState::queued:
      // At a reader: typed ahead while the command in front ran busy, read since.
      if (result.wait_reason == WaitReason::stdin_read)
        return ", typed ahead: the text went in while the command in front ran, and was read after it, "
               "not as an answer to a prompt seen";
      return ", queued: the text waits for the running command to end";
    case LineState::refused: return ", line refused: the shell did not run it and cleared it";
    case LineState::swallowed: return ", line swallowed: the command in front read it; the shell never ran it";
    case LineState::relayed:
      return ", line relayed: the relay in front read it; whether its far side ran it is not known here";
  }
  return {};
}
}  // namespace

std::string format_confinement(const Confinement& c, bool with_paths) {
  std::string out = "[confined: " + escape(c.mode) + ", network " + (c.network ? "on" : "off");
  if (!with_paths) return out + "]";
  if (!c.writable_roots.empty()) {
    out += ", writable: ";
    for (std::size_t i = 0; i < c.writable_roots.size(); ++i) out += (i ? ", " : "") + escape(c.writable_roots[i]);
  }
  if (!c.protected_paths.empty()) {
    out += "; read-only inside: ";
    for (std::size_t i = 0; i < c.protected_paths.size(); ++i)
      out += (i ? ", " : "") + escape(relative_to_roots(c.protected_paths[i], c.writable_roots));
  }
  return out + "]";
}

std::string session_label(const SessionSnapshot& session) {
  return session.name ? session.id + " (" + escape(*session.name) + ")" : session.id;
}

std::string format_status(const SessionStatus& status) {
  if (status.running()) return "running";
  if (status.kind == SessionStatus::Kind::lost || status.kind == SessionStatus::Kind::reconnecting) {
    // The transport's words on one line: a status is part of a line ("[session: ...]", list).
    const std::string kind = status.kind == SessionStatus::Kind::lost ? "lost" : "reconnecting";
    std::string reason = status.reason;
    while (!reason.empty() && static_cast<unsigned char>(reason.back()) <= 0x20) reason.pop_back();
    return reason.empty() ? kind : kind + ": " + escape(reason);
  }
  return "exited code=" + (status.exit_code ? std::to_string(*status.exit_code) : std::string("null")) +
         " signal=" + (status.signal ? signal_number_name(*status.signal) : std::string("null"));
}

std::string format_limit_hit(const LimitHit& hit) {
  std::string out = "[limit: " + std::string(limit_kind_name(hit.kind));
  if (hit.pid || hit.command) {
    out += " (OOM kill of";
    if (hit.pid) out += " " + std::to_string(*hit.pid);
    if (hit.command) out += " " + escape(*hit.command);
    out += ")";
  }
  return out + "]";
}

std::string format_open(const SpawnResult& result, std::size_t cap) {
  std::string confined;
  if (result.session.confinement) confined = format_confinement(*result.session.confinement, true) + "\n";
  return "started " + session_head(result.session) + " [type: " + result.session.type + "]\n" + confined +
         body_lines(result.motd, cap, "(no startup output)");
}

// What held, after "matched": `: output "LINE"` or `: port N (pid P)`.
static std::string match_words(const std::optional<SendMatch>& match) {
  if (!match) return "";
  if (match->port) return ": port " + std::to_string(*match->port) + " (pid " + std::to_string(match->pid) + ")";
  return match->output ? ": output \"" + escape(*match->output) + "\"" : "";
}
static std::string match_words(const SendResult& result) { return match_words(result.match); }

std::string format_job_started(std::string_view job, std::string_view session_id) {
  return "started background job " + std::string(job) + " in session " + escape(session_id);
}

std::string format_condition(const ConditionOutcome& outcome) {
  return "[wait: " + std::string(wait_reason_name(outcome.reason)) + match_words(outcome.match) + "]\n";
}

std::string format_job_running(double seconds) {
  char figure[32];
  std::snprintf(figure, sizeof figure, "%.1f", seconds);
  return "[job: running " + std::string(figure) + "s]\n";
}

std::string format_stop(std::string_view job, const StopResult& result) {
  std::string signals;
  for (const auto& s : result.signals) signals += (signals.empty() ? "" : ", ") + s;
  if (result.stopped && result.taken_back_bytes > 0)
    return "stopped job " + std::string(job) + " (the text was taken back before the shell read it: it never ran)";
  if (result.stopped)
    return "stopped job " + std::string(job) + (signals.empty() ? " (it had ended)" : " (" + signals + ")");
  std::string out = "job " + std::string(job) + " not stopped" + (signals.empty() ? "" : " after " + signals) + "; left:";
  for (const auto& r : result.remaining)
    out += "\n  pid " + std::to_string(r.pid) + (r.command.empty() ? "" : " " + escape(r.command)) + ": " + escape(r.why);
  return out;
}

SendText format_send_parts(const SendResult& result, std::size_t cap) {
  SendText out;
  // On the alternate screen the line-mode text is a full-screen program's drawing with the
  // cursor movement stripped: noise. The screen is what it shows.
  out.output = result.screen ? format_screen(*result.screen, cap) : viewport_lines(result, "(no new output)");
  out.screen = result.screen.has_value();
  if (out.screen && !result.viewport.empty()) out.before_screen = viewport_lines(result, "");
  out.status = "[wait: " + std::string(wait_reason_name(result.wait_reason)) + match_words(result) +
               (result.input_hidden ? ", input hidden" : "") + line_state_words(result) + "]\n";
  if (result.taken_back_bytes > 0) out.status += "[cancelled: the text was taken back before the shell read it]\n";
  if (result.queued_behind) {
    const bool read = result.line_state == LineState::swallowed || result.line_state == LineState::relayed;
    out.status += (read ? "[read by: " : "[queued behind: ") + std::to_string(result.queued_behind->pid) +
                  (result.queued_behind->command.empty() ? "" : " " + escape(result.queued_behind->command)) + "]\n";
  }
  if (result.exit_code) out.status += "[exit: " + std::to_string(*result.exit_code) + "]\n";
  if (result.cwd) out.status += "[cwd: " + escape(*result.cwd) + "]\n";
  out.status += "[session: " + format_status(result.session_status) + "]\n";
  return out;
}

std::string format_send(const SendResult& result, std::size_t cap) {
  SendText parts = format_send_parts(result, cap);
  // A screen comes after the status lines, a line-mode output before them.
  return parts.screen ? parts.status + parts.output : parts.output + parts.status;
}

std::string format_screen(const ScreenSnapshot& screen, std::size_t cap) {
  std::string head = "[screen " + std::to_string(screen.rows) + "x" + std::to_string(screen.cols) + " cursor " +
                     std::to_string(screen.cursor_row + 1) + "," + std::to_string(screen.cursor_col + 1);
  if (!screen.cursor_visible) head += " hidden";
  if (screen.alternate) head += " alternate";
  if (!screen.title.empty()) {
    head += " title=\"";
    for (char c : escape(screen.title)) {
      if (c == '"') head += '\\';
      head += c;
    }
    head += '"';
  }
  std::string rows;
  for (const std::string& line : screen.lines) rows += line + "\n";
  return head + "]\n" + (rows.empty() ? std::string() : body_lines(rows, cap, ""));
}

std::string format_resize(const std::string& session_id, unsigned rows, unsigned cols) {
  return "resized " + session_id + " to " + std::to_string(rows) + "x" + std::to_string(cols) + "\n";
}

std::string format_read(const ReadPage& page, std::size_t cap) {
  // Lines are shown numbered from 1 (oldest retained first); the page is [begin, end).
  const bool empty = page.line_end <= page.line_begin;
  const std::string range = empty ? "0-0" : std::to_string(page.line_begin + 1) + "-" + std::to_string(page.line_end);
  // The scrollback cut the page to its byte bound: its oldest part is not shown.
  const std::string cut_note = page.truncated ? "[page truncated: its oldest part left out]\n" : "";
  return cut_note + body_lines(page.text, cap, "(no retained output)") + "[lines: " + range + " of " +
         std::to_string(page.total_lines) + "]\n";
}

std::string format_signal(const SignalResult& result) {
  return "delivered " + std::string(signal_name(result.signal)) + " to foreground process group " +
         std::to_string(result.target_pgid) + "\n";
}

std::string format_close(const std::string& session_id, bool closed_by_this_call) {
  return closed_by_this_call ? "closed terminal session " + session_id + "\n"
                             : "terminal session " + session_id + " was already closing\n";
}

std::string format_activity(const Activity& activity) {
  std::string ports;
  for (const auto& l : activity.listening) {
    const bool v6 = l.address.find(':') != std::string::npos;
    ports += (ports.empty() ? "" : ", ") + (v6 ? "[" + escape(l.address) + "]" : escape(l.address)) + ":" +
             std::to_string(l.port);
  }
  std::string out;
  if (activity.state == Activity::State::busy) {
    out = " busy " + std::to_string(activity.elapsed_ms.value_or(0) / 1000) + "s";
    if (activity.command) out += ": " + escape(*activity.command);
    std::string inside;
    if (activity.processes) inside = std::to_string(*activity.processes) + (*activity.processes == 1 ? " process" : " processes");
    if (!ports.empty()) inside += (inside.empty() ? "" : "; ") + std::string("listening ") + ports;
    if (!inside.empty()) out += " (" + inside + ")";
  } else if (!ports.empty()) {
    out = " (listening " + ports + ")";  // at the prompt: a server an earlier command left running
  }
  return out;
}

std::string format_list(const std::vector<SessionSnapshot>& sessions,
                        const std::function<unsigned(std::string_view)>& observers) {
  if (sessions.empty()) return "(no terminal sessions)\n";
  std::string out;
  for (const auto& session : sessions) {
    out += session_label(session) + " [" + session.type + "] " + format_status(session.status);
    if (session.pid) out += " pid=" + std::to_string(*session.pid);
    if (session.confinement) out += " " + format_confinement(*session.confinement, false);
    if (session.limit_hit) out += " " + format_limit_hit(*session.limit_hit);
    if (const unsigned n = observers ? observers(session.id) : 0; n > 0) out += " observers=" + std::to_string(n);
    // A recording is the operator's: the list speaks of it only when it stopped early.
    if (session.recording && session.recording->state == RecordingState::failed)
      out += " [recording failed: " + session.recording->error.value_or("") + "]";
    if (session.recording && session.recording->state == RecordingState::cut) out += " [recording cut at its size cap]";
    if (session.activity) out += format_activity(*session.activity);
    out += '\n';
  }
  return out;
}

std::string format_use(const SessionSnapshot& session) { return "using " + session_head(session) + "\n"; }

namespace {
// describe()'s layout, each message escaped: a message may quote what the caller sent.
void describe_escaped(std::string& out, const Error& error, int depth) {
  out.append(static_cast<std::size_t>(depth) * 2, ' ');
  out += std::string(code_name(error->code)) + ": " + escape(error->message) + "\n";
  for (const Error& child : error->errors)
    if (child) describe_escaped(out, child, depth + 1);
}
}  // namespace

std::string format_error(const Error& error) {
  if (!error) return "error: OK\n";
  std::string out = "error: ";
  describe_escaped(out, error, 0);
  return out;
}

}  // namespace dshpty::render
