#include "text_command.hpp"

#include "engine.hpp"
#include "requests.hpp"

#include <charconv>

namespace dshpty::repl {

namespace {

using Kind = TextCommand::Kind;

bool is_blank(char c) { return c == ' ' || c == '\t'; }

Error usage(std::string_view text) { return make_error(Code::INVALID_ARGUMENT, "usage: " + std::string(text)); }

// A raw (unquoted) word starting at or after `pos`; `pos` moves past it. Empty at the end.
std::string_view next_raw_word(std::string_view line, std::size_t& pos) {
  while (pos < line.size() && is_blank(line[pos])) ++pos;
  const std::size_t start = pos;
  while (pos < line.size() && !is_blank(line[pos])) ++pos;
  return line.substr(start, pos - start);
}

std::string_view rest_after_blanks(std::string_view line, std::size_t pos) {
  while (pos < line.size() && is_blank(line[pos])) ++pos;
  return line.substr(pos);
}

template <class Int>
std::optional<Int> parse_decimal(std::string_view word) {
  Int value{};
  if (word.empty() || word.front() == '-' || word.front() == '+') return std::nullopt;
  const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (ec != std::errc() || end != word.data() + word.size()) return std::nullopt;
  return value;
}

std::optional<std::chrono::milliseconds> parse_ms(std::string_view word) {
  const auto value = parse_decimal<std::int64_t>(word);
  if (!value) return std::nullopt;
  return std::chrono::milliseconds(*value);
}

bool names_session(const ParseContext& context, std::string_view word) {
  return context.names_session && context.names_session(word);
}

constexpr std::string_view kSendUsage =
    "send [ID] [--no-submit] [--keys K1,K2...] [--timeout MS] [--idle MS] [--background] [--until-output RE] "
    "[--until-port N] [--] TEXT...";

// One word by split_words()'s rules (quotes group, a backslash escapes) from `pos` on;
// `pos` moves past it. For a value that may hold blanks, a regex: 'port \d+' stays as typed.
Result<std::string> next_quoted_word(std::string_view line, std::size_t& pos) {
  while (pos < line.size() && is_blank(line[pos])) ++pos;
  std::string word;
  char quote = 0;
  for (; pos < line.size(); ++pos) {
    const char c = line[pos];
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && pos + 1 < line.size()) {
        word += line[++pos];
      } else {
        word += c;
      }
    } else if (is_blank(c)) {
      break;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '\\' && pos + 1 < line.size()) {
      word += line[++pos];
    } else {
      word += c;
    }
  }
  if (quote) return make_error(Code::INVALID_ARGUMENT, "unterminated quote");
  return word;
}

// The job number of `output JOB` and `stop JOB`, as `send --background` printed it.
Result<std::uint64_t> parse_job(std::string_view word, std::string_view usage_line) {
  if (const auto job = parse_decimal<std::uint64_t>(word); job && *job > 0) return *job;
  return make_error(Code::INVALID_ARGUMENT, "JOB must be a job number as send --background printed it, not \"" +
                                                std::string(word) + "\" (usage: " + std::string(usage_line) + ")");
}

