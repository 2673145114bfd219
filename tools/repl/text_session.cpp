#include "text_session.hpp"

#include "completion.hpp"
#include "render/linger_format.hpp"
#include "render/text_format.hpp"
#include "session_lookup.hpp"
#include "text_command.hpp"

namespace dshpty::repl {

using Kind = TextCommand::Kind;
using namespace dshpty::render;

namespace {
// The key of this face's one live send or pending open: one command runs at a time.
const std::string kOperationKey = "repl";
}  // namespace

TextSession::TextSession(engine::Engine& engine, std::function<void(std::string)> print)
    : engine_(engine), print_(std::move(print)) {
  engine_.owner(kOwner);  // minted now, as the REPL starts
}

std::string TextSession::target_id(const std::optional<std::string>& target) const {
  if (!target) return current_.value_or(std::string());
  // A word that names nothing goes to the service as is, which answers NO_SESSION.
  return engine_.resolve(kOwner, *target).value_or(*target);
}

void TextSession::finish() {
  busy_ = false;
  pending_ = Pending::none;
  pending_key_.clear();
  auto done = std::move(done_);
  done_ = nullptr;
  if (done) done();
}

void TextSession::run(std::string_view line, std::function<void()> done) {
  busy_ = true;
  done_ = std::move(done);

  ParseContext context;
  context.has_current = current_.has_value();
  context.names_session = [this](std::string_view word) { return engine_.resolve(kOwner, word).has_value(); };
  auto parsed = parse_text_command(line, context);
  if (!parsed) {
    print_(format_error(parsed.error()));
    finish();
    return;
  }
  TextCommand& command = parsed.value();
  // A lingering session's name after a restart: the answer says how to take it over.
  if (command.target) {
    if (auto name = engine_.lingering_named(kOwner, *command.target)) {
      print_(format_error(engine::lingering_no_session(*name, "attach " + *name)));
      finish();
      return;
    }
  }

  switch (command.kind) {
    case Kind::empty:
      break;
    case Kind::help:
      print_(help_text());
      break;
    case Kind::quit:
      quit_requested_ = true;
      break;
    case Kind::list:
      print_(format_list(engine_.list_activity(kOwner), [this](std::string_view id) { return engine_.observers(id); }));
      if (auto lingering = engine_.lingering(kOwner)) print_(format_lingering(*lingering, "attach"));
      break;
    case Kind::attach:
      pending_ = Pending::open;
      engine_.attach(kOwner, command.name, [this](Result<std::vector<engine::AttachOutcome>> result) {
        print_(result ? format_attach(*result) : format_error(result.error()));
        finish();
      });
      return;
    case Kind::use: {
      const auto sessions = engine_.list(kOwner);
      if (!command.target) {
        const auto id = current_ ? engine::resolve_session(*current_, sessions) : std::nullopt;
        if (!id) {
          print_("(no current terminal session)\n");
        } else {
          for (const auto& session : sessions)
            if (session.id == *id) print_(format_use(session));
        }
        break;
      }
      const auto id = engine::resolve_session(*command.target, sessions);
      if (!id) {
        print_(format_error(make_error(Code::NO_SESSION)));
        break;
      }
      current_ = *id;
      for (const auto& session : sessions)
        if (session.id == *id) print_(format_use(session));
      break;
    }
    case Kind::open: {
      pending_ = Pending::open;
      engine_.open(
          kOwner, {.type = command.type, .name = command.name, .cwd = command.cwd, .options = command.options,
                   .limits = command.limits},
          [this](Result<SpawnResult> result) {
            print_(result ? format_open(*result, cap()) : format_error(result.error()));
            finish();
          },
          kOperationKey);
      return;
    }
    case Kind::send:
      return run_send(command);
    case Kind::output:
      return run_output(command);
    case Kind::stop:
      return run_stop(command);
    case Kind::read: {
      engine::SessionRead read{.session_id = target_id(command.target)};
      if (command.offset) read.request.offset = *command.offset;
      if (command.count) read.request.count = *command.count;
      auto page = engine_.read(kOwner, read);
      print_(page ? format_read(*page, cap()) : format_error(page.error()));
      break;
    }
    case Kind::screen: {
      auto screen = engine_.screen(kOwner, {.session_id = target_id(command.target)});
      print_(screen ? format_screen(*screen, cap()) : format_error(screen.error()));
      break;
    }
    case Kind::resize: {
      const std::string id = target_id(command.target);
      auto status = engine_.resize(kOwner, {.session_id = id, .rows = command.rows, .cols = command.cols});
      print_(status ? format_resize(id, command.rows, command.cols) : format_error(status.error()));
      break;
    }
    case Kind::signal: {
      auto status = engine_.signal(kOwner, {.session_id = target_id(command.target), .signal = command.signal},
                                   [this](Result<SignalResult> result) {
                                     print_(result ? format_signal(*result) : format_error(result.error()));
                                     finish();
                                   });
      if (!status) {
        print_(format_error(status.error()));
        break;
      }
      return;
    }
    case Kind::close: {
      const std::string id = target_id(command.target);
      auto status = engine_.close(kOwner, {.session_id = id}, [this, id](Result<bool> result) {
        if (result) {
          print_(format_close(id, *result));
          if (current_ == id) current_.reset();
        } else {
          print_(format_error(result.error()));
        }
        finish();
      });
      if (!status) {
        print_(format_error(status.error()));
        break;
      }
      return;
    }
  }
  finish();
}

void TextSession::run_send(TextCommand& command) {
  engine::SessionSend send{.session_id = target_id(command.target)};
  send.request.text = std::move(command.text);
  send.request.keys = std::move(command.keys);
  send.request.submit = command.submit;
  send.request.timeout = command.timeout;
  send.request.idle = command.idle;
  send.request.until = std::move(command.until);
  if (command.background) return start_job(std::move(send));
  std::string id = send.session_id;
  auto status = engine_.send(kOwner, std::move(send), kOperationKey, [this, id](Result<SendResult> result) {
    if (!result) {
      print_(format_error(result.error()));
      finish();
      return;
    }
    SendText parts = format_send_parts(*result, cap());
    // A limit the session reached, read when the send settled (as `list` shows it).
    if (auto hit = engine_.limit_hit(kOwner, id)) parts.status += format_limit_hit(*hit) + "\n";
    // A screen comes after the status lines, a line-mode output before them (format_send).
    print_(parts.screen ? parts.status + parts.output : parts.output + parts.status);
    finish();
  });
  if (!status) {
    const bool active = status.error()->code == Code::SEND_ACTIVE;
    print_(format_error(active ? job_active(id).value_or(status.error()) : status.error()));
    finish();
    return;
  }
  pending_ = Pending::send;
}

bool TextSession::interrupt() {
  switch (pending_) {
    case Pending::send: {
      const auto cancelled = engine_.cancel_send(kOwner, kOperationKey);
      return cancelled && *cancelled;
    }
    case Pending::job_condition: {
      // The job is still this command's send: Ctrl-C interrupts it as it would a send.
      const auto cancelled = engine_.cancel_send(kOwner, pending_key_);
      return cancelled && *cancelled;
    }
    case Pending::output_wait:
      return engine_.answer_output_waits(kOwner, pending_key_);
    case Pending::open:
      return engine_.abort_open(kOperationKey, make_error(Code::ABORTED, "open interrupted (Ctrl-C)"));
    case Pending::none:
      break;
  }
  return false;
}

void TextSession::shut_down(std::function<void(int exit_code)> done) {
  auto settled = [this, done = std::move(done)](Status result) {
    if (!result) print_(format_error(result.error()));
    done(result ? 0 : 1);
  };
  // `quit` closes everything; end of input or a signal is the host leaving, and sessions
  // opened with --linger outlive it.
  if (quit_requested_) {
    engine_.shutdown(std::move(settled));
  } else {
    engine_.leave(std::move(settled));
  }
}

std::vector<std::string> TextSession::complete(std::string_view line_before_word, std::string_view word) const {
  return completion_candidates(line_before_word, word, engine_.list(kOwner), engine_.backend_types());
}

}  // namespace dshpty::repl
