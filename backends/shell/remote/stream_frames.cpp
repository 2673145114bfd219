// The stream channel's reading of the far side's frames (link/frames.hpp): each one's
// meaning for the session. The link's use and the session's calls are stream_channel.cpp.
#include <algorithm>

#include "remote/stream_channel.hpp"

namespace dshpty::shell {

using frames::decode;
using frames::Type;

void StreamChannel::bad(const std::string& what) {
  final_words_ = final_words_.value_or("");  // a far side that breaks the protocol is not reconnected to
  break_link("protocol error: " + what);
}

void StreamChannel::on_frame(const frames::Frame& f) {
  if (!welcomed_ && f.type != Type::welcome) return bad("the far side did not start with WELCOME");
  const std::string_view p = f.payload;
  switch (f.type) {
    case Type::welcome: {
      auto w = decode<frames::Welcome>(p);
      if (!w) return bad("short WELCOME");
      return on_welcome(*w);
    }
    case Type::started: {
      auto s = decode<frames::Started>(p);
      if (!s) return bad("short STARTED");
      shell_pid_ = s->pid;
      // A reconnect's replay ends with STARTED as an attach's does: the session knows.
      if (started_) return;
      started_ = true;
      write_record();
      events_.on_started(s->pid);
      return;
    }
    case Type::start_failed: {
      auto s = decode<frames::StartFailed>(p);
      if (!s) return bad("short START_FAILED");
      events_.on_start_failed(make_error(Code::BACKEND_FAILED, "on the far side: " + s->what));
      return;
    }
    case Type::out: {
      auto o = decode<frames::Out>(p);
      if (!o || o->offset != consumed_) return bad("OUT at an offset out of order");
      consumed_ += o->bytes.size();
      // The latest answer about readers was measured before this output was read.
      facts_.on_output();
      if (!o->bytes.empty()) events_.on_output(o->bytes);
      return;
    }
    case Type::state: {
      // The offset needs no check: frames keep their order, so it is the output delivered so far.
      auto s = decode<frames::State>(p);
      if (!s) return break_link("protocol error: short STATE");
      facts_.apply(*s);
      return;
    }
    case Type::written: {
      auto w = decode<frames::Written>(p);
      if (!w) return bad("short WRITTEN");
      return on_written(*w);
    }
    case Type::output_ended:
      if (!frames::decode_empty(p)) return bad("long OUTPUT_ENDED");
      end_output();
      return;
    case Type::exited: {
      auto e = decode<frames::Exited>(p);
      if (!e) return bad("short EXITED");
      events_.on_exited(e->by_signal ? SessionStatus::exited_by_signal(e->value)
                                     : SessionStatus::exited_with_code(e->value));
      return;
    }
    case Type::quiescent:
      if (!frames::decode_empty(p)) return bad("long QUIESCENT");
      quiescent_ = true;
      // The link's end follows (the helper exits); what the session waits for is the
      // transport's exit too, so no process of ours is left behind on the host either.
      if (transport_ended()) events_.on_quiescent();
      return;
    case Type::pong:
      return;
    case Type::taken: {
      auto t = decode<frames::Taken>(p);
      if (!t || t->taken > t->own) return bad("bad TAKEN");
      events_.on_taken_back(t->own, t->taken);
      return;
    }
    case Type::limit_hit: {
      auto l = decode<frames::LimitHitFrame>(p);
      if (!l) return bad("bad LIMIT_HIT");
      limit_hit_ = LimitHit{l->kind == 1 ? LimitKind::pids : LimitKind::memory};
      return;
    }
    case Type::lingering: {
      auto l = decode<frames::Lingering>(p);
      if (!l) return bad("short LINGERING");
      key_ = std::move(l->key);
      token_ = std::move(l->token);
      write_record();
      return;
    }
    case Type::attached: {
      auto a = decode<frames::Attached>(p);
      if (!a || a->replay_to < a->replay_from) return bad("bad ATTACHED");
      return on_attached(*a);
    }
    case Type::error: {
      frames::ErrorFrame e;
      if (auto d = decode<frames::ErrorFrame>(p)) {
        e = std::move(*d);
      } else {
        frames::PayloadReader r(p);  // short or long: what it says is still its last word
        e.code = r.u32();
        e.text = r.str();
      }
      return on_error(e);
    }
    default:
      if (on_job_frame(f)) return;
      return bad(std::string("unexpected frame ") + frames::type_name(static_cast<std::uint8_t>(f.type)));
  }
}

void StreamChannel::on_welcome(const frames::Welcome& w) {
  if (welcomed_) return bad("a second WELCOME");
  if (w.version != frames::kProtocolVersion) {
    // Not our far side: it never runs anything for a HELLO it does not speak. The
    // session ends as if the transport had failed, in these words.
    final_words_ = final_words_.value_or("");
    return break_link("the far dshpty-supervisor speaks protocol version " + std::to_string(w.version) +
                      "; this host speaks " + std::to_string(frames::kProtocolVersion));
  }
  if (launch_.limits.any() && !launch_.attach && !(w.capabilities & frames::kCapLimits)) {
    // An older far helper: it refuses the longer OPEN as a bad frame and starts nothing
    // (as for a version it does not speak), so this start fails in words that name why.
    final_words_ = final_words_.value_or("");
    return break_link("limits: the far helper (" + w.build + ") cannot apply limits: it predates them");
  }
  welcomed_ = true;
  capabilities_ = w.capabilities;
  jobs_.far_build = w.build;
}

void StreamChannel::on_written(const frames::Written& w) {
  const std::uint64_t written = w.bytes > in_base_ ? w.bytes - in_base_ : 0;
  // Written on the far side is taken for good: a reconnect need not send it again.
  if (written > kept_from_) {
    const std::uint64_t drop = std::min<std::uint64_t>(written - kept_from_, input_kept_.size());
    input_kept_.erase(0, static_cast<std::size_t>(drop));
    kept_from_ += drop;
  }
  if (written > bytes_written_) bytes_written_ = std::min(written, bytes_queued_);
  facts_.on_written(bytes_written_);
  events_.on_write_progress();
}

void StreamChannel::on_attached(const frames::Attached& a) {
  const std::uint64_t from = a.replay_from, to = a.replay_to;
  if (reconnecting_) {
    if (from < consumed_ || a.input_received < in_base_) return bad("ATTACHED behind what this host has");
    token_ = a.next_token;
    write_record();
    // Output the ring dropped while no host held it (a cut longer than the ring holds):
    // the session's text goes on after a hole.
    consumed_ = acked_ = from;
    resume(a.input_received);
    return;
  }
  if (!launch_.attach || attach_report_) return bad("bad ATTACHED");
  key_ = launch_.attach->key;
  token_ = a.next_token;
  write_record();
  // This host counts its input from 0; the far side counts every host's.
  in_base_ = a.input_received;
  AttachReport report;
  report.replayed_bytes = to - from;
  report.gap_bytes = a.gap_bytes;
  if (a.send_was_live) {
    report.send_ended =
        "the host that started it went away while it was live; its command ran on with no host, "
        "and what it printed is in the replay";
  }
  attach_report_ = std::move(report);
  const std::uint64_t shown = a.shown.value_or(from);  // an older helper: all unshown
  shown_ = shown;
  shown_replay_ = std::clamp(shown, from, to) - from;
  // The replay starts at the ring's oldest byte: offsets go on from there.
  consumed_ = acked_ = from;
}

void StreamChannel::on_error(const frames::ErrorFrame& e) {
  // Every ERROR is the far side's last word on this session: a refused or stale token, a
  // session that ended (with its tombstone's proof), a helper that failed. A code this host
  // does not know is taken as the last.
  switch (static_cast<frames::ErrorCode>(e.code)) {
    case frames::ErrorCode::session_gone:
      final_words_ = "the far session is gone: " + e.text;
      break;
    case frames::ErrorCode::attach_refused:
      final_words_ = "the far side refused the reconnect: " + e.text;
      break;
    default:
      final_words_ = "the far helper failed: " + e.text;
      break;
  }
  break_link(*final_words_);
}

void StreamChannel::write_record() {
  record_.write({key_, token_, shell_pid_, rows_, cols_});
}

}  // namespace dshpty::shell
