#include "json_server.hpp"

#include <type_traits>
#include <utility>

#include "line_splitter.hpp"

namespace dshpty::repl {

namespace jp = json_protocol;

namespace {
constexpr std::size_t kSettledSendsKept = 64;

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;
}  // namespace

JsonServer::JsonServer(Service& service, std::size_t max_result_bytes, Hooks hooks)
    : service_(service), cap_(max_result_bytes), hooks_(std::move(hooks)) {}

JsonServer::~JsonServer() = default;

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
  respond_error(nullptr, make_error(Code::INVALID_ARGUMENT, "request line is longer than " +
                                                                std::to_string(kMaxRequestLineBytes) + " bytes"));
}

void JsonServer::end_of_input() { begin_shutdown(std::nullopt); }

void JsonServer::respond(const Json& id, Json result) {
  if (hooks_.write) hooks_.write(jp::serialize(jp::ok_response(id, std::move(result))));
}

void JsonServer::respond_error(const Json& id, const Error& error) {
  if (hooks_.write) hooks_.write(jp::serialize(jp::error_response(id, error)));
}

Owner JsonServer::owner_for(const std::string& label) {
  auto it = owners_.find(label);
  if (it == owners_.end()) it = owners_.emplace(label, service_.mint_owner(label)).first;
  return it->second;
}

std::shared_ptr<Send> JsonServer::find_send(const Json& send_id) const {
  const std::string key = jp::id_key(send_id);
  if (const auto it = sends_.find(key); it != sends_.end()) return it->second;
  for (const auto& [settled_key, send] : settled_)
    if (settled_key == key) return send;
  return nullptr;
}

void JsonServer::settle_one() {
  --pending_;
  maybe_finish();
}

void JsonServer::dispatch(jp::Request request) {
  const Json id = request.id;
  std::visit(
      Overloaded{
          [&](jp::OpenOp& op) {
            SpawnOptions options;
            options.type = std::move(op.type);
            options.name = std::move(op.name);
            options.cwd = std::move(op.cwd);
            ++pending_;
            service_.spawn(owner_for(request.owner), std::move(options), [this, id](Result<SpawnResult> result) {
              answer(id, result, [this](const SpawnResult& r) { return jp::encode_open(r, cap_); });
              settle_one();
            });
          },
          [&](jp::SendOp& op) {
            const std::string key = jp::id_key(id);
            if (sends_.count(key)) {
              respond_error(id, make_error(Code::INVALID_ARGUMENT, "a live send already uses request id " + key));
              return;
            }
            auto send = service_.start_send(
                owner_for(request.owner), op.session_id, std::move(op.request),
                [this, id, key](Result<SendResult> result) {
                  if (auto it = sends_.find(key); it != sends_.end()) {
                    settled_.emplace_back(key, std::move(it->second));
                    sends_.erase(it);
                    if (settled_.size() > kSettledSendsKept) settled_.pop_front();
                  }
                  answer(id, result, [this](const SendResult& r) { return jp::encode_send(r, cap_); });
                  settle_one();
                });
            if (!send) {
              respond_error(id, send.error());
              return;
            }
            ++pending_;
            sends_.emplace(key, std::move(send.value()));
          },
          [&](jp::CancelOp& op) {
            const auto send = find_send(op.send_id);
            if (!send) {
              respond_error(id, make_error(Code::INVALID_ARGUMENT, "no send with id " + jp::id_key(op.send_id)));
              return;
            }
            respond(id, Json{{"cancelled", send->cancel()}});
          },
          [&](jp::OutputOp& op) {
            const auto send = find_send(op.send_id);
            if (!send) {
              respond_error(id, make_error(Code::INVALID_ARGUMENT, "no send with id " + jp::id_key(op.send_id)));
              return;
            }
            respond(id, jp::encode_output(send->read_output(), cap_));
          },
          [&](jp::ReadOp& op) {
            auto page = service_.read(owner_for(request.owner), op.session_id, op.request);
            answer(id, page, [this](const ReadPage& p) { return jp::encode_read(p, cap_); });
          },
          [&](jp::SignalOp& op) {
            auto status = service_.signal(owner_for(request.owner), op.session_id, op.signal,
                                          [this, id](Result<SignalResult> result) {
                                            answer(id, result, jp::encode_signal);
                                            settle_one();
                                          });
            if (!status) {
              respond_error(id, status.error());
              return;
            }
            ++pending_;
          },
          [&](jp::CloseOp& op) {
            auto status = service_.kill(owner_for(request.owner), op.session_id, [this, id](Result<bool> result) {
              answer(id, result, [](bool closed) {
                return Json{{"outcome", closed ? "closed" : "already-closing"}};
              });
              settle_one();
            });
            if (!status) {
              respond_error(id, status.error());
              return;
            }
            ++pending_;
          },
          [&](jp::ListOp&) {
            Json sessions = Json::array();
            for (const auto& session : service_.list(owner_for(request.owner)))
              sessions.push_back(jp::encode_snapshot(session));
            respond(id, Json{{"sessions", std::move(sessions)}});
          },
          [&](jp::ActivityOp&) {
            respond(id, Json{{"active", service_.has_owner_activity(owner_for(request.owner))}});
          },
          [&](jp::DisposeOwnerOp&) {
            // The label names a new owner from now on, even while this one is torn down.
            const auto it = owners_.find(request.owner);
            if (it == owners_.end()) {
              respond(id, Json::object());
              return;
            }
            const Owner owner = it->second;
            owners_.erase(it);
            ++pending_;
            service_.dispose_owner(owner, [this, id](Result<void> result) {
              if (result)
                respond(id, Json::object());
              else
                respond_error(id, result.error());
              settle_one();
            });
          },
          [&](jp::ShutdownOp&) { begin_shutdown(id); },
      },
      request.op);
}

void JsonServer::begin_shutdown(std::optional<Json> id) {
  if (id) shutdown_ids_.push_back(std::move(*id));
  if (shutting_down_) {
    maybe_finish();
    return;
  }
  shutting_down_ = true;
  service_.dispose([this](Result<void> result) {
    disposed_ = true;
    if (!result) dispose_error_ = result.error();
    maybe_finish();
  });
}

void JsonServer::maybe_finish() {
  if (!disposed_ || pending_ != 0) return;
  // A shutdown that arrives after the first one finished is answered at once.
  for (const Json& id : shutdown_ids_) {
    if (dispose_error_)
      respond_error(id, dispose_error_);
    else
      respond(id, Json::object());
  }
  shutdown_ids_.clear();
  if (finished_) return;
  finished_ = true;
  // The service is gone: drop what still points into it.
  sends_.clear();
  settled_.clear();
  if (hooks_.finished) hooks_.finished(dispose_error_ ? 1 : 0);
}

}  // namespace dshpty::repl
