"""Private history holds for the programs a session runs, not just the shell: python, node,
sqlite3, less and vim each keep a history file of their own in HOME (~/.python_history,
~/.node_repl_history, ~/.sqlite_history, ~/.lesshst, ~/.viminfo) unless told otherwise,
and under the session's history private or off they are (docs/shell-backend.md, "History").

    program_history_e2e.py PATH/TO/dshpty-repl

Each installed program is run at a real terminal in a bash session with a temporary HOME,
driven as a user would (a line at its prompt, then its quit). Under history private and off
no file appears in HOME. The positive control: the same steps in a session whose history is
a file of one's choice (the rule applies to the shell's own file only) leave the program's
file in HOME, so the check can see one. A program that is not installed is reported skipped
with the reason; the test passes only when at least one program was checked.
Exit 0 on pass, 1 on failure, 77 when bash or every program is missing.
"""

import os
import pwd
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prompts_e2e import Failure, Repl  # noqa: E402


NO_ENTRY_UID = 4242  # a user without a passwd entry, for sqlite3


# The user's own startup still runs (it leaves a mark in HOME/chosen): python's
# PYTHONSTARTUP (named in the environment, with quotes in its name; main writes it), vim's
# ~/.vimrc (which asks for a viminfo of its own: the rule wins).
USER_STARTUP = {
    "python": ("it's \"startup\".py",
               "import os\nopen(os.environ['HOME'] + '/chosen/user-startup-ran', 'w').close()\n"),
    "vim": (".vimrc", "set viminfo='50,<100\ncall writefile(['ran'], $HOME . '/chosen/user-startup-ran')\n"),
}


def programs():
    """(name, the file it writes, the sends that use it and quit), for each installed one."""
    found, skipped = [], []
    # The interpreter running this test: a real binary whatever HOME says (a version
    # manager's shim may look for its files under HOME).
    found.append(("python", ".python_history", [f"{sys.executable} -q", "print(6 * 7)", "exit()"]))
    # sqlite3 finds its home in the password database, HOME only for a user without an
    # entry: it runs as one (root may), in a HOME it can write (chmod at the open).
    sqlite_prefix = None
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        skipped.append("sqlite3: needs root and setpriv (it reads HOME only for a uid without a passwd entry)")
    else:
        try:
            pwd.getpwuid(NO_ENTRY_UID)
            skipped.append(f"sqlite3: uid {NO_ENTRY_UID} has a passwd entry")
        except KeyError:
            sqlite_prefix = f"setpriv --reuid={NO_ENTRY_UID} --regid={NO_ENTRY_UID} --clear-groups "
    for name, history, steps in [
        ("node", ".node_repl_history", ["{}", "6 * 7", ".exit"]),
        ("sqlite3", ".sqlite_history", [f"{sqlite_prefix}{{}}", "select 6 * 7;", ".quit"]),
        ("less", ".lesshst", ["{} /etc/passwd", "/root", "q"]),
        ("vim", ".viminfo", ["{} -N", ":q"]),
    ]:
        path = shutil.which(name)
        if name == "sqlite3" and sqlite_prefix is None:
            continue
        if path is None:
            skipped.append(f"{name}: not installed")
            continue
        found.append((name, history, [steps[0].format(path)] + steps[1:]))
    return found, skipped


def home_files(home):
    out = set()
    for root, dirs, files in os.walk(home):
        for f in files:
            out.add(os.path.relpath(os.path.join(root, f), home))
    return out


def run_program(repl, sid, steps):
    for text in steps[:-1]:
        repl.send(sid, text)
    repl.send(sid, steps[-1]).at_prompt()


def main():
    if len(sys.argv) != 2:
        print("usage: program_history_e2e.py DSHPTY_REPL", file=sys.stderr)
        return 2
    if shutil.which("bash") is None:
        print("SKIP: bash is not installed", flush=True)
        return 77
    repl_path = os.path.abspath(sys.argv[1])
    found, skipped = programs()
    for reason in skipped:
        print(f"skip {reason}", flush=True)
    failed = []
    own = tempfile.TemporaryDirectory(prefix="dshpty-startup-")
    os.environ["PYTHONSTARTUP"] = os.path.join(own.name, USER_STARTUP["python"][0])
    with open(os.environ["PYTHONSTARTUP"], "w") as f:
        f.write(USER_STARTUP["python"][1])
    for name, history, steps in found:
        for rule in ("private", "off", "file"):
            repl = Repl(repl_path, "bash")
            try:
                home = repl.home
                fields = {"history": os.path.join(home, "chosen", "bash_history")} if rule == "file" else {"history": rule}
                os.mkdir(os.path.join(home, "chosen"))
                if name == "sqlite3":
                    os.chmod(home, 0o777)  # for its user without an entry
                if name == "vim":
                    where, text = USER_STARTUP[name]
                    with open(os.path.join(home, where), "w") as f:
                        f.write(text)
                before = home_files(home)
                sid, _ = repl.open(**fields)
                run_program(repl, sid, steps)
                repl.close(sid)
                new = sorted(f for f in home_files(home) - before if not f.startswith("chosen/"))
                ran = os.path.join(home, "chosen", "user-startup-ran")
                if name in USER_STARTUP and not os.path.exists(ran):
                    raise Failure(f"history {rule}: {name} did not run the user's {USER_STARTUP[name][0]}")
                if rule == "file":
                    if history not in new:
                        raise Failure(f"control: {name} in a session with a history file wrote no "
                                      f"{history} in HOME (new files: {new})")
                elif new:
                    raise Failure(f"history {rule}: {name} left {new} in HOME")
                repl.shutdown()
                print(f"ok   {name} history {rule}", flush=True)
            except Failure as e:
                failed.append(f"{name} {rule}")
                print(f"FAIL {name} history {rule}: {e}", flush=True)
            finally:
                leaked = repl.destroy()
            if leaked:
                failed.append(f"{name} {rule} leaked")
                print(f"FAIL {name} history {rule}: processes left behind: {leaked}", flush=True)
    own.cleanup()
    if failed:
        print(f"FAILED: {', '.join(failed)}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
