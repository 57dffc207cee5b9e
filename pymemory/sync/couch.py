"""The subset of CouchDB's HTTP API the replicator uses, over a :class:`Transport`.

``GET /db`` (exists?), ``PUT /db`` (create), ``GET``/``PUT /db/<doc>``, ``POST
/db/_bulk_docs`` and ``GET /db/_changes?since=...&include_docs=true``. Every answer is
checked before it is believed: an HTTP error, a body that is not JSON or JSON of the
wrong shape raises :class:`~pymemory.errors.SyncError` (nothing is written locally from
it). The feed's ``seq`` values are opaque (CouchDB 2+ sends strings, PouchDB integers):
they are kept as JSON and sent back as they came.
"""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from ..checks import check_str
from ..errors import SyncError, ValidationError, shown
from .transport import Transport, WireCount

Auth = tuple[str, str] | str | None


def _auth_header(auth: Auth) -> str | None:
    if auth is None:
        return None
    if isinstance(auth, str):  # a ready Authorization value, e.g. "Bearer <jwt>"
        if not auth.isascii() or not auth.isprintable():
            raise ValidationError("an auth header value must be printable ASCII")
        return auth
    if (
        isinstance(auth, tuple)
        and len(auth) == 2
        and all(isinstance(part, str) for part in auth)
    ):
        user, password = (check_str("auth", part) for part in auth)  # UTF-8, as CouchDB reads
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        return f"Basic {token}"
    raise ValidationError("auth must be (user, password), an Authorization header value or None")


def split_url(url: object, auth: Auth) -> tuple[str, str | None, str]:
    """(the database URL without credentials, the Authorization value, a name for it
    without credentials). Credentials in the URL (``https://user:pw@host/db``) count."""
    if not isinstance(url, str) or not url:
        raise ValidationError(f"the sync url must be a non-empty str, got {shown(url)}")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError(f"the sync url must be http(s)://host/database, got {shown(url)}")
    if not parts.path.strip("/"):
        raise ValidationError("the sync url must name a database: http(s)://host/<database>")
    if parts.username is not None and auth is None:
        auth = (unquote(parts.username), unquote(parts.password or ""))
    netloc = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
    if ":" in parts.hostname:  # IPv6
        netloc = f"[{parts.hostname}]" + ("" if parts.port is None else f":{parts.port}")
    clean = urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    return clean, _auth_header(auth), clean


def _deleted_stub(row: dict[str, Any]) -> dict[str, Any]:
    """A feed row of a document deleted at the CouchDB level, as ``{"_id", "_rev",
    "_deleted": true}`` (``_rev``: the deletion's revision, None if the row has none)."""
    doc = row.get("doc")
    rev = doc.get("_rev") if isinstance(doc, dict) else None
    changes = row.get("changes")
    if not isinstance(rev, str) and isinstance(changes, list) and changes:
        first = changes[0]
        rev = first.get("rev") if isinstance(first, dict) else None
    return {"_id": row["id"], "_rev": rev if isinstance(rev, str) else None, "_deleted": True}


