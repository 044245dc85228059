"""The Celery app's configuration, shared by the worker (``celery_app.py``) and the test's producer.

No broker server: kombu's filesystem transport and Celery's file result backend, all in one
directory (the test's ``tmp_path``).
"""

from __future__ import annotations

from pathlib import Path

from celery import Celery


def make_app(directory: str | Path) -> Celery:
    """A Celery app whose queue, control files and results live under *directory*."""
    folder = Path(directory)
    for sub in ("queue", "processed", "control", "results"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    app = Celery("celery_app", broker="filesystem://", backend=f"file://{folder / 'results'}")
    app.conf.update(
        broker_transport_options={
            "data_folder_in": str(folder / "queue"),
            "data_folder_out": str(folder / "queue"),
            "processed_folder": str(folder / "processed"),
            "control_folder": str(folder / "control"),
            "polling_interval": 0.1,
        },
        broker_connection_retry_on_startup=True,
        worker_prefetch_multiplier=1,  # one task per pool slot: spreads tasks over the processes
    )
    return app
