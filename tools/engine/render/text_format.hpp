// The texts a person or a model reads for each result: the text REPL prints them and any
// other text face shows the same words (docs/tool-protocol.md, "Text commands and their
// output"). Every function returns whole lines, each ending in '\n'. What a program printed
// (a viewport, the motd, a page, a screen's rows) has its lines that look like ours marked
// (render/status_lookalikes.hpp). A viewport comes cut by
// the backend; the motd, a page and a screen's rows are cut to `cap` bytes here, with the
// same function (text/truncation.hpp: head, "[output truncated: ...]", tail).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "dshpty/errors.hpp"
#include "dshpty/service.hpp"
#include "dshpty/session.hpp"

namespace dshpty::render {

// "pty-1 (main)" or "pty-1".
std::string session_label(const SessionSnapshot& session);
// "running", "exited code=2 signal=null" or "lost: ssh exited 255: Connection refused" (a
// remote session's link ended; the reason on one line, control characters as spaces).
std::string format_status(const SessionStatus& status);

// "[confined: workspace-write, network off, writable: /ws; read-only inside: .git/hooks]";
// without the paths, "[confined: workspace-write, network off]" (a list's line).
std::string format_confinement(const Confinement& confinement, bool with_paths);
// "[limit: pids]" or "[limit: memory (OOM kill of 1234 python3)]": a limit the session
// reached (a list's line ends with it; a send's status lines end with it, on its own line).
std::string format_limit_hit(const LimitHit& hit);
// "started terminal session pty-1 (main) [type: shell]", the confinement's line when
// confined, then the motd.
std::string format_open(const SpawnResult& result, std::size_t cap);
// A send's result in two parts: what the program printed (the viewport, or the screen on the
// alternate screen; a line that looks like one of ours marked: render/status_lookalikes.hpp),
// and our status lines ("[wait: ...]", "[exit: N]", "[cwd: DIR]", "[session: ...]"). MCP
// returns them as two content items; the text REPL prints format_send(), both in one.
struct SendText {
  std::string output;
  std::string status;
  bool screen = false;  // `output` is the screen (format_screen)
  // With a screen: what the program printed on the normal screen before the switch (the
  // viewport), "" when nothing.
  std::string before_screen;
};
SendText format_send_parts(const SendResult& result, std::size_t cap);
// Jobs: "started background job job-1 in session pty-1"; a condition's answer while the
// job runs on, "[wait: matched: port N (pid P)]"; "[job: running 12.4s]"; a stop's answer.
std::string format_job_started(std::string_view job, std::string_view session_id);
std::string format_condition(const ConditionOutcome& outcome);
std::string format_job_running(double seconds);
std::string format_stop(std::string_view job, const StopResult& result);
std::string format_send(const SendResult& result, std::size_t cap);
std::string format_read(const ReadPage& page, std::size_t cap);
// "[screen 24x80 cursor 3,17 alternate title="vim"]" (the cursor 1-based, "hidden" after
// it when the program hid it), then the rows as ScreenSnapshot trims them.
std::string format_screen(const ScreenSnapshot& screen, std::size_t cap);
// "resized pty-1 to 30x100".
std::string format_resize(const std::string& session_id, unsigned rows, unsigned cols);
std::string format_signal(const SignalResult& result);
std::string format_close(const std::string& session_id, bool closed_by_this_call);
// What a session runs, after its list line's status: " busy 42s: npm run dev (6 processes;
// listening 127.0.0.1:5173)", or at the prompt only the ports something still listens on.
std::string format_activity(const Activity& activity);
// `observers`, when given, says how many people watch each session (shown when any do).
std::string format_list(const std::vector<SessionSnapshot>& sessions,
                        const std::function<unsigned(std::string_view)>& observers = {});
std::string format_use(const SessionSnapshot& session);
// "error: CODE: message", an aggregate's children indented below.
std::string format_error(const Error& error);

}  // namespace dshpty::render
