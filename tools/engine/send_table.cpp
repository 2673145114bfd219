#include "send_table.hpp"

namespace dshpty::engine {

void SendTable::add_live(std::string key, std::string owner, std::shared_ptr<Send> send, std::string session_id) {
  live_.emplace(std::move(key), Entry{std::move(owner), std::move(send), std::move(session_id)});
}

void SendTable::settle(std::string_view key) {
  const auto it = live_.find(key);
  if (it == live_.end()) return;
  settled_.emplace_back(it->first, std::move(it->second));
  live_.erase(it);
  if (settled_.size() > kSettledKept) settled_.pop_front();
}

const SendTable::Entry* SendTable::find(std::string_view key) const {
  if (const auto it = live_.find(key); it != live_.end()) return &it->second;
  for (const auto& [settled_key, entry] : settled_)
    if (settled_key == key) return &entry;
  return nullptr;
}

void SendTable::clear() {
  live_.clear();
  settled_.clear();
}

}  // namespace dshpty::engine
