"""The floor's rulings from the console: a hold confirmed, rejected or overridden at a table.

The pit signs each request with its own key and names the logged-in person in ``on_behalf_of``
(design §3.10); the table's keyring decides whether the pit's key may act for that person and
with which roles (``acts_for``, and the person's roles: docs/console.md). The request goes on
``{prefix}/{table}/request/{command}``; the table's answer, matched by its ``transaction``,
comes back on ``response/{command}`` and is what the console shows.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from controller.mqtt import MqttError
from controller.signing import Signer

Publish = Callable[[str, bytes], Awaitable[None]]

#: What each console action sends the table.
COMMANDS = {"confirm": "confirm", "reject": "reject", "override": "floor_override"}


class RulingError(RuntimeError):
    """A ruling that could not be sent, or was not answered (the message says why)."""


class Rulings:
    """Sends the floor's rulings for the people logged in, and waits for the tables' answers."""

    def __init__(
        self, prefix: str, publish: Publish, signer: Signer | None, timeout: float
    ) -> None:
        self.prefix = prefix
        self.publish = publish
        self.signer = signer
        self.timeout = timeout
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}

    async def send(
        self, table: str, action: str, fields: Mapping[str, Any], person: str
    ) -> dict[str, Any]:
        """Send ``action`` (confirm, reject, override) to ``table`` for ``person``; the table's
        answer (``{"transaction", "status", "data", "error"}``)."""
        if self.signer is None:
            raise RulingError("the pit has no signing key ([security] key): it cannot rule")
        command = COMMANDS[action]
        transaction = f"console-{uuid.uuid4().hex}"
        signer = Signer(self.signer.private, self.signer.key_id, table, on_behalf_of=person)
        body = signer.sign(command, {"transaction": transaction, **fields})
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[transaction] = answer
        try:
            topic = f"{self.prefix}/{table}/request/{command}"
            try:
                await self.publish(topic, json.dumps(body).encode())
            except MqttError as exc:
                raise RulingError(f"not sent: {exc}") from None
            try:
                async with asyncio.timeout(self.timeout):
                    return await answer
            except TimeoutError:
                raise RulingError(
                    f"table {table} did not answer in {self.timeout:g} s (is it online?)"
                ) from None
        finally:
            self._waiting.pop(transaction, None)

    def on_response(self, table: str, body: Mapping[str, Any]) -> None:
        """A table answered a ruling (anyone's: only those this process sent are waited for)."""
        transaction = body.get("transaction")
        waiting = self._waiting.get(transaction) if isinstance(transaction, str) else None
        if waiting is not None and not waiting.done():
            waiting.set_result(dict(body))
