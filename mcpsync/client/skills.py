"""Skills (``io.modelcontextprotocol/skills``, SEP-2640): list, get, load and read, verified.

Four functions over :class:`~mcpsync.client.core.Core`, bound as methods of
:class:`mcpsync.Client`:

* :func:`list_skills` / :func:`get_skill`: entries (frontmatter and the manifest of
  every file with its digest and size); no file is read.
* :func:`load_skill`: reads ``SKILL.md`` only, checks its size and SHA-256 digest
  against the entry, parses its YAML frontmatter and compares it field by field with
  the entry's.
* :func:`read_skill_file`: one supporting file, on demand, only if the held entry's
  manifest lists it, checked the same way.

Nothing is fetched ahead of need.  Content that fails a check raises
:class:`~mcpsync.exceptions.SkillVerificationError` and is dropped: no
unverified byte reaches the caller.  The spec is ext-skills
``specification/stable/skills.mdx`` (*Integrity and Verification*).
"""

from __future__ import annotations

import logging
import posixpath
import re
from typing import TYPE_CHECKING, Any

from mcpsync import types
from mcpsync.client.core import Core, paginate
from mcpsync.client.options import DEFAULT, TimeoutArg
from mcpsync.exceptions import CapabilityNotSupported, ProtocolError, SkillVerificationError, excerpt
from mcpsync.rpc.deadline import Deadline

if TYPE_CHECKING:
    from mcpsync.types.skills import LoadedSkill, Skill, SkillFile, SkillResource

__all__ = ["get_skill", "list_skills", "load_skill", "read_skill_file"]

log = logging.getLogger(__name__)

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")
#: What a host must accept per skill (ext-skills *Limits*); also the cap on a dynamic file.
MAX_SKILL_BYTES = 16 * 1024 * 1024


def _skills_deadline(client: Core, method: str, timeout: TimeoutArg) -> Deadline:
    """The call's deadline, once the server is known to declare the skills extension (a lazy connect in it)."""
    deadline = client._options.deadline(timeout)
    extensions = client._connection(deadline).capabilities.extensions or {}
    if not isinstance(extensions.get(types.SKILLS_EXTENSION), dict):
        raise CapabilityNotSupported(f"extensions.{types.SKILLS_EXTENSION}", method)
    return deadline


def list_skills(client: Core, *, timeout: TimeoutArg = DEFAULT, cache: bool = True) -> list[Skill]:
    """Every skill entry the server lists (all pages); reads no file.

    An entry that breaks the entry shape (say ``resources`` neither a list
    nor ``"dynamic"``) is left out with a warning, so one bad entry does not
    hide the others.  A listing may be partial: :meth:`get_skill` and
    :meth:`load_skill` take any skill URI.

    :raises CapabilityNotSupported: the server does not declare the extension.
    """
    deadline = _skills_deadline(client, "skills/list", timeout)
    skills: list[Skill] = []
    pages = types.skills.RawSkillsPage  # entries left raw: each is checked on its own
    for raw in paginate(client, "skills/list", "skills", pages, "resources", deadline, cache):
        try:
            skills.append(types.from_wire(types.Skill, raw))
        except ProtocolError as exc:
            log.warning("ignoring a malformed skills/list entry: %s", exc)
    return skills


def get_skill(client: Core, uri: str, *, timeout: TimeoutArg = DEFAULT) -> Skill:
    """The current entry of the skill whose ``SKILL.md`` is *uri* (listed or not).

    :raises ServerError: -32602 when the server serves no such skill.
    :raises ProtocolError: the answer is malformed or describes another URI.
    """
    raw = client._call("skills/get", {"uri": uri}, _skills_deadline(client, "skills/get", timeout))
    skill = types.from_wire(types.GetSkillResult, raw).skill
    if skill.uri != uri:
        raise ProtocolError(f"skills/get {excerpt(uri, 120)} answered for {excerpt(skill.uri, 120)}")
    return skill