// send keeps its text verbatim, so it is scanned raw rather than split into words.
Result<TextCommand> parse_send(std::string_view line, std::size_t pos, const ParseContext& context) {
  TextCommand command;
  command.kind = Kind::send;
  bool have_target = false;
  for (;;) {
    std::size_t after = pos;
    const std::string_view word = next_raw_word(line, after);
    if (word.empty()) break;
    if (word == "--") {
      pos = after;
      break;
    }
    if (word == "--no-submit") {
      command.submit = false;
      pos = after;
      continue;
    }
    if (word == "--keys") {
      const std::string_view value = next_raw_word(line, after);
      if (value.empty()) return make_error(Code::INVALID_ARGUMENT, "--keys needs a comma-separated list of key names");
      // "," alone is the comma key; otherwise commas separate names.
      if (value == ",") {
        command.keys.emplace_back(",");
      } else {
        std::size_t start = 0;
        for (;;) {
          const std::size_t comma = value.find(',', start);
          command.keys.emplace_back(value.substr(start, comma - start));
          if (comma == std::string_view::npos) break;
          start = comma + 1;
        }
      }
      pos = after;
      continue;
    }
    if (word == "--background") {
      command.background = true;
      pos = after;
      continue;
    }
    if (word == "--until-output") {
      if (rest_after_blanks(line, after).empty())
        return make_error(Code::INVALID_ARGUMENT, "--until-output needs a regex (quote it: 'port \\d+')");
      auto regex = next_quoted_word(line, after);
      if (!regex) return regex.error();
      command.until.output_regex = std::move(regex.value());
      pos = after;
      continue;
    }
    if (word == "--until-port") {
      const std::string_view value = next_raw_word(line, after);
      const auto port = parse_decimal<int>(value);
      if (!port) return make_error(Code::INVALID_ARGUMENT, "--until-port needs a TCP port number (1..65535), not \"" + std::string(value) + "\"");
      command.until.port = *port;  // the backend checks the range, as on every face
      pos = after;
      continue;
    }
    if (word == "--timeout" || word == "--idle") {
      const std::string_view value = next_raw_word(line, after);
      const auto ms = parse_ms(value);
      if (!ms) return make_error(Code::INVALID_ARGUMENT, std::string(word) + " needs a number of milliseconds");
      (word == "--timeout" ? command.timeout : command.idle) = ms;
      pos = after;
      continue;
    }
    if (have_target) break;  // the text starts here
    // With a current session, a word that names no session is already the text.
    if (context.has_current && !names_session(context, word)) break;
    command.target = std::string(word);
    have_target = true;
    pos = after;
  }
  if (!have_target && !context.has_current) return usage(kSendUsage);
  command.text = std::string(rest_after_blanks(line, pos));
  return command;
}

// A flag's value, from "--flag VALUE" or "--flag=VALUE" at args[i] (then i moves past it);
// nullopt when args[i] is not that flag; an empty optional inside when the value is missing.
std::optional<std::optional<std::string>> flag_value(const std::vector<std::string>& args,
                                                     std::size_t& i, std::string_view flag) {
  const std::string& word = args[i];
  if (word == flag) {
    if (i + 1 >= args.size()) return std::optional<std::string>();
    return std::optional<std::string>(args[++i]);
  }
  if (word.size() > flag.size() && word.compare(0, flag.size(), flag) == 0 && word[flag.size()] == '=') {
    return std::optional<std::string>(word.substr(flag.size() + 1));
  }
  return std::nullopt;
}

// `--limit-pids N`, `--limit-memory BYTES` or `--limit-cpu F` (or --flag=VALUE) at args[i]
// (i moves past it) into `limits`: nullopt when args[i] is none of them; INVALID_ARGUMENT
// naming the flag for a value that is no positive number. The backend checks the ranges
// and the operator's ceilings.
std::optional<Status> limit_flag(const std::vector<std::string>& args, std::size_t& i, Limits& limits) {
  for (std::string_view flag : {"--limit-pids", "--limit-memory", "--limit-cpu"}) {
    auto text = flag_value(args, i, flag);
    if (!text) continue;
    const std::string value = text->value_or("");
    const char* end = value.data() + value.size();
    auto bad = [&](std::string_view what) {
      return Status(make_error(Code::INVALID_ARGUMENT, std::string(flag) + " needs " + std::string(what) + ", not \"" + value + "\""));
    };
    if (flag == "--limit-cpu") {
      double cpu = 0;
      const auto [at, ec] = std::from_chars(value.data(), end, cpu);
      if (value.empty() || ec != std::errc() || at != end || !(cpu > 0)) return bad("a positive number of CPUs");
      limits.cpu = cpu;
      return Status();
    }
    std::uint64_t n = 0;
    const auto [at, ec] = std::from_chars(value.data(), end, n);
    if (value.empty() || ec != std::errc() || at != end || n == 0) return bad("a positive whole number");
    (flag == "--limit-pids" ? limits.pids : limits.memory) = n;
    return Status();
  }
  return std::nullopt;
}

