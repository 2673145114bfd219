#include "mcp_server.hpp"

#include <algorithm>
#include <cstdio>

#include <sys/random.h>
#include <utility>

#include <ev.h>

#include "line_splitter.hpp"
#include "text/truncation.hpp"
#include "render/linger_format.hpp"
#include "render/text_format.hpp"
#include "session_lookup.hpp"
#include "text/truncation.hpp"

#ifndef DSHPTY_VERSION
#define DSHPTY_VERSION "unknown"
#endif

namespace dshpty::mcp {

namespace {

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

Json text_item(std::string text) { return Json{{"type", "text"}, {"text", std::move(text)}}; }

Json tool_result(std::string text, bool is_error) {
  return Json{{"content", Json::array({text_item(std::move(text))})}, {"isError", is_error}};
}

constexpr const char* kInstructions =
    "Persistent terminal sessions on this machine: open one with terminal_open, run commands with terminal_send "
    "(it waits until the terminal is ready for input and says why it stopped waiting), and close it when done. "
    "State persists between calls.";

}  // namespace

McpServer::McpServer(struct ev_loop* loop, engine::Engine& engine, Hooks hooks)
    : engine_(engine),
      hooks_(std::move(hooks)),
      deferred_(loop),
      progress_(loop, engine, std::string(kOwner), [this](const Json& token, std::uint64_t progress, std::string text) {
        write(rpc::notification("notifications/progress",
                                Json{{"progressToken", token}, {"progress", progress}, {"message", std::move(text)}}));
      }) {
  loop_ = loop;
  engine_.owner(kOwner);  // minted now, as the server starts
  // Job numbers start at a random point, so a job id a model kept from before a restart of
  // the server (lingering sessions outlive it) names no job of this one.
  std::uint32_t seed = 0;
  if (::getrandom(&seed, sizeof seed, GRND_NONBLOCK) != sizeof seed) seed = static_cast<std::uint32_t>(ev_time() * 1e6);
  jobs_minted_ = 100 + seed % 900000;
}

void McpServer::write(const Json& message) {
  if (hooks_.write) hooks_.write(rpc::serialize(message));
}

void McpServer::respond(std::string line) {
  if (batch_) {
    batch_->responses.push_back(std::move(line));
  } else if (hooks_.write) {
    hooks_.write(std::move(line));
  }
}

void McpServer::handle_line(std::string_view line) {
  if (line.find_first_not_of(" \t\r") == std::string_view::npos) return;
  handle_message(rpc::parse(line), /*in_batch=*/false);
}

void McpServer::handle_message(rpc::Message message, bool in_batch) {
  std::visit(Overloaded{[&](rpc::Request& request) { handle_request(std::move(request)); },
                        [&](rpc::Notification& notification) { handle_notification(notification); },
                        [&](rpc::Reply&) {},
                        [&](rpc::Batch& batch) {
                          if (in_batch) {
                            respond(rpc::error({}, rpc::kInvalidRequest, "a batch may not hold a batch"));
                          } else if (version_ != kBatchVersion) {
                            respond(rpc::error({}, rpc::kInvalidRequest,
                                               "a message must be a JSON object (batches are protocol " +
                                                   std::string(kBatchVersion) + " only)"));
                          } else if (batch.items.empty()) {
                            respond(rpc::error({}, rpc::kInvalidRequest, "an empty batch"));
                          } else {
                            handle_batch(batch.items);
                          }
                        },
                        [&](rpc::Invalid& invalid) {
                          if (invalid.tool_call)
                            respond(rpc::result(invalid.id, tool_result(render::format_error(make_error(
                                                                            Code::INVALID_ARGUMENT, invalid.message)),
                                                                        true)));
                          else
                            respond(rpc::error(invalid.id, invalid.code, invalid.message));
                        }},
             message);
}

void McpServer::handle_batch(const std::vector<std::string>& items) {
  auto batch = std::make_shared<Batch>();
  batch->waiting = 1;  // until every item was handled: calls that finish at once count too
  batch_ = batch;
  for (const std::string& item : items) handle_message(rpc::parse(item), /*in_batch=*/true);
  batch_.reset();
  batch_settled(batch);
}

void McpServer::batch_settled(const std::shared_ptr<Batch>& batch) {
  if (--batch->waiting > 0) return;
  // Notifications alone (or calls the client cancelled): JSON-RPC sends nothing back.
  if (batch->responses.empty() || !hooks_.write) return;
  std::string line = "[";
  for (std::size_t i = 0; i < batch->responses.size(); ++i) line += (i ? "," : "") + batch->responses[i];
  hooks_.write(line + "]");
}

void McpServer::handle_overlong_line() {
  respond(rpc::error({}, rpc::kInvalidRequest,
                     "message is longer than " + std::to_string(tool::kMaxRequestLineBytes) + " bytes"));
}

void McpServer::end_of_input() {
  if (shutdown_started_) return;
  shutdown_started_ = true;
  // The client went away: sessions opened with linger outlive us (a restarted server
  // takes them over with terminal_attach).
  engine_.leave([this](Status result) {
    // stdout is the protocol's: a failed teardown goes to stderr, and into the exit status.
    if (!result) std::fprintf(stderr, "dshpty-mcp: %s", render::format_error(result.error()).c_str());
    if (hooks_.finished) hooks_.finished(result ? 0 : 1);
  });
}

void McpServer::handle_request(rpc::Request request) {
  const RequestId& id = request.id;
  if (request.method == "initialize") {
    const Json requested = request.params.is_object() ? request.params.value("protocolVersion", Json()) : Json();
    version_ = negotiate_version(requested);
    respond(rpc::result(id, Json{{"protocolVersion", version_},
                               {"capabilities", {{"tools", {{"listChanged", false}}}}},
                               {"serverInfo", {{"name", "dshpty-mcp"}, {"version", DSHPTY_VERSION}}},
                               {"instructions", kInstructions}}));
  } else if (request.method == "ping") {
    respond(rpc::result(id, Json::object()));
  } else if (request.method == "tools/list") {
    respond(rpc::result(id, Json{{"tools", tool_list(engine_.backend_types(), engine_.settings().policy)}}));
  } else if (request.method == "tools/call") {
    call_tool(id, request.params);
  } else {
    respond(rpc::error(id, rpc::kMethodNotFound, "method not found: " + request.method));
  }
}

void McpServer::handle_notification(const rpc::Notification& notification) {
  if (notification.method == "notifications/cancelled" && !notification.request_id.is_null())
    cancel(notification.request_id);
  // notifications/initialized and any other notification need nothing from us.
}

void McpServer::call_tool(const RequestId& id, const Json& params) {
  const auto name = params.is_object() ? params.find("name") : params.end();
  if (!params.is_object() || name == params.end() || !name->is_string()) {
    respond(rpc::error(id, rpc::kInvalidParams, "tools/call needs a \"name\""));
    return;
  }
  const std::string key = id.key();
  if (calls_.count(key)) {
    respond(rpc::error(id, rpc::kInvalidRequest, "request id " + id.token() + " is already in use by a call in flight"));
    return;
  }
  auto parsed = parse_tool_call(name->get<std::string>(), params.value("arguments", Json()));
  if (!parsed) {
    respond(rpc::error(id, rpc::kInvalidParams, "unknown tool: " + name->get<std::string>()));
    return;
  }
  Json token;
  if (const auto meta = params.find("_meta"); meta != params.end() && meta->is_object())
    if (const auto t = meta->find("progressToken"); t != meta->end() && (t->is_string() || t->is_number_integer()))
      token = *t;
  calls_[key] = Call{.id = id, .batch = batch_};
  if (batch_) ++batch_->waiting;
  if (!*parsed) {
    fail(key, parsed->error());
    return;
  }
  run(key, std::move(parsed->value()), std::move(token));
}

std::string McpServer::session_id(const std::string& word) {
  // A word that names nothing goes to the service as is, which answers NO_SESSION.
  return engine_.resolve(kOwner, word).value_or(word);
}

void McpServer::run(const std::string& key, ToolCall call, Json progress_token) {
  // After a restart the agent still names its session by the name it gave: when that is a
  // lingering session's, the answer says how to take it over.
  const std::string* word = std::visit(
      [](auto& c) -> const std::string* {
        if constexpr (requires { c.session; }) return &c.session;
        return nullptr;
      },
      call);
  if (word) {
    if (auto name = engine_.lingering_named(kOwner, *word)) {
      fail(key, engine::lingering_no_session(*name, "terminal_attach {\"name\": " + Json(*name).dump() + "}"));
      return;
    }
  }
  std::visit(
      Overloaded{
          [&](OpenCall& open) {
            calls_[key].is_open = true;
            engine_.open(
                kOwner, std::move(open.request),
                [this, key](Result<SpawnResult> result) {
                  reply(key, result, [this](const SpawnResult& r) { return render::format_open(r, cap()); });
                },
                key);
          },
          [&](SendCall& send) {
            if (send.request.background) return start_job(key, std::move(send));
            start_send(key, std::move(send), std::move(progress_token));
          },
          [&](OutputCall& output) { read_job(key, output); },
          [&](StopCall& stop) {
            const std::string job = stop.job;
            auto status = engine_.stop_send(kOwner, job, [this, key, job](Result<StopResult> result) {
              reply(key, result, [&job](const StopResult& r) { return render::format_stop(job, r); });
            });
            if (!status) fail(key, status.error());
          },
          [&](ReadCall& read) {
            if (read.screen) {
              reply(key, engine_.screen(kOwner, {.session_id = session_id(read.session)}),
                    [this](const ScreenSnapshot& shot) { return render::format_screen(shot, cap()); });
              return;
            }
            reply(key, engine_.read(kOwner, {.session_id = session_id(read.session), .request = read.request}),
                  [this](const ReadPage& page) { return render::format_read(page, cap()); });
          },
          [&](SignalCall& signal) {
            auto status = engine_.signal(kOwner, {.session_id = session_id(signal.session), .signal = signal.signal},
                                         [this, key](Result<SignalResult> result) {
                                           reply(key, result, render::format_signal);
                                         });
            if (!status) fail(key, status.error());
          },
          [&](CloseCall& close) {
            const std::string id = session_id(close.session);
            auto status = engine_.close(kOwner, {.session_id = id}, [this, key, id](Result<bool> result) {
              reply(key, result, [&id](bool closed) { return render::format_close(id, closed); });
            });
            if (!status) fail(key, status.error());
          },
          [&](ListCall&) {
            std::string text = render::format_list(engine_.list_activity(kOwner), [this](std::string_view id) { return engine_.observers(id); });
            // Lingering sessions nobody holds; an unusable state directory just shows none.
            if (auto lingering = engine_.lingering(kOwner))
              text += render::format_lingering(*lingering, "terminal_attach");
            finish(key, std::move(text), false);
          },
          [&](AttachCall& attach) {
            engine_.attach(kOwner, std::move(attach.name), [this, key](Result<std::vector<engine::AttachOutcome>> result) {
              reply(key, result, render::format_attach);
            });
          },
          [&](ResizeCall& resize) {
            const std::string id = session_id(resize.session);
            auto status = engine_.resize(kOwner, {.session_id = id, .rows = resize.rows, .cols = resize.cols});
            if (status)
              finish(key, render::format_resize(id, resize.rows, resize.cols), false);
            else
              fail(key, status.error());
          },
      },
      call);
}

void McpServer::start_send(const std::string& key, SendCall call, Json progress_token) {
  const auto it = calls_.find(key);
  if (it == calls_.end()) return;
  Call& entry = it->second;
  const std::string id = session_id(call.session);
  entry.is_send = true;
  entry.session_id = id;
  // A send right after a cancelled one waits for it in the engine (docs/tool-protocol.md).
  auto status = engine_.send(kOwner, {.session_id = id, .request = std::move(call.request)}, key,
                             [this, key](Result<SendResult> result) {
                               progress_.forget(key);
                               if (result)
                                 finish_send(key, *result);
                               else
                                 fail(key, result.error());
                             });
  if (!status) {
    Error error = status.error();
    if (error->code == Code::SEND_ACTIVE) error = job_active(id).value_or(
      engine::send_active("its command can be interrupted with terminal_signal {\"signal\": \"SIGINT\"}, "
                          "or that terminal_send call cancelled (notifications/cancelled); "
                          "keys go in once it has ended"));
    fail(key, error);
    return;
  }
  if (!progress_token.is_null()) progress_.watch(key, id, std::move(progress_token));
}

void McpServer::start_job(const std::string& key, SendCall call) {
  const std::string id = session_id(call.session);
  const std::string job = "job-" + std::to_string(++jobs_minted_);
  const bool waits = call.request.until.any();
  auto acked = std::make_shared<bool>(false);
  jobs_[job] = Job{.session_id = id, .started = ev_now(loop_), .result = std::nullopt};
  auto status = engine_.send(kOwner, {.session_id = id, .request = std::move(call.request)}, job,
                             [this, key, job, id, waits, acked](Result<SendResult> result) {
                               if (auto it = jobs_.find(job); it != jobs_.end()) it->second.result = result;
                               forget_old_jobs();
                               if (!waits || std::exchange(*acked, true)) return;
                               // It ended before its condition held: how, as a send says it.
                               if (!result) return fail(key, result.error());
                               render::SendText parts = render::format_send_parts(*result, cap());
                               answer(key, Json{{"content", Json::array({text_item(render::format_job_started(job, id) +
                                                                                   "\n" + parts.output),
                                                                         text_item(std::move(parts.status))})},
                                                {"isError", false}});
                             });
  if (!status) {
    jobs_.erase(job);
    --jobs_minted_;
    Error error = status.error();
    if (error->code == Code::SEND_ACTIVE)
      error = job_active(id).value_or(
          engine::send_active("its command can be interrupted with terminal_signal {\"signal\": \"SIGINT\"}"));
    return fail(key, error);
  }
  const bool watched = waits && engine_.when_condition(kOwner, job, [this, key, job, id, acked](ConditionOutcome outcome) {
    if (std::exchange(*acked, true)) return;
    const double ran = ev_now(loop_) - jobs_[job].started;
    answer(key, Json{{"content", Json::array({text_item(render::format_job_started(job, id)),
                                              text_item(render::format_condition(outcome) + render::format_job_running(ran))})},
                     {"isError", false}});
  });
  if (!watched) {
    *acked = true;
    finish(key, render::format_job_started(job, id), false);
  }
}

std::optional<Error> McpServer::job_active(const std::string& session_id) {
  const auto live = engine_.live_send_on(kOwner, session_id);
  if (!live || !jobs_.count(*live)) return std::nullopt;
  return engine::send_active("background job " + *live + " runs: terminal_output {\"job\": \"" + *live +
                             "\"} reads it, terminal_stop {\"job\": \"" + *live + "\"} stops it");
}

void McpServer::read_job(const std::string& key, const OutputCall& call) {
  const std::string job = call.job;
  // Read by this server's own offset of the job: the engine's window says exactly what it no
  // longer had, and what is new is cut by the one truncation rule (head and tail kept).
  const auto known = jobs_.find(job);
  engine::SendOutputRead read{.offset = known != jobs_.end() ? known->second.offset : 0, .wait = call.wait,
                              .max_bytes = kJobReadBytes};
  auto status = engine_.read_send_output(kOwner, job, read, [this, key, job](Result<engine::SendOutputAnswer> r) {
    if (!r) return fail(key, r.error());
    const auto it = jobs_.find(job);
    if (it != jobs_.end()) it->second.offset = std::max(it->second.offset, r->next_offset);
    std::string_view text = r->delta.text;
    std::uint64_t dropped = r->dropped_bytes;
    if (dropped > 0) {  // the window starts mid-line: its partial first line is dropped too
      const auto nl = text.find('\n');
      const std::size_t partial = nl == std::string_view::npos ? text.size() : nl + 1;
      dropped += partial;
      text.remove_prefix(partial);
    }
    std::string output = dropped ? "[earlier output dropped: " + std::to_string(dropped) + " bytes]\n" : "";
    output += text::cut_to_fit(text, cap()).text;
    if (output.empty()) output = "(no new output)";
    std::string status;
    if (r->done && it != jobs_.end() && it->second.result && *it->second.result) {
      status = render::format_send_parts(**it->second.result, cap()).status;
    } else if (r->done) {
      status = "[job: ended]\n";
    } else {
      status = render::format_job_running(it != jobs_.end() ? ev_now(loop_) - it->second.started : 0.);
    }
    answer(key, Json{{"content", Json::array({text_item(std::move(output)), text_item(std::move(status))})},
                     {"isError", false}});
  });
  if (!status) {
    Error error = status.error();
    if (error->code == Code::INVALID_ARGUMENT && !jobs_.count(job))
      error = make_error(Code::INVALID_ARGUMENT, "no background job " + job + " (terminal_send with run_in_background "
                                                 "starts one)");
    fail(key, error);
  }
}

void McpServer::forget_old_jobs() {
  std::size_t ended = 0;
  for (const auto& [id, job] : jobs_) ended += job.result ? 1 : 0;
  for (auto it = jobs_.begin(); ended > kJobsKept && it != jobs_.end();) {
    // job-N sorts as text: the oldest by its number.
    auto oldest = jobs_.end();
    for (auto j = jobs_.begin(); j != jobs_.end(); ++j)
      if (j->second.result && (oldest == jobs_.end() || std::stoull(j->first.substr(4)) < std::stoull(oldest->first.substr(4))))
        oldest = j;
    if (oldest == jobs_.end()) break;
    jobs_.erase(oldest);
    --ended;
    it = jobs_.begin();
  }
}

void McpServer::cancel(const RequestId& request_id) {
  const auto it = calls_.find(request_id.key());
  if (it == calls_.end() || it->second.cancelled) return;  // answered already, or unknown
  Call& call = it->second;
  call.cancelled = true;
  const std::string& key = it->first;
  if (call.is_send) {
    progress_.forget(key);
    // A real SIGINT to the session's foreground group; the send then settles through its
    // normal readiness, and its result is dropped. One waiting behind a cancelled send is
    // dropped before it starts.
    (void)engine_.cancel_send(kOwner, key);
  } else if (call.is_open) {
    engine_.abort_open(key, make_error(Code::ABORTED, "open cancelled by the client"));
  }
  // Anything else (a signal, a close) completes on its own; its result is dropped.
}

void McpServer::finish(const std::string& key, std::string text, bool is_error) {
  answer(key, tool_result(std::move(text), is_error));
}

void McpServer::fail(const std::string& key, const Error& error) { finish(key, render::format_error(error), true); }

void McpServer::finish_send(const std::string& key, const SendResult& result) {
  const auto it = calls_.find(key);
  if (it == calls_.end()) return;
  const std::string session = it->second.session_id;
  // The cap bounds the output (the backend cut the viewport to it); the status lines are
  // never cut.
  render::SendText parts = render::format_send_parts(result, cap());
  // Ended on the alternate screen: what was printed before the switch, then the screen.
  std::string printed = parts.screen ? parts.before_screen : result.viewport.empty() ? "" : parts.output;
  if (it->second.cancelled) {
    // No response goes out, but the result moved the session's shown-output cursor: what it
    // held (the command in front's output, say) is the next send's on this session.
    if (!printed.empty()) {
      Unshown& held = unshown_[session];
      held.output = fit(held.output + printed);
      held.call = it->second.id.token();
    }
    answer(key, Json());
    return;
  }
  if (const auto held = unshown_.find(session); held != unshown_.end()) {
    parts.output = fit(held->second.output + (parts.screen ? parts.before_screen + parts.output : printed));
    parts.status += "[first: the output of cancelled call " + held->second.call + ", which got no response]\n";
    unshown_.erase(held);
  } else if (parts.screen && !parts.before_screen.empty()) {
    parts.output = fit(parts.before_screen + parts.output);
  }
  // A limit the session reached, read when the send settled (as terminal_list shows it).
  if (const auto it = calls_.find(key); it != calls_.end())
    if (auto hit = engine_.limit_hit(kOwner, it->second.session_id))
      parts.status += render::format_limit_hit(*hit) + "\n";
  answer(key, Json{{"content", Json::array({text_item(std::move(parts.output)), text_item(std::move(parts.status))})},
                   {"isError", false}});
}

std::string McpServer::fit(std::string text) const {
  if (text.size() <= cap()) return text;
  std::string out = text::cut_to_fit(text, cap()).text;
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

void McpServer::answer(const std::string& key, Json result) {
  const auto it = calls_.find(key);
  if (it == calls_.end()) return;
  const RequestId id = it->second.id;
  const bool cancelled = it->second.cancelled;
  const auto batch = std::move(it->second.batch);
  calls_.erase(it);
  // The client cancelled it: the protocol says no response.
  if (!cancelled) {
    std::string line = rpc::result(id, std::move(result));
    if (batch) {
      batch->responses.push_back(std::move(line));
    } else if (hooks_.write) {
      hooks_.write(std::move(line));
    }
  }
  if (batch) batch_settled(batch);
}

}  // namespace dshpty::mcp