def load_skill(client: Core, skill: Skill | str, *, timeout: TimeoutArg = DEFAULT,
               allow_dynamic: bool = False) -> LoadedSkill:
    """Load a skill: read its ``SKILL.md`` and verify it against the entry.

    ::

        loaded = client.load_skill("skill://code-review/SKILL.md")
        prompt = loaded.body  # verified instructions
        checklist = client.read_skill_file(loaded, "references/checklist.md").text

    :param skill: an entry (from :meth:`list_skills`/:meth:`get_skill`), or a
        ``SKILL.md`` URI, which is first confirmed with ``skills/get``.
    :param timeout: bounds the whole load (``skills/get`` and the read).
    :param allow_dynamic: accept a skill whose server publishes no digests
        (``"resources": "dynamic"``); its frontmatter is still compared.
    :raises SkillVerificationError: the entry is invalid, or ``SKILL.md``
        does not match its size, digest or frontmatter.  Nothing of it is
        returned; :meth:`get_skill` refreshes a stale entry.
    """
    deadline = client._options.deadline(timeout)
    if isinstance(skill, str):
        skill = get_skill(client, skill, timeout=deadline)
    _check_entry(skill, allow_dynamic)
    file = _fetch(client, skill, skill.uri, deadline)
    # Imported here: its YAML subset parser is for load_skill only, not `import mcpsync`.
    from mcpsync.client import frontmatter as _frontmatter

    try:
        text = file.text
        yaml_text, body = _frontmatter.split(text)
        parsed = _frontmatter.parse(yaml_text)
    except UnicodeDecodeError:
        raise SkillVerificationError(skill.uri, "content", detail="SKILL.md is not UTF-8 text") from None
    except _frontmatter.FrontmatterError as exc:
        raise SkillVerificationError(skill.uri, "frontmatter", detail=str(exc)) from None
    _compare_frontmatter(skill, parsed)
    return types.LoadedSkill(skill=skill, file=file, frontmatter=parsed, body=body)


def read_skill_file(client: Core, skill: LoadedSkill | Skill, path: str, *, timeout: TimeoutArg = DEFAULT,
                    allow_dynamic: bool = False) -> SkillFile:
    """Read one file of a skill, verified against the held entry's manifest.

    :param skill: the :class:`~mcpsync.types.LoadedSkill` you are acting on
        (or an entry).
    :param path: relative to the skill's directory (``references/GUIDE.md``)
        or a full URI; either way it must be in the manifest.
    :param allow_dynamic: as for :meth:`load_skill` (implied when *skill* is
        a loaded dynamic skill).
    :raises SkillVerificationError: the file is not in the manifest, or its
        size or digest differs.
    """
    if isinstance(skill, types.LoadedSkill):
        allow_dynamic = allow_dynamic or skill.skill.dynamic
        skill = skill.skill
    _check_entry(skill, allow_dynamic)
    return _fetch(client, skill, resolve(skill, path), client._options.deadline(timeout))


def _fetch(client: Core, skill: Skill, uri: str, deadline: Deadline) -> SkillFile:
    """Read *uri* and verify it; a cached copy that fails is read once more from the server."""
    entry = skill.manifest_entry(uri)
    if entry is None and not skill.dynamic:
        raise SkillVerificationError(uri, "manifest", detail="the file is not in the skill's manifest")
    if entry is None and uri != skill.uri and not uri.startswith(skill.root + "/"):
        # A dynamic skill has no manifest, but its files still live in its directory.
        raise SkillVerificationError(uri, "manifest", detail="the file is outside the skill's directory")
    if client._cache.get("resources/read", uri) is not None:
        try:
            return _verified(uri, entry, client.read_resource(uri, timeout=deadline))
        except SkillVerificationError:
            # A cached copy may be older than the entry; the server's current bytes decide.
            log.debug("cached skill file %s failed verification; reading it again", uri)
    return _verified(uri, entry, client.read_resource(uri, timeout=deadline, cache=False))