Result<TextCommand> parse_open(std::vector<std::string> args) {
  const std::string kUsage = open_usage();
  TextCommand command;
  command.kind = Kind::open;
  std::vector<std::string> positional;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (auto cwd = flag_value(args, i, "--cwd")) {
      if (!*cwd) return usage(kUsage);
      command.cwd = std::move(**cwd);
      continue;
    }
    if (auto linger = flag_value(args, i, "--linger")) {
      if (!*linger) return usage(kUsage);
      command.options["linger"] = std::move(**linger);  // the backend checks the number
      continue;
    }
    if (auto limit = limit_flag(args, i, command.limits)) {
      if (!*limit) return limit->error();
      continue;
    }
    if (word == "--no-record") {
      command.options["record"] = "false";
      continue;
    }
    bool taken = false;
    for (const auto& option : engine::kOpenOptions) {
      if (auto value = flag_value(args, i, option.flag)) {
        if (!*value) return usage(kUsage);
        command.options[std::string(option.key)] = std::move(**value);
        taken = true;
        break;
      }
    }
    if (taken) continue;
    if (word.rfind("--", 0) == 0) {
      return make_error(Code::INVALID_ARGUMENT, "unknown option " + word + " (" + std::string(kUsage) + ")");
    } else {
      positional.push_back(word);
    }
  }
  if (positional.empty() || positional.size() > 2) return usage(kUsage);
  command.type = positional[0];
  if (positional.size() == 2) command.name = positional[1];
  return command;
}

Result<TextCommand> parse_read(std::vector<std::string> args, const ParseContext& context) {
  constexpr std::string_view kUsage = "read [ID] [OFFSET [COUNT]]";
  TextCommand command;
  command.kind = Kind::read;
  // With a current session, a leading number is an offset unless it names a session.
  if (!args.empty() && (names_session(context, args.front()) || !context.has_current ||
                        !parse_decimal<std::int64_t>(args.front()))) {
    command.target = std::move(args.front());
    args.erase(args.begin());
  }
  if (!command.target && !context.has_current) return usage(kUsage);
  if (args.size() > 2) return usage(kUsage);
  if (!args.empty()) {
    command.offset = parse_decimal<std::int64_t>(args[0]);
    if (!command.offset) return make_error(Code::INVALID_ARGUMENT, "OFFSET must be a number of lines (" + std::string(kUsage) + ")");
  }
  if (args.size() == 2) {
    command.count = parse_decimal<std::int64_t>(args[1]);
    if (!command.count) return make_error(Code::INVALID_ARGUMENT, "COUNT must be a number of lines (" + std::string(kUsage) + ")");
  }
  return command;
}

Result<TextCommand> parse_signal_command(std::vector<std::string> args, const ParseContext& context) {
  constexpr std::string_view kUsage = "signal [ID] SIGINT|SIGTERM|SIGKILL|SIGTSTP|SIGHUP";
  TextCommand command;
  command.kind = Kind::signal;
  if (args.size() == 2) {
    command.target = args[0];
    args.erase(args.begin());
  } else if (args.size() != 1 || !context.has_current) {
    return usage(kUsage);
  }
  const auto signal = parse_signal(args[0]);
  if (!signal) return make_error(Code::INVALID_ARGUMENT, "unknown signal " + args[0] + " (" + std::string(kUsage) + ")");
  command.signal = *signal;
  return command;
}

// keys [ID] K1 K2...: a send of named keys only (no Enter unless "Enter" is among them).
Result<TextCommand> parse_keys(std::vector<std::string> args, const ParseContext& context) {
  constexpr std::string_view kUsage = "keys [ID] KEY...";
  TextCommand command;
  command.kind = Kind::send;
  // The first word is the session when it names one, or when there is no current session.
  if (!args.empty() && (names_session(context, args.front()) || !context.has_current)) {
    command.target = std::move(args.front());
    args.erase(args.begin());
  }
  if (args.empty()) return usage(kUsage);
  command.keys = std::move(args);
  return command;
}

