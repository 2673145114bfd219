#include "record/record_plan.hpp"

#include <ctime>

namespace dshpty::shell::record {

namespace {

// The header is written whole, before anything the cap can cut: the words in it that a
// request chooses (a session's name, its shell's path) are bounded so that the header stays
// far below the smallest cap the tools allow (4096 bytes; each byte escapes to 6 at most).
constexpr std::size_t kHeaderWordBytes = 256;

// `text` cut to kHeaderWordBytes, at a UTF-8 character's start.
std::string header_word(std::string_view text) {
  if (text.size() <= kHeaderWordBytes) return std::string(text);
  std::size_t end = kHeaderWordBytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end));
}

}  // namespace

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
  header.shell = header_word(facts.shell);
  header.title = header_word(spec.request.name.value_or(spec.session_id));
  auto recorder = std::make_unique<Recorder>(loop, std::move(*file), header, config.record_max_bytes,
                                             std::string(facts.mark_nonce));
  // Until the session has started: a spawn that fails later leaves no file.
  recorder->remove_unless_kept();
  return recorder;
}

}  // namespace dshpty::shell::record
