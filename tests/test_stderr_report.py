"""What a stdio server's stderr leaves in error reports: its first and its last lines."""

from __future__ import annotations

import sys

import pytest

import mcpsync
from mcpsync.exceptions import ServerStartError

pytestmark = pytest.mark.timeout(60)


def _failing_server(lines: int) -> str:
    """A server that states its error first, then prints *lines* lines of usage, and exits 1."""
    return (
        "import sys\n"
        "print('Error: --kubeconfig is required', file=sys.stderr)\n"
        f"for i in range({lines}): print(f'usage line {{i}}', file=sys.stderr)\n"
        "sys.exit(1)\n"
    )


def _start_error(lines: int) -> ServerStartError:
    with pytest.raises(ServerStartError) as info:
        with mcpsync.Client.stdio(sys.executable, args=["-c", _failing_server(lines)], timeout=20) as c:
            c.list_tools()
    return info.value


@pytest.mark.parametrize("lines", [40, 4000])
def test_the_first_lines_survive_a_long_usage_text(lines: int) -> None:
    exc = _start_error(lines)
    kept = exc.stderr_tail.splitlines()
    assert kept[0] == "Error: --kubeconfig is required"
    assert kept[1:10] == [f"usage line {i}" for i in range(9)]
    skipped = lines + 1 - 30  # head 10 lines, tail 20
    assert kept[10] == f"[... {skipped} lines skipped ...]"
    assert kept[11:] == [f"usage line {i}" for i in range(lines - 20, lines)]
    # The message shows them as lines, after the exit code.
    text = str(exc)
    assert "(exit code 1); server stderr:\nError: --kubeconfig is required\nusage line 0\n" in text


def test_short_stderr_is_kept_whole() -> None:
    exc = _start_error(5)
    assert exc.stderr_tail.splitlines() == ["Error: --kubeconfig is required"] + [
        f"usage line {i}" for i in range(5)
    ]
    assert "skipped" not in exc.stderr_tail
