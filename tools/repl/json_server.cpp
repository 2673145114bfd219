#include "json_server.hpp"

#include <type_traits>
#include <utility>

#include "line_splitter.hpp"
#include "session_lookup.hpp"

#ifndef DSHPTY_VERSION
#define DSHPTY_VERSION "unknown"
#endif

namespace dshpty::repl {

namespace jp = json_protocol;

namespace {
template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;
}  // namespace

JsonServer::JsonServer(engine::Engine& engine, Hooks hooks) : engine_(engine), hooks_(std::move(hooks)) {}

void JsonServer::handle_line(std::string_view line) {
  // Blank lines are not requests; skipping them keeps hand-typed sessions friendly.
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
  auto parsed = jp::parse_request(line);
  if (auto* bad = std::get_if<jp::BadRequest>(&parsed)) {
    respond_error(bad->id, bad->error);
    return;
  }
  dispatch(std::move(std::get<jp::Request>(parsed)));
}

void JsonServer::handle_overlong_line() {
  respond_error({}, make_error(Code::INVALID_ARGUMENT, "request line is longer than " +
                                                                std::to_string(tool::kMaxRequestLineBytes) + " bytes"));
}

// EOF, SIGTERM, SIGHUP (and SIGINT): the host leaves; lingering sessions outlive it.
void JsonServer::end_of_input() { begin_shutdown(std::nullopt, /*leaving=*/true); }

void JsonServer::respond(const RequestId& id, Json result) {
  if (hooks_.write) hooks_.write(jp::ok_response(id, std::move(result)));
}

void JsonServer::respond_error(const RequestId& id, const Error& error) {
  if (hooks_.write) hooks_.write(jp::error_response(id, error));
}

void JsonServer::dispatch(jp::Request request) {
  const RequestId id = request.id;
  const std::string& owner = request.owner;
  const std::size_t cap = engine_.settings().max_result_bytes;
  // A lingering session's name after a restart: the answer says how to take it over.
  const std::string* word = std::visit(
      [](auto& op) -> const std::string* {
        if constexpr (requires { op.session_id; }) return &op.session_id;
        return nullptr;
      },
      request.op);
  if (word) {
    if (auto name = engine_.lingering_named(owner, *word)) {
      respond_error(id, engine::lingering_no_session(
                            *name, "{\"op\": \"attach\", \"name\": " + Json(*name).dump() + "}"));
      return;
    }
  }
  std::visit(
      Overloaded{
          [&](jp::OpenOp& op) {
            engine_.open(owner, std::move(op), [this, id, cap](Result<SpawnResult> result) {
              answer(id, result, [cap](const SpawnResult& r) { return jp::encode_open(r, cap); });
            });
          },
          [&](jp::SendOp& op) {
            const bool background = op.request.background;
            const std::string session_id = op.session_id;
            const std::string key = jp::id_key(id);
            finished_jobs_.erase(key);  // an id used again names the new send
            auto status = engine_.send(owner, std::move(op), key,
                                       [this, id, background, key, session_id, owner = std::string(owner)](Result<SendResult> result) {
              if (!background) {
                return answer(id, result, [&](const SendResult& r) {
                  Json out = jp::encode_send(r);
                  // A limit the session reached, read when the send settled (as `list` shows it).
                  if (auto hit = engine_.limit_hit(owner, session_id)) {
                    out["limitHit"] = jp::encode_limit_hit(*hit);
                  }
                  return out;
                });
              }
              keep_finished_job(key, {owner, result ? jp::encode_send(result.value())
                                                    : Json{{"error", jp::encode_error(result.error())}}});
            });
            // A job answers at once: its id is the request's, its result comes through `output`.
            if (status && background) {
              Json job = Json::parse(id.token(), nullptr, /*allow_exceptions=*/false);
              respond(id, Json{{"job", job.is_discarded() ? Json(nullptr) : std::move(job)}, {"sessionId", session_id}});
            }
            const auto live = !status && status.error()->code == Code::SEND_ACTIVE
                                  ? engine_.live_send_on(owner, session_id) : std::nullopt;
            if (live) {
              // Name the send (a job, say) and how to read it; its key is its id as JSON text.
              const Json parsed = Json::parse(*live, nullptr, /*allow_exceptions=*/false);
              const std::string job = parsed.is_discarded() ? Json(*live).dump() : parsed.dump();
              respond_error(id, engine::send_active("send " + job + " runs; {\"op\": \"output\", \"sendId\": " + job +
                                                    "} reads it, {\"op\": \"signal\", \"signal\": \"SIGINT\"} interrupts "
                                                    "its command, {\"op\": \"cancel\", \"sendId\": " + job +
                                                    "} takes it back; keys go in once it has ended"));
            }
            else if (!status && status.error()->code == Code::SEND_ACTIVE)
              respond_error(id, engine::send_active("{\"op\": \"signal\", \"signal\": \"SIGINT\"} interrupts its "
                                                    "command, {\"op\": \"cancel\", \"sendId\": ...} takes it back; "
                                                    "keys go in once it has ended"));
            else if (!status)
              respond_error(id, status.error());
          },
          [&](jp::CancelOp& op) {
            answer(id, engine_.cancel_send(owner, jp::id_key(op.send_id)),
                   [](bool cancelled) { return Json{{"cancelled", cancelled}}; });
          },
          [&](jp::OutputOp& op) {
            if (auto job = finished_jobs_.find(jp::id_key(op.send_id)); job != finished_jobs_.end()) {
              if (job->second.owner != owner)
                return respond_error(id, make_error(Code::FOREIGN_SESSION, "the job belongs to another owner"));
              return respond(id, Json{{"delta", ""}, {"truncated", false}, {"done", true}, {"result", job->second.result}});
            }
            answer(id, engine_.send_output(owner, jp::id_key(op.send_id)),
                   [cap](const OutputDelta& delta) { return jp::encode_output(delta, cap); });
          },
          [&](jp::ReadOp& op) {
            answer(id, engine_.read(owner, op), [cap](const ReadPage& page) { return jp::encode_read(page, cap); });
          },
          [&](jp::ScreenOp& op) {
            answer(id, engine_.screen(owner, op),
                   [](const ScreenSnapshot& screen) { return Json{{"screen", jp::encode_screen(screen)}}; });
          },
          [&](jp::ResizeOp& op) {
            Status status = engine_.resize(owner, op);
            if (status)
              respond(id, Json::object());
            else
              respond_error(id, status.error());
          },
          [&](jp::SignalOp& op) {
            auto status = engine_.signal(owner, op, [this, id](Result<SignalResult> result) {
              answer(id, result, jp::encode_signal);
            });
            if (!status) respond_error(id, status.error());
          },
          [&](jp::CloseOp& op) {
            auto status = engine_.close(owner, op, [this, id](Result<bool> result) {
              answer(id, result, [](bool closed) { return Json{{"outcome", closed ? "closed" : "already-closing"}}; });
            });
            if (!status) respond_error(id, status.error());
          },
          [&](jp::ListOp&) {
            Json sessions = Json::array();
            for (const auto& session : engine_.list(owner)) {
              Json row = jp::encode_snapshot(session);
              row["observers"] = engine_.observers(session.id);  // people watching (docs/watch.md)
              sessions.push_back(std::move(row));
            }
            respond(id, Json{{"sessions", std::move(sessions)}});
          },
          [&](jp::AttachOp& op) {
            engine_.attach(owner, std::move(op.name), [this, id](Result<std::vector<engine::AttachOutcome>> result) {
              answer(id, result, [](const std::vector<engine::AttachOutcome>& o) { return jp::encode_attach(o); });
            });
          },
          [&](jp::ActivityOp&) { respond(id, Json{{"active", engine_.has_activity(owner)}}); },
          [&](jp::DisposeOwnerOp&) {
            const bool started = engine_.dispose_owner(owner, [this, id](Result<void> result) {
              if (result)
                respond(id, Json::object());
              else
                respond_error(id, result.error());
            });
            // A label that never named an owner has nothing to dispose.
            if (!started) respond(id, Json::object());
          },
          [&](jp::ShutdownOp&) { begin_shutdown(id); },
          [&](jp::HelloOp&) {
            respond(id, Json{{"name", "dshpty-repl"}, {"version", DSHPTY_VERSION}, {"protocol", jp::kProtocolVersion}});
          },
      },
      request.op);
}

void JsonServer::keep_finished_job(std::string key, FinishedJob job) {
  if (finished_jobs_.size() >= kMaxFinishedJobs && !finished_order_.empty()) {
    finished_jobs_.erase(finished_order_.front());
    finished_order_.pop_front();
  }
  finished_order_.push_back(key);
  finished_jobs_.insert_or_assign(std::move(key), std::move(job));
}

void JsonServer::begin_shutdown(std::optional<RequestId> id, bool leaving) {
  if (id) shutdown_ids_.push_back(std::move(*id));
  // A shutdown that arrives after the first one finished is answered at once.
  if (finished_) return answer_shutdowns();
  if (shutdown_started_) return;
  shutdown_started_ = true;
  auto settled = [this](Status result) {
    finished_ = true;
    shutdown_result_ = std::move(result);
    answer_shutdowns();
    if (hooks_.finished) hooks_.finished(shutdown_result_ ? 0 : 1);
  };
  if (leaving) {
    engine_.leave(std::move(settled));
  } else {
    engine_.shutdown(std::move(settled));
  }
}

void JsonServer::answer_shutdowns() {
  for (const RequestId& id : shutdown_ids_) {
    if (shutdown_result_)
      respond(id, Json::object());
    else
      respond_error(id, shutdown_result_.error());
  }
  shutdown_ids_.clear();
}

}  // namespace dshpty::repl
