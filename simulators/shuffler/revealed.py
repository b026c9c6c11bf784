"""Decks shuffled and revealed by the simulated shuffler, through its own requests, without a
link or a table: what the randomness audit's tests and benchmark feed it (pure: a virtual
clock).

Each deck is shuffled (START_SHUFFLE, the shuffle's time passed), retired by the next shuffle and
revealed (REVEAL_DECK), as a table asks for the retired decks' orders; the order is the TSP/1
card codes, top first, as the pit stores it.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from drivers.shuffler.codes import MsgType
from drivers.shuffler.messages import DeckReveal, RevealDeck, StartShuffle, StartShuffleResult
from drivers.tsp.common import ErrorResponse
from simulators.shuffler.bias import Bias
from simulators.shuffler.firmware import default_firmware
from simulators.shuffler.model import DeviceConfig, ShufflerModel


def _call(model: ShufflerModel, msg_type: MsgType, payload: bytes, now: float) -> bytes:
    rsp_type, body = model.handle(msg_type, payload, now)
    if rsp_type == MsgType.ERROR:
        refusal = ErrorResponse.decode(body)
        raise RuntimeError(f"the simulated shuffler refused {msg_type.name}: {refusal}")
    return body


def revealed_decks(
    count: int, *, seed: int, bias: Bias | None = None, firmware: bytes | None = None
) -> Iterator[bytes]:
    """``count`` decks of a simulated shuffler with ``bias`` (None: fair), shuffled from
    ``--seed seed`` and revealed one by one."""
    image = default_firmware().read_bytes() if firmware is None else firmware
    config = DeviceConfig(firmware=image, seed=seed, bias=bias, shuffle_time=0.1)
    model = ShufflerModel(config, random.Random(seed), 0.0)
    now = 0.0
    previous: int | None = None
    for _ in range(count + 1):
        started = _call(model, MsgType.START_SHUFFLE, StartShuffle().encode(), now)
        now += 1.0
        model.tick(now)
        model.take_events()  # nobody listens: the events are dropped, not queued for ever
        if previous is not None:
            reveal = DeckReveal.decode(
                _call(model, MsgType.REVEAL_DECK, RevealDeck(previous).encode(), now)
            )
            yield bytes(reveal.order)
        previous = StartShuffleResult.decode(started).shuffle_id
