"""A study is found by the name a person types, in any Unicode form of it (NFC lookups)."""

from __future__ import annotations

import pytest

from db.transaction import reading, writing
from elitr_core.annotation.admin import add_annotator, study_status
from elitr_core.annotation.auth import AccessDenied
from elitr_core.annotation.studies import StudySpec, create_study, enter_with_token
from elitr_core.data.database import open_database
from elitr_core.errors import UserError
from tests.elitr_core.annotation_data import build

MEETING = "meeting_en_test2_901"
STORED = "Caf\u00e9 study"  # NFC, as the typed gate stores it


@pytest.mark.parametrize("typed", ["Cafe\u0301 study", "  Caf\u00e9   study ", STORED])
def test_a_study_is_found_by_any_form_of_its_name(db_url: str, typed: str) -> None:
    build(db_url)
    engine = open_database(db_url)
    with writing(engine) as session:
        create_study(session, StudySpec(name="Cafe\u0301 study", per_item=2, meetings=(MEETING,)))
        token = add_annotator(session, "ann", "silver")
    with reading(engine) as session:
        assert study_status(session, typed) is not None  # the CLI's `study status NAME`
    assert enter_with_token(engine, token, study_name=typed).annotator_id is not None  # a link


def test_a_name_that_cannot_be_stored_finds_nothing(db_url: str) -> None:
    build(db_url)
    engine = open_database(db_url)
    with writing(engine) as session:
        create_study(session, StudySpec(name=STORED, per_item=2, meetings=(MEETING,)))
        token = add_annotator(session, "ann", "silver")
    with reading(engine) as session, pytest.raises(UserError, match="no study called"):
        study_status(session, "Caf\u00e9\u200b study")
    with pytest.raises(AccessDenied, match="does not exist"):
        enter_with_token(engine, token, study_name="Caf\u00e9\u200b study")


def test_a_link_made_for_a_study_opens_that_study_only(db_url: str) -> None:
    """Issue 39: a personal link made for study A also opened study B of the same pool. A
    link made for the pool (``annotator add --pool``) still opens the pool's studies."""
    from elitr_core.annotation.admin import add_study_annotator

    build(db_url)
    engine = open_database(db_url)
    with writing(engine) as session:
        for name in (STORED, "other study"):
            create_study(session, StudySpec(name=name, per_item=2, meetings=(MEETING,)))
        own, _ = add_study_annotator(session, "ann", "Cafe\u0301 study")
        pooled = add_annotator(session, "bob", "silver")
    with pytest.raises(AccessDenied, match="made for another study"):
        enter_with_token(engine, own, study_name="other study")
    assert enter_with_token(engine, own).study_name == STORED  # no study= : its own
    assert enter_with_token(engine, own, study_name="  Cafe\u0301 study").study_name == STORED
    assert enter_with_token(engine, pooled, study_name="other study").study_name == \
        "other study"
    with pytest.raises(AccessDenied, match="made for another study"):
        enter_with_token(engine, own, study_name="other study")  # nor after entering its own
