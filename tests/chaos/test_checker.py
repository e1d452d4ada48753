#!/usr/bin/env python3
"""The chaos checker against made-up histories: a clean one passes, and
each rule fires on the history that breaks it (a checker that cannot fail
proves nothing). No processes, runs in well under a second."""
import sys
import unittest

import history


class FakeProducer:
    def __init__(self, name, reports, sent=None, chunk=1):
        self.name, self.chunk = name, chunk
        self.reports = [(i,) + r for i, r in enumerate(reports)]
        self.sent = len(reports) if sent is None else sent
        self.chunk_t = [float(i) for i in range(self.sent)]

    def value(self, i):
        return f"{self.name}-{i}"

    def send_time(self, i):
        return self.chunk_t[i // self.chunk]


class FakeConsumer:
    def __init__(self, name, lines):
        self.name = name
        self.lines = [(float(t), ln) for t, ln in lines]


def log_of(*entries):
    return {(p, o): v for p, o, v in entries}, []


def clean():
    prod = FakeProducer("p", [(0, 0, 1.0), (1, 0, 1.1), (0, 1, 1.2)])
    log = log_of((0, 0, "p-0"), (1, 0, "p-1"), (0, 1, "p-2"))
    cons = FakeConsumer("c", [
        (1, "# assigned 0 1"), (2, "0 0 p-0"), (2, "1 0 p-1"),
        (3, "# committed 0:1 1:1"), (4, "0 1 p-2"), (5, "# committed 0:2"),
        (6, "# revoked 0 1")])
    return [prod], [cons], log


class CheckerTest(unittest.TestCase):
    def rules(self, prods, cons, log):
        bad, summary = history.check(prods, cons, log, 2)
        return bad.counts, summary

    def test_clean_history_passes(self):
        counts, s = self.rules(*clean())
        self.assertEqual(counts, {})
        self.assertEqual((s["attempted"], s["acknowledged"], s["failed"],
                          s["indefinite"], s["consumer_reads"]),
                         (3, 3, 0, 0, 3))

    def test_acknowledged_missing(self):
        prods, cons, (log, d) = clean()
        del log[(0, 1)]
        counts, _ = self.rules(prods, cons, (log, d))
        self.assertEqual(counts.get("acknowledged-missing"), 2)  # + the read

    def test_two_values_at_offset(self):
        prods, cons, (log, d) = clean()
        log[(1, 0)] = "p-other"
        counts, _ = self.rules(prods, cons, (log, d))
        self.assertGreaterEqual(counts.get("two-values-at-offset", 0), 1)

    def test_two_acks_at_one_offset(self):
        prod = FakeProducer("p", [(0, 0, 1.0), (0, 0, 1.1)])
        counts, _ = self.rules([prod], [], log_of((0, 0, "p-0")))
        self.assertGreaterEqual(counts.get("two-values-at-offset", 0), 1)

    def test_duplicate(self):
        prods, cons, (log, d) = clean()
        log[(1, 1)] = "p-0"
        counts, _ = self.rules(prods, cons, (log, d))
        self.assertEqual(counts.get("duplicate"), 1)

    def test_definite_failure_visible(self):
        prod = FakeProducer("p", [(0, 0, 1.0), (None, "MESSAGE_TOO_LARGE",
                                                 1.1)])
        counts, s = self.rules([prod], [], log_of((0, 0, "p-0"),
                                                  (0, 1, "p-1")))
        self.assertEqual(counts.get("definite-failure-visible"), 1)
        self.assertEqual(s["failed"], 1)

    def test_indefinite_may_be_visible(self):
        prod = FakeProducer("p", [(0, 0, 1.0), (None, "REQUEST_TIMED_OUT",
                                                 1.1)], sent=3)
        counts, s = self.rules([prod], [], log_of((0, 0, "p-0"),
                                                  (0, 1, "p-1")))
        self.assertEqual(counts, {})
        self.assertEqual((s["indefinite"], s["indefinite_in_log"]), (2, 1))

    def test_retriable_definite_failure_visible(self):
        # NOT_LEADER is retriable, but it means "refused before writing":
        # a record reported with it must never be read
        prod = FakeProducer("p", [(0, 0, 1.0), (None, "NOT_LEADER", 1.1)])
        counts, s = self.rules([prod], [], log_of((0, 0, "p-0"),
                                                  (0, 1, "p-1")))
        self.assertEqual(counts.get("definite-failure-visible"), 1)
        self.assertEqual((s["failed"], s["indefinite"]), (1, 0))

    def test_after_append_failures_are_unknown(self):
        # answered after the leader appended: unknown, may be in the log
        names = ["NOT_LEADER_AFTER_APPEND", "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
                 "STORAGE", "IO", "NETWORK", "SOME_FUTURE_CODE"]
        prod = FakeProducer("p", [(None, n, 1.0) for n in names])
        log = log_of(*[(0, i, f"p-{i}") for i in range(len(names))])
        counts, s = self.rules([prod], [], log)
        self.assertEqual(counts, {})
        self.assertEqual((s["failed"], s["indefinite"],
                          s["indefinite_in_log"]),
                         (0, len(names), len(names)))

    def test_definite_failure_not_visible_is_fine(self):
        prod = FakeProducer("p", [(0, 0, 1.0), (None, "NOT_LEADER", 1.1),
                                  (None, "NOT_ENOUGH_REPLICAS", 1.2)])
        counts, s = self.rules([prod], [], log_of((0, 0, "p-0")))
        self.assertEqual(counts, {})
        self.assertEqual(s["failed"], 2)

    def test_consumer_backwards(self):
        prods, _, log = clean()
        cons = FakeConsumer("c", [(1, "# assigned 0"), (2, "0 1 p-2"),
                                  (3, "0 0 p-0")])
        counts, _ = self.rules(prods, [cons], log)
        self.assertEqual(counts.get("consumer-backwards"), 1)

    def test_reread_after_reassignment_is_allowed(self):
        prods, _, log = clean()
        cons = FakeConsumer("c", [(1, "# assigned 0"), (2, "0 1 p-2"),
                                  (3, "# revoked 0"), (4, "# assigned 0"),
                                  (5, "0 0 p-0")])
        counts, _ = self.rules(prods, [cons], log)
        self.assertEqual(counts, {})

    def test_commit_backwards_across_members(self):
        prods, _, log = clean()
        a = FakeConsumer("a", [(1, "# assigned 0"), (2, "# committed 0:2")])
        b = FakeConsumer("b", [(3, "# assigned 0"), (4, "# committed 0:1")])
        counts, _ = self.rules(prods, [a, b], log)
        self.assertEqual(counts.get("commit-backwards"), 1)

    def test_failed_commit_is_not_a_commit(self):
        prods, _, log = clean()
        a = FakeConsumer("a", [(1, "# assigned 0"), (2, "# committed 0:2"),
                               (3, "# commit failed NETWORK 0:1")])
        counts, _ = self.rules(prods, [a], log)
        self.assertEqual(counts, {})

    def test_unowned_read(self):
        prods, _, log = clean()
        cons = FakeConsumer("c", [(1, "# assigned 1"), (2, "0 0 p-0")])
        counts, _ = self.rules(prods, [cons], log)
        self.assertEqual(counts.get("unowned-partition-read"), 1)

    def test_gap(self):
        prods, cons, (log, d) = clean()
        log[(0, 3)] = "p-9"
        counts, _ = self.rules(prods, cons, (log, d))
        self.assertEqual(counts.get("offset-gap"), 1)

    def test_fault_metrics(self):
        prod = FakeProducer("p", [(0, 0, 10.5), (1, 0, 11.0), (0, 1, 12.5)],
                            sent=3)
        prod.chunk_t = [9.0, 10.2, 10.4]
        cons = FakeConsumer("c", [(10.6, "1 0 x"), (13.0, "# committed 1:1")])
        m = history.fault_metrics({"t_fault": 10.0, "t_heal": 12.0,
                                   "partitions": [0]}, [prod], [cons])
        # the first ack on partition 0 of a write sent after the fault:
        # record 2 (sent 10.4, acked 12.5); record 0 was sent before it
        self.assertEqual(m["unavailable_ms"], 2500)
        self.assertEqual(m["commit_gap_ms"], 3000)
        # partition 0's acks at 10.5 and 12.5 after the fault at 10.0
        self.assertEqual(m["longest_gap_ms"], 2000)
        self.assertEqual((m["acks_during"], m["polls_during"]), (2, 1))


class ControllerHistoryTest(unittest.TestCase):
    """envs.compare_histories: members' event=applied lines."""

    @staticmethod
    def lines(*runs):
        return "\n".join(f"ts=x level=info sub=controller event=applied "
                         f"from={a} to={b} term={t}" for a, b, t in runs)

    def test_agreeing_members_pass(self):
        import envs
        n, problems = envs.compare_histories({
            1: self.lines((1, 5, 1), (6, 9, 2)),
            2: self.lines((1, 3, 1), (4, 5, 1), (6, 7, 2)),
            # a wiped member: its old history, then from a snapshot on
            3: self.lines((1, 4, 1)) + "\nevent=snapshot_installed "
            "index=7 term=2\n" + self.lines((8, 9, 2))})
        self.assertEqual((n, problems), (9, []))

    def test_a_deposed_term_applied_is_found(self):
        import envs
        n, problems = envs.compare_histories({
            1: self.lines((1, 5, 1), (6, 6, 2)),
            2: self.lines((1, 5, 1), (6, 7, 3))})
        self.assertEqual(n, 7)
        self.assertEqual(len(problems), 1)
        self.assertIn("index 6", problems[0])

    def test_one_member_applying_two_terms_at_an_index(self):
        import envs
        _, problems = envs.compare_histories({
            1: self.lines((1, 3, 1), (3, 4, 2))})
        self.assertEqual(len(problems), 1)


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False).result.wasSuccessful() else 1)
