"""Cancellation and overlapping requests: cancel() is a real SIGINT to the session's
foreground group, and the send it cancels raises only once the repl has answered it, so the
next send on the session goes through."""

import os
import signal
import sys
import threading
import unittest

import dshpty
from support import LIVE, ClientTest, output_until, wait_foreground, wait_until

# Puts the terminal in raw mode (no ISIG: a typed ^C would be a byte, not a signal), says so,
# then waits without reading the terminal; restores the mode on SIGINT and exits 130.
RAW_PROGRAM = ('python3 -c "import sys,termios,time,tty\n'
               'saved = termios.tcgetattr(0)\n'
               'tty.setraw(0)\n'
               "print('raw' '-ready', end='\\r\\n', flush=True)\n"
               'try:\n    time.sleep(300)\n'
               "except KeyboardInterrupt:\n    termios.tcsetattr(0, termios.TCSAFLUSH, saved); print('got-sigint'); "
               'sys.exit(130)\n"')


class Cancel(ClientTest):
    def test_cancel_stops_a_raw_mode_program_with_a_real_sigint_and_the_next_send_works(self):
        service = self.service()
        session = service.spawn(type="shell", name="main")
        send = service.start_send(session.session_id, text=RAW_PROGRAM, **LIVE)
        output_until(send, "raw-ready")
        wait_foreground(session.pid, "python3")
        self.assertIs(send.cancel(), True)
        with self.assertRaises(dshpty.DshptyError) as caught:
            send.result()
        self.assertEqual(caught.exception.code, "ABORTED")
        self.assertIsInstance(caught.exception.result, dshpty.SendResult)
        self.assertIn("got-sigint", caught.exception.result.viewport)
        after = service.send(session.session_id, 'echo "after-$?"')
        self.assertEqual(after.wait_reason, "stdin_read")
        self.assertIn("after-130", after.viewport)
        self.assertIs(send.cancel(), False)

    def test_a_ctrl_c_while_waiting_for_a_result_cancels_the_send(self):
        service = self.service()
        session = service.spawn()
        send = service.start_send(session.session_id, text='echo "st""arted"; sleep 300', **LIVE)
        output_until(send, "started")
        wait_foreground(session.pid, "sleep")
        main = threading.get_ident()

        def waiting_in_result():
            frame = sys._current_frames().get(main)
            names = []
            while frame is not None:
                names.append(frame.f_code.co_name)
                frame = frame.f_back
            return "result" in names and "wait" in names

        def interrupt():
            # Only once the main thread is blocked inside result(): a SIGINT earlier would be
            # a KeyboardInterrupt somewhere else.
            wait_until(waiting_in_result, "the main thread waits in result()")
            os.kill(os.getpid(), signal.SIGINT)

        helper = threading.Thread(target=interrupt)
        helper.start()
        self.addCleanup(helper.join)
        with self.assertRaises(KeyboardInterrupt):
            send.result()
        self.assertTrue(send.done())
        self.assertIn("status-130", service.send(session.session_id, 'echo "status-$?"').viewport)

    def test_result_timeout_leaves_the_send_running(self):
        service = self.service()
        session = service.spawn(type="shell")
        send = service.start_send(session.session_id, text="echo \"st\"\"arted\"; sleep 300", **LIVE)
        output_until(send, "started")
        with self.assertRaises(TimeoutError):
            send.result(timeout=0.01)
        self.assertFalse(send.done())
        wait_foreground(session.pid, "sleep")
        self.assertTrue(service.signal(session.session_id, "SIGINT").delivered)
        self.assertEqual(send.result().wait_reason, "stdin_read")

    def test_while_a_send_is_live_list_answers_and_a_second_send_is_refused(self):
        service = self.service()
        busy = service.spawn(type="shell", name="busy")
        other = service.spawn(type="shell", name="other")
        live = service.start_send(busy.session_id, text="echo \"bu\"\"sy-start\"; sleep 300", **LIVE)
        output_until(live, "busy-start")

        outcomes = {}

        def run(name, fn):
            try:
                outcomes[name] = fn()
            except dshpty.DshptyError as error:
                outcomes[name] = error

        threads = [threading.Thread(target=run, args=args) for args in [
            ("list", service.list),
            ("second", lambda: service.send(busy.session_id, "echo second")),
            ("elsewhere", lambda: service.send(other.session_id, "echo elsewhere")),
            ("activity", service.has_owner_activity),
        ]]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(sorted(s.name for s in outcomes["list"]), ["busy", "other"])
        self.assertIsInstance(outcomes["second"], dshpty.DshptyError)
        self.assertEqual(outcomes["second"].code, "SEND_ACTIVE")
        self.assertIn("elsewhere", outcomes["elsewhere"].viewport)
        self.assertIs(outcomes["activity"], True)

        wait_foreground(busy.pid, "sleep")
        self.assertTrue(live.cancel())
        with self.assertRaises(dshpty.DshptyError):
            live.result()
        self.assertIn("second", service.send(busy.session_id, "echo second").viewport)


if __name__ == "__main__":
    unittest.main()
