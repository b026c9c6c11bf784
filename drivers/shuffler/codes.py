"""The numbers of the TSP/1 shuffler message set: types, states, flags, faults and policies."""

from __future__ import annotations

from enum import IntEnum, IntFlag

from controller.table.inputs import DeckFault, Purpose
from drivers.tsp.common import FaultNames


class MsgType(IntEnum):
    """Shuffler message types (requests 0x10…0x1D, events 0x40…0x48, ERROR 0x7F)."""

    IDENTIFY = 0x10
    GET_STATUS = 0x11
    PING = 0x12
    SET_CONFIG = 0x13
    START_SHUFFLE = 0x14
    PRESENT = 0x15
    DISPENSE_GROUP = 0x16
    CLEAR_FAULT = 0x17
    ABORT = 0x18
    TIME_SYNC = 0x19
    REVEAL_DECK = 0x1A
    GET_COUNTERS = 0x1B
    FW_CHALLENGE = 0x1C
    GET_FAULTS = 0x1D
    STATE_CHANGED = 0x40
    SHUFFLE_STARTED = 0x41
    DECK_CHECK = 0x42
    SHUFFLE_COMPLETE = 0x43
    DECK_MOVED = 0x44
    GROUP_DISPENSED = 0x45
    FAULT_RAISED = 0x46
    FAULT_CLEARED = 0x47
    OPERATOR_INPUT = 0x48
    ERROR = 0x7F


class DeviceState(IntEnum):
    """What the shuffler is doing."""

    BOOT = 0
    IDLE = 1
    LOADED = 2
    SHUFFLING = 3
    READY = 4
    PRESENTED = 5
    DISPENSING = 6
    VERIFYING = 7
    FAULT = 8
    SERVICE = 9


class StatusFlag(IntFlag):
    """Status bits of GET_STATUS, PING and STATE_CHANGED."""

    NONE = 0
    LID_OPEN = 1 << 0
    SERVICE_COVER_OPEN = 1 << 1
    ELEVATOR_UP = 1 << 2
    INPUT_PRESENT = 1 << 3
    OUTPUT_PRESENT = 1 << 4
    REJECT_COMPARTMENT_NONEMPTY = 1 << 5
    HOST_LOST = 1 << 6
    CONFIG_PENDING = 1 << 7
    RNG_SELFTEST_OK = 1 << 8
    FW_SELFTEST_OK = 1 << 9


class Capability(IntFlag):
    """What a shuffler can do (IDENTIFY ``caps``)."""

    NONE = 0
    CARD_RECOGNITION = 1 << 0
    DECK_VERIFY = 1 << 1
    HAND_FORMING = 1 << 2
    SORT = 1 << 3
    VERIFY_ONLY = 1 << 4
    ELEVATOR = 1 << 5
    HOST_START = 1 << 6
    LIVE_CARD_IDS = 1 << 7
    DECK_COMMITMENT = 1 << 8
    FW_CHALLENGE = 1 << 9
    TIME_SYNC = 1 << 10
    JOKERS = 1 << 11


class Profile(IntEnum):
    """SET_CONFIG ``profile``."""

    POKER_DECK = 1
    HAND_FORMING = 2


class IdPolicy(IntEnum):
    """Whether card identities leave the device (docs/protocols/tsp1.md §3.6).

    WITHHOLD is the default.
    """

    WITHHOLD = 0
    LIVE = 1


class ShuffleMode(IntEnum):
    """START_SHUFFLE ``mode``."""

    SHUFFLE = 0
    VERIFY_ONLY = 1
    SORT = 2


class ShuffleResult(IntEnum):
    """SHUFFLE_COMPLETE ``result``."""

    OK = 0
    DECK_CHECK_FAILED = 1
    ABORTED = 2
    FAULT = 3


class DeckMove(IntEnum):
    """DECK_MOVED ``what``."""

    PRESENTED = 1
    REMOVED = 2
    INSERTED = 3


class Button(IntEnum):
    """OPERATOR_INPUT ``button``."""

    SHUFFLE = 1
    PRESENT = 2
    MENU = 3


class Trigger(IntEnum):
    """SHUFFLE_STARTED ``trigger``."""

    DEALER = 0
    HOST = 1


class FaultFlag(IntFlag):
    """FAULT_RAISED ``flags``."""

    NONE = 0
    RECOVERABLE = 0x01
    OPERATOR_ACTION = 0x02
    SHUFFLE_ABORTED = 0x04
    CARD_QUARANTINED = 0x08


class DeckVerdict(IntFlag):
    """DECK_CHECK ``verdict`` bits (0 = the deck is good)."""

    OK = 0
    SHORT = 0x01
    EXTRA = 0x02
    DUPLICATE = 0x04
    FOREIGN_BACK = 0x08
    UNREADABLE = 0x10
    WRONG_PROFILE = 0x20


#: Fault codes (high byte = class) and their names, docs/protocols/tsp1.md §3.5. FAULT_CLEARED
#: ``by``, FAULT_RAISED ``severity`` and ERROR ``code`` are every message set's
#: (:mod:`drivers.tsp.common`).
FAULTS = FaultNames(
    {
        0x0101: "JAM_INPUT",
        0x0102: "JAM_PATH",
        0x0103: "JAM_OUTPUT",
        0x0104: "MISFEED",
        0x0105: "ELEVATOR_FAULT",
        0x0106: "CAROUSEL_FAULT",
        0x0107: "MOTOR_STALL",
        0x0201: "LID_OPEN",
        0x0202: "SERVICE_COVER_OPEN",
        0x0203: "TRAY_NOT_SEATED",
        0x0301: "CAMERA_FAULT",
        0x0302: "CARD_UNREADABLE",
        0x0303: "RECOGNITION_CALIBRATION_REQUIRED",
        0x0304: "FOREIGN_BACK",
        0x0401: "COUNT_MISMATCH",
        0x0402: "DUPLICATE_CARD",
        0x0403: "MISSING_CARD",
        0x0404: "EXTRA_CARD",
        0x0501: "RNG_HEALTH_FAIL",
        0x0502: "FIRMWARE_INTEGRITY_FAIL",
        0x0503: "CONFIG_INVALID",
        0x0504: "OVERTEMP",
        0x0505: "POWER_LOSS_DURING_SHUFFLE",
        0x0506: "WATCHDOG_RESET",
        0x0507: "HOST_LINK_LOST",
    }
)

#: Group purposes on the wire and in the core.
PURPOSES: dict[int, Purpose] = {
    1: Purpose.HOLE,
    2: Purpose.BURN,
    3: Purpose.FLOP,
    4: Purpose.TURN,
    5: Purpose.RIVER,
    6: Purpose.BOARD_OTHER,
    7: Purpose.EXTRA,
}
PURPOSE_CODES: dict[Purpose, int] = {purpose: code for code, purpose in PURPOSES.items()}

#: Deck-check verdict bits and the core's deck faults.
DECK_FAULTS: dict[DeckVerdict, DeckFault] = {
    DeckVerdict.SHORT: DeckFault.SHORT,
    DeckVerdict.EXTRA: DeckFault.EXTRA,
    DeckVerdict.DUPLICATE: DeckFault.DUPLICATE,
    DeckVerdict.FOREIGN_BACK: DeckFault.FOREIGN_BACK,
    DeckVerdict.UNREADABLE: DeckFault.UNREADABLE,
    DeckVerdict.WRONG_PROFILE: DeckFault.WRONG_PROFILE,
}
