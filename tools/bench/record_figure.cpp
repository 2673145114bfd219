#include "record_figure.hpp"

#include <ev.h>
#include <stdlib.h>
#include <time.h>

#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "bash_profile.hpp"
#include "harness.hpp"

namespace bench {

namespace {

constexpr const char* kUnrecorded = "dshpty, unrecorded";
constexpr const char* kRecorded = "dshpty, recorded";

std::string fixed(double v, int precision) {
  std::ostringstream s;
  s.precision(precision);
  s << std::fixed << v;
  return s.str();
}

std::string percent(double recorded, double plain) {
  std::ostringstream s;
  s.precision(1);
  s << std::fixed << (recorded / plain - 1) * 100 << "%";
  return s.str();
}

// Each harness has its loop, idle while the other's runs: its clock is brought up to date
// before a send, or the send's idle timer would be armed from a time long past (and fire at
// once).
dshpty::SendResult timed_send(Harness& h, const std::string& id, std::string text,
                              std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  ev_now_update(h.loop());
  return h.send(id, std::move(text), timeout);
}

// This process's CPU time in ms: the host's work (the loop, the output path, the recorder),
// which a loaded machine's scheduling does not blur as it does the wall-clock rate.
double host_cpu_ms() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

// One flood through `h`'s session, in MB/s of terminal output; `cpu_ms` gets the host's CPU.
double flood_mbs(Harness& h, const std::string& id, unsigned long long bytes, Samples& cpu_ms) {
  ev_now_update(h.loop());
  h.raw_bytes = 0;
  const double cpu0 = host_cpu_ms();
  auto t0 = Clock::now();
  auto r = h.send(id, flood_command(bytes), std::chrono::minutes(10));
  if (h.raw_bytes < bytes)
    throw std::runtime_error("a flood ended early (" + std::string(dshpty::wait_reason_name(r.wait_reason)) + " after " +
                             std::to_string(h.raw_bytes) + " bytes)");
  const double mbs = static_cast<double>(h.raw_bytes) / (micros_since(t0) / 1e6) / 1e6;
  cpu_ms.add(host_cpu_ms() - cpu0);
  return mbs;
}

void measure(const Plan& plan, Report& report, const std::string& dir) {
  Harness plain(plan);
  // The cap far above the floods: the recorded session writes all of its output.
  Harness recorded(plan, [&dir](dshpty::ShellConfig& c) {
    c.record_dir = dir;
    c.record_max_bytes = std::size_t{4} << 30;
  });
  auto a = plain.spawn();
  auto b = recorded.spawn();
  if (!b.session.recording) throw std::runtime_error("the recorded session has no recording");
  Samples plain_us, recorded_us, plain_mbs, recorded_mbs, plain_cpu, recorded_cpu;
  for (int i = 0; i < plan.round_trips; ++i) {
    auto t0 = Clock::now();
    timed_send(plain, a.session.id, "true");
    plain_us.add(micros_since(t0));
    auto t1 = Clock::now();
    timed_send(recorded, b.session.id, "true");
    recorded_us.add(micros_since(t1));
  }
  // A quarter of figure 1's flood: the recorded one's file holds all of it.
  const unsigned long long bytes = plan.flood_bytes / 4;
  for (int i = 0; i < plan.throughput_runs; ++i) {
    plain_mbs.add(flood_mbs(plain, a.session.id, bytes, plain_cpu));
    recorded_mbs.add(flood_mbs(recorded, b.session.id, bytes, recorded_cpu));
  }
  const auto state = recorded.service().list(recorded.owner());
  std::string file_note;
  for (const auto& s : state)
    if (s.recording) file_note = "; its file " + std::to_string(s.recording->bytes >> 20) + " MiB, state " +
                                 std::string(dshpty::recording_state_name(s.recording->state));
  report.measured(kFigRecord, kUnrecorded, "us", plain_us, "send of `true`, alternating with the recorded one's");
  report.measured(kFigRecord, kRecorded, "us", recorded_us,
                  "send p50 " + percent(recorded_us.median(), plain_us.median()) + " against unrecorded");
  report.measured(kFigRecord, kUnrecorded, "MB/s", plain_mbs,
                  std::to_string(bytes >> 20) + " MiB floods, alternating with the recorded one's; host CPU " +
                      fixed(plain_cpu.median(), 0) + " ms a flood");
  report.measured(kFigRecord, kRecorded, "MB/s", recorded_mbs,
                  "throughput " + percent(recorded_mbs.median(), plain_mbs.median()) + " against unrecorded; host CPU " +
                      fixed(recorded_cpu.median(), 0) + " ms a flood (" + percent(recorded_cpu.median(), plain_cpu.median()) +
                      ")" + file_note);
  plain.close(a.session.id);
  recorded.close(b.session.id);
}

}  // namespace

void measure_recording(const Plan& plan, Report& report) {
  char pattern[] = "/tmp/dshpty-bench-casts-XXXXXX";
  if (!::mkdtemp(pattern)) {
    report.skipped(kFigRecord, kRecorded, "us", "no temporary directory");
    return;
  }
  try {
    measure(plan, report, pattern);
  } catch (const std::exception& e) {
    report.skipped(kFigRecord, kRecorded, "us", std::string("error: ") + e.what());
  }
  std::filesystem::remove_all(pattern);
}

}  // namespace bench
