// The engine's side of jobs: reading a send's output by offset (or its consuming cursor)
// with a wait for more, stopping a send's job, and a background send's condition. A wait
// costs one weak registration with the send and one timer: woken by the backend when output
// past the reader's offset arrives, by the send's completion (after the face stored its
// result, so "done" and the result come together), or by its timer; never a poll.
#include <algorithm>

#include "engine.hpp"
#include "engine_counted.hpp"
#include "loop/timer.hpp"

namespace dshpty::engine {

struct Engine::OutputWait {
  Engine* engine = nullptr;
  std::string owner;
  std::string key;
  SendOutputRead read;
  std::shared_ptr<Send> send;
  Callback<SendOutputAnswer> done;
  std::shared_ptr<const std::function<void()>> token;  // the send's wake-up, held while waiting
  std::uint64_t from = 0;  // the offset new output is past
  shell::Timer timer;
  void on_timer();
};

Result<SendOutputAnswer> Engine::take_output(const SendTable::Entry& entry, std::string_view send_key,
                                             const SendOutputRead& read) {
  SendOutputAnswer out;
  out.done = !sends_.is_live(entry.owner, send_key);
  out.output_end = entry.send->output_end();
  if (!read.offset) {
    out.delta = entry.send->read_output();
    out.next_offset = entry.send->output_end();
    out.dropped_bytes = out.delta.dropped_bytes;
    return out;
  }
  auto job = entry.send->output(*read.offset, std::max<std::size_t>(read.max_bytes, 1));
  if (!job) return job.error();
  out.delta.text = std::move(job->text);
  out.delta.truncated = job->dropped_bytes > 0;
  out.next_offset = job->next_offset;
  out.dropped_bytes = job->dropped_bytes;
  return out;
}

Status Engine::read_send_output(std::string_view owner, std::string_view send_key, const SendOutputRead& read,
                                Callback<SendOutputAnswer> done) {
  auto found = find_send(owner, send_key);
  if (!found) return found.error();
  if (found->queued) {
    if (read.offset && *read.offset > 0)
      return make_error(Code::INVALID_ARGUMENT, "offset " + std::to_string(*read.offset) + " is past the send's output (0 bytes)");
    // It has not started: no output yet.
    late_.post([done = owed(std::move(done))] { done(SendOutputAnswer{}); });
    return {};
  }
  const SendTable::Entry& entry = *found->entry;
  auto first = take_output(entry, send_key, read);
  if (!first) return first.error();
  const bool nothing_new = first->delta.text.empty() && first->dropped_bytes == 0 && !first->done;
  if (!read.wait || !nothing_new) {
    late_.post([done = owed(std::move(done)), answer = std::move(*first)]() mutable { done(std::move(answer)); });
    return {};
  }
  auto wait = std::make_shared<OutputWait>();
  wait->engine = this;
  wait->owner = std::string(owner);
  wait->key = std::string(send_key);
  wait->read = read;
  wait->send = entry.send;
  wait->done = owed(std::move(done));
  wait->timer.bind<&OutputWait::on_timer>(service_.loop(), wait.get());
  wait->timer.start(*read.wait);
  wait->from = read.offset.value_or(first->next_offset);
  arm_wait(wait);
  waits_.push_back(std::move(wait));
  return {};
}

void Engine::arm_wait(const std::shared_ptr<OutputWait>& wait) {
  std::weak_ptr<OutputWait> weak = wait;
  wait->token = wait->send->when_output(wait->from, [weak] {
    if (auto w = weak.lock()) w->engine->finish_wait(w, /*woken=*/true);
  });
}

void Engine::OutputWait::on_timer() {
  for (const auto& w : engine->waits_) {
    if (w.get() == this) return engine->finish_wait(w);
  }
}

void Engine::finish_wait(const std::shared_ptr<OutputWait>& wait, bool woken) {
  auto it = std::find(waits_.begin(), waits_.end(), wait);
  if (it == waits_.end()) return;  // answered already
  auto held = *it;  // keeps it while its callback runs
  Result<SendOutputAnswer> answer = SendOutputAnswer{};
  if (const auto* entry = sends_.find(held->owner, held->key); entry && entry->send == held->send) {
    answer = take_output(*entry, held->key, held->read);
    // Woken with nothing to give (the output grew where this reader sees nothing new):
    // it waits on, for what its wait promised.
    if (woken && answer && answer->delta.text.empty() && answer->dropped_bytes == 0 && !answer->done) {
      held->from = std::max(held->from + 1, answer->next_offset);
      return arm_wait(held);
    }
  }
  waits_.erase(std::find(waits_.begin(), waits_.end(), held));
  held->timer.stop();
  held->token.reset();
  if (const auto* entry = sends_.find(held->owner, held->key); entry && entry->send == held->send) {
    if (!answer) answer = take_output(*entry, held->key, held->read);
  } else {
    // The table forgot it meanwhile (a newer send took its key, or it aged out): it ended.
    answer = SendOutputAnswer{.delta = {}, .next_offset = held->read.offset.value_or(0), .dropped_bytes = 0, .done = true};
  }
  held->done(std::move(answer));
}

bool Engine::answer_output_waits(std::string_view owner, std::string_view send_key) {
  std::vector<std::shared_ptr<OutputWait>> woken;
  for (const auto& w : waits_)
    if (w->owner == owner && w->key == send_key) woken.push_back(w);
  for (const auto& w : woken) finish_wait(w);
  return !woken.empty();
}

Status Engine::stop_send(std::string_view owner, std::string_view send_key, Callback<StopResult> done) {
  auto found = find_send(owner, send_key);
  if (!found) return found.error();
  if (found->queued) {
    // It never started: dropped (its own answer is ABORTED), nothing of it runs.
    if (auto dropped = cancel_send(owner, send_key); !dropped) return dropped.error();
    late_.post([done = owed(std::move(done))] { done(StopResult{.stopped = true, .signals = {}, .remaining = {}}); });
    return {};
  }
  Status status = found->entry->send->stop(counted(std::move(done)));
  if (status) ++pending_;
  return status;
}

bool Engine::when_condition(std::string_view owner, std::string_view send_key,
                            std::function<void(ConditionOutcome)> done) {
  if (!sends_.is_live(owner, send_key)) return false;
  sends_.find(owner, send_key)->send->when_condition(std::move(done));
  return true;
}

}  // namespace dshpty::engine
