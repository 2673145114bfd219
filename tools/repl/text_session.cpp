#include "text_session.hpp"

#include "session_names.hpp"
#include "text_command.hpp"
#include "text_format.hpp"

namespace dshpty::repl {

using Kind = TextCommand::Kind;

TextSession::TextSession(Service& service, std::size_t max_result_bytes, std::function<void(std::string)> print)
    : service_(service), cap_(max_result_bytes), print_(std::move(print)), owner_(service.mint_owner("repl")) {}

std::string TextSession::target_id(const std::optional<std::string>& target) const {
  if (!target) return current_.value_or(std::string());
  // A word that names nothing goes to the service as is, which answers NO_SESSION.
  return resolve_session(*target, service_.list(owner_)).value_or(*target);
}

void TextSession::finish() {
  busy_ = false;
  live_send_.reset();
  pending_open_.reset();
  auto done = std::move(done_);
  done_ = nullptr;
  if (done) done();
}

void TextSession::run(std::string_view line, std::function<void()> done) {
  busy_ = true;
  done_ = std::move(done);

  ParseContext context;
  context.has_current = current_.has_value();
  context.names_session = [this](std::string_view word) {
    return resolve_session(word, service_.list(owner_)).has_value();
  };
  auto parsed = parse_text_command(line, context);
  if (!parsed) {
    print_(format_error(parsed.error()));
    finish();
    return;
  }
  TextCommand& command = parsed.value();

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
      print_(format_list(service_.list(owner_)));
      break;
    case Kind::use: {
      if (!command.target) {
        const auto sessions = service_.list(owner_);
        const auto id = current_ ? resolve_session(*current_, sessions) : std::nullopt;
        if (!id) {
          print_("(no current terminal session)\n");
        } else {
          for (const auto& session : sessions)
            if (session.id == *id) print_(format_use(session));
        }
        break;
      }
      const auto sessions = service_.list(owner_);
      const auto id = resolve_session(*command.target, sessions);
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
      pending_open_ = std::make_unique<AbortController>();
      SpawnOptions options;
      options.type = command.type;
      options.name = command.name;
      options.cwd = command.cwd;
      options.signal = pending_open_->signal();
      service_.spawn(owner_, std::move(options), [this](Result<SpawnResult> result) {
        print_(result ? format_open(*result, cap_) : format_error(result.error()));
        finish();
      });
      return;
    }
    case Kind::send: {
      SendRequest request;
      request.text = std::move(command.text);
      request.submit = command.submit;
      request.timeout = command.timeout;
      request.idle = command.idle;
      auto send = service_.start_send(owner_, target_id(command.target), std::move(request),
                                      [this](Result<SendResult> result) {
                                        print_(result ? format_send(*result, cap_) : format_error(result.error()));
                                        finish();
                                      });
      if (!send) {
        print_(format_error(send.error()));
        break;
      }
      live_send_ = std::move(send.value());
      return;
    }
    case Kind::read: {
      ReadRequest request;
      if (command.offset) request.offset = *command.offset;
      if (command.count) request.count = *command.count;
      auto page = service_.read(owner_, target_id(command.target), request);
      print_(page ? format_read(*page, cap_) : format_error(page.error()));
      break;
    }
    case Kind::signal: {
      auto status = service_.signal(owner_, target_id(command.target), command.signal,
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
      auto status = service_.kill(owner_, id, [this, id](Result<bool> result) {
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

bool TextSession::interrupt() {
  if (live_send_) return live_send_->cancel();
  if (pending_open_) return pending_open_->abort(make_error(Code::ABORTED, "open interrupted (Ctrl-C)"));
  return false;
}

void TextSession::shut_down(std::function<void(int exit_code)> done) {
  service_.dispose([this, done = std::move(done)](Result<void> result) {
    if (!result) print_(format_error(result.error()));
    done(result ? 0 : 1);
  });
}

std::vector<std::string> TextSession::complete(std::string_view line_before_word, std::string_view word) const {
  return completion_candidates(line_before_word, word, service_.list(owner_), service_.backend_types());
}

}  // namespace dshpty::repl