Result<TextCommand> parse_screen(std::vector<std::string> args, const ParseContext& context) {
  TextCommand command;
  command.kind = Kind::screen;
  if (args.size() > 1 || (args.empty() && !context.has_current)) return usage("screen [ID]");
  if (!args.empty()) command.target = args[0];
  return command;
}

Result<TextCommand> parse_resize(std::vector<std::string> args, const ParseContext& context) {
  constexpr std::string_view kUsage = "resize [ID] ROWS COLS";
  TextCommand command;
  command.kind = Kind::resize;
  if (args.size() == 3) {
    command.target = args[0];
    args.erase(args.begin());
  } else if (args.size() != 2 || !context.has_current) {
    return usage(kUsage);
  }
  const auto rows = parse_decimal<unsigned>(args[0]);
  const auto cols = parse_decimal<unsigned>(args[1]);
  if (!rows || !cols) return make_error(Code::INVALID_ARGUMENT, "ROWS and COLS must be numbers (" + std::string(kUsage) + ")");
  command.rows = *rows;
  command.cols = *cols;
  return command;
}

// output JOB [--wait MS] and stop JOB.
Result<TextCommand> parse_job_command(Kind kind, const std::vector<std::string>& args) {
  const std::string_view kUsage = kind == Kind::output ? "output JOB [--wait MS]" : "stop JOB";
  TextCommand command;
  command.kind = kind;
  std::optional<std::string> job;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (kind == Kind::output) {
      if (auto wait = flag_value(args, i, "--wait")) {
        const auto ms = *wait ? parse_ms(**wait) : std::nullopt;
        // One bound for every face's wait (engine::kMaxWaitMs).
        if (!ms || ms->count() < 1 || ms->count() > engine::kMaxWaitMs)
          return make_error(Code::INVALID_ARGUMENT, "--wait must be an integer from 1 to " +
                                                        std::to_string(engine::kMaxWaitMs) + " ms, not \"" +
                                                        wait->value_or("") + "\" (usage: " + std::string(kUsage) + ")");
        command.wait = ms;
        continue;
      }
    }
    if (job) return usage(kUsage);
    job = args[i];
  }
  if (!job) return usage(kUsage);
  auto number = parse_job(*job, kUsage);
  if (!number) return number.error();
  command.job = *number;
  return command;
}

Result<TextCommand> parse_close(std::vector<std::string> args, const ParseContext& context) {
  TextCommand command;
  command.kind = Kind::close;
  if (args.size() > 1 || (args.empty() && !context.has_current)) return usage("close [ID]");
  if (!args.empty()) command.target = args[0];
  return command;
}

}  // namespace

Result<std::vector<std::string>> split_words(std::string_view line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quote) {
      if (c == quote) {
        quote = 0;
      } else if (c == '\\' && quote == '"' && i + 1 < line.size()) {
        word += line[++i];
      } else {
        word += c;
      }
    } else if (is_blank(c)) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\'' || c == '"') {
      quote = c;
      in_word = true;
    } else if (c == '\\' && i + 1 < line.size()) {
      word += line[++i];
      in_word = true;
    } else {
      word += c;
      in_word = true;
    }
  }
  if (quote) return make_error(Code::INVALID_ARGUMENT, "unterminated quote");
  if (in_word) words.push_back(std::move(word));
  return words;
}

