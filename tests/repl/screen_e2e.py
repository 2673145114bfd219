"""Full-screen programs through dshpty-repl, as an agent drives them: the JSON face opens an
xterm session, starts a curses menu, presses Down Down Enter at once, reads the screen,
resizes and checks `stty size`, and gets clear errors for a bad key, a bad size and an
unknown session; the text face does the same with `open --term`, `keys`, `screen` and
`resize`. Real programs, no waiting for a moment: every step follows the previous reply."""

import re
import sys

from repl_harness import JsonRepl, check, run_text_script, wait_gone


def json_face(repl_path, menu):
    repl = JsonRepl(repl_path)
    try:
        opened = repl.ok({"id": 1, "op": "open", "type": "shell", "terminal": "xterm"})
        started = repl.ok({"id": 2, "op": "send", "sessionId": "pty-1",
                           "text": f"/usr/bin/python3 {menu}", "idleMs": 300})
        check(started["waitReason"] == "stdin_read", started)  # getch() reads the terminal
        # The menu is on the alternate screen: the send carries it.
        check(started["screen"]["alternate"] is True, started)
        check("> first" in "\n".join(started["screen"]["lines"]), started)

        picked = repl.ok({"id": 3, "op": "send", "sessionId": "pty-1", "keys": ["Down", "Down", "Enter"]})
        check(picked["waitReason"] == "stdin_read" and "chose: third" in picked["viewport"], picked)
        check("screen" not in picked, "back on the main screen: no screen in the result")

        shot = repl.ok({"id": 4, "op": "read", "sessionId": "pty-1", "screen": True})["screen"]
        check(shot["rows"] == 40 and shot["cols"] == 160 and shot["alternate"] is False, shot)
        check(any("chose: third" in line for line in shot["lines"]), shot)
        check(set(shot["cursor"]) == {"row", "col", "visible"}, shot)

        check(repl.ok({"id": 5, "op": "resize", "sessionId": "pty-1", "rows": 30, "cols": 100}) == {}, "resize")
        size = repl.ok({"id": 6, "op": "send", "sessionId": "pty-1", "text": "stty size"})
        check("30 100\n" in size["viewport"], size)
        check(repl.ok({"id": 7, "op": "read", "sessionId": "pty-1", "screen": True})["screen"]["rows"] == 30, "rows")

        bad = repl.error({"id": 8, "op": "send", "sessionId": "pty-1", "keys": ["Down", "Sideways"]},
                         "INVALID_ARGUMENT")
        check('"Sideways"' in bad["message"], bad)
        repl.error({"id": 9, "op": "resize", "sessionId": "pty-1", "rows": 0, "cols": 80}, "INVALID_ARGUMENT")
        repl.error({"id": 10, "op": "resize", "sessionId": "pty-1", "rows": 5000, "cols": 80}, "INVALID_ARGUMENT")
        repl.error({"id": 11, "op": "read", "sessionId": "pty-9", "screen": True}, "NO_SESSION")
        still = repl.ok({"id": 12, "op": "send", "sessionId": "pty-1", "text": "echo still-$((6*7))"})
        check("still-42" in still["viewport"] and "Sideways" not in still["viewport"], still)

        check(repl.ok({"id": 13, "op": "shutdown"}) == {}, "shutdown")
        check(repl.wait_exit() == 0, "exit status")
        wait_gone(repl.pids + [opened["pid"]], "shutdown")
    finally:
        repl.close()


def text_face(repl_path):
    script = (
        "open shell main --term xterm\n"
        "send main printf '\\033[?1049h\\033[H\\033]2;my title\\007drawn'; read -rsn1 key; printf '\\033[?1049l'; echo key=$key\n"
        "screen main\n"
        "keys main y\n"
        "resize main 30 100\n"
        "send main stty size\n"
        "keys main Nope\n"
        "resize main 0 80\n"
        "close main\n"
    )
    text = run_text_script(repl_path, script)
    check(re.search(r'\[screen 40x160 cursor 1,6 alternate title="my title"\]\ndrawn\n', text), "the screen")
    check("key=y" in text, "the key reached read")
    check("resized main to 30x100" in text or "resized pty-1 to 30x100" in text, "resize line")
    check("30 100" in text, "stty size after the resize")
    check('unknown key "Nope"' in text, "the bad key's error")
    check("rows and cols must be 1..4096" in text, "the bad size's error")
    wait_gone([int(p) for p in re.findall(r"pid=(\d+)", text)], "EOF")


if __name__ == "__main__":
    path, menu = sys.argv[1], sys.argv[2]
    print("--- json face", flush=True)
    json_face(path, menu)
    print("--- text face", flush=True)
    text_face(path)
    print("ok")
