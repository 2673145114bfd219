// The pure and file-level parts of lingering (docs/outlive.md): the replay ring's offsets
// and drops, the rendezvous records' escaping, and the state directory's checks.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "linger/record.hpp"
#include "linger/replay_ring.hpp"
#include "linger/state_dir.hpp"

using namespace dshpty::linger;

namespace {
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/dshpty-linger-parts-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() { (void)std::system(("rm -rf '" + path + "'").c_str()); }
};
}  // namespace

TEST_CASE("the ring keeps the newest bytes by absolute offset and drops the oldest") {
  ReplayRing ring(10);
  ring.append("abcdef");
  CHECK(ring.start() == 0);
  CHECK(ring.end() == 6);
  CHECK(ring.view(2, 3) == "cde");
  ring.append("ghijkl");  // 12 bytes printed: the first two are gone
  CHECK(ring.start() == 2);
  CHECK(ring.end() == 12);
  CHECK(ring.view(0, 100) == "cdefghijkl");  // an offset before the start is clamped
  CHECK(ring.view(11, 100) == "l");
  CHECK(ring.view(12, 100).empty());
  ring.append(std::string(25, 'x') + "END");  // larger than the ring at once
  CHECK(ring.end() == 40);
  CHECK(ring.start() == 30);
  CHECK(ring.view(30, 100) == "xxxxxxxEND");
  // Many small appends keep it bounded: compaction moves what was dropped out.
  for (int i = 0; i < 10000; ++i) ring.append("0123456789");
  CHECK(ring.held() == 10);
  CHECK(ring.memory_bytes() < 4096);
  CHECK(ring.view(ring.start(), 100) == "0123456789");
}

TEST_CASE("a record's values cannot add a line, and come back as written") {
  TempDir dir;
  SessionRecord r;
  r.key = "0123456789abcdef";
  r.owner = "own\ner%0A";
  r.name = "evil\nattached=1\r";
  r.token = "t";
  r.attached = false;
  r.rows = 30;
  r.cols = 100;
  REQUIRE(write_record(dir.path, r));
  auto back = read_record(info_path(dir.path, r.key));
  REQUIRE(back);
  CHECK(back->owner == r.owner);
  CHECK(back->name == r.name);
  CHECK(back->attached == false);
  CHECK(back->rows == 30);
  struct stat st {};
  REQUIRE(::stat(info_path(dir.path, r.key).c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(same_token("abc", "abc"));
  CHECK_FALSE(same_token("abc", "abd"));
  CHECK_FALSE(same_token("", ""));
}

TEST_CASE("the state directory is created 0700 and refused when others may enter") {
  TempDir dir;
  const std::string fresh = dir.path + "/state";
  auto made = prepare_state_dir(fresh);
  REQUIRE(made);
  struct stat st {};
  REQUIRE(::stat(fresh.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  ::chmod(fresh.c_str(), 0750);
  auto loose = prepare_state_dir(fresh);
  REQUIRE_FALSE(loose);
  CHECK(loose.error()->message.find("mode 0750 lets others in") != std::string::npos);
  const std::string link = dir.path + "/link";
  REQUIRE(::symlink(fresh.c_str(), link.c_str()) == 0);
  auto linked = prepare_state_dir(link);
  REQUIRE_FALSE(linked);
  CHECK(linked.error()->message.find("not a directory") != std::string::npos);
  CHECK_FALSE(prepare_state_dir("relative/dir"));
  // A listing's look never creates it.
  const std::string missing = dir.path + "/never";
  auto none = existing_state_dir(missing);
  REQUIRE(none);
  CHECK_FALSE(none->has_value());
  CHECK(::access(missing.c_str(), F_OK) != 0);
  auto there = existing_state_dir(fresh);
  CHECK_FALSE(there);  // still 0750: refused, not created or repaired
}
