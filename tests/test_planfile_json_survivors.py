"""A JSON plan file's error names the file once: errors that already start with it (the JSON
reader's own, with the line) are raised as they are, the others get the file in front."""

from __future__ import annotations

import pytest

from tilemem.errors import PlanFileError
from tilemem.planfile import load_plan


def test_invalid_json_names_the_file_and_line_once(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"name": "x",\n  "pools": [1, }\n')  # line 2: a value is missing after 1,
    with pytest.raises(PlanFileError) as info:
        load_plan(path)
    assert str(info.value) == f"{path}:2: not valid JSON: Expecting value"


def test_a_plan_that_is_not_a_dict_names_the_file_once(tmp_path):
    path = tmp_path / "list.json"
    path.write_text("[1, 2]\n")
    with pytest.raises(PlanFileError) as info:
        load_plan(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert message.count(str(path)) == 1
