"""ELITR-Bench in other evaluation harnesses (inspect_ai, lm-evaluation-harness) and in Label
Studio (``label_studio``: blind tasks and the rubric's config out, ``label_studio_import``: a
project's JSON export back as an evaluator).

``items`` turns the stored benchmark into the conversations a harness asks (the benchmark's own
prompts); ``inspect_task.py`` is the inspect_ai task; ``lm_eval/`` holds the
lm-evaluation-harness task config; ``inspect_logs`` and ``lm_eval_samples`` read what those
harnesses write back into :class:`~elitr_core.integrations.harness.HarnessRun`\\ s, which
``elitr_core.integrations.store`` stores. Both packages are optional: they are imported only
when their task runs or their output is imported (:func:`harness.require`).
"""
