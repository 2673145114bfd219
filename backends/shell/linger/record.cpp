#include "linger/record.hpp"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

#include "proc/write_all.hpp"

namespace dshpty::linger {

namespace {

std::string escape(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '%' || c == '\n' || c == '\r') {
      static const char* hex = "0123456789ABCDEF";
      out += '%';
      out += hex[(static_cast<unsigned char>(c) >> 4) & 15];
      out += hex[static_cast<unsigned char>(c) & 15];
    } else {
      out += c;
    }
  }
  return out;
}

std::string unescape(const std::string& value) {
  std::string out;
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (value[i] == '%' && i + 2 < value.size()) {
      out += static_cast<char>(std::strtol(value.substr(i + 1, 2).c_str(), nullptr, 16));
      i += 2;
    } else {
      out += value[i];
    }
  }
  return out;
}

using Fields = std::map<std::string, std::string>;

// A record is a dozen short lines; more than this is not one of ours (a planted file): the
// rest is not read.
constexpr std::size_t kRecordBytes = 64 * 1024;

Result<Fields> read_fields(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return make_system_error(Code::BACKEND_FAILED, path, errno);
  std::string text;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > kRecordBytes) break;
  }
  ::close(fd);
  Fields fields;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    const auto eq = line.find('=');
    if (eq != std::string::npos) fields[line.substr(0, eq)] = unescape(line.substr(eq + 1));
    at = end + 1;
  }
  return fields;
}

Status write_fields(const std::string& path, const Fields& fields) {
  std::string text;
  for (const auto& [name, value] : fields) text += name + "=" + escape(value) + "\n";
  const std::string temp = path + ".new";
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return make_system_error(Code::BACKEND_FAILED, temp, errno);
  if (int err = proc::write_all(fd, text); err != 0) {
    ::close(fd);
    ::unlink(temp.c_str());
    return make_system_error(Code::BACKEND_FAILED, temp, err);
  }
  ::close(fd);
  if (::rename(temp.c_str(), path.c_str()) < 0) {
    int err = errno;
    ::unlink(temp.c_str());
    return make_system_error(Code::BACKEND_FAILED, path, err);
  }
  return {};
}

std::int64_t number(const Fields& f, const char* name, std::int64_t fallback) {
  auto it = f.find(name);
  if (it == f.end() || it->second.empty()) return fallback;
  return std::strtoll(it->second.c_str(), nullptr, 10);
}

std::string text(const Fields& f, const char* name) {
  auto it = f.find(name);
  return it == f.end() ? std::string() : it->second;
}

std::optional<std::string> optional_text(const Fields& f, const char* name) {
  auto it = f.find(name);
  if (it == f.end()) return std::nullopt;
  return it->second;
}

}  // namespace

