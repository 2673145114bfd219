#include "send_table.hpp"

#include <initializer_list>

namespace dshpty::engine {

bool SendTable::is_live(std::string_view owner, std::string_view key) const {
  const Live& sends = live(owner);
  return sends.find(key) != sends.end();
}

void SendTable::add_live(std::string key, std::string owner, std::shared_ptr<Send> send, std::string session_id,
                         bool job) {
  live_[owner].emplace(std::move(key), Entry{owner, std::move(send), std::move(session_id), job});
}

void SendTable::settle(std::string_view owner, std::string_view key) {
  const auto sends = live_.find(owner);
  if (sends == live_.end()) return;
  const auto it = sends->second.find(key);
  if (it == sends->second.end()) return;
  auto& kept = it->second.job ? settled_jobs_ : settled_;
  kept.push_back({.key = it->first, .entry = std::move(it->second), .order = ++settles_});
  sends->second.erase(it);
  if (sends->second.empty()) live_.erase(sends);
  if (kept.size() > (&kept == &settled_jobs_ ? kJobsKept : kSettledKept)) kept.pop_front();
}

const SendTable::Entry* SendTable::find(std::string_view owner, std::string_view key) const {
  const Live& sends = live(owner);
  if (const auto it = sends.find(key); it != sends.end()) return &it->second;
  const Settled* newest = nullptr;
  for (const auto* kept : {&settled_jobs_, &settled_})
    for (const auto& settled : *kept)
      if (settled.key == key && settled.entry.owner == owner && (!newest || settled.order > newest->order))
        newest = &settled;
  return newest ? &newest->entry : nullptr;
}

bool SendTable::others_have(std::string_view owner, std::string_view key) const {
  for (const auto& [who, sends] : live_)
    if (who != owner && sends.find(key) != sends.end()) return true;
  for (const auto* kept : {&settled_jobs_, &settled_})
    for (const auto& settled : *kept)
      if (settled.key == key && settled.entry.owner != owner) return true;
  return false;
}

const SendTable::Live& SendTable::live(std::string_view owner) const {
  static const Live none;
  const auto it = live_.find(owner);
  return it == live_.end() ? none : it->second;
}

void SendTable::clear() {
  live_.clear();
  settled_.clear();
  settled_jobs_.clear();
}

}  // namespace dshpty::engine
