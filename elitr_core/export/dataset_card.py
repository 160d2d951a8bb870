"""The dataset card of ``export dataset``: a README.md whose YAML header the Hugging Face Hub
reads (licence, task and size categories, ``configs`` naming each Parquet file,
``dataset_info`` with its features), built with huggingface_hub's card classes
(:class:`~huggingface_hub.DatasetCardData`, :class:`~huggingface_hub.DatasetCard`), and the
text a reader needs: what each file holds, what was pseudonymised, the licence and whom to
credit.

The task and size categories are computed from the tables: ``question-answering`` when the
questions hold a non-summary question, ``summarization`` when they hold a summary question
(its reference is a meeting's minutes), ``text-generation`` when there are responses (models'
answers); the size is the Hub's bucket (``n<1K``, ``1K<n<10K``, ...) of the largest file's rows.
"""

from __future__ import annotations

from typing import Any

#: Arrow type -> the Hub's ``dtype`` name.
_DTYPES = {"int64": "int64", "double": "float64", "string": "string", "bool": "bool",
           "null": "null", "timestamp[us, tz=UTC]": "timestamp[us, tz=UTC]"}
#: The Hub's size buckets (datasets' ``size_categories.json``), by their upper bound.
SIZE_CATEGORIES: tuple[tuple[int, str], ...] = (
    (10**3, "n<1K"), (10**4, "1K<n<10K"), (10**5, "10K<n<100K"), (10**6, "100K<n<1M"),
    (10**7, "1M<n<10M"), (10**8, "10M<n<100M"), (10**9, "100M<n<1B"), (10**10, "1B<n<10B"),
    (10**11, "10B<n<100B"), (10**12, "100B<n<1T"))
PRETTY_NAME = "ELITR-Bench human and judge scores"
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


def size_category(rows: int) -> str:
    """The Hub's size bucket of a dataset of ``rows`` examples (``n<1K`` below 1,000, ...)."""
    return next((name for bound, name in SIZE_CATEGORIES if rows < bound), "n>1T")


def task_categories(tables: dict[str, Any]) -> list[str]:
    """The Hub's task categories the tables serve (module docstring): from the questions'
    types and whether there are responses."""
    from elitr_core.data.summaries import SUMMARY_TYPE

    types: set[str] = set()
    if "questions" in tables:
        types = {t for t in tables["questions"].column("question_type").to_pylist() if t}
    tasks = (["question-answering"] if types - {SUMMARY_TYPE} else []) + (
        ["summarization"] if SUMMARY_TYPE in types else [])
    if "responses" in tables and tables["responses"].num_rows:
        tasks.append("text-generation")
    return tasks


def card_data(tables: dict[str, Any], *, minutes: bool = False) -> Any:
    """The card's :class:`~huggingface_hub.DatasetCardData`: licence (``other`` with the
    corpus's named beside CC BY 4.0 when the minutes are in), task and size categories,
    configs (the first is the default), features."""
    from huggingface_hub import DatasetCardData

    licence: dict[str, Any] = {"license": LICENSE} if not minutes else {
        "license": "other", "license_name": f"{LICENSE} and {CORPUS_LICENSE_NAME}",
        "license_link": CORPUS_LICENSE_LINK}
    configs = [{"config_name": name, **({"default": True} if index == 0 else {}),
                "data_files": [{"split": "train", "path": f"{name}.parquet"}]}
               for index, name in enumerate(tables)]
    features = [{"config_name": name,
                 "features": [{"name": field.name,
                               "dtype": _DTYPES.get(str(field.type), "string")}
                              for field in table.schema]}
                for name, table in tables.items()]
    largest = max((table.num_rows for table in tables.values()), default=0)
    return DatasetCardData(
        **licence, pretty_name=PRETTY_NAME, language=["en", "cs"],
        task_categories=task_categories(tables), size_categories=[size_category(largest)],
        tags=["llm-as-a-judge", "human-evaluation", "meeting-assistant", "long-context"],
        configs=configs, dataset_info=features)


def card_text(schemas: dict[str, Any], described: dict[str, str], *,
              minutes: bool = False) -> str:
    """The whole README.md (``schemas``: file name -> its pyarrow table; ``minutes``: the
    questions' file holds the corpus's minutes, under that corpus's own licence)."""
    from huggingface_hub import DatasetCard

    files = [f"- `{name}.parquet` ({schemas[name].num_rows:,} rows): {described[name]}; "
             "columns: " + ", ".join(f"`{f.name}`" for f in schemas[name].schema)
             for name in schemas]
    body = [
        "", f"# {PRETTY_NAME}", "",
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
    header = card_data(schemas, minutes=minutes).to_yaml()
    return str(DatasetCard("\n".join(["---", header, "---", *body])))


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
