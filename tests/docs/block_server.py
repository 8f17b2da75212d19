"""Fresh interpreters for ``test_doc_python.py`` without importing torch again for each documented block.

Importing torch is most of what a small block costs (seconds, for a block that itself runs in a fraction of one),
and some 30 blocks run. So a server process imports torch once (with its compiler and distributed-tensor modules;
nothing else: no synthformer, no transformers, whose import reads ``HF_HOME``) and forks one child per block; the
child is the block's fresh interpreter: its own ``__main__`` namespace, working directory, environment,
``sys.argv``/``sys.path[0]`` and standard streams (stdin ``/dev/null``, stdout and stderr to files), as ``python
_doc_block.py`` (a script) or ``python -c "import importlib; importlib.import_module(...)"`` (a file block) would
have them. Nothing a block does reaches the server or another block, and a block that needs a name it does not
import still fails (a fork has torch in ``sys.modules``, not in the block's namespace). The child ends as an
interpreter does: an exception out of the block prints its traceback and exits 1, ``sys.exit`` exits with its code,
threads are joined and ``atexit`` runs (only the final teardown of every module's objects is left out: seconds with
torch, and nothing a block shows).

The fork is safe: torch's import under ``OMP_NUM_THREADS=1`` (the blocks' setting) starts no thread. Where there is
no ``os.fork``, :class:`BlockRunner` runs the plain subprocess instead.

Protocol: one JSON request per line on the server's stdin (argv, cwd, env, stdout and stderr files, timeout), one
JSON reply per line on its stdout (the return code, or ``"timeout"``).
"""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any


def _serve() -> dict[str, Any] | None:
    """The server's loop; returns (in a child only) the request it is to run."""
    import torch  # noqa: F401 - the point: imported once, before the forks

    # torch's compiler and distributed-tensor modules too: about as long again to import, and what every block that
    # builds a torch optimizer (torch.compile's decorators) or imports transformers pulls in. Neither reads HF_HOME
    # nor starts a thread.
    import torch._dynamo  # noqa: F401
    if torch.distributed.is_available():
        import torch.distributed.tensor  # noqa: F401

    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            return request
        deadline = time.monotonic() + request["timeout"]
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                reply: Any = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                reply = "timeout"
                break
            time.sleep(0.02)
        os.write(1, (json.dumps(reply) + "\n").encode())


def _become(request: dict[str, Any]) -> None:
    """Make this forked child the block's interpreter, then run the block (an exception leaves as in Python)."""
    import importlib.machinery
    import types

    for fd, (path, flags) in enumerate(((os.devnull, os.O_RDONLY), (request["stdout"], os.O_WRONLY | os.O_CREAT),
                                        (request["stderr"], os.O_WRONLY | os.O_CREAT))):
        opened = os.open(path, flags | (os.O_TRUNC if fd else 0))
        os.dup2(opened, fd)
        os.close(opened)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    argv = request["argv"]  # [python, "-c", code] or [python, script]
    main = sys.modules["__main__"] = types.ModuleType("__main__")  # the block's, not the server's
    if argv[1] == "-c":
        sys.argv, sys.path[0] = ["-c"], ""
        code = compile(argv[2], "<string>", "exec")
    else:
        script = Path(argv[1]).resolve()
        sys.argv, sys.path[0] = argv[1:], str(script.parent)
        main.__file__ = str(script)
        main.__loader__ = importlib.machinery.SourceFileLoader("__main__", str(script))
        code = compile(script.read_bytes(), str(script), "exec")
    exec(code, main.__dict__)  # noqa: S102


class BlockRunner:
    """Runs ``argv`` (``[python, ...]``) as :func:`subprocess.run` would, through one forking server."""

    def __init__(self, env: dict[str, str]) -> None:
        self._server: subprocess.Popen[bytes] | None = None
        if hasattr(os, "fork"):
            self._server = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                            env=env, cwd=Path(__file__).parent)

    def run(self, argv: list[str], cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
        if self._server is None:
            return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        out, err = cwd.parent / "_block_stdout", cwd.parent / "_block_stderr"
        request = {"argv": argv, "cwd": str(cwd), "env": env, "stdout": str(out), "stderr": str(err),
                   "timeout": timeout}
        assert self._server.stdin is not None and self._server.stdout is not None
        self._server.stdin.write((json.dumps(request) + "\n").encode())
        self._server.stdin.flush()
        reply = self._server.stdout.readline()
        if not reply:
            raise RuntimeError(f"the block server died (exit status {self._server.wait()})")
        code = json.loads(reply)
        if code == "timeout":
            raise subprocess.TimeoutExpired(argv, timeout)
        return subprocess.CompletedProcess(argv, code, out.read_text(errors="replace"), err.read_text(errors="replace"))

    def close(self) -> None:
        if self._server is not None:
            assert self._server.stdin is not None
            self._server.stdin.close()
            self._server.wait(timeout=60)


def _exit_status(stop: SystemExit) -> int:
    """The status Python exits with on ``sys.exit(code)`` (a code that is no number is printed, status 1)."""
    if stop.code is None or isinstance(stop.code, int):
        return (stop.code or 0) & 0xFF
    print(stop.code, file=sys.stderr)
    return 1


def _main() -> None:
    request = _serve()
    if request is None:
        os._exit(0)
    status = 0
    try:
        _become(request)
    except SystemExit as stop:
        status = _exit_status(stop)
    except BaseException:  # noqa: BLE001 - as Python does: the traceback, status 1
        sys.excepthook(*sys.exc_info())
        status = 1
    # Python's exit, less the teardown of every module's objects (seconds with torch loaded, nothing a block
    # shows): the block's threads joined, its atexit functions run, its output flushed
    threading._shutdown()  # noqa: SLF001
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


if __name__ == "__main__":
    _main()
