"""The Django app: ``INSTALLED_APPS = [..., "mcpsync.contrib.django"]``."""

from __future__ import annotations

from django.apps import AppConfig


class McpConfig(AppConfig):
    """Checks ``MCP_SERVERS`` and builds the shared clients when Django starts (connects nothing)."""

    name = "mcpsync.contrib.django"
    label = "mcpsync"
    verbose_name = "MCP servers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core.signals import setting_changed

        from . import _state, checks  # noqa: F401  (importing checks registers the check)

        setting_changed.connect(_state.reset, dispatch_uid="mcpsync-settings")
        # Errors stop the app here, before any request: under gunicorn or uWSGI no system check
        # runs, so waiting for one would move the error to the first request.
        _state.build()
