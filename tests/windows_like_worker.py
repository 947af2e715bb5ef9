"""A function for worker processes that, in a spawned worker, makes the process look like one on
Windows before any code of the worker runs (unpickling `square` imports this module first): no
/proc and no os.sysconf. In the test process itself it changes nothing."""
from __future__ import annotations

import multiprocessing
import os

if multiprocessing.current_process().name != "MainProcess":  # a worker, being started
    _listdir = os.listdir

    def _no_proc(path="."):
        if str(path).startswith("/proc"):
            raise FileNotFoundError(2, "No such file or directory", path)
        return _listdir(path)

    os.listdir = _no_proc
    del os.sysconf


def square(x):
    return x * x
