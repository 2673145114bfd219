"""Type-checked by python_client.py with `mypy --strict`, which must reject every line
marked with an error comment (a misspelt option, a value outside a closed set, a misspelt code)."""

import dshpty


def bad(service: dshpty.Service, error: dshpty.DshptyError) -> None:
    service.start_send("pty-1", text="ls", idle_mss=3)  # error: misspelt keyword
    service.send("pty-1", "ls", idle_mss=3)  # error: misspelt keyword
    service.spawn(terminal="vt100")  # error: not a terminal kind
    if error.code == "SEND_ACTIV":  # error: not a code
        pass
    service.start_send("pty-1", text="make", background=True, until={"regex": "ready"})  # error: no such until member
    service.start_send("pty-1", text="make", until={"port": "5173"})  # error: a port is an int
    if service.start_send("pty-1", background=True).stop().signals[0] == "SIGHUP":  # error: a stop sends no SIGHUP
        pass
