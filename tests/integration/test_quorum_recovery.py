#!/usr/bin/env python3
"""Losing a majority of the controller quorum, recovered as
docs/operations.md ("Losing a majority (unsafe recovery)") tells an
operator to, with real processes on loopback: three members and three
brokers; two members' disks are lost for good; every member is stopped,
the survivor started first, one lost member formatted anew and started,
the other started empty and unformatted (it rejoins and catches up from a
snapshot). The survivor's history must win: its topics, a leader and the
voters in `weir cluster`, brokers that accept it and serve the records
acknowledged before, new topics, and replacements that hold the history
and vote. Also the documented way to get it wrong: two formatted members
started before the survivor form a quorum with an empty history, which
the brokers refuse, keeping their data.

Also "Replacing a member" on a new host (a new address in --voters, a
rolling restart, the new host rejoining empty). A member that lost its
disk and rejoins at the same address is test_quorum.py's
test_wiped_member_rejoins_and_votes."""
import os
import shutil
import time

from test_quorum import (Quorum, consume_all, create, produce, quorum_shows)
from weirtest import (Controller, cluster_state, free_port, log, run_main,
                      wait_until, weir)

REFUSALS = ("event=metadata_history_behind", "event=metadata_history_diverged",
            "event=cluster_id_mismatch")


class SnapshottingQuorum(Quorum):
    """Members that write a snapshot every few records, so that a member
    rejoining empty catches up from a snapshot, not entry by entry."""

    def ctl_args(self, i):
        return super().ctl_args(i) + ["--snapshot-every-records", "8"]


def lose_majority(q):
    """Pick a follower as the survivor (its history must win although it
    never led), wait until it holds every entry, then kill -9 the other
    two and delete their data dirs: lost for good. Returns (survivor,
    [lost ids, the active one first])."""
    active = q.wait_active()
    survivor = min(i for i in q.ctls if i != active)
    want = {i: "leader" if i == active else "follower" for i in q.ctls}
    # asked of the active controller itself: its own view is current
    qv = wait_until("every member caught up",
                    lambda: quorum_shows(q, q.ctls[active], want), 30)
    log(f"before the loss:\n{qv['text']}")
    lost = [active] + [i for i in q.ctls if i not in (active, survivor)]
    for i in lost:
        q.ctls[i].kill9()
        shutil.rmtree(q.ctls[i].data_dir)
    return survivor, lost


def record_values(prefix, n):
    return [f"{prefix}{i}" for i in range(n)]


def test_unsafe_recovery_survivor_wins():
    with SnapshottingQuorum() as q:
        create(q, "ua", partitions=3)
        create(q, "ub", partitions=1)
        produce(q, "ua", record_values("a", 200))
        produce(q, "ub", record_values("b", 50))
        survivor, (formatted, rejoiner) = lose_majority(q)
        log(f"lost members {formatted} and {rejoiner}; {survivor} survives")
        # alone, the survivor decides nothing
        time.sleep(2.5)  # more than two election timeouts
        assert q.active() == [], q.active()
        alone = weir(q.ctls[survivor], "cluster", check=False, timeout=30)
        assert alone.returncode != 0, alone.stdout

        # 1. stop every member, keep the survivor's data dir
        assert q.ctls[survivor].stop() == 0
        t0 = time.time()
        # 2. start the survivor first, unchanged
        q.ctls[survivor].start()
        # 3. format as many replacements as a majority needs (one of
        # three) with the cluster id and start it; start the other on an
        # empty, unformatted data dir (here: none yet, as on a new host)
        q.format(formatted)
        q.ctls[formatted].start()
        q.ctls[rejoiner].start()
        assert "kind=new" in q.ctls[formatted].log_since_start()
        assert "event=quorum_rejoin" in q.ctls[rejoiner].log_since_start()

        # 4. the survivor leads, every member follows it with lag 0
        new = q.wait_active(timeout=30)
        log(f"{new} active {time.time() - t0:.1f}s after the survivor's start")
        assert new == survivor, (new, survivor)
        want = {i: "leader" if i == survivor else "follower" for i in q.ctls}
        qv = wait_until("the recovered quorum in weir cluster",
                        lambda: quorum_shows(q, q.live_broker(), want), 30)
        log(f"after the recovery:\n{qv['text']}")
        assert qv["leader"] == survivor, qv
        assert "event=snapshot_installed" in \
            q.ctls[rejoiner].log_since_start()

        # brokers took the survivor's history: alive, nothing refused,
        # the topics there with leaders, the acknowledged records served
        st = q.wait_alive({1, 2, 3})
        assert st["controller"] == q.ctls[survivor].addr, st["text"]
        for b in q.brokers.values():
            text = b.log_text()
            assert not any(r in text for r in REFUSALS), (b.addr, text[-3000:])
        wait_until("ua and ub led", lambda: (lambda p: sorted(p) == [
            ("ua", 0), ("ua", 1), ("ua", 2), ("ub", 0)] and all(
                v["leader"] > 0 for v in p.values()))(q.state()["partitions"]),
            30)
        assert sorted(consume_all(q, "ua", 200)) == \
            sorted(record_values("a", 200))
        assert sorted(consume_all(q, "ub", 50)) == \
            sorted(record_values("b", 50))
        # and decisions go on
        create(q, "uc")
        produce(q, "uc", record_values("c", 30))
        assert sorted(consume_all(q, "uc", 30)) == \
            sorted(record_values("c", 30))

        # the replacements hold the history and vote: without the
        # survivor, the two of them elect one and it knows every topic
        q.ctls[survivor].kill9()
        other = q.wait_active(but=(survivor,), timeout=30)
        log(f"survivor killed: {other} active")
        wait_until("every topic known, from the replacement",
                   lambda: (lambda s: s["controller"] == q.ctls[other].addr
                            and {"ua", "ub", "uc"} <= {
                                t for t, _ in s["partitions"]})(q.state()),
                   30)
        produce(q, "ua", record_values("d", 20))
        assert len(consume_all(q, "ua", 220)) == 220


