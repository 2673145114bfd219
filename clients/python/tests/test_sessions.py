"""@deepseek-ai/dsh-pty's real-shell scenarios through the installed package and a real dshpty-repl."""

import os
import unittest

import dshpty
from support import ClientTest, alive, command_of, ignores_signal, read_pid, wait_until


class Sessions(ClientTest):
    def test_state_persists_and_host_secrets_are_scrubbed(self):
        service = self.service()
        cwd = self.temp_dir()
        session = service.spawn(type="shell", name="main", cwd=cwd)
        self.assertIsInstance(session, dshpty.SpawnResult)
        self.assertEqual(session.name, "main")
        self.assertEqual(session.status.kind, "running")
        self.assertIsInstance(session.motd, str)
        self.assertTrue(alive(session.pid))

        sid = session.session_id
        result = service.start_send(sid, text="mkdir sub && cd sub", submit=True).result()
        self.assertEqual(result.wait_reason, "stdin_read")
        service.send(sid, "export DSHPTY_PERSIST=kept-value")
        result = service.send(sid, 'pwd; echo "[$DSHPTY_PERSIST]"')
        self.assertEqual(result.wait_reason, "stdin_read")
        self.assertEqual(result.exit_code, 0)
        self.assertEqual(result.cwd, os.path.join(cwd, "sub"))
        self.assertIn(os.path.join(cwd, "sub") + "\n", result.viewport)
        self.assertIn("[kept-value]", result.viewport)
        self.assertEqual(result.session_status.kind, "running")
        self.assertFalse(result.input_hidden)
        self.assertIsNone(result.screen)

        result = service.send(sid, 'echo "<${MY_API_KEY-unset}|${GITHUB_TOKEN-unset}>"')
        self.assertIn("<unset|unset>", result.viewport)

        page = service.read(sid, offset=0, count=20)
        self.assertIn("[kept-value]", page.text)
        self.assertTrue(page.line_begin <= page.line_end <= page.total_lines)
        self.assertEqual([(s.session_id, s.name, s.status.kind) for s in service.list()], [(sid, "main", "running")])
        self.assertTrue(service.signal(sid, "SIGINT").delivered)

        self.assertIs(service.kill(sid), True)
        self.assertFalse(alive(session.pid))
        with self.assertRaises(dshpty.DshptyError) as caught:
            service.read(sid)
        self.assertEqual(caught.exception.code, "NO_SESSION")

    def test_a_term_ignoring_background_child_dies_at_close(self):
        service = self.service()
        cwd = self.temp_dir()
        session = service.spawn(type="shell", cwd=cwd)
        pid_file = os.path.join(cwd, "stubborn.pid")
        service.send(session.session_id,
                     f"bash -c \"trap '' TERM HUP; echo \\$\\$ > {pid_file}.tmp; mv {pid_file}.tmp {pid_file}; "
                     "exec sleep 300\" &")
        wait_until(lambda: os.path.exists(pid_file), "the background child wrote its pid")
        child = read_pid(pid_file)
        wait_until(lambda: command_of(child) == "sleep", "the child runs sleep")
        self.assertTrue(ignores_signal(child, 15))
        self.assertIs(service.kill(session.session_id), True)
        self.assertFalse(alive(child), f"the TERM-ignoring child {child} outlived kill()")
        self.assertFalse(alive(session.pid))

    def test_a_disowned_child_is_gone_after_the_shell_exits_and_the_session_is_closed(self):
        service = self.service()
        cwd = self.temp_dir()
        session = service.spawn(type="shell", cwd=cwd)
        pid_file = os.path.join(cwd, "disowned.pid")
        service.send(session.session_id, f"sleep 300 & echo $! > {pid_file}; disown")
        child = read_pid(pid_file)
        self.assertTrue(alive(child))
        exited = service.send(session.session_id, "exit 3")
        self.assertEqual(exited.wait_reason, "session_exit")
        self.assertEqual((exited.session_status.kind, exited.session_status.exit_code), ("exited", 3))
        self.assertEqual(service.list()[0].status.kind, "exited")
        self.assertIs(service.kill(session.session_id), True)
        self.assertFalse(alive(child), f"the disowned child {child} outlived the closed session")
        self.assertFalse(alive(session.pid))

    def test_screen_and_resize_on_an_xterm_session(self):
        service = self.service()
        sid = service.spawn(type="shell", terminal="xterm").session_id
        service.resize(sid, 30, 100)
        result = service.send(sid, 'echo "$(tput lines)x$(tput cols)"')
        self.assertIn("30x100", result.viewport)
        screen = service.screen(sid)
        self.assertEqual((screen.rows, screen.cols, screen.alternate), (30, 100, False))
        self.assertTrue(any("30x100" in line for line in screen.lines))
        self.assertIsInstance(screen.cursor.row, int)


if __name__ == "__main__":
    unittest.main()
