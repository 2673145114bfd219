"""Shared helpers of the embed suite's consumption tests (run by meson test)."""
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager


def say(*words):
    print("embed:", *words, flush=True)


def run(cmd, **kw):
    """Runs cmd (a list), echoing it; raises with its output when it fails."""
    say("$", " ".join(shlex.quote(str(c)) for c in cmd))
    proc = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, **kw)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        raise SystemExit(f"embed: command failed with status {proc.returncode}: {cmd[0]}")
    return proc.stdout


@contextmanager
def scratch_dir(build_root, tag):
    """A fresh directory under the build tree, removed afterwards whatever happens."""
    parent = os.path.join(build_root, "tests", "embed", "scratch")
    os.makedirs(parent, exist_ok=True)
    path = tempfile.mkdtemp(prefix=tag + "-", dir=parent)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        try:
            os.rmdir(parent)  # only when no other test still uses it
        except OSError:
            pass


def clean_env():
    """The environment for a nested build: without what `meson test` or an outer
    pkg-config search could leak into it."""
    env = dict(os.environ)
    for name in ("PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "PKG_CONFIG_SYSROOT_DIR",
                 "LD_LIBRARY_PATH", "MESON_TESTTHREADS", "DESTDIR"):
        env.pop(name, None)
    return env


def sanitize_flags(b_sanitize):
    """Compiler/linker flags matching the outer build's b_sanitize (a host linking an
    instrumented libdshpty must be instrumented too)."""
    if not b_sanitize or b_sanitize == "none":
        return []
    return ["-fsanitize=" + b_sanitize, "-fno-omit-frame-pointer"]
