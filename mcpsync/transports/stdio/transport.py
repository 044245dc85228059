"""The stdio transport: an MCP server run as a child process.

Messages are newline-delimited JSON on the child's stdin/stdout (spec,
*Transports → stdio*).  One daemon thread reads stdout; stderr is drained by one
thread shared by every connection of the process (:mod:`.stderr`); callers
write whole frames, concurrent ones together (:mod:`.writer`).  Death of the server is noticed by EOF *or* by the
process exiting (a grandchild may hold stdout open after the server died), and
the whole process group is stopped on every way out.

Example::

    t = StdioTransport(["python", "-m", "mcpsync.demo"])
    t.start(on_message=print, on_close=lambda exc: print("closed:", exc))
    t.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    t.close()

.. versionadded:: 0.1
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mcpsync import _fork
from mcpsync.transports.stdio import process as _procutil
from mcpsync.exceptions import (
    ClientClosed,
    ConnectionClosed,
    ForkedClientError,
    RequestTimeout,
    ServerStartError,
)
from mcpsync.transports.stdio.caller_read import ReadBaton
from mcpsync.transports.stdio.pipes import JsonLineFramer, readable_waiter
from mcpsync.transports.stdio.stderr import StderrDrain, StderrOption
from mcpsync.transports.stdio.reader import _POLL, StdoutReading
from mcpsync.transports.stdio.writer import CLOSING, CUT, UNSENT, WRITTEN, Frame, FrameWriter
from mcpsync.transports.base import (
    CallerReader,
    CloseHandler,
    MessageHandler,
    RequestErrorHandler,
    Transport,
    WriteErrorHandler,
    encode_message,
)

__all__ = ["StdioTransport"]

log = logging.getLogger(__name__)

_WINDOWS = sys.platform == "win32"
_ids = itertools.count(1)


class StdioTransport(StdoutReading, Transport):
    """Run an MCP server as a subprocess and talk to it over stdin/stdout.

    :param command: the program, or a list of program and arguments.
    :param args: more arguments, appended to ``command``.
    :param env: variables merged over a small safe default environment (the
        parent's environment is *not* inherited wholesale).
    :param cwd: the child's working directory.
    :param stderr: where the server's stderr goes; it is always drained.
        ``None`` logs each line at INFO on ``mcpsync.server``; a callable gets
        each decoded line; an fd or file object gets the raw bytes.  With
        ``None`` the process-wide ``mcpsync-stderr`` thread drains it; any
        other choice gets a drain thread of its own (keep a callable quick).
    :param max_message_bytes: longest accepted stdout line; a longer one
        closes the connection with :class:`~mcpsync.exceptions.MessageTooLarge`.
    :param close_grace: seconds to wait for the server to exit after its
        stdin is closed, before SIGTERM.
    :param terminate_grace: seconds between SIGTERM and SIGKILL.
    :param write_timeout: default bound on one :meth:`send` when the server
        stops reading its stdin; ``None`` waits until :meth:`close`.
    """

    def __init__(
        self,
        command: str | Sequence[str],
        args: Sequence[str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: StderrOption = None,
        max_message_bytes: int = 32 * 1024 * 1024,
        close_grace: float = 2.0,
        terminate_grace: float = 2.0,
        write_timeout: float | None = 60.0,
    ) -> None:
        argv = [command] if isinstance(command, str) else list(command)
        argv += list(args or ())
        if not argv or not all(isinstance(a, str) for a in argv):
            raise TypeError("command must be a non-empty str or sequence of str")
        if max_message_bytes < 1:
            raise ValueError("max_message_bytes must be positive")
        self._argv = argv
        self._env = dict(env) if env is not None else None
        self._cwd = cwd
        self._stderr_opt = stderr
        self._max = max_message_bytes
        self._close_grace = close_grace
        self._terminate_grace = terminate_grace
        self._write_timeout = write_timeout
        self._n = next(_ids)
        #: Signals sent by this transport, in order (for diagnostics and tests).
        self.signals_sent: list[str] = []
        self._state_lock = threading.Lock()
        self._writer: FrameWriter | None = None
        self._closing = threading.Event()  # set once, by whoever reports on_close
        self._done = threading.Event()  # the shutdown sequence has finished
        self._stop_reader = threading.Event()
        self._started = False
        self._forked_closed = False
        self._close_exc: ConnectionClosed | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._owner_pid: int | None = None
        self._reader: threading.Thread | None = None
        self._baton: ReadBaton | None = None
        self._ready: Callable[[float], bool] = lambda timeout: True
        self._next_check = 0.0  # when the reader next checks whether the server exited
        #: Set by the owner: ``True`` when no reply is awaited (the reader may park).
        self._quiet: Callable[[], bool] | None = None
        self._drain: StderrDrain | None = None
        self._on_message: MessageHandler | None = None
        self._on_close: CloseHandler | None = None
        self._framer = JsonLineFramer(max_message_bytes, self._deliver, label=self.describe())

    # -- public properties --------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The server's process id, once started."""
        return self._proc.pid if self._proc is not None else None

    @property
    def returncode(self) -> int | None:
        """The server's exit status (negative: killed by that signal), or ``None``."""
        proc = self._proc
        if proc is None:
            return None
        if self._owner_pid == os.getpid() and proc.returncode is None:
            proc.poll()
        return proc.returncode

    @property
    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr (untrusted, truncated)."""
        return self._drain.tail() if self._drain is not None else ""

    @property
    def skipped_lines(self) -> int:
        """Stdout lines skipped because they were not JSON (each logged, rate-limited)."""
        return self._framer.skipped

    @property
    def closed(self) -> bool:
        """Whether the connection is closed or closing."""
        return self._closing.is_set() or self._forked_closed

    def describe(self) -> str:
        """``stdio:<program name>``; never arguments or environment (they may hold secrets)."""
        return "stdio:" + os.path.basename(self._argv[0])

    def caller_reader(self) -> CallerReader:
        """A caller waiting for the only pending reply reads it itself (:meth:`read_for`)."""
        return self.read_for

    # -- lifecycle ----------------------------------------------------------

    #: Writes block when the server stops reading its stdin: they honour the call's deadline.
    bounded_send = True
    #: A caller that finds another thread writing hands its frame over (one write for all).
    handoff_send = True

    def start(
        self,
        on_message: MessageHandler,
        on_close: CloseHandler,
        on_request_error: RequestErrorHandler | None = None,
        *,
        deadline: float | None = None,
    ) -> None:
        """Spawn the server, start the reader thread and drain its stderr.

        (``on_request_error`` is never given: every reply shares stdout.)

        :raises ~mcpsync.exceptions.ServerStartError: if the program cannot be run.
        """
        with self._state_lock:
            if self._started:
                raise RuntimeError("StdioTransport.start() may be called only once")
            if self._closing.is_set():
                raise ClientClosed("the transport was closed before it started")
            self._started = True
        self._on_message, self._on_close = on_message, on_close
        try:
            env = _procutil.build_environment(self._env)
            proc = _procutil.spawn(self._argv, env, self._cwd)
        except BaseException:
            self._closing.set()
            self._done.set()
            raise
        self._proc, self._owner_pid = proc, os.getpid()
        _fork.join(self)  # a forked child lets go of the pipes at once (forget)
        writer = FrameWriter(self._closing.is_set, self._frame_failed, f"mcpsync-stdio-writer-{self._n}")
        writer.fd = proc.stdin.fileno() if proc.stdin is not None else -1
        self._writer = writer
        _procutil.close_at_exit(self)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        if self._closing.is_set():  # close() ran while we were spawning
            self._shutdown()
            proc.stdout.close()
            proc.stderr.close()
            raise ClientClosed("the transport was closed while starting")
        if not _WINDOWS:
            os.set_blocking(proc.stdin.fileno(), False)  # writes must stay interruptible
        try:
            self._baton = ReadBaton()
            self._ready = readable_waiter(proc.stdout.fileno())  # used by the baton holder only
            self._drain = StderrDrain(proc.stderr, self._stderr_opt, label=self.describe())
            self._drain.start(f"mcpsync-stdio-stderr-{self._n}")
            self._reader = threading.Thread(
                target=self._read_loop, name=f"mcpsync-stdio-reader-{self._n}", daemon=True
            )
            self._reader.start()
        except BaseException as exc:
            self._closing.set()
            self._shutdown()
            if self._reader is None or not self._reader.is_alive():
                proc.stdout.close()
            if self._drain is None or not self._drain.running:
                proc.stderr.close()
            raise ServerStartError(
                f"cannot start the threads for {self.describe()}: {type(exc).__name__}: {exc}"
            ) from exc
        log.info("started MCP server %s (pid %d)", self.describe(), proc.pid)

    def close(self) -> None:
        """Close stdin, wait, then SIGTERM and SIGKILL the server's process group.

        Idempotent, callable from any thread, bounded by roughly
        ``close_grace + 2 * terminate_grace`` plus a few seconds.  In a forked
        child it only marks the transport closed: the parent's process and
        pipes are never touched.
        """
        if self._owner_pid is not None and os.getpid() != self._owner_pid:
            self._forked_closed = True
            return
        if not self._started:
            with self._state_lock:
                if not self._started:
                    self._closing.set()
                    self._done.set()
                    return
        if self._fail(ClientClosed("client closed"), inline=True):
            return
        if threading.current_thread() is not self._reader:  # the closer joins the reader
            self._done.wait(self._close_grace + 2 * self._terminate_grace + 10.0)

    def close_at_exit(self) -> None:
        """Interpreter exit: :meth:`close` inline with short graces (no new thread).

        A shutdown already under way on a closer thread (after a connect that failed or
        was interrupted) is finished here too: exit stops daemon threads wherever they are.
        """
        if self._owner_pid != os.getpid() or self._done.is_set():
            return
        self._close_grace = min(self._close_grace, 0.5)
        self._terminate_grace = min(self._terminate_grace, 0.5)
        if not self._fail(ClientClosed("client closed"), inline=True) and self._proc is not None:
            self._stop_tree(self._proc, self._close_grace, self._terminate_grace)

    def forget(self) -> None:
        """Forked child: let go of our copies of the server's pipes, nothing else.

        A child that keeps the write end of the server's stdin open would stop
        the parent's :meth:`close` from giving the server EOF (the parent would
        wait ``close_grace`` and then signal it).  So each inherited fd is
        pointed at ``/dev/null`` with ``dup2``: the pipe copy is released, yet
        the fd number stays taken, so the file objects that still name it can
        never close an unrelated fd opened later in the child.  Never
        ``stream.close()``: flushing a buffer the parent also holds would write
        its data twice.  Nothing is signalled or written.  In the owning process
        this does nothing.
        """
        proc = self._proc
        if proc is None or os.getpid() == self._owner_pid:
            return
        self._forked_closed = True
        null = os.open(os.devnull, os.O_RDWR)
        try:
            for stream in filter(None, (proc.stdin, proc.stdout, proc.stderr)):
                with contextlib.suppress(OSError, ValueError):  # already closed: nothing to release
                    os.dup2(null, stream.fileno())
        finally:
            os.close(null)

    #: Called in every forked child (:mod:`mcpsync._fork`), whether or not it uses the client.
    after_fork_in_child = forget

    def _fail(self, exc: ConnectionClosed, *, inline: bool = False) -> bool:
        """Enter the closing state once: report ``exc`` and start the shutdown.

        Returns ``False`` if someone else got there first.  ``inline`` runs the
        shutdown in this thread; otherwise a short-lived closer thread does it,
        so the reader keeps draining stdout while the server is stopped.
        """
        with self._state_lock:
            if self._closing.is_set():
                return False
            self._close_exc = exc
            self._closing.set()
        # The closer starts first: an on_close callback that calls close()
        # and waits for the shutdown must find it already under way.
        if not inline:
            try:
                threading.Thread(
                    target=self._shutdown, name=f"mcpsync-stdio-closer-{self._n}", daemon=True
                ).start()
            except RuntimeError:  # cannot start threads (interpreter exiting)
                inline = True
        if self._on_close is not None:
            try:
                self._on_close(exc)
            except Exception:
                log.exception("on_close callback of %s raised", self.describe())
        if inline:
            self._shutdown()
        return True

    def _shutdown(self) -> None:
        proc = self._proc
        try:
            if proc is not None:
                self._close_stdin()
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
            self._stop_reader.set()
            me = threading.current_thread()
            # A join during interpreter finalization raises on Python 3.14: skip it then.
            if self._reader is not None and self._reader is not me and not sys.is_finalizing():
                self._reader.join(2.0)
            if self._drain is not None:
                self._drain.stop()
                self._drain.join(2.0)
            if self._writer is not None:
                self._writer.join(2.0)
            self._done.set()
            if proc is not None:
                log.info("MCP server %s stopped (exit code %s)", self.describe(), proc.returncode)

    def _stop_tree(self, proc: subprocess.Popen[bytes], close_grace: float, terminate_grace: float) -> None:
        _procutil.stop_process_tree(proc, proc.pid, close_grace=close_grace, terminate_grace=terminate_grace,
                                    on_signal=self.signals_sent.append)

    def _close_stdin(self) -> None:
        proc, writer = self._proc, self._writer
        if proc is None or proc.stdin is None or writer is None:
            return
        # Writers notice _closing within _POLL and release the lock.
        if writer.lock.acquire(timeout=2.0):
            try:
                for frame in writer.drop():  # their callers fail with the connection too
                    self._frame_failed(frame, CLOSING, None)
                proc.stdin.close()
            except OSError:
                pass
            finally:
                writer.lock.release()

    # -- sending ------------------------------------------------------------

    def send(self, message: Mapping[str, Any], *, deadline: float | None = None, detach: bool = False,
             on_write_error: WriteErrorHandler | None = None, timeout: float | None = None) -> None:
        """Write one message and its newline, whole, never interleaved with another.

        A server that stops reading its stdin fills the pipe and would block
        the writer forever, so writing is bounded by the call's *deadline* (a
        ``time.monotonic()`` value) and by ``timeout`` (default: the
        transport's ``write_timeout``), whichever comes first.  Either way the
        caller gets :class:`~mcpsync.exceptions.RequestTimeout`: if nothing of
        the message was written the connection stays usable; a message cut in
        half closes it.  (``detach`` is never given: this transport does not
        declare :attr:`~mcpsync.transports.base.Transport.detached_send`.)

        :param on_write_error: given by a caller that will wait for a reply:
            when another thread is writing, the message is handed to it and
            this returns at once (see :mod:`~.writer`); a write that then
            fails is reported here instead of raised.

        :raises ~mcpsync.exceptions.ForkedClientError: in a forked child.
        :raises ~mcpsync.exceptions.ClientClosed: after :meth:`close`.
        :raises ~mcpsync.exceptions.ConnectionClosed: if the server is gone.
        :raises ~mcpsync.exceptions.RequestTimeout: if the write could not
            be done in time.
        :raises ValueError: or :class:`TypeError` if ``message`` is not JSON.
        """
        if self._owner_pid is not None and os.getpid() != self._owner_pid:
            raise ForkedClientError(
                f"this {self.describe()} connection belongs to process {self._owner_pid}; "
                "a forked child must open its own client"
            )
        data = encode_message(message) + b"\n"
        writer = self._writer
        if writer is None:
            raise ConnectionClosed("the stdio transport has not been started")
        limit = self._write_timeout if timeout is None else timeout
        if deadline is not None:
            left = max(0.0, deadline - time.monotonic())
            limit = left if limit is None else min(limit, left)
        frame = Frame(data, None if limit is None else time.monotonic() + limit, limit, message, on_write_error)
        lock = writer.lock
        if lock.acquire(False):
            pass
        elif on_write_error is not None and not writer.refusing:
            if writer.offer(frame):
                return  # the thread writing now writes it too
        else:  # contended: wait, bounded and interruptible by close
            while not lock.acquire(timeout=_POLL):
                if self._closing.is_set():
                    raise self._closed_error()
                if frame.deadline is not None and time.monotonic() >= frame.deadline:
                    raise self._write_timed_out(limit, message)
        failure: OSError | None = None
        release = True
        try:
            outcome, release = writer.write_holding(frame)
        except OSError as exc:
            failure, outcome = exc, CLOSING
        except BaseException:
            # Interrupted mid-write (Ctrl-C): the pipe may hold half a frame, so the
            # connection cannot go on.
            self._fail(ConnectionClosed(f"a write to MCP server {self.describe()} was interrupted",
                                        outcome_unknown=True, stderr_tail=self.stderr_tail))
            raise
        finally:
            if release:
                writer.release()
        if outcome == WRITTEN:
            return
        if failure is not None:
            # The pipe broke: the server is dying.  Report it with its exit code.
            self._fail(self._death_error(f"cannot write to MCP server {self.describe()}", failure))
            raise self._closed_error() from failure
        if outcome == CLOSING:
            raise self._closed_error()  # close() interrupted the write
        if outcome == UNSENT:
            raise self._write_timed_out(limit, message)
        self._cut_short()
        # The caller's deadline passed: that is its story; the closed connection is the cost.
        raise self._write_timed_out(limit, message, cut=True)

    def _cut_short(self) -> None:
        self._fail(
            ConnectionClosed(
                f"MCP server {self.describe()} stopped reading its stdin; a message was "
                "cut short, so the connection is closed",
                outcome_unknown=True,
                stderr_tail=self.stderr_tail,
            )
        )

    def _frame_failed(self, frame: Frame, outcome: str, error: OSError | None) -> None:
        """A handed-over frame was not written (see :class:`~.writer.FrameWriter`)."""
        if outcome == UNSENT:
            exc: BaseException = self._write_timed_out(frame.limit, frame.message)
        elif outcome == CUT:
            exc = self._write_timed_out(frame.limit, frame.message, cut=True)
        elif error is not None:
            exc = ConnectionClosed(f"cannot write to MCP server {self.describe()}: {error}",
                                   stderr_tail=self.stderr_tail)
            exc.__cause__ = error
        else:
            exc = self._closed_error()
        if frame.on_error is not None:
            try:
                frame.on_error(exc)
            except Exception:
                log.exception("on_write_error callback of %s raised", self.describe())
        if outcome == CUT:
            self._cut_short()

    def _write_timed_out(self, limit: float | None, message: Mapping[str, Any], *,
                         cut: bool = False) -> RequestTimeout:
        method = message.get("method")
        return RequestTimeout(
            f"could not write to MCP server {self.describe()} within {limit if limit is None else round(limit, 3)}s "
            "(it is not reading its stdin)"
            + ("; the message was cut short, so the connection is closed" if cut else ""),
            method=method if isinstance(method, str) else "",
            elapsed=limit or 0.0,
        )

    def _closed_error(self) -> ConnectionClosed:
        exc = self._close_exc
        if exc is None or isinstance(exc, ClientClosed):
            return ClientClosed("client closed")
        fresh = type(exc)(exc.message, exit_code=exc.exit_code, stderr_tail=exc.stderr_tail)
        fresh.__cause__ = exc
        return fresh

    def _death_error(self, message: str, cause: BaseException | None = None) -> ConnectionClosed:
        proc = self._proc
        code: int | None = None
        if proc is not None:
            try:
                code = proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                code = None
        if self._drain is not None:
            self._drain.wait_eof(0.5)  # let the last stderr lines arrive
        cls = ConnectionClosed if self._framer.received_any else ServerStartError
        err = cls(message, exit_code=code, stderr_tail=self.stderr_tail)
        if cause is not None:
            err.__cause__ = cause
        return err
