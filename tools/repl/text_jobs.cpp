// The text face's jobs (docs/tool-protocol.md, "Jobs on the text face"): `send --background`
// numbers each job from 1 and answers at once, or with a condition once it holds; `output
// JOB` shows the job's new text from an offset this face keeps per job (reading moves no
// cursor of the session's), then how long it has run or, once it ended, the send's status
// lines; `stop JOB` says which signals went and what remains. The engine runs them; this
// file only numbers, remembers and prints.
#include <algorithm>
#include <string_view>

#include "render/status_lookalikes.hpp"
#include "render/text_format.hpp"
#include "text_session.hpp"

namespace dshpty::repl {

using namespace dshpty::render;

namespace {
double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string job_key(std::uint64_t number) { return "job-" + std::to_string(number); }

Error no_job(std::uint64_t number) {
  return make_error(Code::INVALID_ARGUMENT,
                    "no background job " + std::to_string(number) + " (send --background starts one)");
}
}  // namespace

TextSession::Job* TextSession::find_job(std::uint64_t number) {
  const auto it = jobs_.find(number);
  return it == jobs_.end() ? nullptr : &it->second;
}

std::optional<Error> TextSession::job_active(const std::string& session_id) {
  const auto live = engine_.live_send_on(kOwner, session_id);
  if (!live) return std::nullopt;
  for (const auto& [number, job] : jobs_) {
    if (job.key != *live) continue;
    const std::string n = std::to_string(number);
    return engine::send_active("background job " + n + " runs: output " + n + " reads it, stop " + n +
                               " stops it, signal SIGINT interrupts its command");
  }
  return std::nullopt;
}

void TextSession::start_job(engine::SessionSend send) {
  const std::uint64_t number = ++jobs_started_;
  const std::string key = job_key(number);
  const std::string session_id = send.session_id;
  const bool waits = send.request.until.any();
  send.request.background = true;
  jobs_[number] = Job{.key = key, .session_id = session_id, .started = std::chrono::steady_clock::now()};
  // Set once this command printed its answer: whichever of the condition and the job's
  // end comes first prints, the other only records.
  auto answered = std::make_shared<bool>(!waits);
  auto status = engine_.send(kOwner, std::move(send), key, [this, number, answered](Result<SendResult> result) {
    Job* job = find_job(number);
    if (job) job->result = result;
    if (std::exchange(*answered, true)) return forget_old_jobs();
    // It ended before its condition held: how, as a send says it.
    std::string text = format_job_started(std::to_string(number), job ? job->session_id : "") + "\n";
    if (result) {
      text += format_send(*result, cap());
      if (job) job->result_shown = true;
    } else {
      text += format_error(result.error());
    }
    print_(text);
    forget_old_jobs();
    finish();
  });
  if (!status) {
    jobs_.erase(number);
    --jobs_started_;
    const bool active = status.error()->code == Code::SEND_ACTIVE;
    print_(format_error(active ? job_active(session_id).value_or(status.error()) : status.error()));
    finish();
    return;
  }
  if (!waits) {
    print_(format_job_started(std::to_string(number), session_id) + "\n");
    finish();
    return;
  }
  const bool watched = engine_.when_condition(kOwner, key, [this, number, session_id, answered](ConditionOutcome outcome) {
    if (std::exchange(*answered, true)) return;
    const Job* job = find_job(number);
    print_(format_job_started(std::to_string(number), session_id) + "\n" + format_condition(outcome) +
           format_job_running(job ? seconds_since(job->started) : 0.));
    finish();
  });
  if (!watched) {
    // It waits behind a cancelled send (the engine's queue): answered at once, as the JSON face does.
    *answered = true;
    print_(format_job_started(std::to_string(number), session_id) + "\n");
    finish();
    return;
  }
  pending_ = Pending::job_condition;
  pending_key_ = key;
}

std::string TextSession::job_status(const Job& job) const {
  if (!job.result) return format_job_running(seconds_since(job.started));
  if (!*job.result) return "[job: ended]\n" + format_error(job.result->error());
  return format_send_parts(**job.result, cap()).status;
}

void TextSession::run_output(const TextCommand& command) {
  const std::uint64_t number = command.job;
  Job* job = find_job(number);
  if (!job) {
    print_(format_error(no_job(number)));
    return finish();
  }
  // Its end was shown whole already: every later read says so again, and nothing twice.
  if (job->result && job->result_shown) {
    print_("(no new output)\n" + job_status(*job));
    return finish();
  }
  engine::SendOutputRead read{.offset = job->offset, .wait = command.wait, .max_bytes = cap()};
  auto status = engine_.read_send_output(kOwner, job->key, read, [this, number](Result<engine::SendOutputAnswer> r) {
    if (!r) {
      print_(format_error(r.error()));
    } else {
      print_output(number, *r);
    }
    finish();
  });
  if (status) {
    if (command.wait) {
      pending_ = Pending::output_wait;
      pending_key_ = job->key;
    }
    return;
  }
  // The engine keeps only its newest settled sends; this face keeps more of its jobs' ends.
  if (job->result && status.error()->code == Code::INVALID_ARGUMENT) {
    // Nothing of it was read yet: its result's viewport is all that is left of its output.
    print_(job->offset == 0 && *job->result ? format_send(**job->result, cap()) : "(no new output)\n" + job_status(*job));
    job->result_shown = true;
  } else {
    print_(format_error(status.error()));
  }
  finish();
}

void TextSession::print_output(std::uint64_t number, const engine::SendOutputAnswer& answer) {
  Job* job = find_job(number);
  if (!job) {  // forgotten while the read waited (many jobs ended meanwhile)
    print_(format_error(no_job(number)));
    return;
  }
  std::string_view delta = answer.delta.text;
  std::uint64_t next = answer.next_offset;
  // Cut by the cap with more to come: end at the last whole line, the rest is the next read's.
  if (next < answer.output_end) {
    if (const auto end = delta.rfind('\n'); end != std::string_view::npos && end + 1 < delta.size()) {
      next -= delta.size() - (end + 1);
      delta = delta.substr(0, end + 1);
    }
  }
  job->offset = std::max(job->offset, next);
  std::string text;
  // The job's log keeps its newest bytes: a reader that fell behind is told, never a silent gap.
  if (answer.dropped_bytes > 0)
    text += "[earlier output dropped: " + std::to_string(answer.dropped_bytes) + " bytes]\n";
  if (delta.empty()) {
    text += "(no new output)\n";
  } else {
    // Output and our status lines share this text: a line posing as ours is marked.
    text += mark_status_lookalikes(delta);
    if (text.back() != '\n') text += '\n';
  }
  if (answer.done && job->offset < answer.output_end) {
    // More than one result's worth: the status waits for the last of it.
    text += "[job: ended; output " + std::to_string(number) + " shows more]\n";
  } else {
    if (answer.done) job->result_shown = true;
    text += job_status(*job);
  }
  print_(text);
}

void TextSession::run_stop(const TextCommand& command) {
  const std::uint64_t number = command.job;
  Job* job = find_job(number);
  if (!job) {
    print_(format_error(no_job(number)));
    return finish();
  }
  const std::string name = std::to_string(number);
  // It ended (its session may be gone too, which a stop would report as an error): nothing to stop.
  if (job->result) {
    print_(format_stop(name, StopResult{.stopped = true, .signals = {}, .remaining = {}}) + "\n");
    return finish();
  }
  auto status = engine_.stop_send(kOwner, job->key, [this, name](Result<StopResult> result) {
    print_(result ? format_stop(name, *result) + "\n" : format_error(result.error()));
    finish();
  });
  if (status) return;
  print_(format_error(status.error()));
  finish();
}

void TextSession::forget_old_jobs() {
  std::size_t ended = 0;
  for (const auto& [number, job] : jobs_) ended += job.result ? 1 : 0;
  // Numbers grow: the map's order is the jobs' age.
  for (auto it = jobs_.begin(); ended > kJobsKept && it != jobs_.end();) {
    if (it->second.result) {
      it = jobs_.erase(it);
      --ended;
    } else {
      ++it;
    }
  }
}

}  // namespace dshpty::repl
