"""A local sweep's worker: ``python -m tailsim._sweep_worker PARENT_PID``, started by ``sweep._Workers``.

A fresh interpreter, not a fork of the caller: a forked child inherits every lock the caller's other threads
held at that instant (a test runner's, Dask's or tqdm's threads), and waits for ever on the first it needs —
seen in a CI run, a forked worker in a futex wait while its parent waited on it. Nor is it a multiprocessing
"spawn" child, which imports the caller's ``__main__`` again (a script without an
``if __name__ == "__main__":`` guard would start its sweep again inside every worker).

It reads point specs from stdin (one pickle each) and answers each with its outcome (one pickle) on the
stdout it was started with; anything else printed goes to stderr, so it cannot corrupt an answer. EOF on stdin
(the sweep is done) ends it.
"""

from __future__ import annotations

import os
import signal
import sys


def main() -> int:
    # A Ctrl-C while this interpreter is still importing: leave quietly (no traceback on the terminal), as a
    # worker between points does. `_worker_init` takes over the signals once the imports are done.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: os._exit(130))
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    import pickle

    from .sweep import _run_point, _worker_init

    _worker_init(int(sys.argv[1]))
    specs = sys.stdin.buffer
    while True:
        try:
            spec = pickle.load(specs)
        except EOFError:
            return 0
        pickle.dump(_run_point(spec), answers)
        answers.flush()


if __name__ == "__main__":
    sys.exit(main())
