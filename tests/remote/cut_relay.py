"""A transport whose death cuts the link the way a killed ssh client does: it runs its
argv (the far `dshpty-supervisor --stdio`) on pipes and copies bytes both ways between
them and its own stdin/stdout. SIGKILL it and the far helper sees EOF on its stdin while
the host sees its transport exit, with the far helper left running (as sshd leaves it).

A slow link (a reconnect's ssh handshake on a bad network): when $CUT_RELAY_SLOW names a
file, the relay waits the seconds the file holds before it starts, and removes the file (so
one attempt is slow).

    cut_relay.py PROGRAM [ARGS...]"""

import os
import select
import subprocess
import sys
import time


def main():
    slow = os.environ.get("CUT_RELAY_SLOW")
    if slow and os.path.exists(slow):
        with open(slow) as f:
            seconds = float(f.read())
        os.unlink(slow)
        time.sleep(seconds)  # the slow link being modelled, not a wait for another party
    child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    to_child, from_child = child.stdin.fileno(), child.stdout.fileno()
    inputs = [0, from_child]
    while inputs:
        ready, _, _ = select.select(inputs, [], [])
        for fd in ready:
            data = os.read(fd, 65536)
            if fd == 0:
                if not data:
                    child.stdin.close()
                    inputs.remove(0)
                    continue
                os.write(to_child, data)
            else:
                if not data:
                    return 0
                os.write(1, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