class CouchClient:
    """One database on a CouchDB-protocol server."""

    def __init__(self, db_url: str, authorization: str | None, transport: Transport) -> None:
        self.db_url = db_url
        self.transport = transport
        self.wire = WireCount()
        self._headers = {"Accept": "application/json", "Content-Type": "application/json"}
        if authorization:
            self._headers["Authorization"] = authorization

    async def _call(
        self, method: str, path: str, body: Any = None, *, ok: tuple[int, ...] = (200, 201)
    ) -> tuple[int, Any]:
        url = self.db_url + path
        data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
        answer = await self.transport.request(method, url, body=data, headers=self._headers)
        self.wire.requests += 1
        self.wire.sent += len(data or b"")
        self.wire.received += len(answer.body)
        where = f"{method} {path or '/'}"
        if answer.status not in ok:
            if answer.status >= 500 or answer.status in (408, 429):
                message = f"the sync server answered {answer.status} to {where}"
                raise SyncError(message, retryable=True)
            if answer.status in (401, 403):
                raise SyncError(
                    f"the sync server refused the credentials ({answer.status}) for {where}"
                )
            raise SyncError(f"the sync server answered {answer.status} to {where}")
        try:
            return answer.status, json.loads(answer.body)
        except (ValueError, UnicodeDecodeError):
            raise SyncError(
                f"the sync server's answer to {where} is not JSON: {answer.body[:60]!r}",
                retryable=True,
            ) from None

    async def ensure_db(self) -> dict[str, Any]:
        """The database's info, creating the database if it does not exist (and the
        credentials may). SyncError if it is missing and cannot be created."""
        status, info = await self._call("GET", "", ok=(200, 404))
        if status == 404:
            await self._call("PUT", "", ok=(201, 202, 412))
            status, info = await self._call("GET", "")
        if not isinstance(info, dict) or "db_name" not in info:
            raise SyncError("the sync url is not a CouchDB database (no db_name in its info)")
        return info

    async def get_doc(self, doc_id: str) -> dict[str, Any] | None:
        status, doc = await self._call("GET", "/" + quote(doc_id, safe=""), ok=(200, 404))
        if status == 404:
            return None
        if not isinstance(doc, dict) or doc.get("_id") != doc_id:
            raise SyncError(f"the sync server sent a malformed document for {doc_id!r}")
        return doc

    async def put_doc(self, doc: dict[str, Any]) -> str | None:
        """The new revision, or None on a conflict (someone else wrote it first)."""
        path = "/" + quote(doc["_id"], safe="")
        status, out = await self._call("PUT", path, doc, ok=(200, 201, 202, 409))
        if status == 409:
            return None
        if not isinstance(out, dict) or not isinstance(out.get("rev"), str):
            raise SyncError("the sync server's answer to a document write has no rev")
        return out["rev"]

    async def bulk_docs(self, docs: list[dict[str, Any]]) -> dict[str, str | None]:
        """Write ``docs``; for each id its new revision, or None if it conflicted."""
        _, out = await self._call("POST", "/_bulk_docs", {"docs": docs})
        if not isinstance(out, list):
            raise SyncError("the sync server's _bulk_docs answer is not a list", retryable=True)
        revs: dict[str, str | None] = {}
        for row in out:
            if not isinstance(row, dict) or not isinstance(row.get("id"), str):
                raise SyncError("the sync server's _bulk_docs answer has a malformed row")
            if isinstance(row.get("rev"), str) and "error" not in row:
                revs[row["id"]] = row["rev"]
            elif row.get("error") == "conflict":
                revs[row["id"]] = None
            else:
                raise SyncError(
                    f"the sync server refused {row['id']!r}: {shown(row.get('reason'))}"
                )
        missing = {d["_id"] for d in docs} - set(revs)
        if missing:
            raise SyncError(f"the sync server's _bulk_docs answer skips {len(missing)} docs")
        return revs

    async def changes(self, since: Any, limit: int) -> tuple[list[dict[str, Any]], Any]:
        """One page of the feed after ``since``: (the docs, the page's last seq). A
        document deleted at the CouchDB level comes as ``{"_id", "_rev", "_deleted":
        true}``."""
        mark = since if isinstance(since, str) else json.dumps(since)
        path = f"/_changes?style=main_only&include_docs=true&limit={limit}&since={quote(mark)}"
        _, out = await self._call("GET", path)
        if not isinstance(out, dict) or not isinstance(out.get("results"), list):
            raise SyncError("the sync server's _changes answer has no results", retryable=True)
        if "last_seq" not in out:
            raise SyncError("the sync server's _changes answer has no last_seq", retryable=True)
        docs = []
        for row in out["results"]:
            if not isinstance(row, dict) or not isinstance(row.get("id"), str):
                raise SyncError("the sync server's _changes feed has a malformed row")
            doc = row.get("doc")
            if row.get("deleted") is True:  # a CouchDB-level deletion: not ours (we
                docs.append(_deleted_stub(row))  # write tombstone docs): the hub lost it
                continue
            if not isinstance(doc, dict) or doc.get("_id") != row["id"]:
                raise SyncError(f"the sync server's feed has no document for {row['id']!r}")
            docs.append(doc)
        return docs, out["last_seq"]

    async def doc_revs(self, start: str, end: str) -> dict[str, str]:
        """The ids and current revisions of the live documents with ids in [start, end]."""
        query = f"startkey={quote(json.dumps(start))}&endkey={quote(json.dumps(end))}"
        _, out = await self._call("GET", "/_all_docs?" + query)
        rows = out.get("rows") if isinstance(out, dict) else None
        if not isinstance(rows, list):
            raise SyncError("the sync server's _all_docs answer has no rows", retryable=True)
        revs: dict[str, str] = {}
        for row in rows:
            value = row.get("value") if isinstance(row, dict) else None
            if not isinstance(value, dict) or not isinstance(row.get("id"), str):
                raise SyncError("the sync server's _all_docs answer has a malformed row")
            if isinstance(value.get("rev"), str) and not value.get("deleted"):
                revs[row["id"]] = value["rev"]
        return revs

    async def get_docs(self, ids: list[str]) -> dict[str, dict[str, Any] | None]:
        """The current documents of ``ids`` (None: missing or deleted), in one request."""
        if not ids:
            return {}
        _, out = await self._call("POST", "/_all_docs?include_docs=true", {"keys": ids})
        rows = out.get("rows") if isinstance(out, dict) else None
        if not isinstance(rows, list):
            raise SyncError("the sync server's _all_docs answer has no rows", retryable=True)
        docs: dict[str, dict[str, Any] | None] = dict.fromkeys(ids)
        for row in rows:
            doc = row.get("doc") if isinstance(row, dict) else None
            if isinstance(doc, dict) and doc.get("_id") in docs:
                docs[doc["_id"]] = doc
        return docs
