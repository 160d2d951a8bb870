"""``export dataset`` (issue 39): a stable response key that joins scores to responses,
pseudonyms keyed by the annotator (not the name), the corpus's minutes left out unless
``--include-minutes`` (the card then names the corpus and its licence); on both databases."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pytest
from huggingface_hub import DatasetCard
from sqlmodel import select

from db.evaluators import upsert_evaluator
from db.keyed import upsert
from db.models import Annotator, Meeting, Question, Response
from db.scores import score_row, upsert_scores
from elitr_core.cli.main import main
from elitr_core.data.database import open_database, reading, writing
from elitr_core.export.dataset import dataset_tables
from tests import small_db

MINUTES = "MINUTES of the dev meeting: decisions and action items"


@pytest.fixture
def url(db_url: str) -> str:
    """The small benchmark, plus a gold annotator named as a silver one (``ann1``) who scored
    one response, and a summary question whose reference is the meeting's minutes."""
    small_db.build(db_url)
    with writing(open_database(db_url)) as session:
        gold = upsert_evaluator(session=session, slug="gold-human", kind="human")
        upsert(session=session, table=Annotator, keys=["evaluator_id", "name"],
               rows=[{"evaluator_id": gold, "name": "ann1"}])
        twin = session.exec(select(Annotator).where(Annotator.evaluator_id == gold)).one()
        response = session.exec(select(Response).order_by(Response.id)).first()
        assert response is not None and response.id is not None
        upsert_scores(session=session, rows=[score_row(
            response_id=response.id, evaluator_id=gold, annotator_id=twin.id, value=3.0)])
        meeting = session.exec(select(Meeting).where(
            Meeting.external_id == "meeting_en_dev_901")).one()
        upsert(session=session, table=Question, keys=["meeting_id", "number"], rows=[
            {"meeting_id": meeting.id, "number": 0, "question_type": "summary",
             "answer_position": "S", "qa_text": "Summarise", "reference": MINUTES,
             "language": "en"}])
    return db_url


def test_two_annotators_of_one_name_keep_two_pseudonyms(url: str) -> None:
    with reading(open_database(url)) as session:
        scores = dataset_tables(session)["scores"]
    named = scores.dropna(subset=["annotator"])
    pools = named.groupby("evaluator")["annotator"].unique()
    gold, silver = set(pools["gold-human"]), set(pools["silver-human"])
    assert len(gold) == 1 and len(silver) == 2 and not gold & silver
    assert len(named) == 1 + 2 * 72


def test_scores_join_responses_on_one_stable_key(url: str) -> None:
    with reading(open_database(url)) as session:
        tables = dataset_tables(session)
    scores, responses = tables["scores"], tables["responses"]
    assert scores.columns[0] == responses.columns[0] == "response_key"
    assert responses["response_key"].is_unique and responses["response_key"].notna().all()
    assert responses["seed"].isna().all()  # as in the release: a join on seed matches nothing
    joined = scores.merge(responses, on="response_key", suffixes=("", "_r"),
                          validate="many_to_one")
    assert len(joined) == len(scores) == 72 * 4 + 1
    for column in ("meeting", "question_id", "split", "setting", "mode", "model"):
        assert (joined[column] == joined[f"{column}_r"]).all(), column
    # the same keys on SQLite and PostgreSQL: made of the runs' keys, never a database id
    digest = hashlib.sha256(",".join(sorted(responses["response_key"])).encode()).hexdigest()
    assert digest[:16] == "692428eec8b1eb80"


def test_the_minutes_stay_out_unless_asked_and_the_card_names_their_licence(
        url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, kept = tmp_path / "out", tmp_path / "kept"
    assert main(["export", "dataset", str(out), "--db", url]) == 0
    assert "corpus minutes left out" in capsys.readouterr().out
    questions = pd.read_parquet(out / "questions.parquet")
    summary = questions[questions["question_type"] == "summary"]
    assert len(summary) == 1 and summary["reference"].isna().all()
    assert questions.loc[questions["question_type"] != "summary", "reference"].notna().all()
    for path in out.iterdir():
        assert b"MINUTES of the dev" not in path.read_bytes(), path.name
    card = DatasetCard.load(out / "README.md")
    assert card.data.license == "cc-by-4.0" and "--include-minutes" in card.text
    assert card.data.get("license_name") is None
    # a summary question is in: its task comes from the data
    assert card.data.task_categories == ["question-answering", "summarization",
                                         "text-generation"]

    assert main(["export", "dataset", str(kept), "--include-minutes", "--db", url]) == 0
    assert "corpus minutes included" in capsys.readouterr().out
    questions = pd.read_parquet(kept / "questions.parquet")
    assert questions.loc[questions["question_type"] == "summary", "reference"].tolist() == [
        MINUTES]
    card = DatasetCard.load(kept / "README.md")
    assert (card.data.license, card.data.license_name, card.data.license_link) == (
        "other", "cc-by-4.0 and elitr-minuting-corpus", "http://hdl.handle.net/11234/1-4692")
    assert "ELITR Minuting Corpus" in card.text and "not covered by CC BY 4.0" in card.text
    assert "LINDAT/CLARIAH-CZ, handle 11234/1-4692" in card.text
    assert main(["export", "scores", "--include-minutes", "--db", url]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: --include-minutes applies to export dataset DIR only")


@pytest.mark.parametrize(("rows", "bucket"), [
    (0, "n<1K"), (999, "n<1K"), (1000, "1K<n<10K"), (9999, "1K<n<10K"),
    (10**5, "100K<n<1M"), (10**12 - 1, "100B<n<1T"), (10**12, "n>1T")])
def test_the_size_category_is_the_hubs_bucket_of_the_largest_file(rows: int,
                                                                   bucket: str) -> None:
    import json
    from importlib import resources

    import pyarrow as pa

    from elitr_core.export.dataset_card import card_data, size_category

    assert size_category(rows) == bucket
    # the Hub's own list of buckets (shipped with datasets) holds every bucket we write
    known = json.loads(resources.files("datasets.utils.resources").joinpath(
        "size_categories.json").read_text())
    assert bucket in known
    tables = {"scores": pa.table({"x": list(range(1500))}), "questions": pa.table(
        {"question_type": ["who", "summary"]})}
    assert card_data(tables).size_categories == ["1K<n<10K"]
    assert card_data(tables).task_categories == ["question-answering", "summarization"]
