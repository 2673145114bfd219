// A spawn's recording: the spawn option "record" against the operator's directory
// (ShellConfig::record_dir), then the file and its recorder. Checked early, opened last, so a
// spawn refused for another reason leaves no file behind.
#pragma once

#include <ev.h>

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "dshpty/backend.hpp"
#include "dshpty/shell.hpp"
#include "record/record_dir.hpp"
#include "record/recorder.hpp"

namespace dshpty::shell::record {

// Whether the spawn is recorded: "record" absent means "when a directory is set". INVALID_ARGUMENT
// for a value other than "true" or "false", and for "true" with no directory (a request
// never names where the host writes).
Result<bool> wants_recording(const std::map<std::string, std::string>& options, const ShellConfig& config);

// What the header says of the session.
struct SessionFacts {
  unsigned rows = 0;
  unsigned cols = 0;
  std::string_view term;
  std::string_view shell;
  std::string_view mark_nonce;  // cut out of the recorded output
};

// The session's file in `dir` (config.record_dir, held open since the host started) and its
// recorder (the header buffered): errors as create_recording_file's.
Result<std::unique_ptr<Recorder>> open_recorder(struct ev_loop* loop, const ShellConfig& config, const RecordDir& dir,
                                                const SpawnSpec& spec, const SessionFacts& facts);

}  // namespace dshpty::shell::record
