"""AsyncService: the same scenarios as coroutines on one event loop."""

import asyncio
import os
import signal
import unittest

import dshpty
from support import LIVE, ClientTest, alive, holds_terminal, wait_until


async def until(condition, what, timeout=30.0):
    """Bounded polling of a process's state, without blocking the loop."""
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"timed out waiting until {what}")


async def output_until(send, text):
    seen = ""
    deadline = asyncio.get_running_loop().time() + 30.0
    while text not in seen:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"the output never held {text!r}: {seen!r}")
        seen += (await send.read_output()).delta
    return seen


class Async(ClientTest):
    def run_async(self, coroutine):
        return asyncio.run(coroutine)

    def test_sessions_sends_and_owners(self):
        async def scenario():
            async with dshpty.AsyncService(owner="agent", env=self.service_env()) as service:
                session = await service.spawn(type="shell", name="main", cwd=self.temp_dir())
                await service.send(session.session_id, "export KEPT=yes")
                send = await service.start_send(session.session_id, text='echo "[$KEPT]"')
                result = await send
                self.assertIn("[yes]", result.viewport)
                self.assertEqual(result.exit_code, 0)
                listing, activity = await asyncio.gather(service.list(), service.has_owner_activity())
                self.assertEqual([s.name for s in listing], ["main"])
                self.assertTrue(activity)
                with self.assertRaises(dshpty.DshptyError) as caught:
                    service.owner("agent")
                self.assertEqual(caught.exception.code, "INVALID_ARGUMENT")
                other = service.owner("other")
                self.assertEqual(await other.list(), [])
                self.assertTrue(await service.kill(session.session_id))
                self.assertFalse(alive(session.pid))
                return service

        service = self.run_async(scenario())
        self.assertFalse(alive(service.pid))

    def test_cancel_and_task_cancellation_are_real_sigints(self):
        async def scenario():
            async with dshpty.AsyncService(env=self.service_env()) as service:
                session = await service.spawn()
                sid = session.session_id
                send = await service.start_send(sid, text="echo \"on\"\"e\"; sleep 300", **LIVE)
                await output_until(send, "one")
                await until(lambda: holds_terminal(session.pid, "sleep"), "sleep holds the terminal")
                self.assertTrue(await send.cancel())
                with self.assertRaises(dshpty.DshptyError) as caught:
                    await send
                self.assertEqual(caught.exception.code, "ABORTED")
                self.assertIn("status-130", (await service.send(sid, 'echo "status-$?"')).viewport)

                # Cancelling the task that awaits a send interrupts the send; the task ends
                # once the repl answered it, so the next send is not SEND_ACTIVE.
                send = await service.start_send(sid, text="echo \"tw\"\"o\"; sleep 300", **LIVE)
                waiter = asyncio.ensure_future(send.result())
                await output_until(send, "two")
                await until(lambda: holds_terminal(session.pid, "sleep"), "sleep holds the terminal")
                waiter.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await waiter
                self.assertTrue(send.done())
                self.assertIn("status-130", (await service.send(sid, 'echo "status-$?"')).viewport)

        self.run_async(scenario())

    def test_the_repl_killed_under_the_client_fails_every_pending_call(self):
        async def scenario():
            service = await dshpty.AsyncService(env=self.service_env()).start()
            session = await service.spawn()
            send = await service.start_send(session.session_id, text="echo \"li\"\"ve\"; sleep 300", **LIVE)
            await output_until(send, "live")
            os.kill(service.pid, signal.SIGKILL)
            with self.assertRaises(dshpty.DshptyError) as caught:
                await send
            self.assertEqual(caught.exception.code, "REPL_EXITED")
            with self.assertRaises(dshpty.DshptyError) as caught:
                await service.list()
            self.assertEqual(caught.exception.code, "REPL_EXITED")
            self.assertEqual(service.pending_count, 0)
            await service.close()
            self.assertEqual(service.returncode, -signal.SIGKILL)
            return session.pid

        shell = self.run_async(scenario())
        wait_until(lambda: not alive(shell), f"shell {shell} is gone after the repl died")


if __name__ == "__main__":
    unittest.main()
