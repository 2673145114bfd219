// Sends by the key their face gave them (a request id), each with the label of the owner
// that started it. A settled send stays reachable for a while, so a cancel or an output
// request that crosses its completion still finds it. A background send's (a job's) output
// and result are read after it ended, maybe after many other sends settled: the last
// kJobsKept ended jobs are kept apart from the last kSettledKept other sends.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "dshpty/service.hpp"

namespace dshpty::engine {

class SendTable {
 public:
  static constexpr std::size_t kSettledKept = 64;
  // Each keeps its output window (up to 1 MiB): 32 bounds that at 32 MiB.
  static constexpr std::size_t kJobsKept = 32;

  struct Entry {
    std::string owner;  // the label of the owner that started it
    std::shared_ptr<Send> send;
    std::string session_id;
    bool job = false;  // a background send
  };

  bool is_live(std::string_view key) const { return live_.find(key) != live_.end(); }
  void add_live(std::string key, std::string owner, std::shared_ptr<Send> send, std::string session_id, bool job);
  // The live send under `key` becomes a settled one (the oldest settled is forgotten).
  void settle(std::string_view key);
  // The live send under `key`, else the oldest settled one kept under it; null when none.
  const Entry* find(std::string_view key) const;
  // The live sends, by key.
  const std::map<std::string, Entry, std::less<>>& live() const { return live_; }
  void clear();

 private:
  std::map<std::string, Entry, std::less<>> live_;
  std::deque<std::pair<std::string, Entry>> settled_;
  std::deque<std::pair<std::string, Entry>> settled_jobs_;
};

}  // namespace dshpty::engine
