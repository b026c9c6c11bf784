"""The rule catalogue's stable IDs.

Every ruling the core makes cites one or more of these in the ``rules`` field of the event it
emits. The IDs, their sources and the conflicts between sources are documented in
``docs/rules.md``; the enum value is the ID exactly as the catalogue writes it.
"""

from __future__ import annotations

from enum import StrEnum


class Rule(StrEnum):
    """A rule of the catalogue (value = the catalogue ID)."""

    # A. Device approval, deck and shuffle integrity
    DE_1544A_APPR = "DE-1544a-APPR"
    DE_1544A_GRP = "DE-1544a-GRP"
    SHF_COUNT = "SHF-COUNT"
    SHF_RECOG = "SHF-RECOG"
    RFID_DECK = "RFID-DECK"
    SHF_RAND = "SHF-RAND"
    SEC_1 = "SEC-1"
    # B. Dealing hole cards
    GRP_SIZE = "GRP-SIZE"
    SEAT_COUNT = "SEAT-COUNT"
    SEAT_WRONG_FIRST = "SEAT-WRONG-FIRST"
    SEAT_SEQ = "SEAT-SEQ"
    SEAT_EMPTY = "SEAT-EMPTY"
    SEAT_DEALT_OUT = "SEAT-DEALT-OUT"
    BUTTON_POS = "BUTTON-POS"
    EXTRA_1 = "EXTRA-1"
    EXTRA_2 = "EXTRA-2+"
    DEAL_DONE = "DEAL-DONE"
    # C. Exposed, flashed and off-table cards
    DE_1546A = "DE-1546a"
    EXP_FIRST = "EXP-FIRST"
    EXP_OTHER = "EXP-OTHER"
    EXP_REPL_CHECK = "EXP-REPL-CHECK"
    EXP_MULTI = "EXP-MULTI"
    EXP_REPL_EXPOSED = "EXP-REPL-EXPOSED"
    BOXED = "BOXED"
    SHOWN_BY_PLAYER = "SHOWN-BY-PLAYER"
    # D. Misdeal gating, fouled deck, foreign cards
    MD_CUTOFF = "MD-CUTOFF"
    MD_REDEAL = "MD-REDEAL"
    FOUL_DUP = "FOUL-DUP"
    FOUL_FOREIGN = "FOUL-FOREIGN"
    DEFECT_KNOWER = "DEFECT-KNOWER"
    CARD_FROM_MUCK = "CARD-FROM-MUCK"
    JOKER = "JOKER"
    # E. Burn cards
    DE_1547_SEP = "DE-1547-SEP"
    DE_1547_RET = "DE-1547-RET"
    BURN_MISS = "BURN-MISS"
    BURN_EXTRA = "BURN-EXTRA"
    BURN_ASSIGN = "BURN-ASSIGN"
    # F. Board dealing
    FLOP_COUNT = "FLOP-COUNT"
    FLOP_PREM = "FLOP-PREM"
    TURN_PREM = "TURN-PREM"
    RIVER_PREM = "RIVER-PREM"
    BOARD_GROUP = "BOARD-GROUP"
    BOARD_AFTER_END = "BOARD-AFTER-END"
    STUB_DISORDER = "STUB-DISORDER"
    # G. Betting statements and call procedure
    DE_1548 = "DE-1548"
    DE_1549A = "DE-1549a"
    DE_1549B = "DE-1549b"
    TDA_SA = "TDA-SA"
    RR_PL = "RR-PL"
    RR_BR_5_6 = "RR-BR-5/6"
    RR_BR_3_4 = "RR-BR-3/4"
    # H. Showdown
    DE_1550A = "DE-1550a"
    DE_1550B1 = "DE-1550b1"
    DE_1550B2 = "DE-1550b2"
    DE_1550B3_6 = "DE-1550b3/6"
    DE_1550B5 = "DE-1550b5"
    DE_1551 = "DE-1551"
    RR_SD_7 = "RR-SD-7"
    ALLIN_FACEUP = "ALLIN-FACEUP"
    RR_SD_1 = "RR-SD-1"
    RR_SD_4 = "RR-SD-4"
    RR_SD_5 = "RR-SD-5"
    RR_HE_6 = "RR-HE-6"
    # I. Pot award and odd chips
    DE_1552 = "DE-1552"
    POT_SEP = "POT-SEP"
    DE_1553 = "DE-1553"
    RR_TIE_3_4 = "RR-TIE-3/4"
    TDA_ODD = "TDA-ODD"
    # J. Button and blinds
    DE_1537_5_7 = "DE-1537-5/7"
    RR_BB_ROT = "RR-BB-ROT"
    RR_BB_2 = "RR-BB-2"
    HU = "HU"
    ANTE_TABLE = "ANTE-TABLE"
    STRADDLE = "STRADDLE"
    MISSED_BLINDS = "MISSED-BLINDS"
    RUN_TWICE = "RUN-TWICE"
    # K. Shuffler malfunction, power, doors, logging
    GLI29_RNG = "GLI29-RNG"
    GLI29_PROG = "GLI29-PROG"
    GLI29_ERR_JAM = "GLI29-ERR-JAM"
    SHF_MID_HAND = "SHF-MID-HAND"
    SHF_DOOR = "SHF-DOOR"
    SHF_POWER = "SHF-POWER"
    CTRL_POWER = "CTRL-POWER"
    GLI_LOG = "GLI-LOG"
    SHF_INFO = "SHF-INFO"
    # L. House money (house rules of the profile)
    HOUSE_RAKE = "HOUSE-RAKE"
    HOUSE_DROP_JACKPOT = "HOUSE-DROP-JACKPOT"
    HOUSE_TIME = "HOUSE-TIME"
    # M. The floor
    FLOOR_CALL = "FLOOR-CALL"


def rule_test_fragment(rule: Rule) -> str:
    """How a rule ID appears in a test name (``RR-TIE-3/4`` → ``rr_tie_3_4``)."""
    return rule.value.replace("-", "_").replace("/", "_").replace("+", "").lower()
