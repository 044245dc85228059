"""Protocol types: attrs classes for every message a client sends or receives.

Python names are ``snake_case``; the wire is ``camelCase`` (``_meta`` is
``meta``). Every class keeps unknown wire keys in ``extra`` and sends them
back, so a newer server never breaks this client. Convert with
:func:`to_wire` and :func:`from_wire`::

    from mcpsync import types

    result = types.from_wire(types.CallToolResult, {"content": [{"type": "text", "text": "hi"}]})
    assert result.text == "hi"
    assert types.to_wire(types.TextContent("hi")) == {"type": "text", "text": "hi"}

May import: :mod:`mcpsync.exceptions` only (and attrs/cattrs).

.. versionadded:: 0.1
"""

# Names are loaded on first access (PEP 562), one submodule at a time: building
# ~85 attrs classes and importing cattrs is most of ``import mcpsync``, and a
# stdio client that only lists and calls tools never needs sampling, prompts,
# resources or elicitation classes.

from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    # ``X as X``: an explicit re-export for ``mypy --strict`` (``__all__`` is computed).  The star
    # imports also make each submodule (``types.tools``) known to the type checker.
    from ._converter import converter as converter, from_wire as from_wire, to_wire as to_wire
    from .content import *
    from .elicitation import *
    from .lifecycle import *
    from .completion import *
    from .logging import *
    from .messages import *
    from .progress import *
    from .roots import *
    from .tasks import *
    from .modern import *
    from .prompts import *
    from .resources import *
    from .sampling import *
    from .skills import *
    from .tools import *
    from .extensions import *
    from .apps import *

#: Submodule -> the names it exports (its ``__all__``, in that order).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "_converter": ("converter", "to_wire", "from_wire"),
    "lifecycle": (
        "ClientCapabilities", "ElicitationCapability", "Icon", "Implementation",
        "InitializeRequestParams", "InitializeResult", "PromptsCapability",
        "ResourcesCapability", "RootsCapability", "SamplingCapability",
        "ServerCapabilities", "ToolsCapability",
    ),
    "content": (
        "Annotations", "AudioContent", "BlobResourceContents", "ContentBlock",
        "EmbeddedResource", "ImageContent", "ResourceContents", "ResourceLink", "Role",
        "SamplingContent", "TextContent", "TextResourceContents", "ToolResultContent",
        "ToolUseContent", "UnknownContent",
    ),
    "tools": (
        "CallToolRequestParams", "CallToolResult", "ListToolsResult", "Tool",
        "ToolAnnotations", "ToolChoice", "ToolExecution",
    ),
    "resources": (
        "ListResourceTemplatesResult", "ListResourcesResult", "ReadResourceRequestParams",
        "ReadResourceResult", "Resource", "ResourceTemplate", "SubscribeRequestParams",
        "UnsubscribeRequestParams", "ResourceUpdatedNotificationParams",
    ),
    "prompts": (
        "GetPromptRequestParams", "GetPromptResult", "ListPromptsResult", "Prompt",
        "PromptArgument", "PromptMessage",
    ),
    "sampling": (
        "CreateMessageRequestParams", "CreateMessageResult", "ModelHint", "ModelPreferences",
        "SamplingMessage", "SamplingMessageContent",
    ),
    "elicitation": (
        "ElicitRequestFormParams", "ElicitRequestParams", "ElicitRequestURLParams",
        "ElicitResult", "ElicitationCompleteNotificationParams",
    ),
    "messages": (
        "EmptyResult", "NotificationParams", "PaginatedRequestParams", "RequestId",
        "RequestParams",
    ),
    "roots": ("ListRootsResult", "Root"),
    "logging": ("LoggingLevel", "LoggingMessageNotificationParams", "SetLevelRequestParams"),
    "progress": ("CancelledNotificationParams", "ProgressNotificationParams", "ProgressToken"),
    "completion": (
        "CompleteRequestParams", "CompleteResult", "Completion", "CompletionArgument",
        "CompletionContext", "CompletionReference", "PromptReference", "ResourceReference",
        "ResourceTemplateReference",
    ),
    "tasks": (
        "CreateTaskResult", "GetTaskResult", "ListTasksResult", "Task", "TaskMetadata",
        "TaskStatusNotificationParams", "TASKS_EXTENSION_ID", "TASK_STATUSES",
        "TERMINAL_STATUSES", "DetailedTask", "UpdateTaskRequestParams",
    ),
    "modern": (
        "PROTOCOL_VERSION_KEY", "CLIENT_INFO_KEY", "CLIENT_CAPABILITIES_KEY", "LOG_LEVEL_KEY",
        "SERVER_INFO_KEY", "SUBSCRIPTION_ID_KEY", "CacheScope", "DiscoverResult",
        "InputRequest", "InputRequiredResult", "SubscriptionFilter",
        "SubscriptionsListenRequestParams", "SubscriptionsAcknowledgedNotificationParams",
    ),
    "skills": (
        "SKILLS_EXTENSION", "GetSkillResult", "ListSkillsResult", "LoadedSkill", "Skill",
        "SkillFile", "SkillResource",
    ),
    "extensions": ("check_extension_id", "meta_field", "result_field"),
    "apps": ("APPS_EXTENSION", "APP_MIME_TYPE", "AppCsp", "AppResource", "ToolUi", "app_resource"),
}  # fmt: skip

_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
_SUBMODULES = frozenset(_EXPORTS) - {"_converter"}

__all__ = [name for names in _EXPORTS.values() for name in names]


def __getattr__(name: str) -> _typing.Any:
    module = _WHERE.get(name)
    if module is not None:
        value = getattr(_importlib.import_module(f"{__name__}.{module}"), name)
    elif name in _SUBMODULES:
        value = _importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # Later lookups are plain module attribute reads.
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBMODULES})
