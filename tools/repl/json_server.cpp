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
            // A job with a condition answers when it holds (or its timeout, or the job's end).
            const bool waits = background && op.request.until.any();
            auto acked = std::make_shared<bool>(false);
            const std::string session_id = op.session_id;
            const std::string key = jp::id_key(id);
            finished_jobs_.erase({owner, key});  // an id used again names the new send
            auto status = engine_.send(owner, std::move(op), key,
                                       [this, id, background, waits, acked, key, session_id,
                                        owner = std::string(owner)](Result<SendResult> result) {
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
              keep_finished_job({owner, key}, {result ? jp::encode_send(result.value())
                                                      : Json{{"error", jp::encode_error(result.error())}}});
              if (!waits || std::exchange(*acked, true)) return;
              // The job ended before its condition held: the answer says how, with its result.
              if (!result) return respond_error(id, result.error());
              Json out = job_ack(id, session_id);
              out["waitReason"] = std::string(wait_reason_name(result->wait_reason));
              out["done"] = true;
              out["result"] = finished_jobs_[{owner, key}].result;
              respond(id, std::move(out));
            });
            // A job answers at once (with a condition: once it holds): its id is the request's,
            // its result comes through `output`.
            if (status && background) {
              const bool watched = waits && engine_.when_condition(owner, key, [this, id, acked, session_id](ConditionOutcome o) {
                if (std::exchange(*acked, true)) return;
                Json out = job_ack(id, session_id);
                out["waitReason"] = std::string(wait_reason_name(o.reason));
                if (o.match) out["match"] = jp::encode_match(*o.match);
                out["done"] = false;
                respond(id, std::move(out));
              });
              if (!watched) {
                *acked = true;
                respond(id, job_ack(id, session_id));
              }
            }
            const auto live = !status && status.error()->code == Code::SEND_ACTIVE
                                  ? engine_.live_send_on(owner, session_id) : std::nullopt;
            if (live) {
              // Name the send (a job, say) and how to read it; its key is its id as JSON text.
              const Json parsed = Json::parse(*live, nullptr, /*allow_exceptions=*/false);
              const std::string job = parsed.is_discarded() ? Json(*live).dump() : parsed.dump();
              respond_error(id, engine::send_active("send " + job + " runs; {\"op\": \"output\", \"sendId\": " + job +
                                                    "} reads it, {\"op\": \"stop\", \"sendId\": " + job +
                                                    "} stops it, {\"op\": \"signal\", \"signal\": \"SIGINT\"} interrupts "
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
            const std::string key = jp::id_key(op.send_id);
            answer(id, engine_.cancel_send(owner, key), [&](bool cancelled) {
              Json out{{"cancelled", cancelled}};
              // Live, and nothing done to it: say why (a relay has its text).
              if (!cancelled && engine_.send_running(owner, key)) out["reason"] = std::string(engine::kCancelDeclined);
              return out;
            });
          },
          [&](jp::OutputOp& op) {
            const std::string key = jp::id_key(op.send_id);
            op.read.max_bytes = cap;
            const bool by_offset = op.read.offset.has_value();
            auto status = engine_.read_send_output(
                owner, key, op.read,
                [this, id, key, cap, by_offset, owner = std::string(owner)](Result<engine::SendOutputAnswer> r) {
                  if (!r) return respond_error(id, r.error());
                  // A reader by offset is done once the send ended and it read to the end: a
                  // delta is capped, and a reader that stops at `done` must not lose the tail.
                  if (by_offset && r->next_offset < r->output_end) r->done = false;
                  const FinishedJob* job = r->done ? finished_job(owner, key) : nullptr;
                  // The cursor's last read of a finished job: its result holds the whole viewport.
                  // Its own cut says what it omits (`truncated`, `omittedBytes`), not droppedBytes.
                  if (job && !by_offset) {
                    r->delta = OutputDelta{};
                    r->dropped_bytes = 0;
                  }
                  Json out = jp::encode_output(r->delta, cap);
                  out["nextOffset"] = r->next_offset;
                  // The consuming cursor's delta keeps its newest `cap` bytes: the older ones
                  // it cut are lost to this reader too, and counted.
                  const std::size_t cut = r->delta.text.size() - out["delta"].get_ref<const std::string&>().size();
                  out["droppedBytes"] = r->dropped_bytes + (by_offset ? 0 : cut);
                  out["done"] = r->done;
                  if (job) out["result"] = job->result;
                  respond(id, std::move(out));
                });
            if (status) return;
            // A job the engine no longer keeps: its result, if this face still has it.
            const Code code = status.error()->code;
            const bool unknown = code == Code::INVALID_ARGUMENT || code == Code::FOREIGN_SESSION;
            if (const FinishedJob* job = finished_job(owner, key); job && unknown && !by_offset)
              return respond(id, Json{{"delta", ""}, {"truncated", false}, {"nextOffset", 0}, {"droppedBytes", 0},
                                      {"done", true}, {"result", job->result}});
            if (code == Code::INVALID_ARGUMENT && others_finished(owner, key))
              return respond_error(id, make_error(Code::FOREIGN_SESSION, "send " + key + " belongs to another owner"));
            respond_error(id, status.error());
          },
          [&](jp::StopOp& op) {
            const std::string key = jp::id_key(op.send_id);
            auto status = engine_.stop_send(owner, key, [this, id](Result<StopResult> result) {
              answer(id, result, jp::encode_stop);
            });
            if (status) return;
            const Code code = status.error()->code;
            if (finished_job(owner, key) && (code == Code::INVALID_ARGUMENT || code == Code::FOREIGN_SESSION))
              return respond(id, jp::encode_stop(StopResult{.stopped = true, .signals = {}, .remaining = {}}));
            if (code == Code::INVALID_ARGUMENT && others_finished(owner, key))
              return respond_error(id, make_error(Code::FOREIGN_SESSION, "send " + key + " belongs to another owner"));
            respond_error(id, status.error());
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
            for (const auto& session : engine_.list_activity(owner)) {
              Json s = jp::encode_snapshot(session);
              // The live send that runs it, by its request id, when it is this owner's.
              if (s.contains("activity") && s["activity"].contains("job"))
                if (auto key = engine_.live_send_on(owner, session.id)) {
                  const Json parsed = Json::parse(*key, nullptr, /*allow_exceptions=*/false);
                  if (!parsed.is_discarded()) s["activity"]["job"]["sendId"] = parsed;
                }
              s["observers"] = engine_.observers(session.id);  // people watching (docs/watch.md)
              sessions.push_back(std::move(s));
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

JsonServer::Json JsonServer::job_ack(const RequestId& id, const std::string& session_id) {
  Json job = Json::parse(id.token(), nullptr, /*allow_exceptions=*/false);
  return Json{{"job", job.is_discarded() ? Json(nullptr) : std::move(job)}, {"sessionId", session_id}};
}

const JsonServer::FinishedJob* JsonServer::finished_job(const std::string& owner, const std::string& key) const {
  const auto it = finished_jobs_.find({owner, key});
  return it == finished_jobs_.end() ? nullptr : &it->second;
}

bool JsonServer::others_finished(const std::string& owner, const std::string& key) const {
  for (const auto& [job, kept] : finished_jobs_)
    if (job.first != owner && job.second == key) return true;
  return false;
}

void JsonServer::keep_finished_job(JobKey key, FinishedJob job) {
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
