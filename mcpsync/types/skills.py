"""Skills (the ``io.modelcontextprotocol/skills`` extension, SEP-2640): entries and verified files.

A :class:`Skill` entry is what ``skills/list`` and ``skills/get`` return: the
``SKILL.md`` URI, its frontmatter as JSON, and the manifest of every file with
its SHA-256 digest and size (or ``"dynamic"``).  :class:`SkillFile` and
:class:`LoadedSkill` hold content that already passed verification; the client
never builds them from content that did not (see :doc:`/skills`).

.. versionadded:: 0.1
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from . import _converter
from ._base import MetaObject, WireObject

__all__ = ["SKILLS_EXTENSION", "GetSkillResult", "ListSkillsResult", "LoadedSkill", "Skill", "SkillFile",
           "SkillResource"]

#: The extension's identifier in ``capabilities.extensions``.
SKILLS_EXTENSION = "io.modelcontextprotocol/skills"


@attrs.define(repr=False, eq=False)
class SkillResource(WireObject):
    """One file of a skill's manifest: its URI, ``sha256:{hex}`` digest and byte size."""

    uri: str
    digest: str
    size: int


@attrs.define(repr=False, eq=False)
class Skill(WireObject):
    """A skill entry: enough to show, approve and later verify a skill without reading it.

    ::

        for skill in client.list_skills():
            print(skill.name, skill.description, skill.uri)
    """

    #: URI of the skill's ``SKILL.md``; with the server, the skill's identity.
    uri: str
    #: The ``SKILL.md`` YAML frontmatter as JSON, verbatim (``name``, ``description``, ...).
    frontmatter: dict[str, Any]
    #: Every file with its digest and size, or ``"dynamic"`` (generated, no digests).
    resources: list[SkillResource] | Literal["dynamic"]

    @property
    def name(self) -> str | None:
        """``frontmatter["name"]``: a label, not unique (the URI is the identity)."""
        value = self.frontmatter.get("name")
        return value if isinstance(value, str) else None

    @property
    def description(self) -> str | None:
        """``frontmatter["description"]``."""
        value = self.frontmatter.get("description")
        return value if isinstance(value, str) else None

    @property
    def dynamic(self) -> bool:
        """The server publishes no digests for this skill (``"resources": "dynamic"``)."""
        return self.resources == "dynamic"

    @property
    def root(self) -> str:
        """The skill's directory: :attr:`uri` without ``/SKILL.md`` (relative paths resolve here)."""
        return self.uri[: -len("/SKILL.md")] if self.uri.endswith("/SKILL.md") else self.uri.rpartition("/")[0]

    def manifest_entry(self, uri: str) -> SkillResource | None:
        """The manifest's entry for *uri*, or ``None`` (also for a dynamic skill)."""
        if isinstance(self.resources, str):
            return None
        return next((item for item in self.resources if item.uri == uri), None)


@attrs.define(repr=False, eq=False)
class ListSkillsResult(MetaObject):
    """One page of ``skills/list``."""

    skills: list[Skill] = attrs.field(factory=list)
    next_cursor: str | None = None


@attrs.define(repr=False, eq=False)
class GetSkillResult(MetaObject):
    """The result of ``skills/get``."""

    skill: Skill


@attrs.define(repr=False, eq=False)
class SkillFile(WireObject):
    """A skill file whose bytes matched the manifest (digest and size), or a dynamic skill's file."""

    uri: str
    #: The file's raw bytes (UTF-8 of a text read, decoded base64 of a blob read).
    data: bytes
    mime_type: str | None = None
    #: ``False`` only for a dynamic skill, whose files have nothing to check against.
    verified: bool = True

    @property
    def text(self) -> str:
        """:attr:`data` as UTF-8 text.

        :raises UnicodeDecodeError: when the file is not UTF-8 (a binary asset).
        """
        return self.data.decode("utf-8")


@attrs.define(repr=False, eq=False)
class LoadedSkill(WireObject):
    """A skill whose ``SKILL.md`` passed verification, with the entry it was verified against.

    Keep it while acting on the skill: :meth:`mcpsync.Client.read_skill_file`
    resolves reads against this entry's manifest only.
    """

    #: The held entry (the manifest every later read is checked against).
    skill: Skill
    #: The verified ``SKILL.md``.
    file: SkillFile
    #: The frontmatter parsed from :attr:`file`; equal, field by field, to ``skill.frontmatter``.
    frontmatter: dict[str, Any]
    #: The instructions: ``SKILL.md`` after its frontmatter block.
    body: str

    @property
    def uri(self) -> str:
        """The skill's ``SKILL.md`` URI."""
        return self.skill.uri


@attrs.define(repr=False, eq=False)
class RawSkillsPage(WireObject):
    """A ``skills/list`` page with its entries left raw, so the client can check each on its own.

    Not exported: :meth:`mcpsync.Client.list_skills` drops a malformed entry
    instead of failing the whole listing.
    """

    skills: list[dict[str, Any]] = attrs.field(factory=list)
    next_cursor: str | None = None


_converter.register_list_or(Literal["dynamic"], SkillResource)
