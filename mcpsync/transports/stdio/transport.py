"""The stdio transport: an MCP server run as a child process.

Messages are newline-delimited JSON on the child's stdin/stdout (spec, *Transports →
stdio*).  One daemon thread reads stdout (:mod:`.reader`); stderr is drained by one
thread shared by every connection of the process (:mod:`.stderr`); callers write
whole frames under a lock, each by its own deadline.  Death of the server is noticed
by EOF *or* by the process exiting (a grandchild may hold stdout open after the
server died), and the whole process group is stopped on every way out.

Example::

    t = StdioTransport(["python", "-m", "mcpsync.demo"])
    t.start(on_message=print, on_close=lambda exc: print("closed:", exc))
    t.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    t.close()
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from mcpsync import _fork
from mcpsync.exceptions import ClientClosed, ConnectionClosed, McpError, RequestTimeout, ServerStartError
from mcpsync.rpc.deadline import Deadline, now
from mcpsync.transports.base import CloseHandler, MessageHandler, Transport, encode_message
from mcpsync.transports.run_state import RunState
from mcpsync.transports.stdio import process as _procutil
from mcpsync.transports.stdio.handover import CutShort, Handover
from mcpsync.transports.stdio.pipes import JsonLineFramer, close_holding, write_until
from mcpsync.transports.stdio.reader import POLL, StdoutReader
from mcpsync.transports.stdio.stderr import StderrDrain, StderrOption

__all__ = ["StdioTransport"]

log = logging.getLogger(__name__)

_WINDOWS = sys.platform == "win32"
_ids = itertools.count(1)


class StdioTransport(Transport):
    """Run an MCP server as a subprocess and talk to it over stdin/stdout.

    :param command: the program, or a list of program and arguments.
    :param args: more arguments, appended to ``command``.
    :param env: variables merged over a small safe default environment (the parent's
        environment is *not* inherited wholesale).
    :param cwd: the child's working directory.
    :param stderr: where the server's stderr goes; it is always drained.  ``None``
        logs each line at INFO on ``mcpsync.server``; a callable gets each decoded
        line; an fd or file object gets the raw bytes.  With ``None`` the
        process-wide ``mcpsync-stderr`` thread drains it; any other choice gets a
        drain thread of its own (keep a callable quick).
    :param max_message_bytes: longest accepted stdout line; a longer one closes the
        connection with :class:`~mcpsync.exceptions.MessageTooLarge`.
    :param close_grace: seconds to wait for the server to exit after its stdin is
        closed, before SIGTERM.
    :param terminate_grace: seconds between SIGTERM and SIGKILL.
    :param write_timeout: bound on one :meth:`send` when the server stops reading its
        stdin and the call has no earlier deadline; ``None`` waits until :meth:`close`.
    """

    def __init__(self, command: str | Sequence[str], args: Sequence[str] | None = None, *,
                 env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None,
                 stderr: StderrOption = None, max_message_bytes: int = 32 * 1024 * 1024, close_grace: float = 2.0,
                 terminate_grace: float = 2.0, write_timeout: float | None = 60.0) -> None:
        argv = [command] if isinstance(command, str) else list(command)
        argv += list(args or ())
        if not argv or not all(isinstance(a, str) for a in argv):
            raise TypeError("command must be a non-empty str or sequence of str")
        if max_message_bytes < 1:
            raise ValueError("max_message_bytes must be positive")
        self._argv, self._env, self._cwd = argv, dict(env) if env is not None else None, cwd
        self._name = "stdio:" + os.path.basename(argv[0])  # made once: every send may need it
        self._stderr_opt, self._max, self._write_timeout = stderr, max_message_bytes, write_timeout
        self._close_grace, self._terminate_grace = close_grace, terminate_grace
        self._n = next(_ids)
        #: Signals sent by this transport, in order (for diagnostics and tests).
        self.signals_sent: list[str] = []
        #: closing: set once, by whoever reports on_close; done: the shutdown sequence has finished;
        #: forked: set in a forked child (:meth:`forget`), the pipes are the parent's.
        self._run = RunState()
        self._proc: subprocess.Popen[bytes] | None = None
        self._stdin = -1
        self._handover = Handover(-1, self._run.closing.is_set, self._write_failed)
        self._reader: StdoutReader | None = None
        self._drain: StderrDrain | None = None
        self._on_message: MessageHandler | None = None
        self._framer: JsonLineFramer | None = None

    # -- public properties --------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The server's process id, once started."""
        return self._proc.pid if self._proc is not None else None

    @property
    def returncode(self) -> int | None:
        """The server's exit status (negative: killed by that signal), or ``None``."""
        proc = self._proc
        if proc is not None and not self._run.forked and proc.returncode is None:
            proc.poll()
        return None if proc is None else proc.returncode

    @property
    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr (untrusted, truncated)."""
        return self._drain.tail() if self._drain is not None else ""

    @property
    def skipped_lines(self) -> int:
        """Stdout lines skipped because they were not JSON (each logged, rate-limited)."""
        return self._framer.skipped if self._framer is not None else 0

    @property
    def closed(self) -> bool:
        """Whether the connection is closed or closing."""
        return self._run.closed

    def describe(self) -> str:
        """``stdio:<program name>``; never arguments or environment (they may hold secrets)."""
        return self._name

    # -- lifecycle ----------------------------------------------------------

    def start(self, on_message: MessageHandler, on_close: CloseHandler) -> None:
        """Spawn the server, start the reader thread and drain its stderr.

        :raises ~mcpsync.exceptions.ServerStartError: if the program cannot be run.
        """
        with self._run.starting("StdioTransport", on_close):
            self._on_message = on_message
            proc = _procutil.spawn(self._argv, _procutil.build_environment(self._env), self._cwd)
        self._proc = proc
        _fork.join(self)  # a forked child lets go of the pipes at once (forget)
        _procutil.close_at_exit(self)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        self._stdin = proc.stdin.fileno()
        self._handover = Handover(self._stdin, self._run.closing.is_set, self._write_failed)
        if self._run.closing.is_set():  # close() ran while we were spawning
            self._abandon(proc)
            raise ClientClosed("the transport was closed while starting")
        if not _WINDOWS:
            os.set_blocking(self._stdin, False)  # writes must stay interruptible
        self._framer = JsonLineFramer(self._max, self._deliver, label=self.describe())
        try:
            self._drain = StderrDrain(proc.stderr, self._stderr_opt, label=self.describe())
            self._drain.start(f"mcpsync-stdio-stderr-{self._n}")
            self._reader = StdoutReader(self, proc, self._framer, self._run.closing)
            self._reader.start(f"mcpsync-stdio-reader-{self._n}")
        except BaseException as exc:
            self._abandon(proc)
            raise ServerStartError(
                f"cannot start the threads for {self.describe()}: {type(exc).__name__}: {exc}"
            ) from exc
        log.info("started MCP server %s (pid %d)", self.describe(), proc.pid)

    def _abandon(self, proc: subprocess.Popen[bytes]) -> None:
        """A start that cannot go on: stop the server, close the pipes no thread of ours closes."""
        self._run.closing.set()
        self._shutdown()
        assert proc.stdout is not None and proc.stderr is not None
        if self._reader is None or not self._reader.running:
            proc.stdout.close()
        if self._drain is None or not self._drain.running:
            proc.stderr.close()

    def close(self) -> None:
        """Close stdin, wait, then SIGTERM and SIGKILL the server's process group.

        Idempotent, callable from any thread, bounded by roughly ``close_grace + 2 *
        terminate_grace`` plus a few seconds.  In a forked child it does nothing: the
        parent's process and pipes are never touched.
        """
        if self._run.forked or self._run.close_unstarted():
            return
        if self.fail(ClientClosed("client closed"), inline=True):
            return
        reader = self._reader
        if reader is None or not reader.is_current():  # the closer joins the reader
            self._run.done.wait(self._close_grace + 2 * self._terminate_grace + 10.0)

    def close_at_exit(self) -> None:
        """Interpreter exit: :meth:`close` inline with short graces (no new thread).

        A shutdown already under way on a closer thread (after a connect that failed or
        was interrupted) is finished here too: exit stops daemon threads wherever they are.
        """
        if self._run.forked or self._run.done.is_set():
            return
        self._close_grace = min(self._close_grace, 0.5)
        self._terminate_grace = min(self._terminate_grace, 0.5)
        if not self.fail(ClientClosed("client closed"), inline=True) and self._proc is not None:
            self._stop_tree(self._proc, self._close_grace, self._terminate_grace)

    def forget(self) -> None:
        """Forked child: let go of our copies of the server's pipes, nothing else.

        A child that keeps the write end of the server's stdin open would stop the
        parent's :meth:`close` from giving the server EOF.  So each inherited fd is
        pointed at ``/dev/null`` with ``dup2``: the pipe copy is released, yet the fd
        number stays taken, so the file objects that still name it can never close an
        unrelated fd opened later in the child.  Never ``stream.close()``: flushing a
        buffer the parent also holds would write its data twice.  Nothing is signalled
        or written.
        """
        proc = self._proc
        if proc is None or self._run.forked:
            return
        self._run.forked = True
        null = os.open(os.devnull, os.O_RDWR)
        try:
            for stream in filter(None, (proc.stdin, proc.stdout, proc.stderr)):
                with contextlib.suppress(OSError, ValueError):  # already closed: nothing to release
                    os.dup2(null, stream.fileno())
        finally:
            os.close(null)

    #: Called in every forked child (:mod:`mcpsync._fork`), whether or not it uses the client.
    after_fork_in_child = forget

    def fail(self, exc: ConnectionClosed, *, inline: bool = False) -> bool:
        """Enter the closing state once: report ``exc`` and start the shutdown.

        Returns ``False`` if someone else got there first.  ``inline`` runs the
        shutdown in this thread; otherwise a short-lived closer thread does it, so the
        reader keeps draining stdout while the server is stopped.
        """
        if not self._run.enter_closing(exc):
            return False
        # The closer starts first: an on_close callback that calls close() and waits
        # for the shutdown must find it already under way.
        if not inline:
            try:
                threading.Thread(target=self._shutdown, name=f"mcpsync-stdio-closer-{self._n}", daemon=True).start()
            except RuntimeError:  # cannot start threads (interpreter exiting)
                inline = True
        self._run.report(exc, self.describe())
        if inline:
            self._shutdown()
        return True

    def _shutdown(self) -> None:
        proc = self._proc
        try:
            if proc is not None:
                assert proc.stdin is not None
                # Holding the write lock, as every write: a writer lets go within POLL once closing.
                close_holding(self._handover.lock, proc.stdin, 2.0)
                self._stop_tree(proc, self._close_grace, self._terminate_grace)
        except Exception:
            log.exception("stopping %s failed", self.describe())
        except BaseException:
            # Ctrl-C while close() waits for the server: the user wants out now, and the
            # server must not be left running, so its group is killed before this propagates.
            if proc is not None:
                self._stop_tree(proc, 0.0, 0.0)
            raise
        finally:
            if self._reader is not None:
                self._reader.stop(2.0)
            if self._drain is not None:
                self._drain.stop()
                self._drain.join(2.0)
            self._run.done.set()
            if proc is not None:
                log.info("MCP server %s stopped (exit code %s)", self.describe(), proc.returncode)

    def _stop_tree(self, proc: subprocess.Popen[bytes], close_grace: float, terminate_grace: float) -> None:
        _procutil.stop_process_tree(proc, close_grace=close_grace, terminate_grace=terminate_grace,
                                    on_signal=self.signals_sent.append)

    def _deliver(self, message: Any) -> None:
        if self._run.closing.is_set() or self._on_message is None:
            return
        try:
            self._on_message(message)
        except Exception:
            log.exception("on_message callback of %s raised; message dropped", self.describe())
        if self._reader is not None:
            self._reader.own.delivered(message)

    # -- sending ------------------------------------------------------------

    def send(self, message: Mapping[str, Any], deadline: Deadline | None = None) -> None:
        """Write one message and its newline, whole, never interleaved with another.

        A server that stops reading its stdin fills the pipe and would block the
        writer forever, so writing (and waiting for another thread's write) is bounded
        by *deadline* and by ``write_timeout``, whichever comes first.  Either way the
        caller gets :class:`~mcpsync.exceptions.RequestTimeout`: if nothing of the
        message was written the connection stays usable; a message cut in half closes it.

        :raises ~mcpsync.exceptions.ForkedClientError: in a forked child.
        :raises ~mcpsync.exceptions.ClientClosed: after :meth:`close`.
        :raises ~mcpsync.exceptions.ConnectionClosed: if the server is gone.
        :raises ValueError: or :class:`TypeError` if ``message`` is not JSON.
        """
        if self._run.forked:  # read on every send: only a child pays for the call
            self._run.check_not_forked(self._name)
        data = encode_message(message) + b"\n"
        reader = self._reader
        if reader is None:
            raise ConnectionClosed("the stdio transport has not been started")
        # The earlier of the call's deadline and write_timeout bounds the write.
        limit = self._write_timeout if deadline is None else deadline.remaining(self._write_timeout)
        end = None if limit is None else now() + limit
        own = reader.own
        request_id = own.sending(message)  # before the write: a fast reply must find it
        handover = self._handover
        written = 0
        try:
            if not handover.lock.acquire(False):
                if handover.offer(data, end):  # the fast path of handover.py
                    written = len(data)
                else:
                    self._wait_for_lock(end, limit, message)
            if not written:
                written = self._write_holding(data, end)
        except CutShort as exc:
            self._write_failed(exc)
        except McpError:  # before OSError: a RequestTimeout is a TimeoutError
            own.awaited.discard(request_id)
            raise
        except OSError as exc:  # the pipe broke: the server is dying; report it with its exit code
            self._write_failed(exc)
            raise self._run.closed_error() from exc
        except BaseException:
            own.awaited.discard(request_id)
            raise
        if written == len(data):
            if request_id is not None:
                own.read_reply(request_id, deadline)  # the fast path of caller_read.py
            return
        own.awaited.discard(request_id)
        if self._run.closing.is_set():
            raise self._run.closed_error()  # close() interrupted the write
        if written:
            self._cut_short()
        raise self._write_timed_out(limit, message, cut=bool(written))

    def _wait_for_lock(self, end: float | None, limit: float | None, message: Mapping[str, Any]) -> None:
        """Take the write lock by *end*, or raise (nothing written: the connection lives on)."""
        lock = self._handover.lock
        while not lock.acquire(timeout=POLL if end is None else max(0.0, min(POLL, end - now()))):
            if self._run.closing.is_set():
                raise self._run.closed_error()
            if end is not None and now() >= end:
                raise self._write_timed_out(limit, message)

    def _write_holding(self, data: bytes, end: float | None) -> int:
        """Holding the write lock: write *data* by *end*, then what was handed over; let go.

        :returns: bytes of *data* written.
        :raises OSError: the pipe broke (the lock is let go).
        """
        handover = self._handover
        written = 0
        if self._run.closing.is_set():
            handover.lock.release()
            raise self._run.closed_error()
        try:
            try:
                written = os.write(self._stdin, data)
            except BlockingIOError:
                pass
            if written < len(data):
                handover.stuck = True  # no hand-over while we wait for room
                try:
                    written += write_until(self._stdin, memoryview(data)[written:], end, self._run.closing.is_set)
                finally:
                    handover.stuck = False
        except OSError:
            handover.lock.release()
            raise
        except BaseException:
            handover.lock.release()
            # Interrupted mid-write (Ctrl-C): the pipe may hold half a frame.
            self._cut_short(f"a write to MCP server {self.describe()} was interrupted")
            raise
        handover.release(end)  # writes the frames handed over meanwhile
        return written

    def _write_failed(self, exc: OSError) -> None:
        """A write failed: frames cut short (:class:`CutShort`), or the pipe broke.  Fails the
        connection; called by send() and by the hand-over's detached writer (handover.py)."""
        if isinstance(exc, CutShort):
            self._cut_short()
        else:
            self.fail(self.death_error(f"cannot write to MCP server {self.describe()}", exc))

    def _cut_short(self, why: str = "") -> None:
        why = why or (f"MCP server {self.describe()} stopped reading its stdin; a message was cut short,"
                      " so the connection is closed")
        self.fail(ConnectionClosed(why, outcome_unknown=True, stderr_tail=self.stderr_tail))

    def _write_timed_out(self, limit: float | None, message: Mapping[str, Any], *, cut: bool = False) -> RequestTimeout:
        method = message.get("method")
        return RequestTimeout(
            f"could not write to MCP server {self.describe()} within {None if limit is None else round(limit, 3)}s "
            "(it is not reading its stdin)" + ("; the message was cut short, so the connection is closed" if cut else ""),
            method=method if isinstance(method, str) else "",
            elapsed=limit or 0.0,
        )

    def death_error(self, message: str, cause: BaseException | None = None) -> ConnectionClosed:
        """The error for the server's death: its exit code and stderr tail, once known."""
        proc = self._proc
        code = proc.returncode if proc is not None and _procutil.wait_exit(proc, 1.0) else None
        if self._drain is not None:
            self._drain.wait_eof(0.5)  # let the last stderr lines arrive
        received = self._framer is not None and self._framer.received_any
        err = (ConnectionClosed if received else ServerStartError)(message, exit_code=code, stderr_tail=self.stderr_tail)
        if cause is not None:
            err.__cause__ = cause
        return err
