"""What goes on the wire, seen through a stand-in repl that answers each request with the
request itself and refuses unknown `open` fields as a strict repl does
(tests/clients/fake_repl.py): only the arguments a caller gave are sent, under the JSON face's
names (docs/tool-protocol.md), and a repl's refusal of one reaches the caller as its DshptyError."""

import os
import unittest

import dshpty
from support import ClientTest

FAKE = os.environ.get("DSHPTY_FAKE_REPL")


def sent(wire):
    fields = dict(wire)
    assert isinstance(fields.pop("id"), int)
    return fields


@unittest.skipUnless(FAKE, "DSHPTY_FAKE_REPL (the stand-in repl) is not set")
class Fields(ClientTest):
    def test_only_the_arguments_given_are_sent_and_an_unknown_field_is_the_repls_error(self):
        service = self.service(repl=FAKE, owner="agent")
        self.assertEqual(sent(service.spawn().extra["request"]), {"op": "open", "owner": "agent", "type": "shell"})
        opened = service.spawn(type="shell", name="n", cwd="/", terminal="xterm", sandbox="read-only", network=True)
        self.assertEqual(sent(opened.extra["request"]), {"op": "open", "owner": "agent", "type": "shell", "name": "n",
                                                         "cwd": "/", "terminal": "xterm", "sandbox": "read-only",
                                                         "network": "on"})
        with self.assertRaises(dshpty.DshptyError) as caught:
            service.spawn(linger=5)
        self.assertEqual(caught.exception.code, "INVALID_ARGUMENT")
        self.assertIn('"linger"', caught.exception.message)

        send = service.start_send("pty-1", keys=["Up"])
        self.assertEqual(sent(send.result().extra["request"]),
                         {"op": "send", "owner": "agent", "sessionId": "pty-1", "keys": ["Up"]})
        full = service.send("pty-1", "x", submit=False, timeout_ms=5, idle_ms=6)
        self.assertEqual(sent(full.extra["request"]), {"op": "send", "owner": "agent", "sessionId": "pty-1", "text": "x",
                                                       "submit": False, "timeoutMs": 5, "idleMs": 6})
        self.assertEqual(sent(service.read("pty-1").extra["request"]),
                         {"op": "read", "owner": "agent", "sessionId": "pty-1"})
        self.assertEqual(sent(service.list()[0].extra["request"]), {"op": "list", "owner": "agent"})

    def test_the_newer_open_fields_and_attach_pass_through_by_their_names(self):
        service = self.service(repl=FAKE, owner="agent",
                               env=self.service_env(FAKE_REPL_OPEN_FIELDS="type,shell,rc,history,linger"))
        opened = service.spawn(shell="zsh", rc="user", history="off", linger=60)
        self.assertEqual(sent(opened.extra["request"]), {"op": "open", "owner": "agent", "type": "shell", "shell": "zsh",
                                                         "rc": "user", "history": "off", "linger": 60})
        self.assertEqual(sent(service.attach(name="main")[0].extra["request"]),
                         {"op": "attach", "owner": "agent", "name": "main"})
        self.assertEqual(sent(service.attach()[0].extra["request"]), {"op": "attach", "owner": "agent"})


if __name__ == "__main__":
    unittest.main()
