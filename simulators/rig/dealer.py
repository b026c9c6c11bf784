"""The rig's automatic dealer: random hands at a real table, now and then a mistake.

:class:`TableDealer` is the irregular dealer of :mod:`simulators.irregular` with its hands on
the rig's devices (:class:`~simulators.scenario.device_play.DevicePlay`): it presses the
shuffler's buttons, moves each dispensed card's tag to its seat, the burn or the board, sends the
betting actions and showdown declarations over the console, mucks the folded and losing hands,
and answers every hold. Its mistakes are the ones a dealer or a device can make at a real table:
a card exposed, boxed or dealt off the table, a card the reader misses, extra cards, a card of
another deck, a joker, a live hand's card in the muck, a premature board card, a missing burn,
the shuffler's lid opened or its power cut, a misdeal called, the button in the wrong place. A
fault the dealer caused is undone (the lid closed) before the shuffler is used again.
"""

from __future__ import annotations

import random

from controller.cards import Card
from controller.table.event_types import HandCompleted
from controller.table.inputs import DeviceRebooted, Purpose, Zone
from controller.table.state import MUCK, HandState
from simulators.irregular import MISTAKES, IrregularDealing, Mistake
from simulators.scenario.device_play import DevicePlay
from simulators.scenario.model import Scenario


async def _power_cut(dealer: IrregularDealing, hand: HandState) -> None:
    await dealer.feed(DeviceRebooted(dealer.tick(), "shuffler", 0))


#: The catalogue's mistakes as they happen at a real table (no virtual-only fault codes; a
#: jam mid-hand, which needs the board dealt by hand from the stub, is left out).
TABLE_MISTAKES: list[tuple[str, Mistake]] = [
    (name, _power_cut if name == "power_loss" else make) for name, make in MISTAKES if name != "jam"
]


class TableDealer(DevicePlay, IrregularDealing):
    """Random hands on the rig's devices, with a mistake in ``rate`` of them."""

    def __init__(self, scenario: Scenario, rng: random.Random, rate: float) -> None:
        super().__init__(scenario, rng, rate=rate)
        self.mistakes = TABLE_MISTAKES
        self.completed = 0

    async def deal_hand(self) -> bool:
        """One hand (possibly with a mistake); False when fewer than two seats have chips."""
        seen = len(self.run.events)
        played = await super().deal_hand()
        self.completed += sum(1 for e in self.run.events[seen:] if e.type == HandCompleted.TYPE)
        return played

    async def random_action(self) -> None:
        """One random action; a hand that folds goes to the muck, as the dealer pushes it."""
        before = self.run.state.hand
        await super().random_action()
        after = self.run.state.hand
        if before is None or after is None or after.hand_id != before.hand_id:
            return
        for seat in sorted(after.chips.folded - before.chips.folded):
            mucked = after.cards.at(MUCK)
            cards = [c for c in after.deal.dealt.get(seat, ()) if c not in mucked]
            await self.arrive(Zone.parse("muck"), cards)

    async def dispense(
        self, purpose: Purpose, seat: int | None, count: int | None, *, keypad: bool = False
    ) -> list[Card]:
        """Close the lid (or clear what the dealer caused) before taking the next group."""
        await self.clear_faults()
        return await super().dispense(purpose, seat, count, keypad=keypad)
