"""A measurement, not a test (meson does not run it): what following a send costs the
Python client, `output` by offset with `waitMs` (the iterators now) against the consuming
poll the iterators used before (10 ms while output flows, backing off to 100 ms while it
is quiet).

1. Per call: N `output` round trips that answer at once (the send has ended), by offset
   with `waitMs` and by the consuming cursor: mean microseconds each.
2. Following a job that prints a timestamped line every 50 ms for 4 s, then stays quiet
   for 3 s: requests made, client CPU seconds, and the delay from a line's print to the
   loop's receipt (p50/max).

Usage: DSHPTY_REPL=build/tools/dshpty-repl python3 tests/clients/stream_overhead.py [N]"""

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python", "src"))
sys.dont_write_bytecode = True
import dshpty  # noqa: E402

JOB = ("for i in $(seq 1 80); do echo tick-$(date +%s.%N); sleep 0.05; done; sleep 3; echo quiet-end")


def counting(service):
    """Counts the requests the client writes."""
    connection = service._connection
    original = connection.request
    count = [0]

    def request(op, fields):
        count[0] += 1
        return original(op, fields)

    connection.request = request
    return count


def per_call(service, session_id, n):
    send = service.start_send(session_id, text="seq 1 100")
    send.result()
    out = {}
    for name, call in (("output {offset, waitMs}", lambda: send.output(offset=0, wait_ms=30000)),
                       ("output (consuming poll)", send.read_output)):
        for _ in range(50):
            call()
        start = time.perf_counter()
        for _ in range(n):
            call()
        out[name] = (time.perf_counter() - start) / n * 1e6
    return out


def old_poll(send):
    """The iterator as it was: consuming reads, 10 ms while flowing, up to 100 ms quiet."""
    quiet = 0.01
    while True:
        out = send.output()  # no offset, no wait: the consuming cursor, as read_output()
        if out.delta:
            yield out.delta
        if out.done:
            break
        quiet = 0.01 if out.delta else min(quiet * 2, 0.1)
        time.sleep(quiet)


def follow(service, session_id, how):
    count = counting(service)
    before = count[0]
    send = service.start_send(session_id, text=JOB, background=True)
    send.started()
    cpu = time.process_time()
    delays, pending = [], ""
    chunks = iter(send) if how == "offset" else old_poll(send)
    for chunk in chunks:
        now = time.time()
        pending += chunk
        *lines, pending = pending.split("\n")
        delays += [now - float(line.split("tick-")[1]) for line in lines if line.startswith("tick-")]
    cpu = time.process_time() - cpu
    send.result()
    return {"requests": count[0] - before, "cpu_s": cpu, "lines": len(delays),
            "delay_p50_ms": statistics.median(delays) * 1e3, "delay_max_ms": max(delays) * 1e3}


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    with dshpty.Service() as service:
        session = service.spawn()
        for name, us in per_call(service, session.session_id, n).items():
            print(f"per call, {name}: {us:.0f} us (n={n})")
        for how in ("offset", "old poll"):
            print(f"following a 7 s job ({how}): {follow(service, session.session_id, how)}")
    print(f"load: {os.getloadavg()}")


if __name__ == "__main__":
    main()