def resolve(skill: Skill, path: str) -> str:
    """The URI of *path* in *skill*: a full URI as is, a relative path against the skill root."""
    if _SCHEME.match(path):
        return path
    normal = posixpath.normpath(path)
    if path.startswith("/") or normal == ".." or normal.startswith("../"):
        raise SkillVerificationError(path, "manifest", detail="the path leaves the skill's directory")
    return f"{skill.root}/{normal}"


def _check_entry(skill: Skill, allow_dynamic: bool) -> None:
    """The entry rules a host must enforce before loading (ext-skills *Skill Entries*)."""
    def invalid(detail: str) -> SkillVerificationError:
        return SkillVerificationError(skill.uri, "entry", detail=detail)

    name, root = skill.frontmatter.get("name"), skill.root
    if not skill.uri.endswith("/SKILL.md"):
        raise invalid("the skill URI does not name a SKILL.md")
    if not isinstance(name, str) or not isinstance(skill.frontmatter.get("description"), str):
        raise invalid("the entry's frontmatter lacks a name or description")
    if root.rpartition("/")[2] != name:
        raise invalid(f"the skill directory does not end in its name {excerpt(name, 60)}")
    if isinstance(skill.resources, str):
        if not allow_dynamic:
            raise SkillVerificationError(
                skill.uri, "dynamic",
                detail="the server publishes no digests for this skill (pass allow_dynamic=True to accept it)",
            )
        return
    seen: set[str] = set()
    for item in skill.resources:
        if item.uri in seen:
            raise invalid(f"the manifest lists {excerpt(item.uri, 120)} twice")
        seen.add(item.uri)
        if item.uri != skill.uri and not item.uri.startswith(root + "/"):
            raise invalid(f"the manifest lists {excerpt(item.uri, 120)}, outside the skill")
        if not _DIGEST.match(item.digest) or item.size < 0:
            raise invalid(f"the manifest entry of {excerpt(item.uri, 120)} has no valid digest and size")
    if skill.uri not in seen:
        raise invalid("the manifest does not list SKILL.md")


def _verified(uri: str, entry: SkillResource | None, result: types.ReadResourceResult) -> SkillFile:
    """The file's bytes from *result*, if they match *entry* (``None``: a dynamic skill)."""
    # Imported here only: hashlib alone costs a cold start several ms.
    import base64
    import binascii
    import hashlib

    parts = [part for part in result.contents if part.uri == uri]
    if len(parts) != 1:
        raise SkillVerificationError(uri, "content", detail=f"the read returned {len(parts)} contents for it")
    part = parts[0]
    if isinstance(part, types.TextResourceContents):
        data = part.text.encode("utf-8")
    else:
        try:
            data = base64.b64decode(part.blob, validate=True)
        except (binascii.Error, ValueError):
            raise SkillVerificationError(uri, "content", detail="the blob is not valid base64") from None
    if entry is None:
        if len(data) > MAX_SKILL_BYTES:
            raise SkillVerificationError(uri, "size", MAX_SKILL_BYTES, len(data),
                                         detail=f"a dynamic skill file over {MAX_SKILL_BYTES} bytes")
        return types.SkillFile(uri=uri, data=data, mime_type=part.mime_type, verified=False)
    # Size first: a length mismatch fails whether or not a digest is computed.
    if len(data) != entry.size:
        raise SkillVerificationError(uri, "size", entry.size, len(data))
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    if digest != entry.digest:
        raise SkillVerificationError(uri, "digest", entry.digest, digest)
    return types.SkillFile(uri=uri, data=data, mime_type=part.mime_type)


def _compare_frontmatter(skill: Skill, parsed: dict[str, Any]) -> None:
    """Field by field; the first difference fails the load."""
    from mcpsync.client import frontmatter as _frontmatter

    expected = skill.frontmatter
    for key in sorted(set(expected) | set(parsed)):
        if key not in parsed or key not in expected or not _frontmatter.same(expected[key], parsed[key]):
            raise SkillVerificationError(skill.uri, "frontmatter", expected.get(key), parsed.get(key),
                                         detail=f"field {excerpt(key, 60)!r} differs from the skill entry")
