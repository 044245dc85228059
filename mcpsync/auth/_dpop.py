"""DPoP (RFC 9449, MCP SEP-1932): access tokens bound to a key the client holds.

A DPoP-bound token is useless without the private key: each request carries a
fresh *proof*, a JWT signed with that key over the request's method and URL
(and, towards the MCP server, a hash of the token).  The key is an ES256
(P-256) pair made once per token store key and kept in the store record beside
the tokens it binds (``record["dpop_key"]``, a private JWK), so a process that
loads the tokens also has the key; it never appears in a log, a ``repr`` or an
exception.

Signing needs the ``cryptography`` package (``pip install 'mcpsync[dpop]'``),
imported only when a key is made or loaded.  It is reached through
:func:`importlib.import_module`, so the type checker sees ``Any`` at that
boundary whether or not the package is installed.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import importlib
import importlib.util
import json
import logging
import secrets
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ._discovery import origin
from ._errors import DPoPError, DPoPNonceError
from ._record import Record, Tokens


log = logging.getLogger("mcpsync.auth")

#: The one proof algorithm mcpsync signs with (the one every DPoP server must accept in MCP).
ALGORITHM = "ES256"
INSTALL = "pip install 'mcpsync[dpop]'"
_COORD = 32  # bytes per P-256 coordinate and per signature half


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode("utf-8")


def available() -> bool:
    """Whether the signing library is installed (no import happens)."""
    return importlib.util.find_spec("cryptography") is not None


def _crypto() -> tuple[Any, Any, Any]:
    """``(ec, hashes, utils)`` from ``cryptography``, or a :class:`DPoPError` naming the extra."""
    try:
        return tuple(importlib.import_module(f"cryptography.hazmat.primitives.{name}")  # type: ignore[return-value]
                     for name in ("asymmetric.ec", "hashes", "asymmetric.utils"))
    except ImportError:
        raise DPoPError(f"DPoP needs the cryptography package ({INSTALL})") from None


def htu(url: str) -> str:
    """The ``htu`` claim for *url*: the target URI without query and fragment (RFC 9449 §4.2)."""
    return urlunsplit(urlsplit(url)._replace(query="", fragment=""))


def jwk_thumbprint(jwk: dict[str, str]) -> str:
    """The RFC 7638 SHA-256 thumbprint of an EC public JWK (what ``cnf.jkt`` holds)."""
    return _b64(hashlib.sha256(_json({name: jwk[name] for name in ("crv", "kty", "x", "y")})).digest())


def access_token_hash(token: str) -> str:
    """The ``ath`` claim: base64url SHA-256 of the access token (RFC 9449 §4.2)."""
    return _b64(hashlib.sha256(token.encode("ascii", "replace")).digest())


def proof_nonce(proof: str) -> str | None:
    """The ``nonce`` claim of a proof this client made (read back, not verified)."""
    try:
        claims = json.loads(_unb64(proof.split(".")[1]))
    except (ValueError, IndexError):
        return None
    return nonce if isinstance(claims, dict) and isinstance(nonce := claims.get("nonce"), str) else None


def refuse_nonce_loop(who: str, again: bool, nonce: str | None, used: str | None) -> None:
    """Before re-sending with the nonce a ``use_dpop_nonce`` answer of *who* supplied (RFC 9449 §8, §9).

    :param again: the answer came to a re-send made to add a nonce already.
    :param used: the nonce the refused request carried.
    :raises DPoPNonceError: a loop: *again*, or no new nonce.
    """
    if again or nonce is None or nonce == used:
        raise DPoPNonceError(f"the {who} asked for a new DPoP nonce again" if again
                             else f"the {who} asked for a DPoP nonce but sent none (or the same)")


class DPoPKey:
    """An ES256 key pair that signs DPoP proofs.

    The private half is reachable only through :meth:`private_jwk` (for the
    token store); ``repr`` shows the public thumbprint only.
    """

    __slots__ = ("_private", "public_jwk", "thumbprint")

    def __init__(self, private: Any) -> None:
        numbers = private.public_key().public_numbers()
        self._private = private
        #: The public JWK sent in every proof's header.
        self.public_jwk: dict[str, str] = {"kty": "EC", "crv": "P-256", "x": _b64(numbers.x.to_bytes(_COORD, "big")),
                                           "y": _b64(numbers.y.to_bytes(_COORD, "big"))}
        #: The RFC 7638 thumbprint of :attr:`public_jwk` (public).
        self.thumbprint = jwk_thumbprint(self.public_jwk)

    def __repr__(self) -> str:
        return f"<DPoPKey {ALGORITHM} jkt={self.thumbprint}>"

    def __reduce__(self) -> Any:
        # Pickling would put the private key wherever the pickle goes (a task queue, a cache).
        raise TypeError("a DPoPKey cannot be pickled; keep it in a token store")

    @classmethod
    def generate(cls) -> DPoPKey:
        """A new random P-256 key."""
        ec, _, _ = _crypto()
        return cls(ec.generate_private_key(ec.SECP256R1()))

    @classmethod
    def from_jwk(cls, jwk: Any) -> DPoPKey:
        """The key saved by :meth:`private_jwk`.

        :raises DPoPError: the stored value is not a P-256 private JWK whose public half matches.
        """
        ec, _, _ = _crypto()
        key = None
        if isinstance(jwk, dict) and (jwk.get("kty"), jwk.get("crv")) == ("EC", "P-256") and isinstance(jwk.get("d"), str):
            with contextlib.suppress(ValueError, TypeError):
                key = cls(ec.derive_private_key(int.from_bytes(_unb64(jwk["d"]), "big"), ec.SECP256R1()))
        if key is None or (key.public_jwk["x"], key.public_jwk["y"]) != (jwk.get("x"), jwk.get("y")):
            raise DPoPError("the DPoP key in the token store is damaged; log out to make a new one")
        return key

    def private_jwk(self) -> dict[str, str]:
        """The private JWK, for the token store only."""
        d = self._private.private_numbers().private_value
        return {**self.public_jwk, "d": _b64(d.to_bytes(_COORD, "big"))}

    def proof(self, method: str, url: str, *, nonce: str | None = None, access_token: str | None = None) -> str:
        """A fresh DPoP proof JWT for one HTTP request (RFC 9449 §4.2).

        :param access_token: the token the request presents; adds ``ath``
            (requests to the MCP server, never the token endpoint).
        """
        ec, hashes, utils = _crypto()
        header = {"typ": "dpop+jwt", "alg": ALGORITHM, "jwk": self.public_jwk}
        claims: dict[str, Any] = {"jti": secrets.token_urlsafe(18), "htm": method.upper(), "htu": htu(url),
                                  "iat": int(time.time())}
        if nonce:
            claims["nonce"] = nonce
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        signing_input = f"{_b64(_json(header))}.{_b64(_json(claims))}"
        der = self._private.sign(signing_input.encode("ascii"), ec.ECDSA(hashes.SHA256()))
        r, s = utils.decode_dss_signature(der)
        signature = r.to_bytes(_COORD, "big") + s.to_bytes(_COORD, "big")
        return f"{signing_input}.{_b64(signature)}"


class NonceCache:
    """The latest ``DPoP-Nonce`` each server supplied, by origin (thread-safe: each method is one
    ``dict`` operation, atomic on its own).

    Nonces are public and short-lived, so they live in memory only.
    """

    def __init__(self) -> None:
        self._nonces: dict[str, str] = {}

    def get(self, url: str) -> str | None:
        return self._nonces.get(origin(url))

    def update(self, url: str, nonce: str | None) -> str | None:
        """Remember *nonce* (a response's ``DPoP-Nonce``) for *url*'s server; the nonce kept, if any."""
        if not nonce or len(nonce) > 1024 or not nonce.isprintable():
            return None
        self._nonces[origin(url)] = nonce
        return nonce


class DPoPKeys:
    """The DPoP side of one token store key: when to bind, the key, the servers' nonces.

    The key lives in the store record beside the tokens bound to it (``dpop_key``);
    *load* reads that record when the caller has none at hand.

    :param setting: ``True``: DPoP or fail; ``False``: bearer tokens only; ``None``: DPoP
        where the MCP server takes it and the authorization server offers it.
    """

    def __init__(self, setting: bool | None, load: Callable[[], Record]) -> None:
        self.setting = setting
        self._load = load
        self._key: DPoPKey | None = None
        self._warned_no_crypto = False
        #: The latest ``DPoP-Nonce`` of each server (authorization and MCP server).
        self.nonces = NonceCache()

    def _stored(self, record: Record | None) -> DPoPKey | None:
        stored = (record if record is not None else self._load()).dpop_key
        return DPoPKey.from_jwk(stored) if stored is not None else None

    def key(self, record: Record | None = None) -> DPoPKey:
        """The key in the record (*record*, or loaded), else a new one.

        A new key is saved together with the first tokens bound to it (:meth:`keep`),
        never alone: the store lock is not re-entrant and a key without tokens is of no
        use to anyone.
        """
        if self._key is None:
            self._key = self._stored(record) or DPoPKey.generate()
        return self._key

    def forget(self) -> None:
        """After a logout: the next login binds its tokens to a new key."""
        self._key = None

    def keep(self, record: Record) -> None:
        """Put the key the record's tokens are bound to into *record*, which is about to be saved."""
        key, tokens = self._key, record.tokens
        if tokens and tokens.token_type == "DPoP" and key and tokens.dpop_jkt == key.thumbprint:
            record.dpop_key = key.private_jwk()

    def for_new_tokens(self, meta: dict[str, Any], prm: dict[str, Any] | None, record: Record | None = None, *,
                       offered: bool = False) -> DPoPKey | None:
        """The key to bind new tokens to, or ``None`` for bearer tokens.

        DPoP only where the MCP server takes it: a ``DPoP`` challenge (*offered*, RFC 9449
        §7.1) or DPoP in its resource metadata, or ``setting=True``; and, unless required,
        only where the authorization server offers ES256.  A server that takes only Bearer
        (most do) would refuse a bound token whatever the authorization server offers.

        :raises DPoPError: DPoP is required (``setting=True`` or the resource's
            ``dpop_bound_access_tokens_required``) but impossible.
        """
        if self.setting is False:
            return None
        prm = prm or {}
        required = self.setting or prm.get("dpop_bound_access_tokens_required") is True
        as_algs, rs_algs = meta.get("dpop_signing_alg_values_supported"), prm.get("dpop_signing_alg_values_supported")
        if not (required or (offered or isinstance(rs_algs, list)) and isinstance(as_algs, list)):
            return None
        for algs, who in ((as_algs, "authorization server"), (rs_algs, "MCP server")):
            if isinstance(algs, list) and ALGORITHM not in algs:
                if required:
                    raise DPoPError(f"the {who} accepts no {ALGORITHM} DPoP proofs, the only kind mcpsync signs")
                return None
        if not required and not available():
            if not self._warned_no_crypto:
                self._warned_no_crypto = True
                log.warning("the servers offer DPoP but the cryptography package is missing; "
                            "using bearer tokens (%s)", INSTALL)
            return None
        return self.key(record)

    def of_tokens(self, tokens: Tokens, record: Record | None = None) -> DPoPKey | None:
        """The key *tokens* are bound to (``None`` for bearer tokens)."""
        if tokens.token_type != "DPoP":
            return None
        key = self.key(record)
        if tokens.dpop_jkt not in (None, key.thumbprint):
            # Another process bound newer tokens to its own key and saved both: use that key.
            key = self._stored(record) or key
            if key.thumbprint != tokens.dpop_jkt:
                raise DPoPError("the stored tokens are bound to another DPoP key than the stored one; log in again")
            self._key = key
        return key
