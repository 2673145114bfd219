#include "record/record_plan.hpp"

#include <ctime>

namespace dshpty::shell::record {

Result<bool> wants_recording(const std::map<std::string, std::string>& options, const ShellConfig& config) {
  auto it = options.find("record");
  if (it == options.end()) return !config.record_dir.empty();
  if (it->second == "false") return false;
  if (it->second != "true") {
    return make_error(Code::INVALID_ARGUMENT, "shell option \"record\" must be true or false, got \"" + it->second + "\"");
  }
  if (config.record_dir.empty()) {
    return make_error(Code::INVALID_ARGUMENT,
                      "record: true needs the operator's recording directory (--record-dir DIR, "
                      "ShellConfig::record_dir); this host has none");
  }
  return true;
}

Result<std::unique_ptr<Recorder>> open_recorder(struct ev_loop* loop, const ShellConfig& config, const RecordDir& dir,
                                                const SpawnSpec& spec, const SessionFacts& facts) {
  const std::time_t now = std::time(nullptr);
  auto fd = dir.fd();
  if (!fd) return fd.error();
  auto file = create_recording_file_at(*fd, dir.configured_path(), spec.owner.label(), spec.session_id, now);
  if (!file) return file.error();
  CastHeader header;
  header.width = facts.cols;
  header.height = facts.rows;
  header.timestamp = static_cast<long long>(now);
  header.term = facts.term;
  header.shell = facts.shell;
  header.title = spec.request.name.value_or(spec.session_id);
  return std::make_unique<Recorder>(loop, std::move(*file), header, config.record_max_bytes,
                                    std::string(facts.mark_nonce));
}

}  // namespace dshpty::shell::record
