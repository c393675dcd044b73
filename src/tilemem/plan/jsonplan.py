"""A plan from JSON text: the entry point for JSON plan files.

``plan_from_json_text`` parses the text (:func:`tilemem.plan.serialize.parse_json`: every
failure is a PlanFileError, deep nesting included), rebuilds the plan with
``MemoryPlan.from_dict`` (which refuses a plan tilemem could not have made, see
:mod:`tilemem.plan.check`) and prefixes every message with the source.
"""

from __future__ import annotations

from ..errors import PlanFileError
from .model import MemoryPlan
from .serialize import parse_json


def plan_from_json_text(text: str, source: str = "plan.json") -> MemoryPlan:
    """The plan that ``json.dumps(plan.to_dict())`` (or ``tilemem plan --json``) wrote.

    Its threads, padding advice, name and summary come back as saved, so the report and the
    SVG title are those of the plan that was saved. A document without ``name`` takes its
    ``example`` key (what ``tilemem plan --json`` wrote before plans had names).
    """
    data = parse_json(text, source)
    if isinstance(data, dict) and data.get("name") is None and "example" in data:
        data = {**data, "name": data["example"]}  # checked as the name is
    try:
        return MemoryPlan.from_dict(data)
    except PlanFileError as exc:
        raise PlanFileError(f"{source}: {exc}") from None
