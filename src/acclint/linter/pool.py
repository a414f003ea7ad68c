"""Worker processes that analyse one file at a time, and are killed when a file outlasts its time budget.

concurrent.futures' ProcessPoolExecutor cannot stop one task: killing a worker breaks the whole
pool. libcst's native parser cannot be interrupted from inside its process either (budget.py).
So each worker here has its own pipe, takes one file at a time, and the parent kills it at the
file's deadline and starts another in its place; the scan goes on with the next file.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import time
from collections import deque
from multiprocessing.connection import wait
from typing import Optional

from acclint.linter.analyze import FileOutcome, analyze_file
from acclint.linter.collector import COLLECT_EVERY
from acclint.linter.limits import Limits

# A worker's own alarm (budget.py) reports an overrun of Python-level analysis; the parent kills
# only a worker still silent this long after the deadline (stuck in native code).
KILL_GRACE_S = 0.5


def _serve(conn, rules: list, limits: Limits, parent: int) -> None:
    gc.disable()  # collections by hand only, as in the scan's own process (collector.py)
    done = 0
    while True:
        while not conn.poll(1.0):
            if os.getppid() != parent:  # the scan is gone: do not linger
                return
        job = conn.recv()
        if job is None:
            return
        conn.send(analyze_file(job[0], job[1], rules, limits))
        done += 1
        if done % COLLECT_EVERY == 0:  # a worker keeps nothing it analysed: nothing to freeze
            gc.collect()


class _Worker:
    def __init__(self, context, rules: list, limits: Limits):
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child, rules, limits, os.getpid()), daemon=True)
        self.process.start()
        child.close()  # the parent keeps only its end, so a dead worker reads as EOF
        # Files sent, oldest first, as [tag, job, deadline]: the oldest is being analysed; the one
        # behind it waits in the pipe (so the worker never idles while the parent unpickles), its
        # deadline set when it starts.
        self.tasks: deque = deque()

    def stop(self, kill: bool) -> None:
        if kill:
            self.process.kill()
        else:
            try:
                self.conn.send(None)
            except OSError:
                pass
        self.process.join(timeout=None if kill else 5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


class Pool:
    """`submit(job, tag)` files ((abspath, display) pairs); `next_done()` -> (tag, FileOutcome)
    as they finish, in any order. Use as a context manager."""

    DEPTH = 2  # files in flight per worker

    def __init__(self, rules: list, limits: Limits, jobs: int):
        self._context = multiprocessing.get_context()
        self.rules, self.limits = rules, limits
        self._workers = [self._start() for _ in range(max(1, jobs))]
        self._queue: deque = deque()

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start(self) -> _Worker:
        return _Worker(self._context, self.rules, self.limits)

    def submit(self, job: tuple, tag=None) -> None:
        self._queue.append((tag, job))

    def pending(self) -> int:
        return len(self._queue) + sum(len(w.tasks) for w in self._workers)

    def _deadline(self) -> Optional[float]:
        budget = self.limits.time_budget
        return time.monotonic() + budget + KILL_GRACE_S if budget else None

    def next_done(self) -> tuple:
        while True:
            self._dispatch()
            busy = [w for w in self._workers if w.tasks]
            if not busy:
                raise RuntimeError("next_done() with nothing submitted")
            deadlines = [w.tasks[0][2] for w in busy if w.tasks[0][2] is not None]
            timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout))
            for worker in busy:
                if worker.conn in ready or worker.process.sentinel in ready:
                    return self._collect(worker)
            now = time.monotonic()
            for worker in busy:
                if worker.tasks[0][2] is not None and now >= worker.tasks[0][2]:
                    display = worker.tasks[0][1][1]
                    return self._replace(worker, FileOutcome(display, skip=self.limits.budget_skip(), transient=True))

    def _dispatch(self) -> None:
        for depth in range(1, self.DEPTH + 1):  # every worker gets a file before any gets a second
            for worker in list(self._workers):
                if not self._queue:
                    return
                if len(worker.tasks) >= depth:
                    continue
                tag, job = self._queue.popleft()
                try:
                    worker.conn.send(job)
                except OSError:  # it died: start another and hand the file to the next free one
                    self._queue.appendleft((tag, job))
                    self._requeue_and_restart(worker)
                    continue
                worker.tasks.append([tag, job, self._deadline() if not worker.tasks else None])

    def _collect(self, worker: _Worker) -> tuple:
        try:
            outcome = worker.conn.recv()
        except (EOFError, OSError):  # it died: killed for memory, or a crash in native code
            worker.process.join(timeout=5)  # the pipe closes before the process is reaped
            code = worker.process.exitcode
            how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited ({code})"
            return self._replace(worker, FileOutcome(worker.tasks[0][1][1], error=(
                f"the process analysing this file {how}; out of memory? (see max-file-size)")))
        tag = worker.tasks.popleft()[0]
        if worker.tasks:
            worker.tasks[0][2] = self._deadline()
        return tag, outcome

    def _replace(self, worker: _Worker, outcome: FileOutcome) -> tuple:
        """Kill `worker` over its current file (answered by `outcome`); its next file goes elsewhere."""
        tag = worker.tasks.popleft()[0]
        self._requeue_and_restart(worker)
        return tag, outcome

    def _requeue_and_restart(self, worker: _Worker) -> None:
        for task_tag, job, _ in reversed(worker.tasks):
            self._queue.appendleft((task_tag, job))
        worker.tasks.clear()
        worker.stop(kill=True)
        self._workers[self._workers.index(worker)] = self._start()

    def close(self) -> None:
        for worker in self._workers:
            worker.stop(kill=bool(worker.tasks))
        self._workers = []


class OneProcess:
    """Analysis in this process (no pool is worth starting), except for a file whose native parse
    alone may outlast the budget: that one goes to a worker process that can be killed."""

    def __init__(self, rules: list, limits: Limits):
        self.rules, self.limits = rules, limits
        self._child: Optional[Pool] = None

    def __enter__(self) -> "OneProcess":
        return self

    def __exit__(self, *exc) -> None:
        if self._child is not None:
            self._child.close()

    def __call__(self, job: tuple) -> FileOutcome:
        if not self.limits.may_outlast_budget(file_size(job[0])):
            return analyze_file(job[0], job[1], self.rules, self.limits)
        if self._child is None:
            self._child = Pool(self.rules, self.limits, 1)
        self._child.submit(job)
        return self._child.next_done()[1]


def file_size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
