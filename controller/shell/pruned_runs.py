"""Pruned runs: the records of consecutive pruned segments compacted into one.

A pruned segment's file is gone; what the journal must still keep of it is what proves and
names the range it held. A run of consecutive pruned segments, pruned for the same kind of
reason (the pit's confirmation, the archive's copy), needs no more than one segment does, so a
retention round folds the segments it pruned into the run before them
(:meth:`controller.shell.journal_segments.JournalSegments.compact_pruned`), and the live
database holds a record a run, not a record a segment: it stops growing with the years of
pruning behind it.

A run's record is a row of the ``segments`` table like any segment's, in state ``pruned``:

* ``name``: ``{first_pos:012d}-{last_pos:012d}.pruned`` (no file has that name);
* ``first_pos``, ``last_pos``: the positions of the run; ``prev_hash``: the chain hash before
  its first row (its link to the segment before it), ``last_hash``: the hash of its last row
  (what the segment after it must follow);
* ``rows``, ``bytes``: the rows and the bytes of its segments;
* ``sha256``: the record's own digest (:func:`digest`): ``journal verify`` reports a run's
  record that no longer matches it (edited, or damaged);
* ``created``: when its first segment was written; ``reason``: why its last segment could be
  pruned (the confirmation, or the archive copy, that allowed it);
* ``header``: ``format`` (``tablectl.pruned/1``), ``table_id``, ``segments`` (how many it
  stands for), ``epochs`` (each epoch's first and last event number in it), ``keys`` (each
  chained table's first and last key), ``accepted`` (the furthest position and input
  maintenance accepted in it), ``first_ts``/``last_ts``.

Two records are folded only when the second follows the first exactly (its first position the
next one, its ``prev_hash`` the first's ``last_hash``) and a run's own digest holds: a broken
link or an edited record is left as it is, for ``journal verify`` to report.

A segment's file copied back into the segment directory (from the archive) is taken back from a
run when the chain proves it: the files of the run's last segments, each one's rows chained
from its ``prev_hash`` to its ``last_hash`` and each ending where the next begins, the last
ending at the run's ``last_hash`` (:func:`proven_tail`); the run is cut before them
(:func:`cut`), or goes when they reach its start.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from controller.shell.segments import PRUNED, Segment, SegmentError, file_sha256, verified_header

RUN_FORMAT = "tablectl.pruned/1"
RUN_SUFFIX = ".pruned"
_NAME = re.compile(r"^(\d{12})-(\d{12})\.seg$")


def run_name(first_pos: int, last_pos: int) -> str:
    """The record name of the run of positions ``first_pos``..``last_pos``."""
    return f"{first_pos:012d}-{last_pos:012d}{RUN_SUFFIX}"


def is_run(segment: Segment) -> bool:
    """Whether a record is a run's (pruned segments compacted), not one segment's."""
    return segment.name.endswith(RUN_SUFFIX)


def span_of(name: str) -> tuple[int, int] | None:
    """The positions a segment file's name says it holds (None: not a segment file's name)."""
    match = _NAME.match(name)
    return None if match is None else (int(match[1]), int(match[2]))


def same_prune_kind(reason: str, segment: Segment) -> bool:
    """Whether two prunes were allowed for the same kind of reason (the pit's, the archive's)."""
    return reason.split(" ", 1)[0] == (segment.reason or "").split(" ", 1)[0]


def digest(segment: Segment) -> str:
    """A run record's own SHA-256: over every field but its name and creation time."""
    fields = [
        segment.first_pos,
        segment.last_pos,
        segment.prev_hash,
        segment.last_hash,
        segment.rows,
        segment.bytes,
        segment.reason,
        segment.header,
    ]
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def intact(run: Segment) -> bool:
    """Whether a run's record is as compaction wrote it."""
    return run.sha256 == digest(run)


def sealed(run: Segment) -> Segment:
    """A run's record with its name and its digest made from its fields."""
    run = replace(run, name=run_name(run.first_pos, run.last_pos))
    return replace(run, sha256=digest(run))


def _run_header(segment: Segment) -> dict[str, Any]:
    header = segment.header
    return {
        "format": RUN_FORMAT,
        "table_id": header.get("table_id"),
        "segments": segment.count,
        "epochs": dict(header.get("epochs", {})),
        "keys": dict(header.get("keys", {})),
        "accepted": dict(header.get("accepted", {})),
        "first_ts": header.get("first_ts"),
        "last_ts": header.get("last_ts"),
    }


def run_of(segment: Segment) -> Segment:
    """A pruned segment's record as a run of one."""
    return sealed(replace(segment, state=PRUNED, header=_run_header(segment)))


