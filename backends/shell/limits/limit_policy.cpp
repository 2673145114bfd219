#include "limits/limit_policy.hpp"

#include <cmath>
#include <optional>
#include <sstream>
#include <string>

namespace dshpty::shell::limits {

namespace {

constexpr std::uint64_t kMaxPids = 4'194'304;  // the kernel's pid_max ceiling
constexpr std::uint64_t kMinMemory = 1u << 20;
constexpr double kMinCpu = 0.01;
constexpr double kMaxCpu = 4096;

std::string words(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}
std::string words(std::uint64_t v) { return std::to_string(v); }

bool in_range(const char* kind, std::uint64_t v) {
  return std::string_view(kind) == "pids" ? v >= 1 && v <= kMaxPids : v >= kMinMemory;
}
bool in_range(const char*, double v) { return std::isfinite(v) && v >= kMinCpu && v <= kMaxCpu; }

const char* range_words(const char* kind) {
  if (std::string_view(kind) == "pids") return "1..4194304";
  if (std::string_view(kind) == "memory") return "at least 1048576 bytes";
  return "0.01..4096";
}

template <typename T>
Result<std::optional<T>> pick(const char* kind, const std::optional<T>& asked, const std::optional<T>& dflt,
                              const std::optional<T>& ceiling) {
  if (asked) {
    if (!in_range(kind, *asked)) {
      return make_error(Code::INVALID_ARGUMENT, std::string("limits.") + kind + ": " + words(*asked) +
                                                    " is out of range (" + range_words(kind) + ")");
    }
    if (ceiling && *asked > *ceiling) {
      return make_error(Code::INVALID_ARGUMENT, std::string("limits.") + kind + ": " + words(*asked) +
                                                    " is above the operator's ceiling " + words(*ceiling));
    }
    return asked;
  }
  std::optional<T> out = dflt ? dflt : ceiling;
  if (out && ceiling && *out > *ceiling) out = ceiling;
  if (out && !in_range(kind, *out)) {
    return make_error(Code::INVALID_ARGUMENT, std::string("limits.") + kind + ": the operator's " + words(*out) +
                                                  " is out of range (" + range_words(kind) + ")");
  }
  return out;
}

}  // namespace

Result<Limits> resolve_limits(const Limits& asked, const Limits& defaults, const Limits& ceilings) {
  Limits out;
  auto pids = pick("pids", asked.pids, defaults.pids, ceilings.pids);
  if (!pids) return pids.error();
  auto memory = pick("memory", asked.memory, defaults.memory, ceilings.memory);
  if (!memory) return memory.error();
  auto cpu = pick("cpu", asked.cpu, defaults.cpu, ceilings.cpu);
  if (!cpu) return cpu.error();
  out.pids = *pids;
  out.memory = *memory;
  out.cpu = *cpu;
  return out;
}

}  // namespace dshpty::shell::limits
