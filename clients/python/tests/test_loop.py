"""A thousand sends through one service: nothing accumulates per send (requests awaiting
answers, threads, traced memory)."""

import gc
import threading
import tracemalloc
import unittest

from support import ClientTest

WARM_UP = 100
ROUNDS = 1000
# Far below what a per-send leak of even a small object (a few hundred bytes) leaves after
# 900 sends, far above what the allocator's caches vary by.
MEMORY_SLACK = 256 * 1024


def traced_after_gc():
    gc.collect()  # a send's answer and its future refer to each other until collected
    return tracemalloc.get_traced_memory()[0]


class Loop(ClientTest):
    def test_a_thousand_sends_leak_neither_memory_nor_threads(self):
        service = self.service()
        sid = service.spawn().session_id
        threads = threading.active_count()
        tracemalloc.start()
        self.addCleanup(tracemalloc.stop)
        baseline = 0
        for round in range(ROUNDS):
            if round == WARM_UP:
                baseline = traced_after_gc()
            send = service.start_send(sid, text="true")
            if round % 10 == 0:
                send.read_output()
            result = send.result()
            self.assertEqual((result.wait_reason, result.exit_code), ("stdin_read", 0))
        growth = traced_after_gc() - baseline
        print(f"traced memory growth over {ROUNDS - WARM_UP} sends: {growth} bytes")
        self.assertLess(growth, MEMORY_SLACK)
        self.assertEqual(service.pending_count, 0)
        self.assertEqual(threading.active_count(), threads)


if __name__ == "__main__":
    unittest.main()