bool is_session_key(std::string_view key) {
  if (key.size() != kKeyDigits) return false;
  for (char c : key) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string socket_path(const std::string& dir, const std::string& key) { return dir + "/" + key + ".sock"; }
std::string info_path(const std::string& dir, const std::string& key) { return dir + "/" + key + ".info"; }
std::string tomb_path(const std::string& dir, const std::string& key) { return dir + "/" + key + ".tomb"; }
std::string remote_path(const std::string& dir, const std::string& key) { return dir + "/" + key + ".remote"; }

namespace {
Fields record_fields(const SessionRecord& r) {
  Fields f{{"key", r.key},
           {"owner", r.owner},
           {"type", r.type},
           {"helper_pid", std::to_string(r.helper_pid)},
           {"shell_pid", std::to_string(r.shell_pid)},
           {"rows", std::to_string(r.rows)},
           {"cols", std::to_string(r.cols)},
           {"linger", std::to_string(r.linger_seconds)},
           {"attached", r.attached ? "1" : "0"},
           {"expires_at", std::to_string(r.expires_at)},
           {"token", r.token},
           {"nonce", r.mark_nonce},
           {"shell", r.shell}};
  if (r.name) f["name"] = *r.name;
  return f;
}
}  // namespace

Status write_record(const std::string& dir, const SessionRecord& r) {
  return write_fields(info_path(dir, r.key), record_fields(r));
}

Status write_remote_record(const std::string& dir, const SessionRecord& r) {
  return write_fields(remote_path(dir, r.key), record_fields(r));
}

Status write_tombstone(const std::string& dir, const Tombstone& t) {
  Fields f{{"key", t.key},         {"owner", t.owner}, {"type", t.type},
           {"reason", t.reason},   {"proof", t.proof}, {"ended_at", std::to_string(t.ended_at)}};
  if (t.name) f["name"] = *t.name;
  if (t.exit_code) f["exit_code"] = std::to_string(*t.exit_code);
  if (t.signal) f["signal"] = std::to_string(*t.signal);
  return write_fields(tomb_path(dir, t.key), f);
}

Result<SessionRecord> read_record(const std::string& path) {
  auto f = read_fields(path);
  if (!f) return f.error();
  SessionRecord r;
  r.key = text(*f, "key");
  r.owner = text(*f, "owner");
  r.name = optional_text(*f, "name");
  r.type = text(*f, "type");
  r.helper_pid = static_cast<std::int32_t>(number(*f, "helper_pid", -1));
  r.shell_pid = static_cast<std::int32_t>(number(*f, "shell_pid", -1));
  r.rows = static_cast<std::uint32_t>(number(*f, "rows", 0));
  r.cols = static_cast<std::uint32_t>(number(*f, "cols", 0));
  r.linger_seconds = static_cast<std::uint32_t>(number(*f, "linger", 0));
  r.attached = number(*f, "attached", 0) != 0;
  r.expires_at = number(*f, "expires_at", 0);
  r.token = text(*f, "token");
  r.mark_nonce = text(*f, "nonce");
  r.shell = text(*f, "shell");
  if (!is_session_key(r.key)) return make_error(Code::BACKEND_FAILED, path + ": not a session record");
  return r;
}

Result<Tombstone> read_tombstone(const std::string& path) {
  auto f = read_fields(path);
  if (!f) return f.error();
  Tombstone t;
  t.key = text(*f, "key");
  t.owner = text(*f, "owner");
  t.name = optional_text(*f, "name");
  t.type = text(*f, "type");
  if (f->count("exit_code")) t.exit_code = static_cast<int>(number(*f, "exit_code", 0));
  if (f->count("signal")) t.signal = static_cast<int>(number(*f, "signal", 0));
  t.reason = text(*f, "reason");
  t.proof = text(*f, "proof");
  t.ended_at = number(*f, "ended_at", 0);
  if (!is_session_key(t.key)) return make_error(Code::BACKEND_FAILED, path + ": not a tombstone");
  return t;
}

Result<Listing> list_records(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return make_system_error(Code::BACKEND_FAILED, "state directory " + dir, errno);
  Listing out;
  const std::int64_t now = static_cast<std::int64_t>(::time(nullptr));
  while (dirent* e = ::readdir(d)) {
    const std::string file = e->d_name;
    if (file.size() != 21 && file.size() != 23) continue;
    const std::string key = file.substr(0, 16);
    const std::string ext = file.substr(16);
    if (!is_session_key(key)) continue;
    if (ext == ".remote") {
      if (auto r = read_record(dir + "/" + file)) out.remotes.push_back(std::move(*r));
    } else if (ext == ".info") {
      if (auto r = read_record(dir + "/" + file)) out.sessions.push_back(std::move(*r));
    } else if (ext == ".tomb") {
      auto t = read_tombstone(dir + "/" + file);
      if (!t) continue;
      if (now - t->ended_at > kTombstoneSeconds) {
        ::unlink((dir + "/" + file).c_str());
        continue;
      }
      out.tombstones.push_back(std::move(*t));
    }
  }
  ::closedir(d);
  return out;
}

bool same_token(const std::string& a, const std::string& b) {
  if (a.size() != b.size() || a.empty()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace dshpty::linger
