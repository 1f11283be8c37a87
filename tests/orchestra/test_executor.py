"""The inline executor's conductor: one thread runs at a time, simulated time moves only when
every thread waits, to the earliest wake-up, and a stopped node gets BudgetEnd."""

from __future__ import annotations

import threading

import pytest

from rsi_master.orchestra import BudgetEnd
from rsi_master.orchestra._executor import Conductor


def _run(conductor: Conductor, plans: dict[str, list[float]], log: list) -> None:
    done = dict.fromkeys(plans, False)

    def node(name: str, sleeps: list[float]):
        def body():
            for s in sleeps:
                log.append((conductor.time(), name, "sleep", s))
                conductor.sleep(s)
            log.append((conductor.time(), name, "end"))

        return body

    def ended(th):
        done[th.name] = True

    for name, sleeps in plans.items():
        conductor.spawn(node(name, sleeps), name, ended)
    while not all(done.values()):
        conductor.wait_for(lambda: all(done.values()), 1000.0)


def test_time_advances_to_the_earliest_wake_up_and_order_is_deterministic():
    logs = []
    for _ in range(3):
        c = Conductor(100.0)
        log: list = []
        _run(c, {"a": [5.0, 5.0], "b": [3.0], "c": [7.0]}, log)
        logs.append(log)
    assert logs[0] == logs[1] == logs[2]
    ends = {e[1]: e[0] for e in logs[0] if e[2] == "end"}
    assert ends == {"a": 110.0, "b": 103.0, "c": 107.0}


def test_only_one_thread_runs_at_a_time():
    c = Conductor(0.0)
    inside = []
    running = [0]
    lock = threading.Lock()

    def body():
        for _ in range(20):
            with lock:
                running[0] += 1
                inside.append(running[0])
            # no lock held across the conductor's wait: another thread would run here if it could
            with lock:
                running[0] -= 1
            c.sleep(1.0)
        ends.append(c.time())

    done, ends = [], []
    for i in range(4):
        c.spawn(body, f"n{i}", lambda th: done.append(th.name))
    while len(done) < 4:
        c.wait_for(lambda: len(done) == 4, 100.0)
    assert max(inside) == 1
    assert ends == [20.0] * 4


def test_a_stopped_node_gets_budget_end_at_its_wait():
    c = Conductor(0.0)
    seen = []

    def body():
        try:
            c.sleep(3600.0)
        except BudgetEnd:
            seen.append(c.time())

    done = []
    th = c.spawn(body, "n", lambda t: done.append(1))
    c.wait_for(lambda: False, 10.0)  # the node starts and waits for an hour
    c.stop(th)
    while not done:
        c.wait_for(lambda: bool(done), 10.0)
    assert seen == [10.0]  # woken when stopped, not an hour later


def test_acting_on_the_clock_out_of_turn_is_refused():
    c = Conductor(0.0)
    errors = []

    def outsider():
        try:
            c.sleep(1.0)
        except RuntimeError as exc:
            errors.append(str(exc))

    th = threading.Thread(target=outsider)
    th.start()
    th.join()
    assert errors and "without its turn" in errors[0]


def test_use_clock_refuses_a_second_simulated_clock():
    from rsi_master import _clock

    with _clock.use_clock(Conductor(5.0)):
        assert _clock.now() == 5.0
        with pytest.raises(RuntimeError), _clock.use_clock(Conductor(6.0)):
            pass
    assert _clock.current() is _clock.REAL


def test_a_scaled_clock_runs_speed_times_real_time_and_reads_alike_in_every_process():
    import time

    from rsi_master._clock import ScaledClock

    clock = ScaledClock(1000.0, 50.0)
    t0, r0 = clock.time(), time.time()
    clock.sleep(5.0)  # five simulated seconds: a tenth of a real one
    real, sim = time.time() - r0, clock.time() - t0
    assert 0.09 < real < 1.0 and sim == pytest.approx(real * 50.0, rel=0.05)
    # Another process (a Ray task) given the same origin, speed and real origin reads the same time.
    twin = ScaledClock(clock.origin, clock.speed, clock.origin_real)
    assert abs(twin.time() - clock.time()) < 0.5
    with pytest.raises(ValueError, match="must be positive"):
        ScaledClock(0.0, 0.0)
