#include "send_table.hpp"

#include <initializer_list>

namespace dshpty::engine {

void SendTable::add_live(std::string key, std::string owner, std::shared_ptr<Send> send, std::string session_id,
                         bool job) {
  live_.emplace(std::move(key), Entry{std::move(owner), std::move(send), std::move(session_id), job});
}

void SendTable::settle(std::string_view key) {
  const auto it = live_.find(key);
  if (it == live_.end()) return;
  auto& kept = it->second.job ? settled_jobs_ : settled_;
  kept.emplace_back(it->first, std::move(it->second));
  live_.erase(it);
  if (kept.size() > (&kept == &settled_jobs_ ? kJobsKept : kSettledKept)) kept.pop_front();
}

const SendTable::Entry* SendTable::find(std::string_view key) const {
  if (const auto it = live_.find(key); it != live_.end()) return &it->second;
  for (const auto* kept : {&settled_jobs_, &settled_})
    for (const auto& [settled_key, entry] : *kept)
      if (settled_key == key) return &entry;
  return nullptr;
}

void SendTable::clear() {
  live_.clear();
  settled_.clear();
  settled_jobs_.clear();
}

}  // namespace dshpty::engine
