"""Runs a test script's test functions, as ctest and Meson call the scripts:
one test name per run (or every test_* function), a watchdog (SIGALRM) that
ends a hung run, one line per test ("ok   NAME (1.23s)" / "FAIL NAME: ..."),
exit status 1 when any failed. New scripts use it; the older ones
(http_server_test.py, ...) still carry their own copy."""
import signal
import time


def run(tests, names, watchdog_seconds):
    """`tests`: the script's globals(); `names`: the tests to run (empty: all)."""
    names = names or [n for n in tests if n.startswith("test_")]
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("watchdog")))
    signal.alarm(watchdog_seconds)
    failed = 0
    for name in names:
        t0 = time.monotonic()
        try:
            tests[name]()
            print("ok   %s (%.2fs)" % (name, time.monotonic() - t0), flush=True)
        except Exception as e:  # report and go on: one run shows every failure
            failed += 1
            print("FAIL %s: %r" % (name, e), flush=True)
    return 1 if failed else 0
