#!/usr/bin/env python3
"""Consumption path 2: `meson install --destdir`, then a host built with pkg-config.

Usage: run_installed.py BUILD_ROOT SOURCE_ROOT B_SANITIZE PREFIX LIBDIR LIBEXECDIR
                        INCLUDEDIR MESON PKG_CONFIG HOST_SOURCE SHELL(yes|no) CXX...

Installs this build into a scratch DESTDIR under the build tree, checks the installed
layout (every public header, the shared library and its soname links, dshpty.pc, the
supervisor in libexecdir), asks pkg-config for the flags with the search restricted to the
DESTDIR (PKG_CONFIG_LIBDIR + PKG_CONFIG_SYSROOT_DIR), compiles HOST_SOURCE with them
(-Wall -Wextra -Werror), and runs it with LD_LIBRARY_PATH and DSHPTY_SUPERVISOR pointing
into the DESTDIR. The DESTDIR is removed at the end, pass or fail.
"""
import os
import sys

from embed_common import clean_env, run, say, sanitize_flags, scratch_dir


def inside(dest, path):
    return os.path.join(dest, path.lstrip("/"))


def main():
    (build_root, source_root, b_sanitize, prefix, libdir, libexecdir, includedir, meson,
     pkg_config, host_source, shell) = sys.argv[1:12]
    cxx = sys.argv[12:]
    abs_ = lambda d: d if os.path.isabs(d) else os.path.join(prefix, d)  # noqa: E731
    libdir, libexecdir, includedir = abs_(libdir), abs_(libexecdir), abs_(includedir)

    with scratch_dir(build_root, "install") as tmp:
        dest = os.path.join(tmp, "dest")
        env = clean_env()
        run([meson, "install", "-C", build_root, "--no-rebuild", "--destdir", dest], env=env)

        # The layout hosts rely on.
        headers = sorted(f for f in os.listdir(os.path.join(source_root, "include", "dshpty"))
                         if f.endswith(".hpp"))
        installed = sorted(os.listdir(inside(dest, os.path.join(includedir, "dshpty"))))
        if headers != installed:
            raise SystemExit(f"embed: installed headers {installed} != source headers {headers}")
        lib = inside(dest, libdir)
        for name in ("libdshpty.so", "libdshpty.so.0"):
            if not os.path.islink(os.path.join(lib, name)):
                raise SystemExit(f"embed: {name} is not installed as a symlink in {libdir}")
        pc_dir = os.path.join(lib, "pkgconfig")
        if not os.path.isfile(os.path.join(pc_dir, "dshpty.pc")):
            raise SystemExit("embed: dshpty.pc is not installed")
        supervisor = inside(dest, os.path.join(libexecdir, "dshpty-supervisor"))
        if not os.access(supervisor, os.X_OK):
            raise SystemExit(f"embed: no executable dshpty-supervisor in {libexecdir}")

        # pkg-config sees only the DESTDIR, and maps its paths into it.
        pc_env = dict(env, PKG_CONFIG_LIBDIR=pc_dir, PKG_CONFIG_SYSROOT_DIR=dest)
        cflags = run([pkg_config, "--cflags", "dshpty"], env=pc_env).split()
        libs = run([pkg_config, "--libs", "dshpty"], env=pc_env).split()
        if "-lev" not in libs and not any("libev" in f for f in libs):
            raise SystemExit("embed: `pkg-config --libs dshpty` does not bring libev")
        variable = run([pkg_config, "--variable=supervisor", "dshpty"], env=pc_env).strip()
        if not variable.endswith(os.path.join(libexecdir, "dshpty-supervisor")):
            raise SystemExit(f"embed: the pc file's supervisor variable is {variable!r}")

        host = os.path.join(tmp, "host")
        run(cxx + ["-std=c++20", "-Wall", "-Wextra", "-Werror", "-g"] + sanitize_flags(b_sanitize)
            + cflags + [host_source, "-o", host] + libs, env=env)
        needed = run(["readelf", "-d", host], env=env)
        if "libdshpty.so.0" not in needed:
            raise SystemExit("embed: the host does not record libdshpty.so.0 as NEEDED")

        run_env = dict(env, LD_LIBRARY_PATH=lib, DSHPTY_SUPERVISOR=supervisor)
        out = run([host] + (["--shell"] if shell == "yes" else []), env=run_env)
        if "installed host: ok" not in out:
            raise SystemExit("embed: the host did not report success")
    say("installed consumption: ok")


if __name__ == "__main__":
    main()
