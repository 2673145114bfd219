// The names every subject reports under, so rows of one figure line up and ratios and
// target verdicts can find each other.
#pragma once

namespace bench {

inline constexpr const char* kFig1 = "1 throughput";
inline constexpr const char* kFig2 = "2 send round trip";
inline constexpr const char* kFig3 = "3 spawn to ready";
inline constexpr const char* kFig4 = "4 kill to quiescent";
inline constexpr const char* kFig5 = "5 scale";

inline constexpr const char* kBare = "bare PTY (limit)";
inline constexpr const char* kBareMarked = "bare PTY, dshpty's marks";  // the shell's own cost
inline constexpr const char* kDshpty = "dshpty";
inline constexpr const char* kDshptySandbox = "dshpty, sandboxed";  // bubblewrap
inline constexpr const char* kPexpect = "pexpect";
inline constexpr const char* kNodePty = "node-pty";
inline constexpr const char* kTmux = "tmux";

inline constexpr const char* kMBps = "MB/s";
inline constexpr const char* kUs = "us";
inline constexpr const char* kMs = "ms";

}  // namespace bench
