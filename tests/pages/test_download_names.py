"""A table's CSV and a figure's PNG name the same filters (issue 28 item 7: file names named
the split for PNGs but not for CSVs)."""

from __future__ import annotations

import pytest

from tests.pages.analysis_support import (
    RecordingManager,
    RecordingStorage,
    open_page,
    set_filters,
)


def file_name(at, key: str) -> str:  # type: ignore[no-untyped-def]
    """The file name the download button with this key saves as."""
    button = at.download_button(key=key)
    url = button.proto.url
    if button.proto.deferred_file_id:
        url = RecordingManager.instances[-1].execute_deferred(button.proto.deferred_file_id)
    file_id = url.rsplit("/", 1)[1].split(".")[0]
    return str(RecordingStorage.instances[-1].get_file(file_id).filename)


@pytest.mark.browser  # the page renders the PNG in kaleido's Chromium (tests/tiers.py)
def test_csv_and_figure_names_carry_the_sidebar_filters(
        bundled_sqlite: str, monkeypatch: pytest.MonkeyPatch) -> None:
    at = set_filters(open_page(bundled_sqlite, monkeypatch, "calibration"),
                     split="test2", setting="qa", mode="st")
    csv_name = file_name(at, "download.calibration.shown.csv")
    assert csv_name == "calibration-test2-qa-st.csv"
    import kaleido

    try:  # rendering it starts the pages' warm Chromium: stopped after
        png_name = file_name(at, "download.calibration-gold-human.png")
    finally:
        kaleido.stop_sync_server(silence_warnings=True)
    assert png_name == "calibration-gold-human-test2-qa-st.png"
