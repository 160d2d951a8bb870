"""The app's pages, by role and section: ``app.py`` builds its navigation from these, and
``ui.warm`` warms the views the researcher pages declare."""

# (file, title, icon) per section. A page appears once its file exists.
RESEARCHER_PAGES: dict[str, list[tuple[str, str, str]]] = {
    "Data": [
        ("pages/home.py", "Home", ":material/home:"),
        ("pages/meeting.py", "Meeting browser", ":material/forum:"),
    ],
    "Analysis": [
        ("pages/leaderboard.py", "Leaderboard", ":material/leaderboard:"),
        ("pages/agreement.py", "Agreement", ":material/compare_arrows:"),
        ("pages/calibration.py", "Calibration", ":material/stacked_line_chart:"),
        ("pages/drilldown.py", "Model drilldown", ":material/search:"),
        ("pages/judge_audit.py", "Judge audit", ":material/fact_check:"),
        ("pages/battles.py", "Battles", ":material/swords:"),
    ],
    "Work": [
        ("pages/runs.py", "Runs", ":material/play_circle:"),
        ("pages/studies.py", "Studies", ":material/groups:"),
    ],
}


# Annotators (token link or Prolific) reach this page and nothing else.
ANNOTATOR_PAGES: dict[str, list[tuple[str, str, str]]] = {
    "Annotation": [("pages/annotate.py", "Annotate", ":material/edit_note:")],
}
# Before a researcher logs in (only when a password or OIDC is configured).
LOGIN_PAGES: dict[str, list[tuple[str, str, str]]] = {
    "Account": [("pages/login.py", "Log in", ":material/login:")],
}


def researcher_page_files() -> list[str]:
    """Every researcher page's file, relative to the repository root, in menu order."""
    return [file for entries in RESEARCHER_PAGES.values() for file, _, _ in entries]


def section_of(spec: dict[str, list[tuple[str, str, str]]], title: str) -> str | None:
    """The section of ``spec`` that holds the page titled ``title`` (None when it is alone in
    a section of its own, as the annotator's page is, or is not there)."""
    found = [section for section, entries in spec.items() if any(t == title for _, t, _ in entries)]
    return found[0] if found and sum(len(e) for e in spec.values()) > 1 else None
