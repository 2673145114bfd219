"""The Python client's suite against its built wheel: build it with pip from
clients/python (its own PEP 517 backend, nothing from the package index), install the wheel
into a fresh virtual environment with `pip install --no-index`, and run the client's own
tests (clients/python/tests, unittest) with that environment's python from a temporary
directory outside the tree, against the real dshpty-repl. Reports itself skipped (77) when
no virtual environment with pip can be made (Debian's python3-venv, which tools/dev
installs); never reaches the network.

    python_client.py CLIENT_DIR DSHPTY_REPL
"""

import os
import shutil
import subprocess
import sys
import tempfile


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(77)


def run(argv, cwd, env):
    print("$ " + " ".join(argv), flush=True)
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(done.stdout, end="", flush=True)
    if done.returncode != 0:
        raise SystemExit(f"FAIL: {argv[0]} exited {done.returncode}")
    return done.stdout


def main():
    client_dir, repl = (os.path.abspath(arg) for arg in sys.argv[1:3])
    env = dict(os.environ, DSHPTY_REPL=repl, DSHPTY_FAKE_REPL=os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_repl.py"),
               PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    with tempfile.TemporaryDirectory(prefix="dshpty-py-client-") as tmp:
        venv = os.path.join(tmp, "venv")
        made = subprocess.run([sys.executable, "-m", "venv", venv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
        python = os.path.join(venv, "bin", "python")
        if made.returncode != 0 or not os.path.exists(python):
            skip(f"no virtual environment with pip can be made ({sys.executable} -m venv: "
                 f"{made.stdout.strip().splitlines()[-1:] or made.returncode}); tools/dev installs python3-venv")
        env["PIP_CACHE_DIR"] = os.path.join(tmp, "pip-cache")
        dist = os.path.join(tmp, "dist")
        run([python, "-m", "pip", "wheel", "--no-index", "--no-deps", "--wheel-dir", dist, client_dir], tmp, env)
        wheels = [name for name in os.listdir(dist) if name.endswith(".whl")]
        if len(wheels) != 1:
            raise SystemExit(f"FAIL: pip wheel made {wheels}")
        run([python, "-m", "pip", "install", "--no-index", os.path.join(dist, wheels[0])], tmp, env)

        tests = os.path.join(tmp, "tests")
        shutil.copytree(os.path.join(client_dir, "tests"), tests)
        where = run([python, "-c", "import dshpty; print(dshpty.__file__)"], tests, env).strip()
        if not where.startswith(venv + os.sep):
            raise SystemExit(f"FAIL: dshpty imported from {where}, not from the virtual environment")
        type_check(client_dir, python, tests, env)
        run([python, "-m", "unittest", "-v"], tests, env)
    print("ok")


def find_mypy():
    """A python that has mypy (the package index is not ours to reach: Debian's python3-mypy,
    which tools/dev installs, or whatever this python has)."""
    for candidate in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(candidate) and subprocess.run([candidate, "-m", "mypy", "--version"],
                                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
            return candidate
    return None


def type_check(client_dir, python, tests, env):
    """`mypy --strict`: the package's own sources (as Python 3.10 reads them) are clean, the
    README's code type-checks against the installed wheel, and each line of typing_bad.py
    marked `# error:` is an error (a misspelt keyword, a value outside a closed set)."""
    checker = find_mypy()
    if checker is None:
        print("note: mypy is not installed (Debian python3-mypy; tools/dev installs it): the type check is left out")
        return
    strict = [checker, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", os.devnull]
    run([*strict, "--python-version", "3.10", os.path.join(client_dir, "src", "dshpty")], tests, env)
    run([*strict, "--python-executable", python, "typing_ok.py"], tests, env)
    print("$ mypy --strict typing_bad.py (must fail on each marked line)", flush=True)
    done = subprocess.run([*strict, "--python-executable", python, "typing_bad.py"], cwd=tests, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(done.stdout, end="")
    with open(os.path.join(tests, "typing_bad.py")) as f:
        marked = {number for number, line in enumerate(f, 1) if "# error:" in line}
    flagged = {int(line.split(":")[1]) for line in done.stdout.splitlines() if line.startswith("typing_bad.py:") and ": error:" in line}
    if done.returncode == 0 or marked - flagged:
        raise SystemExit(f"FAIL: mypy --strict accepted typing_bad.py lines {sorted(marked - flagged)}")


if __name__ == "__main__":
    main()