def test_formatted_majority_started_first_loses_history():
    """The documented mistake: two formatted members started before the
    survivor elect one of themselves with an empty history. Brokers
    refuse it, never register with it (it does not know their epochs:
    they check its history first), keep their data and keep serving."""
    with Quorum() as q:
        create(q, "uf", partitions=1)
        produce(q, "uf", record_values("f", 50))
        registered = {i: b.log_text().count("event=registered ")
                      for i, b in q.brokers.items()}
        survivor, lost = lose_majority(q)
        assert q.ctls[survivor].stop() == 0
        for i in lost:
            q.format(i)
            q.ctls[i].start()
        new = q.wait_active(timeout=30)
        assert new in lost, (new, lost)
        st = cluster_state(q.ctls[new])
        log(f"formatted member {new} active:\n{st['text']}")
        assert not any(t == "uf" for t, _ in st["partitions"]), st["text"]
        wait_until("brokers refuse the empty history", lambda: all(
            "event=metadata_history_behind" in b.log_text()
            for b in q.brokers.values()), 30)
        # delete nothing, register nothing, keep serving what they have
        for i, b in q.brokers.items():
            seg = os.path.join(b.data_dir, "uf-0", "0" * 20 + ".log")
            assert os.path.getsize(seg) > 0, seg
            text = b.log_text()
            assert "event=register_after_check" in text, text[-3000:]
            assert text.count("event=registered ") == registered[i], \
                text[-3000:]
        assert sorted(consume_all(q, "uf", 50)) == \
            sorted(record_values("f", 50))


def test_replace_member_on_a_new_host():
    """"Replacing a member" with a new address: the old host gone for
    good, the others restarted one at a time with the new voters, the new
    host started empty and unformatted (it rejoins), brokers left alone."""
    with Quorum() as q:
        create(q, "ur", partitions=3)
        produce(q, "ur", record_values("r", 100))
        active = q.wait_active()
        gone = max(i for i in q.ctls if i != active)
        # 1. the old host is stopped for good
        q.ctls[gone].kill9()
        shutil.rmtree(q.ctls[gone].data_dir)
        new = Controller(data_dir=q.ctls[gone].data_dir + "-new",
                         port=free_port(), format=False)
        q.voters = ",".join(
            f"{i}@{new.addr if i == gone else c.addr}"
            for i, c in q.ctls.items())
        new.args = q.ctl_args(gone)
        # 2. the survivors restarted one at a time with the new voters,
        # each time until a member names an active controller again
        for i in [i for i in q.ctls if i != gone]:
            c = q.ctls[i]
            assert c.stop() == 0
            c.args = q.ctl_args(i)
            c.start()
            other = next(j for j in q.ctls if j not in (i, gone))
            wait_until(f"an active controller after {i}'s restart",
                       lambda: weir(q.ctls[other], "cluster", check=False,
                                    timeout=30).returncode == 0, 30)
        # 3. the new host: empty, unformatted, the cluster id: it rejoins
        q.ctls[gone] = new
        new.start()
        assert "event=quorum_rejoin" in new.log_since_start()
        leader = q.wait_active()
        want = {i: "leader" if i == leader else "follower" for i in q.ctls}
        qv = wait_until("the new host in the quorum, caught up",
                        lambda: quorum_shows(q, q.live_broker(), want), 30)
        log(f"member {gone} on its new host:\n{qv['text']}")
        # 4. brokers, their --controller lists unchanged, carry on
        create(q, "ur2", partitions=1)
        assert sorted(consume_all(q, "ur", 100)) == \
            sorted(record_values("r", 100))
        # the new host votes: with the active member gone, the other two
        # elect one of themselves
        q.ctls[leader].kill9()
        after = q.wait_active(but=(leader,), timeout=30)
        log(f"active member {leader} killed: {after} active")
        wait_until("ur2 known, from the new active controller",
                   lambda: (lambda s: s["controller"] == q.ctls[after].addr
                            and ("ur2", 0) in s["partitions"])(q.state()), 30)


if __name__ == "__main__":
    run_main([test_unsafe_recovery_survivor_wins,
              test_formatted_majority_started_first_loses_history,
              test_replace_member_on_a_new_host])
