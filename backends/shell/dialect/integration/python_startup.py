# dshpty's PYTHONSTARTUP under the session's history rule private or off
# (docs/shell-backend.md, "History"): Python's interactive hook (site.register_readline)
# reads and, at exit, writes ~/.python_history. Python >= 3.13 takes its file from
# PYTHON_HISTORY (set to /dev/null); older ones run this file before the hook, so the hook
# is replaced by one that sets up completion as site's does, with no history file.
# The user's own PYTHONSTARTUP, if any, runs after (its path follows this file).
def __dshpty_startup(user_startup):
    import sys

    if sys.version_info < (3, 13):
        def hook():
            try:
                import readline
                import rlcompleter  # noqa: F401  (sets the completer)
            except ImportError:
                return
            doc = getattr(readline, "__doc__", "") or ""
            if "libedit" in doc:
                readline.parse_and_bind("bind ^I rl_complete")
            else:
                readline.parse_and_bind("tab: complete")
            try:
                readline.read_init_file()
            except OSError:
                pass

        sys.__interactivehook__ = hook
    if user_startup:
        import __main__

        with open(user_startup, "rb") as f:
            code = compile(f.read(), user_startup, "exec")
        exec(code, __main__.__dict__)


try:
    __dshpty_startup(@DSHPTY_USER_STARTUP@)
finally:
    del __dshpty_startup
