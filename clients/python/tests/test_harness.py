"""What a harness author leans on: a send's output streams as an iterator (blocking and
async), a cancel keeps what ran (asyncio cancellation included), start-up checks the child
answers, and a stopped repl becomes an error within its deadline, never a hang."""

import asyncio
import gc
import os
import signal

import dshpty
from support import ClientTest, alive, read_pid, wait_foreground, wait_until

SEQ = "seq 1 2500; sleep 1; seq 2501 5000"


class Streaming(ClientTest):
    def test_for_chunk_in_send_yields_output_as_it_comes_then_the_last_bytes(self):
        service = self.service()
        session = service.spawn()
        send = service.start_send(session.session_id, text=SEQ)
        chunks, before_end = [], 0
        for chunk in send:
            self.assertIsInstance(chunk, str)
            chunks.append(chunk)
            before_end += 0 if send.done() else 1
        result = send.result()
        self.assertGreater(before_end, 0, "no chunk came before the send ended")
        self.assertIn("\n5000\n", "".join(chunks))
        self.assertEqual("".join(chunks), result.viewport)

    def test_async_for_chunk_in_send_yields_the_viewport(self):
        async def main():
            async with dshpty.AsyncService(env=self.service_env()) as service:
                session = await service.spawn()
                send = await service.start_send(session.session_id, text=SEQ)
                chunks, before_end = [], 0
                async for chunk in send:
                    chunks.append(chunk)
                    before_end += 0 if send.done() else 1
                return chunks, before_end, (await send).viewport
        chunks, before_end, viewport = asyncio.run(main())
        self.assertGreater(before_end, 0)
        self.assertEqual("".join(chunks), viewport)


class CancelKeepsWhatRan(ClientTest):
    def test_cancel_raises_aborted_with_exit_130_in_its_result(self):
        service = self.service()
        session = service.spawn()
        send = service.start_send(session.session_id, text="sleep 5")
        wait_foreground(session.pid, "sleep")
        self.assertIs(send.cancel(), True)
        with self.assertRaises(dshpty.DshptyError) as caught:
            send.result()
        self.assertEqual(caught.exception.code, "ABORTED")
        self.assertEqual(caught.exception.result.exit_code, 130)

    def test_asyncio_cancellation_keeps_the_result_for_a_later_await(self):
        async def main():
            async with dshpty.AsyncService(env=self.service_env()) as service:
                session = await service.spawn()
                send = await service.start_send(session.session_id, text="sleep 5")
                await asyncio.get_running_loop().run_in_executor(None, wait_foreground, session.pid, "sleep")
                with self.assertRaises(asyncio.TimeoutError):
                    await asyncio.wait_for(send.result(), 0.2)
                with self.assertRaises(dshpty.DshptyError) as caught:
                    await send
                return caught.exception
        error = asyncio.run(main())
        self.assertEqual(error.code, "ABORTED")
        self.assertEqual(error.result.exit_code, 130)

    def test_a_cancel_that_crossed_the_answer_did_nothing(self):
        service = self.service()
        session = service.spawn()
        for round in range(10):
            send = service.start_send(session.session_id, text="true")
            took = send.cancel()
            try:
                send.result()
                aborted = False
            except dshpty.DshptyError as error:
                aborted = error.code == "ABORTED"
            self.assertEqual(aborted, took, f"round {round}")


class Deadlines(ClientTest):
    def test_start_checks_the_child_answers(self):
        with self.assertRaises(dshpty.DshptyError) as caught:
            dshpty.Service(args=["--no-such-flag"], env=self.service_env())
        self.assertEqual(caught.exception.code, "REPL_EXITED")
        self.assertIn("no-such-flag", caught.exception.message)
        service = self.service()
        self.assertEqual(service.hello["name"], "dshpty-repl")

    def test_an_async_service_used_before_start_says_so(self):
        with self.assertRaises(dshpty.DshptyError) as caught:
            dshpty.AsyncService(env=self.service_env()).pid
        self.assertEqual(caught.exception.code, "SERVICE_NOT_STARTED")

    def test_a_stopped_repl_fails_a_call_within_its_deadline_and_close_force_ends_it(self):
        dir = self.temp_dir()
        service = dshpty.Service(env=self.service_env(), request_timeout=1.0)
        session = service.spawn()
        service.send(session.session_id, f"echo $$ > {dir}/shell.pid")
        shell = read_pid(os.path.join(dir, "shell.pid"))
        os.kill(service.pid, signal.SIGSTOP)
        send = service.start_send(session.session_id, text="true", timeout_ms=500)
        with self.assertRaises(dshpty.DshptyError) as caught:
            service.list()
        self.assertEqual(caught.exception.code, "REPL_TIMEOUT")
        with self.assertRaises(dshpty.DshptyError) as caught:
            send.result()
        self.assertEqual(caught.exception.code, "REPL_TIMEOUT")
        service.close(force=True)
        self.assertFalse(alive(service.pid))
        wait_until(lambda: not alive(shell), f"the session's shell {shell} is gone with its host")

    def test_a_stopped_repl_under_asyncio_wait_for_and_close_force(self):
        problems = []

        async def main():
            # Every future the client made is handled: nothing reaches the loop's handler.
            asyncio.get_running_loop().set_exception_handler(lambda loop, context: problems.append(context))
            service = await dshpty.AsyncService(env=self.service_env(), request_timeout=1.0).start()
            session = await service.spawn()
            os.kill(service.pid, signal.SIGSTOP)
            send = await service.start_send(session.session_id, text="sleep 5")
            with self.assertRaises(asyncio.TimeoutError):
                await asyncio.wait_for(send.result(), 0.3)  # its cancel then waits at most 1 s
            with self.assertRaises(dshpty.DshptyError) as caught:
                await service.list()
            await service.close(force=True)
            return service.pid, caught.exception.code
        pid, code = asyncio.run(asyncio.wait_for(main(), 30))
        gc.collect()
        self.assertEqual(problems, [])
        self.assertEqual(code, "REPL_TIMEOUT")
        self.assertFalse(alive(pid))