def follows(run: Segment, segment: Segment) -> bool:
    """Whether ``segment`` (pruned) may be folded into ``run``: it follows it exactly, and was
    pruned for the same kind of reason."""
    return (
        segment.first_pos == run.last_pos + 1
        and segment.prev_hash == run.last_hash
        and same_prune_kind(segment.reason or "", run)
    )


def _spans(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, list[int]]:
    joined = {name: [int(a), int(b)] for name, (a, b) in first.items()}
    for name, (a, b) in second.items():
        if name in joined:
            joined[name] = [min(joined[name][0], int(a)), max(joined[name][1], int(b))]
        else:
            joined[name] = [int(a), int(b)]
    return joined


def _ts(values: Sequence[Any], pick: Any) -> Any:
    kept = [v for v in values if isinstance(v, str)]
    return pick(kept) if kept else None


def fold(run: Segment, segment: Segment) -> Segment:
    """``run`` with the pruned ``segment`` that follows it (a run too, or one segment) in it;
    not :func:`sealed` yet (a compaction seals a run once it has folded all it can)."""
    head, tail = run.header, segment.header
    accepted = dict(head.get("accepted", {}))
    for name, value in tail.get("accepted", {}).items():
        accepted[name] = max(int(accepted.get(name, 0)), int(value))
    return replace(
        run,
        last_pos=segment.last_pos,
        last_hash=segment.last_hash,
        rows=run.rows + segment.rows,
        bytes=run.bytes + segment.bytes,
        reason=segment.reason,
        header={
            **head,
            "segments": run.count + segment.count,
            "epochs": _spans(head.get("epochs", {}), tail.get("epochs", {})),
            "keys": _spans(head.get("keys", {}), tail.get("keys", {})),
            "accepted": accepted,
            "first_ts": _ts([head.get("first_ts"), tail.get("first_ts")], min),
            "last_ts": _ts([head.get("last_ts"), tail.get("last_ts")], max),
        },
    )


# ---------------------------------------------------------------------- files copied back


class Restored:
    """A segment file copied back whose rows are proven: its header, size and SHA-256."""

    def __init__(self, path: Path, header: dict[str, Any]) -> None:
        self.path = path
        self.header = header
        self.bytes = path.stat().st_size
        self.sha256 = file_sha256(path)


def proven_tail(
    directory: Path, run: Segment, names: Mapping[int, str], limit: int | None = None
) -> list[Restored]:
    """The files of the run's last segments that are back (``names``: by their last position),
    oldest first, as far back as the chain proves them from the run's ``last_hash`` (at most
    ``limit`` of them: each is read whole); none when they reach the run's start but not its
    ``prev_hash``."""
    proven: list[Restored] = []
    pos, expected = run.last_pos, run.last_hash
    while pos >= run.first_pos and pos in names and (limit is None or len(proven) < limit):
        path = directory / names[pos]
        try:
            header = verified_header(path)
        except (SegmentError, OSError):
            break
        if (
            header.get("last_pos") != pos
            or header.get("last_hash") != expected
            or header.get("name") != path.name
            or not isinstance(header.get("first_pos"), int)
            or header["first_pos"] < run.first_pos
        ):
            break
        proven.append(Restored(path, header))
        pos, expected = int(header["first_pos"]) - 1, str(header["prev_hash"])
    if pos < run.first_pos and expected != run.prev_hash:
        return []
    return proven[::-1]


def _before(spans: Mapping[str, Any], back: Sequence[Mapping[str, Any]]) -> dict[str, list[int]]:
    """The spans of a run's part before the segments ``back``."""
    kept = {}
    for name, (first, last) in spans.items():
        starts = [int(b[name][0]) for b in back if name in b]
        end = min(starts) - 1 if starts else int(last)
        if int(first) <= end:
            kept[name] = [int(first), end]
    return kept


def cut(run: Segment, back: Sequence[Restored]) -> Segment | None:
    """What remains of ``run`` once its last segments ``back`` are local again (None: all of
    it was)."""
    first = back[0].header
    if int(first["first_pos"]) <= run.first_pos:
        return None
    header = run.header
    return sealed(
        replace(
            run,
            last_pos=int(first["first_pos"]) - 1,
            last_hash=str(first["prev_hash"]),
            rows=max(0, run.rows - sum(int(b.header["rows"]) for b in back)),
            bytes=max(0, run.bytes - sum(b.bytes for b in back)),
            header={
                **header,
                "segments": max(1, run.count - len(back)),
                "epochs": _before(header.get("epochs", {}), [b.header["epochs"] for b in back]),
                "keys": _before(header.get("keys", {}), [b.header["keys"] for b in back]),
                "last_ts": first.get("first_ts") or header.get("last_ts"),
            },
        )
    )
