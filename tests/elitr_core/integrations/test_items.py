"""The benchmark as a harness asks it: the same conversations ``generate`` asks, ids that name
meeting and question(s)."""

from __future__ import annotations

import pytest

from db.engine import get_engine
from db.transaction import reading
from elitr_core.errors import UserError
from elitr_core.integrations.items import benchmark_items, item_id, parse_item_id
from elitr_core.prompts.assembly import multi_turn_plan, single_turn_messages
from tests.elitr_core.run_helpers import MEETINGS, questions, set_transcripts, transcript_of


@pytest.mark.parametrize("value, expected", [
    ("meeting_en_test2_001/q3", ("meeting_en_test2_001", 3)),
    ("meeting_en_dev_002/mt", ("meeting_en_dev_002", None)),
    ("meeting_en_test2_001/q", None), ("meeting_en_test2_001", None), ("a/b/q1", None),
    ("/q1", None), (17, None), ("meeting/q1/", None), ("meeting/q-1", None),
])
def test_item_ids_round_trip(value: object, expected: tuple[str, int | None] | None) -> None:
    assert parse_item_id(value) == expected
    if expected is not None:
        assert item_id(*expected) == value


def test_items_are_the_conversations_generate_asks(bundled_sqlite: str) -> None:
    set_transcripts(bundled_sqlite)
    asked = [q for q in questions(bundled_sqlite, setting="conv") if q[1] == MEETINGS[0]]
    with reading(get_engine(bundled_sqlite)) as session:
        mt = benchmark_items(session, split="test2", setting="conv", mode="mt",
                             meetings=MEETINGS[:1], length_instruction=True, system_prompt=True)
        st = benchmark_items(session, split="test2", setting="qa", mode="st",
                             meetings=MEETINGS, qa_markers=True)
        with pytest.raises(UserError, match="use --mode mt with --setting conv"):
            benchmark_items(session, split="test2", setting="conv", mode="st")
        with pytest.raises(UserError, match="have no transcript"):
            benchmark_items(session, split="dev", setting="qa", mode="st")
    (item,) = mt
    assert item.id == f"{MEETINGS[0]}/mt" and item.questions == tuple(q[2] for q in asked)
    lengths = [len(reference.split()) for reference in item.references]
    history, turns = multi_turn_plan(transcript_of(MEETINGS[0]), [q[3] for q in asked],
                                     system_prompt=True, length_words=lengths)
    assert (item.history, item.turns) == (history, turns)
    assert "Answer this question with" in item.turns[0]  # the LIE option
    assert len(st) == 28 and st[0].id == f"{MEETINGS[0]}/q1"
    first = [q for q in questions(bundled_sqlite) if q[1] == MEETINGS[0]][0]
    messages = single_turn_messages(transcript_of(MEETINGS[0]), first[3], qa_markers=True)
    assert [*st[0].history, {"role": "user", "content": st[0].turns[0]}] == messages


def test_benchmark_jsonl_is_single_turn(bundled_sqlite: str, tmp_path: object,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from elitr_core.cli.main import main

    set_transcripts(bundled_sqlite)
    base = ["export", "benchmark", "--split", "test2", "--meetings", MEETINGS[1],
            "--db", bundled_sqlite]
    assert main([*base, "--format", "jsonl", "--length-instruction"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["id"] for line in lines] == [f"{MEETINGS[1]}/q{n}" for n in range(1, 17)]
    assert lines[0]["prompt"].startswith("The following is the transcript")
    assert "Answer this question with" in lines[0]["prompt"]
    assert {line["mode"] for line in lines} == {"st"} and lines[0]["reference"]
    assert main([*base, "--format", "jsonl", "--mode", "mt"]) == 2
    assert "use --mode st" in capsys.readouterr().err
    assert main([*base, "--format", "csv"]) == 2
    assert "writes --format jsonl" in capsys.readouterr().err
