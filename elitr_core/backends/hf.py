"""The ``hf`` backend as the command line and the dashboard see it: its options, its check
before a job starts, and building it.

The engine (transformers and torch in this process, each transcript's KV cache held once) is
:class:`~elitr_core.backends.hf_engine.HFEngine`, a subclass imported only when a backend is
built: reading these declarations (``--help``, the Runs page) loads no torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from elitr_core.backends.base import Backend, BackendOption, construct, load
from elitr_core.errors import UserError

#: What to do with a prompt longer than the context
#: (:func:`~elitr_core.backends.hf_cache.truncate_tokens`); none given: refuse it.
TRUNCATION_POLICIES = ("middle", "left")
#: The class that generates, imported when a backend is built.
ENGINE = "elitr_core.backends.hf_engine:HFEngine"


class HFBackend(Backend):
    """A causal LM loaded with transformers in this process (the engine:
    :class:`~elitr_core.backends.hf_engine.HFEngine`, whose constructor takes these options)."""

    name = "hf"
    summary = "transformers in this process"
    token_unit = "tokens (the model's tokenizer)"
    loads_model = True
    options = (
        BackendOption("model_path", metavar="DIR", label="Model path", shapes_answers=True,
                      help="local model directory (default: --model as a hub name)"),
        BackendOption("revision", help="hub revision to pin", shapes_answers=True),
        BackendOption("device", help="cuda, cuda:1 or cpu (default: CUDA when available)"),
        BackendOption("dtype", shapes_answers=True,
                      help="bfloat16, float16 or float32 (default bf16 on CUDA)"),
        BackendOption("batch_size", int, metavar="N",
                      help="questions decoded together, across meetings (default: as many as "
                      "free memory holds)"),
        BackendOption("use_chat_template", bool, True, flag="--no-chat-template",
                      help="raw prompt instead of the tokenizer's chat template",
                      shapes_prompt=True),
        BackendOption("truncation", choices=TRUNCATION_POLICIES, shapes_prompt=True,
                      help="cut a transcript longer than the context (recorded with the run; "
                      "default: refuse)"),
        BackendOption("max_context", int, metavar="N", shapes_prompt=True,
                      help="context length (default: the model's)"),
    )

    @classmethod
    def from_options(cls, **options: Any) -> Backend:
        """Build the engine from the command line's options: ``model_path`` (a local
        directory) or ``model`` (a hub name) is the model; the other options as given."""
        model_path, model = options.pop("model_path", None), options.pop("model", None)
        if not (model_path or model):
            raise UserError(f"the {cls.name} backend needs a local model directory "
                            "(--model-path DIR)")
        if model_path and not Path(str(model_path)).expanduser().is_dir():
            raise UserError(f"--model-path {model_path}: no such directory (give the folder "
                            "holding config.json and the tokenizer)")
        return construct(load(ENGINE), {**options, "model_path_or_name": str(model_path or model)})

    def option_value(self, option: BackendOption) -> Any:
        """The model folder resolved, and the dtype and context as the engine chose them (a
        default dtype depends on the device, a default context on the model)."""
        if option.name == "dtype" and hasattr(self, "dtype"):
            return str(self.dtype).removeprefix("torch.")
        if option.name == "max_context" and hasattr(self, "max_context"):
            return self.max_context
        value = super().option_value(option)
        if option.name == "model_path" and value is not None:
            return str(Path(str(value)).expanduser().resolve())
        return value

    @classmethod
    def preflight(cls, options: Mapping[str, Any]) -> None:
        """A model path is given (the form has no other way to name the model)."""
        if not options.get("model_path"):
            raise UserError(f"the {cls.name} backend needs a model path: fill in "
                            f"{cls.field('model_path')} (a local folder or a Hugging Face "
                            "model id)")
