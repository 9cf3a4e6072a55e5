"""The one instance reader (remat_knapsack._common._io) that the CLI, the bench and torch.read_instances share."""

from __future__ import annotations

import json

import pytest

from remat_knapsack._common._io import FORMATS, InstanceFileError, parse_instances, read_instances

ONE = {"memory": [0.2, 0.3], "runtimes": [2.0, 3.0], "max_memory": 0.4}


def test_formats_are_told_apart():
    two = [ONE, {**ONE, "name": "b"}]
    assert parse_instances(json.dumps(ONE), "x") == ("object", [ONE])
    assert parse_instances(json.dumps(two), "x") == ("list", two)
    assert parse_instances("\n".join(json.dumps(d) for d in two) + "\n\n", "x") == ("jsonl", two)
    assert set(FORMATS) == {"object", "list", "jsonl"}


def test_extra_keys_are_kept():
    rec = {**ONE, "n": 2, "graph": "g"}  # what torch.record_instances writes
    assert parse_instances(json.dumps(rec), "x")[1] == [rec]


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "x: empty file"),
        ("[]", "x: the list holds no instances"),
        ("3", "x: expected a JSON object or a list of objects, got int"),
        ("{", "x: invalid JSON at line 1"),
        (json.dumps(ONE) + "\n{", "x: line 2: invalid JSON"),
        ('{"memory": [1], "max_memory": 1}', "x: instance 0: missing key 'runtimes'"),
        (json.dumps({**ONE, "memory": [0.2, "a"]}), "x: instance 0: memory[1] is a string"),
        (json.dumps({**ONE, "runtimes": [1.0]}), "x: instance 0: 'memory' has 2 entries but 'runtimes' has 1"),
        (json.dumps({**ONE, "max_memory": True}), "x: instance 0: 'max_memory' must be a number, got a boolean"),
        (json.dumps([ONE, 1]), "x: instance 1: expected an object, got int"),
    ],
)
def test_errors_name_the_place(text, message):
    with pytest.raises(InstanceFileError, match="^" + message.replace("[", r"\[").replace("(", r"\(")) as e:
        parse_instances(text, "x")
    assert "\n" not in str(e.value)
    assert isinstance(e.value, ValueError)


def test_read_instances_files_and_stdin(tmp_path, monkeypatch):
    import io

    p = tmp_path / "a.json"
    p.write_text(json.dumps(ONE))
    assert read_instances(str(p)) == ("object", [ONE])
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps([ONE])))
    assert read_instances("-") == ("list", [ONE])
    with pytest.raises(InstanceFileError, match="cannot read .*missing.json"):
        read_instances(str(tmp_path / "missing.json"))
