#include "remote/remote_record.hpp"

#include <unistd.h>

#include "linger/record.hpp"

namespace dshpty::shell {

RemoteRecord::RemoteRecord(bool reconnects, std::string dir, std::string owner, std::string name, std::string type,
                           std::uint32_t linger_seconds, std::string mark_nonce, std::string shell)
    : reconnects_(reconnects),
      dir_(std::move(dir)),
      owner_(std::move(owner)),
      name_(std::move(name)),
      type_(std::move(type)),
      linger_seconds_(linger_seconds),
      mark_nonce_(std::move(mark_nonce)),
      shell_(std::move(shell)) {}

void RemoteRecord::write(const RemoteRecordFields& f) {
  if (!reconnects_ || dir_.empty() || f.key.empty()) return;
  linger::SessionRecord r;
  r.key = f.key;
  r.token = f.token;
  r.owner = owner_;
  if (!name_.empty()) r.name = name_;
  r.type = type_;
  r.helper_pid = ::getpid();  // the host that holds it
  r.shell_pid = f.shell_pid;
  r.rows = f.rows;
  r.cols = f.cols;
  r.linger_seconds = linger_seconds_;
  r.attached = true;
  r.mark_nonce = mark_nonce_;
  r.shell = shell_;
  written_ = linger::write_remote_record(dir_, r).ok() || written_;
}

void RemoteRecord::remove(const std::string& key) {
  if (!written_) return;
  written_ = false;
  // Only while it is still ours: a host that took the session over wrote its own.
  const std::string path = linger::remote_path(dir_, key);
  if (auto r = linger::read_record(path); r && r->helper_pid == ::getpid()) ::unlink(path.c_str());
}

void RemoteRecord::drop(const std::string& key) const {
  if (!dir_.empty()) ::unlink(linger::remote_path(dir_, key).c_str());
}

}  // namespace dshpty::shell