Result<TextCommand> parse_text_command(std::string_view line, const ParseContext& context) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  std::size_t pos = 0;
  const std::string_view verb = next_raw_word(line, pos);
  if (verb.empty()) return TextCommand{};
  if (verb == "send") return parse_send(line, pos, context);

  auto words = split_words(line.substr(pos));
  if (!words) return words.error();
  std::vector<std::string> args = std::move(words.value());
  auto no_args = [&](Kind kind) -> Result<TextCommand> {
    if (!args.empty()) return usage(verb);
    TextCommand command;
    command.kind = kind;
    return command;
  };

  if (verb == "open") return parse_open(std::move(args));
  if (verb == "read") return parse_read(std::move(args), context);
  if (verb == "keys") return parse_keys(std::move(args), context);
  if (verb == "screen") return parse_screen(std::move(args), context);
  if (verb == "resize") return parse_resize(std::move(args), context);
  if (verb == "signal") return parse_signal_command(std::move(args), context);
  if (verb == "close") return parse_close(std::move(args), context);
  if (verb == "list") return no_args(Kind::list);
  if (verb == "output") return parse_job_command(Kind::output, args);
  if (verb == "stop") return parse_job_command(Kind::stop, args);
  if (verb == "attach") {
    TextCommand command;
    command.kind = Kind::attach;
    if (args.size() > 1) return usage("attach [NAME]");
    if (!args.empty()) command.name = args[0];
    return command;
  }
  if (verb == "help") return no_args(Kind::help);
  if (verb == "quit" || verb == "exit") return no_args(Kind::quit);
  if (verb == "use") {
    TextCommand command;
    command.kind = Kind::use;
    if (args.size() > 1) return usage("use [ID]");
    if (!args.empty()) command.target = args[0];
    return command;
  }
  return make_error(Code::INVALID_ARGUMENT, "unknown command \"" + std::string(verb) + "\" (try help)");
}

const std::vector<std::string>& command_names() {
  static const std::vector<std::string> names{"open", "send", "keys", "read",  "screen", "resize", "signal", "close",
                                              "list", "use",  "help", "quit", "attach", "output", "stop"};
  return names;
}

std::string open_usage() {
  std::string usage = "open TYPE [NAME] [--cwd DIR]";
  for (const auto& option : engine::kOpenOptions) usage += " [" + std::string(option.flag) + " " + std::string(option.value) + "]";
  return usage + " [--linger SECONDS] [--no-record] [--limit-pids N] [--limit-memory BYTES] [--limit-cpu F]";
}

std::string text_commands_help() {
  std::string out;
  const std::string help = help_text();
  std::size_t start = 0;
  while (start < help.size()) {
    const std::size_t end = help.find('\n', start);
    out += "  " + help.substr(start, end - start + 1);
    start = end + 1;
  }
  return out;
}

std::string help_text() {
  return open_usage() + "\n"
         "                               start a session (TYPE: shell) and print its start-up output;\n"
         "                               with --linger it outlives this REPL for SECONDS (see attach)\n"
         "send [ID] [--no-submit] [--keys K1,K2] [--timeout MS] [--idle MS] [--background]\n"
         "     [--until-output RE] [--until-port N] TEXT...\n"
         "                               type TEXT (then the keys) and Enter, print what it produced;\n"
         "                               --until-*: also done once a new line matches RE (quote it) or\n"
         "                               something in the session listens on TCP port N; --background:\n"
         "                               a job, answered at once (with --until-*: once it holds)\n"
         "output JOB [--wait MS]         a job's new output, then [job: running 4.2s] or how it ended\n"
         "stop JOB                       stop a job (SIGINT, SIGTERM, SIGKILL) and say what remains\n"
         "keys [ID] KEY...               press named keys (Enter Escape Tab Up Down PageUp F1 C-c M-x q ...), no Enter added\n"
         "read [ID] [OFFSET [COUNT]]     page retained output, OFFSET lines back from the newest (COUNT 500)\n"
         "screen [ID]                    show the terminal's screen now: size, cursor, rows (for full-screen programs)\n"
         "resize [ID] ROWS COLS          set the terminal's window size\n"
         "signal [ID] SIGNAME            send SIGINT SIGTERM SIGKILL SIGTSTP or SIGHUP to the foreground process group\n"
         "close [ID]                     close a session; returns once its whole process tree is gone\n"
         "list                           list your sessions with their status\n"
         "use [ID]                       make ID the current session, so commands may leave ID out\n"
         "attach [NAME]                  take over lingering sessions (or the one named NAME) a previous REPL left\n"
         "help                           this list\n"
         "quit                           close every session and exit; Ctrl-D (end of input), SIGTERM and\n"
         "                               SIGHUP close them too, but leave sessions opened with --linger running\n"
         "ID is a session id (pty-1) or its name; JOB the number send --background printed. Ctrl-C\n"
         "cancels a live send (a job waiting for its condition too) and ends an output --wait.\n";
}

}  // namespace dshpty::repl
