// The exact texts text mode prints (repl.md, "Text commands and their output"). Every
// function returns whole lines, each ending in '\n'. Bodies (motd, viewport, page) are cut
// to `cap` bytes with "[output truncated]".
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "dshpty/errors.hpp"
#include "dshpty/service.hpp"
#include "dshpty/session.hpp"

namespace dshpty::repl {

// "running" or "exited code=2 signal=null".
std::string format_status(const SessionStatus& status);

std::string format_open(const SpawnResult& result, std::size_t cap);
std::string format_send(const SendResult& result, std::size_t cap);
std::string format_read(const ReadPage& page, std::size_t cap);
std::string format_signal(const SignalResult& result);
std::string format_close(const std::string& session_id, bool closed_by_this_call);
std::string format_list(const std::vector<SessionSnapshot>& sessions);
std::string format_use(const SessionSnapshot& session);
// "error: CODE: message", an aggregate's children indented below.
std::string format_error(const Error& error);

}  // namespace dshpty::repl
