"""Background jobs through the client (blocking and asyncio): a job answers at once (with
``until``, once it holds), its output read by offset by any number of readers and followed
by ``for``/``async for``, a reader too slow for the window told what it lost, and
``stop()`` ending the job with proof."""

import asyncio
import socket
import threading
import urllib.request

import dshpty
from support import ClientTest, alive


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listens(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            return True
    except OSError:
        return False


def read_whole(send):
    """Reads a send by offset from 0 to its end: (text, the last reply)."""
    text, offset = "", 0
    while True:
        out = send.output(offset=offset, wait_ms=1000)
        text += out.delta
        if out.done and out.next_offset == offset:
            return text, out
        offset = out.next_offset


class Jobs(ClientTest):
    def test_a_job_answers_at_once_and_ends_with_its_status(self):
        service = self.service()
        session = service.spawn()
        send = service.start_send(session.session_id, background=True,
                                  text="for i in 1 2 3; do echo line-$i; sleep 0.3; done; (exit 4)")
        started = send.started()
        self.assertEqual((started.job, started.session_id, started.done), (send.send_id, session.session_id, None))
        with self.assertRaises(dshpty.DshptyError) as caught:
            service.send(session.session_id, text="true")
        self.assertEqual(caught.exception.code, "SEND_ACTIVE")
        chunks = list(send)
        result = send.result()
        self.assertEqual((result.wait_reason, result.exit_code), ("stdin_read", 4))
        a, last = read_whole(send)
        b, _ = read_whole(send)
        self.assertEqual(a, "".join(chunks))
        self.assertEqual(b, a)
        self.assertIn("line-3", a)
        self.assertIsNotNone(last.result)
        self.assertEqual(send.dropped_bytes, 0)

    def test_until_answers_when_it_holds_and_an_exit_first_says_how(self):
        service = self.service()
        session = service.spawn()
        send = service.start_send(session.session_id, background=True, until={"output": "^ready$"},
                                  text="sh -c 'echo starting; sleep 0.5; echo ready; sleep 0.5; echo after-ready; exit 5'")
        started = send.started()
        self.assertEqual((started.wait_reason, started.match, started.done), ("matched", {"output": "ready"}, False))
        self.assertIn("after-ready", "".join(send))
        self.assertEqual(send.result().exit_code, 5)
        early = service.start_send(session.session_id, background=True, until={"output": "^never$"},
                                   text="sh -c 'sleep 0.2; exit 3'")
        said = early.started()
        self.assertTrue(said.done)
        self.assertIsNone(said.match)
        self.assertEqual(said.result.exit_code if said.result else None, 3)
        self.assertEqual(early.result().exit_code, 3)

    def test_a_background_http_server_followed_and_stopped(self):
        service = self.service()
        session = service.spawn()
        service.send(session.session_id, text="export KEEP=kept")
        port = free_port()
        send = service.start_send(session.session_id, background=True, until={"port": port}, timeout_ms=60000,
                                  text=f"python3 -u -m http.server {port} --bind 127.0.0.1")
        started = send.started()
        self.assertEqual(started.wait_reason, "matched")
        self.assertEqual(started.match.get("port") if started.match else None, port)
        server = started.match["pid"] if started.match else 0
        self.assertTrue(listens(port), f"port {port} listens at the match")
        chunks, saw_request = [], threading.Event()

        def follow():
            for chunk in send:
                chunks.append(chunk)
                if "GET /probe-path" in "".join(chunks):
                    saw_request.set()

        follower = threading.Thread(target=follow)
        follower.start()
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/probe-path", timeout=30).read()
        except OSError:
            pass  # a 404 for the path: the server logged it all the same
        self.assertTrue(saw_request.wait(60), "the loop did not see the server's log line")
        stop = send.stop()
        self.assertEqual((stop.stopped, stop.remaining, stop.signals[0]), (True, [], "SIGINT"))
        follower.join(60)
        self.assertFalse(follower.is_alive(), "the loop did not end with the job")
        self.assertEqual(send.result().wait_reason, "stdin_read")
        self.assertFalse(alive(server), f"server {server} survived the stop")
        self.assertFalse(listens(port), f"port {port} still listens")
        self.assertIn("have-kept", service.send(session.session_id, text="echo have-$KEEP").viewport)

    def test_a_loop_too_slow_for_the_window_is_told_what_it_lost(self):
        service = self.service()
        session = service.spawn()
        send = service.start_send(session.session_id, background=True, text="seq 1 400000; echo flood-end")
        send.result()  # ended before anyone read it: more than the window (1 MiB) went by
        _, last = read_whole(send)
        text = "".join(send)
        self.assertGreater(send.dropped_bytes, 0)
        self.assertEqual(send.dropped_bytes + len(text.encode()), last.next_offset)
        self.assertIn("flood-end", text)

    def test_async_a_server_job_followed_and_stopped(self):
        async def main():
            async with dshpty.AsyncService(env=self.service_env()) as service:
                session = await service.spawn()
                port = free_port()
                send = await service.start_send(session.session_id, background=True, until={"port": port},
                                                timeout_ms=60000,
                                                text=f"python3 -u -m http.server {port} --bind 127.0.0.1")
                started = await send.started()
                chunks = []

                async def follow():
                    async for chunk in send:
                        chunks.append(chunk)

                follower = asyncio.ensure_future(follow())
                first = await send.output(offset=0, wait_ms=30000)
                stop = await send.stop()
                await asyncio.wait_for(follower, 60)
                result = await send
                return started, first, stop, "".join(chunks), result, port
        started, first, stop, text, result, port = asyncio.run(main())
        self.assertEqual(started.wait_reason, "matched")
        self.assertTrue(first.delta or first.done)
        self.assertTrue(stop.stopped)
        self.assertIn("Serving HTTP", text)
        self.assertEqual(result.wait_reason, "stdin_read")
        self.assertFalse(listens(port))
