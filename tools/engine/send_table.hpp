// Sends by the key their face gave them (a request id), each owner with its own keys: two
// owners may both have a send under "dev", and neither's is reached by the other's key. A
// settled send stays reachable for a while, so a cancel or an output request that crosses
// its completion still finds it. A background send's (a job's) output and result are read
// after it ended, maybe after many other sends settled: the last kJobsKept ended jobs are
// kept apart from the last kSettledKept other sends.
#pragma once

#include <cstddef>
#include <cstdint>
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
  // One owner's live sends, by key.
  using Live = std::map<std::string, Entry, std::less<>>;

  bool is_live(std::string_view owner, std::string_view key) const;
  void add_live(std::string key, std::string owner, std::shared_ptr<Send> send, std::string session_id, bool job);
  // The owner's live send under `key` becomes a settled one (the oldest settled is forgotten).
  void settle(std::string_view owner, std::string_view key);
  // The owner's live send under `key`, else the newest settled one of the owner's kept under
  // it; null when none.
  const Entry* find(std::string_view owner, std::string_view key) const;
  // Another owner has a send (live or kept) under `key`: a by-key operation of `owner`,
  // who has none, answers FOREIGN_SESSION rather than "no send".
  bool others_have(std::string_view owner, std::string_view key) const;
  // The owner's live sends, by key.
  const Live& live(std::string_view owner) const;
  void clear();

 private:
  struct Settled {
    std::string key;
    Entry entry;
    std::uint64_t order = 0;  // when it settled: a key used again names its newest send
  };
  std::map<std::string, Live, std::less<>> live_;  // by owner
  std::deque<Settled> settled_;
  std::deque<Settled> settled_jobs_;
  std::uint64_t settles_ = 0;
};

}  // namespace dshpty::engine
