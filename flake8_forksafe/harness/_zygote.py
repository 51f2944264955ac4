"""A pre-started interpreter that forks one harness process per case, so that cases do not each pay for
``import torch`` (a few seconds of CPU).

Started by ``runner`` as a subprocess in its own session, single-threaded apart from what importing numpy
and torch starts (the same state every DataLoader user forks from). It never uses multiprocessing, never
touches CUDA, never imports a dataset. Each case is a fresh ``os.fork()`` that immediately calls
``setsid()`` (so the runner can kill its whole process group), takes the caller's environment, working
directory and output files, runs ``_child.main`` and ``os._exit``s. Nothing runs in the caller's process.

Protocol, one JSON object per line. Requests on stdin: ``{"id", "spec", "out", "err", "env", "cwd"}``.
Replies on stdout: ``{"ready": pid}`` once, then ``{"id", "pid"}`` after each fork and
``{"id", "exit": status}`` when the case process is reaped. EOF on stdin: kill every case, exit.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sys


def _case_process(req: dict) -> None:
    try:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        out = os.open(req["out"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err = os.open(req["err"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for fd in (devnull, out, err):
            os.close(fd)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", closefd=False, buffering=1)
        sys.stderr = open(2, "w", closefd=False, buffering=1)
        os.environ.clear()
        os.environ.update(req["env"])
        os.chdir(req["cwd"])
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        from flake8_forksafe.harness import _child as child

        child.main(["-", req["spec"]])  # ends with os._exit
    finally:
        os._exit(70)


def main() -> None:
    import numpy  # noqa: F401 - what the case processes would import first
    import torch  # noqa: F401
    import torch.utils.data  # noqa: F401

    import flake8_forksafe.harness._child  # noqa: F401
    import flake8_forksafe.harness.probes  # noqa: F401

    reply = sys.stdout
    stdin = sys.stdin.fileno()
    cases = {}  # pid -> request id
    buf = b""

    def send(obj: dict) -> None:
        reply.write(json.dumps(obj) + "\n")
        reply.flush()

    send({"ready": os.getpid()})
    eof = False
    while not eof or cases:
        if not eof:
            r, _, _ = select.select([stdin], [], [], 0.2)
            if r:
                chunk = os.read(stdin, 65536)
                if not chunk:
                    eof = True
                    for pid in list(cases):  # the caller is gone: so are its cases
                        try:
                            os.killpg(pid, signal.SIGKILL)
                        except OSError:
                            pass
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if not line.strip():
                        continue
                    req = json.loads(line)
                    pid = os.fork()
                    if pid == 0:
                        try:
                            _case_process(req)
                        finally:
                            os._exit(70)
                    cases[pid] = req["id"]
                    send({"id": req["id"], "pid": pid})
        else:
            select.select([], [], [], 0.2)
        while cases:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                cases.clear()
                break
            if pid == 0:
                break
            rid = cases.pop(pid, None)
            if rid is not None:
                code = os.waitstatus_to_exitcode(status)
                try:
                    send({"id": rid, "exit": code})
                except (BrokenPipeError, OSError):
                    pass


if __name__ == "__main__":  # pragma: no cover
    main()
