// The text-mode command language: one line in, one command out. Pure: it knows sessions
// only through the context it is given, so it is tested without a service.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dshpty/result.hpp"
#include "dshpty/session.hpp"

namespace dshpty::repl {

struct TextCommand {
  enum class Kind { empty, open, send, read, screen, resize, signal, close, list, use, help, quit, attach, output, stop };
  Kind kind = Kind::empty;

  // A session as the user wrote it (an id or a name); unset: the current session.
  std::optional<std::string> target;

  // open; attach (name)
  std::string type;
  std::optional<std::string> name;
  std::optional<std::string> cwd;
  std::map<std::string, std::string> options;  // backend options (engine::kOpenOptions)
  Limits limits;                               // --limit-pids N, --limit-memory BYTES, --limit-cpu F

  // send (and keys, a send of keys only): the text exactly as typed after the id and
  // options (spaces and quotes kept), then the named keys.
  std::string text;
  std::vector<std::string> keys;
  std::optional<bool> submit;  // unset: Enter unless only keys are sent
  std::optional<std::chrono::milliseconds> timeout;
  std::optional<std::chrono::milliseconds> idle;
  bool background = false;  // --background: a job, answered at once (with a condition: once it holds)
  SendUntil until;          // --until-output RE, --until-port N (the backend checks both)

  // output, stop: the job's number, as `send --background` printed it; output's --wait.
  std::uint64_t job = 0;
  std::optional<std::chrono::milliseconds> wait;

  // read
  std::optional<std::int64_t> offset;
  std::optional<std::int64_t> count;

  // resize
  unsigned rows = 0;
  unsigned cols = 0;

  // signal
  dshpty::Signal signal = dshpty::Signal::sigint;
};

struct ParseContext {
  // A current session is set (`use`), so commands may leave the id out.
  bool has_current = false;
  // True when the word names one of the user's sessions (by id or name). With a current
  // session, a first word that names no session is taken as the start of the arguments.
  std::function<bool(std::string_view)> names_session;
};

// INVALID_ARGUMENT with a "usage: ..." or "unknown command" message on failure.
Result<TextCommand> parse_text_command(std::string_view line, const ParseContext& context);

// Splits on blanks; single and double quotes group, a backslash escapes the next character.
// INVALID_ARGUMENT for an unterminated quote.
Result<std::vector<std::string>> split_words(std::string_view line);

// The command words, in the order `help` lists them.
const std::vector<std::string>& command_names();

// `help`: one line per command.
std::string help_text();
// The open command's usage line, its flags from engine::kOpenOptions.
std::string open_usage();
// help_text() indented for --help.
std::string text_commands_help();

}  // namespace dshpty::repl
