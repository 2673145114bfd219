#!/usr/bin/env python3
"""Consumption path 1: dshpty as a Meson subproject of a host project.

Usage: run_subproject.py SOURCE_ROOT BUILD_ROOT B_SANITIZE MESON NINJA CXX...

Lays out, in a scratch directory under the build tree:
    host/                  tests/embed/subproject_host (meson.build, host.cpp)
    host/subprojects/dshpty.wrap      [provide] dependency_names = dshpty
    host/subprojects/dshpty -> SOURCE_ROOT
then configures it with --force-fallback-for=dshpty (so an installed dshpty.pc can never
be picked instead), builds it, and runs the host. The scratch directory is removed at the
end, pass or fail.
"""
import os
import shutil
import sys

from embed_common import clean_env, run, say, scratch_dir

WRAP = """\
[wrap-file]
directory = dshpty

[provide]
dependency_names = dshpty
"""


def main():
    source_root, build_root, b_sanitize, meson, ninja = sys.argv[1:6]
    cxx = sys.argv[6:]
    here = os.path.dirname(os.path.abspath(__file__))
    with scratch_dir(build_root, "subproject") as tmp:
        host = os.path.join(tmp, "host")
        shutil.copytree(os.path.join(here, "subproject_host"), host)
        subprojects = os.path.join(host, "subprojects")
        os.makedirs(subprojects)
        with open(os.path.join(subprojects, "dshpty.wrap"), "w") as f:
            f.write(WRAP)
        os.symlink(source_root, os.path.join(subprojects, "dshpty"))

        env = clean_env()
        env["CXX"] = " ".join(cxx)
        build = os.path.join(tmp, "build")
        run([meson, "setup", build, host, "--force-fallback-for=dshpty",
             "-Db_sanitize=" + b_sanitize, "--buildtype=debug"], env=env)
        run([ninja, "-C", build, "-j2"], env=env)
        out = run([os.path.join(build, "host")], env=env)
        if "subproject host: ok" not in out:
            raise SystemExit("embed: the host did not report success")
    say("subproject consumption: ok")


if __name__ == "__main__":
    main()
