"""The client's own rules: owners by name, errors as DshptyError codes, the repl child's end."""

import ctypes
import os
import signal
import subprocess
import sys
import unittest

import dshpty
from support import LIVE, ClientTest, alive, output_until, wait_until


class Lifecycle(ClientTest):
    def code_of(self, fn, *args, **kwargs):
        with self.assertRaises(dshpty.DshptyError) as caught:
            fn(*args, **kwargs)
        return caught.exception.code

    def test_owners_one_live_per_name_disposed_fail_locally_names_come_back(self):
        self.assertEqual(self.code_of(dshpty.Service, owner="", env=self.service_env()), "INVALID_ARGUMENT")
        service = self.service(owner="agent")
        self.assertEqual(service.owner_name, "agent")
        self.assertEqual(self.code_of(service.owner, "agent"), "INVALID_ARGUMENT")
        session = service.spawn(type="shell")
        intruder = service.owner("intruder")
        self.assertIn(self.code_of(intruder.read, session.session_id), ("FOREIGN_SESSION", "NO_SESSION"))
        self.assertTrue(service.has_owner_activity())
        self.assertFalse(intruder.has_owner_activity())

        service.dispose_owner()
        self.assertFalse(alive(session.pid), f"shell {session.pid} outlived dispose_owner()")
        self.assertEqual(self.code_of(service.list), "OWNER_NOT_LIVE")
        self.assertEqual(self.code_of(service.start_send, session.session_id, text="true"), "OWNER_NOT_LIVE")
        self.assertEqual(self.code_of(service.dispose_owner), "OWNER_NOT_LIVE")
        again = service.owner("agent")  # a fresh owner under the same label
        self.assertEqual(again.list(), [])
        intruder.dispose_owner()
        self.assertEqual(self.code_of(intruder.list), "OWNER_NOT_LIVE")

    def test_the_repls_errors_arrive_as_dshpty_errors_with_their_codes(self):
        service = self.service()
        self.assertEqual(self.code_of(service.spawn, type="no-such-backend"), "NO_BACKEND")
        self.assertEqual(self.code_of(service.read, "pty-404"), "NO_SESSION")
        sid = service.spawn(name="main").session_id
        self.assertEqual(self.code_of(service.spawn, name="main"), "DUPLICATE_NAME")
        self.assertEqual(self.code_of(service.signal, sid, "SIGFOO"), "INVALID_ARGUMENT")
        self.assertEqual(self.code_of(service.send, sid, keys=["NoSuchKey"]), "INVALID_ARGUMENT")
        self.assertIn("fine", service.send(sid, "echo fine").viewport)

    def test_the_repl_killed_under_the_client_fails_every_pending_call(self):
        service = self.service()
        sessions = [service.spawn() for _ in range(2)]
        sends = [service.start_send(s.session_id, text="echo \"li\"\"ve\"; sleep 300", **LIVE) for s in sessions]
        for send in sends:
            output_until(send, "live")
        self.assertEqual(service.pending_count, 2)
        os.kill(service.pid, signal.SIGKILL)
        for send in sends:
            with self.assertRaises(dshpty.DshptyError) as caught:
                send.result()
            self.assertEqual(caught.exception.code, "REPL_EXITED")
            self.assertIn("SIGKILL", caught.exception.message)
        self.assertEqual(service.pending_count, 0)
        self.assertEqual(self.code_of(service.list), "REPL_EXITED")
        self.assertEqual(self.code_of(sends[0].read_output), "REPL_EXITED")
        for session in sessions:
            wait_until(lambda: not alive(session.pid), f"shell {session.pid} is gone after the repl died")
        service.close()
        self.assertEqual(service.returncode, -signal.SIGKILL)

    def test_the_repl_leads_a_process_group_of_its_own(self):
        # A Ctrl-C meant for the host (its terminal's foreground group) does not reach it.
        service = self.service()
        self.assertEqual(os.getpgid(service.pid), service.pid)
        self.assertNotEqual(os.getpgid(service.pid), os.getpgrp())

    def test_a_host_killed_without_closing_takes_its_sessions_with_it(self):
        # The repl is in a process group of its own, so nothing signals it when its host
        # dies: the EOF on its stdin must end it. This process adopts it (a subreaper) to
        # reap it, rather than leave that to whatever pid 1 is.
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_CHILD_SUBREAPER = 36
        self.assertEqual(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0)
        self.addCleanup(libc.prctl, PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
        host = ("import dshpty, os, signal\n"
                "service = dshpty.Service()\n"
                "print(service.pid, service.spawn().pid, flush=True)\n"
                "os.kill(os.getpid(), signal.SIGKILL)\n")
        done = subprocess.run([sys.executable, "-c", host], env=self.service_env(), stdout=subprocess.PIPE, text=True)
        self.assertEqual(done.returncode, -signal.SIGKILL)
        repl, shell = map(int, done.stdout.split())
        status = []
        wait_until(lambda: status.append(os.waitpid(repl, os.WNOHANG)) or status[-1][0] == repl,
                   f"the orphaned repl {repl} exits")
        self.assertEqual(os.waitstatus_to_exitcode(status[-1][1]), 0)
        self.assertFalse(alive(shell), f"shell {shell} outlived its host")

    def test_close_ends_every_tree_and_refuses_later_calls(self):
        service = dshpty.Service(env=self.service_env())
        with service:
            session = service.spawn()
        self.assertFalse(alive(session.pid))
        self.assertFalse(alive(service.pid))
        self.assertEqual(service.returncode, 0)
        self.assertEqual(self.code_of(service.list), "SERVICE_DISPOSING")
        service.close()  # twice is fine

    def test_the_repl_is_found_from_its_argument_then_dshpty_repl_then_path(self):
        repl = os.environ["DSHPTY_REPL"]
        self.assertEqual(self.code_of(dshpty.Service, repl="/nonexistent/dshpty-repl"), "REPL_NOT_FOUND")
        self.assertEqual(self.code_of(dshpty.Service, env={"PATH": "/nonexistent"}), "REPL_NOT_FOUND")
        by_path = self.service(env=self.service_env(DSHPTY_REPL="", PATH=os.path.dirname(repl) + ":" + os.environ["PATH"]))
        by_argument = self.service(repl=repl, env=self.service_env(DSHPTY_REPL="/nonexistent"))
        for service in (by_path, by_argument):
            self.assertEqual(service.list(), [])


if __name__ == "__main__":
    unittest.main()
