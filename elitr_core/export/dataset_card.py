"""The dataset card of ``export dataset``: a README.md with the YAML header the Hugging Face
Hub reads (``license``, ``configs`` naming each Parquet file, ``dataset_info`` with its
features) and the text a reader needs: what each file holds, what was pseudonymised, the
licence and whom to credit.

The header is written by hand rather than with PyYAML: every value is a fixed word or a string
written as a JSON string literal, which YAML reads as the same string, so no YAML library is
needed at run time.
"""

from __future__ import annotations

import json
from typing import Any

#: Arrow type -> the Hub's ``dtype`` name.
_DTYPES = {"int64": "int64", "double": "float64", "string": "string", "bool": "bool",
           "null": "null", "timestamp[us, tz=UTC]": "timestamp[us, tz=UTC]"}
LICENSE = "cc-by-4.0"
#: The corpus the minutes (reference answers of summary questions) come from, and where its
#: own licence is stated: the benchmark's CC BY 4.0 does not cover them.
CORPUS = ("the ELITR Minuting Corpus (Nedoluzhko et al., 2022, LINDAT/CLARIAH-CZ, handle "
          "11234/1-4692)")
CORPUS_LICENSE_LINK = "http://hdl.handle.net/11234/1-4692"
CORPUS_LICENSE_NAME = "elitr-minuting-corpus"
CREDIT = (
    "The questions, reference answers and the ELITR-Bench release's responses and scores are "
    "from ELITR-Bench (Thonet, Rozen and Besacier, 2024, arXiv:2403.20262, "
    "https://github.com/utter-project/ELITR-Bench), licensed CC BY 4.0; the meetings are from "
    "the ELITR Minuting Corpus (Nedoluzhko et al., 2022, LINDAT 11234/1-4692).")
CITATION = """@article{thonet2024elitrbench,
  title   = {{ELITR-Bench}: A Meeting Assistant Benchmark for Long-Context Language Models},
  author  = {Thonet, Thibaut and Rozen, Jos and Besacier, Laurent},
  journal = {arXiv preprint arXiv:2403.20262},
  year    = {2024}
}"""


def header(schemas: dict[str, Any], *, minutes: bool = False) -> list[str]:
    """The YAML header's lines: licence (``other`` with the corpus's named beside CC BY 4.0
    when the minutes are in), configs (the first is the default), features."""
    licence = [f"license: {LICENSE}"] if not minutes else [
        "license: other", f"license_name: {json.dumps(f'{LICENSE} and {CORPUS_LICENSE_NAME}')}",
        f"license_link: {json.dumps(CORPUS_LICENSE_LINK)}"]
    lines = ["---", *licence,
             f"pretty_name: {json.dumps('ELITR-Bench human and judge scores')}",
             "language:", "- en", "- cs", "tags:", "- llm-as-a-judge", "- human-evaluation",
             "- meeting-assistant", "- long-context", "configs:"]
    for index, name in enumerate(schemas):
        lines += [f"- config_name: {name}"] + (["  default: true"] if index == 0 else [])
        lines += ["  data_files:", "  - split: train", f"    path: {name}.parquet"]
    lines.append("dataset_info:")
    for name, schema in schemas.items():
        lines += [f"- config_name: {name}", "  features:"]
        for field in schema.schema:
            lines += [f"  - name: {json.dumps(field.name)}",
                      f"    dtype: {_DTYPES.get(str(field.type), 'string')}"]
    return [*lines, "---"]


def card_text(schemas: dict[str, Any], described: dict[str, str], *,
              minutes: bool = False) -> str:
    """The whole README.md (``schemas``: file name -> its pyarrow table; ``minutes``: the
    questions' file holds the corpus's minutes, under that corpus's own licence)."""
    files = [f"- `{name}.parquet` ({schemas[name].num_rows:,} rows): {described[name]}; "
             "columns: " + ", ".join(f"`{f.name}`" for f in schemas[name].schema)
             for name in schemas]
    body = [
        "", "# ELITR-Bench human and judge scores", "",
        "Scores given to answers of language models to ELITR-Bench questions about meeting "
        "transcripts, by human annotators and by LLM judges, exported by the ELITR-Bench "
        "dashboard (`python -m elitr_core export dataset`). Scores are on the 1-10 scale of "
        "the benchmark's rubric.", "",
        "## Files", "", *files, "",
        "Load one with `datasets.load_dataset(\"PATH\", \"scores\")` (or `responses`, "
        "`questions`, `studies`), or with `pandas.read_parquet(\"PATH/scores.parquet\")`. "
        "Missing values are nulls: `seed` of a run that recorded none, `annotator` of a "
        "judge's or an aggregate score.", "",
        "## Annotators are pseudonymised", "",
        "Each annotator appears as `annotator-N`, numbered in the order the annotators were "
        "added. Names, Prolific participant, study and session ids, login tokens and "
        "completion codes are not in the dataset: they stay in the database it was exported "
        "from.", "",
        "## Licence and credit", "",
        f"CC BY 4.0 (`{LICENSE}`). {CREDIT} Cite the benchmark when you use these scores:", "",
        "```bibtex", CITATION, "```", "", "## Minutes", "", *_minutes(minutes), "",
    ]
    return "\n".join([*header(schemas, minutes=minutes), *body])


def _minutes(included: bool) -> list[str]:
    """What the card says of the reference answers of summary questions (the minutes)."""
    if not included:
        return ["The reference answers of summary questions (`question_type` `summary`) are "
                f"meeting minutes from {CORPUS}, which is not redistributed here: their "
                "`reference` is null. The exporter's `--include-minutes` puts them in, under "
                "the corpus's own licence."]
    return [f"The `reference` of summary questions (`question_type` `summary`) holds meeting "
            f"minutes from {CORPUS}. They are not covered by CC BY 4.0: they are under the "
            f"licence of that corpus, stated at {CORPUS_LICENSE_LINK} (the card's "
            f"`license_name` `{CORPUS_LICENSE_NAME}`). Check that it allows what you do with "
            "this dataset before you publish it; every other file and column is CC BY 4.0."]



