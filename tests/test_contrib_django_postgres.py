"""The Django database token store's lock across processes, on a real PostgreSQL server.

Two processes each with Django set up on the same database: one holds a user's
lock, the other must wait for it, including when the user has no record yet
(``SELECT ... FOR UPDATE`` on no row locks nothing, so the store makes the row first).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from tests import helpers_postgres
from tests.contrib_support import TEST_KEY, LineWaiter, require

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parent.parent

#: Django on the given socket directory, then one role: migrate, hold the lock, or contend for it.
SCRIPT = """
import sys
import django
from django.conf import settings

sockets, role, key = sys.argv[1], sys.argv[2], sys.argv[3]
settings.configure(
    INSTALLED_APPS=["mcpsync.contrib.django"],
    DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "NAME": "postgres",
                           "USER": "postgres", "HOST": sockets}},
    MCP_SERVERS={}, MCP_TOKEN_KEY=key, USE_TZ=True,
)
django.setup()
if role == "migrate":
    from django.core.management import call_command
    call_command("migrate", "mcpsync", verbosity=0)
    print("migrated", flush=True)
    sys.exit(0)
from mcpsync.contrib._cipher import RecordCipher
from mcpsync.contrib.django.stores import DatabaseTokenStore
store = DatabaseTokenStore("u", RecordCipher(key))
print("ready", flush=True)
if role == "hold":
    with store.lock("k"):
        print("locked", flush=True)
        sys.stdin.readline()
        store.save("k", {"by": "holder"})
    print("released", flush=True)
else:
    sys.stdin.readline()  # go
    with store.lock("k"):
        print("entered", store.load("k"), flush=True)
"""


@pytest.fixture(scope="module")
def sockets() -> Iterator[str]:
    require(helpers_postgres.available())  # the machine image has PostgreSQL: CI must run these
    with helpers_postgres.postgres_server() as url:
        directory = parse_qs(urlsplit(url).query)["host"][0]
        done = _run("migrate", directory)
        try:
            LineWaiter(done.stdout).wait("migrated", timeout=60)
            assert done.wait(60) == 0
        finally:
            _stop(done)
        yield directory


def _run(role: str, directory: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT, directory, role, TEST_KEY],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT,
    )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    proc.wait(10)
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()


def test_the_lock_excludes_another_process_before_any_record_exists(sockets: str) -> None:
    holder, contender = _run("hold", sockets), _run("contend", sockets)
    try:
        held, waiting = LineWaiter(holder.stdout), LineWaiter(contender.stdout)
        held.wait("locked", timeout=60)
        waiting.wait("ready", timeout=60)
        assert contender.stdin is not None and holder.stdin is not None
        contender.stdin.write(b"go\n")
        contender.stdin.flush()
        with pytest.raises(AssertionError, match="no line matching"):
            waiting.wait("entered", timeout=1.5)  # the holder has the lock: it waits
        holder.stdin.write(b"save\n")
        holder.stdin.flush()
        held.wait("released", timeout=30)
        # It went on only then, and sees what the holder wrote under the lock.
        assert waiting.wait("entered .*", timeout=30).group(0) == "entered {'by': 'holder'}"
        assert contender.wait(30) == 0 and holder.wait(30) == 0
    finally:
        _stop(holder)
        _stop(contender)
