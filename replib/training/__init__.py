"""Training small language models from scratch, checkpoint by checkpoint (chapter ``training_dynamics``).

- :mod:`.config`: sizes per profile (``smoke``, ``offline``, ``paper``);
- :mod:`.data`: Swiss-Prot masked-LM batches (ESM recipe: 15 % of residues, 80/10/10) and WikiText-2
  causal-LM windows with a byte-level BPE trained on the training text; every batch is a pure function
  of ``(seed, step)``, so a resumed run sees the same batches;
- :mod:`.loop`: the resumable training loop (log-spaced checkpoints in safetensors, optimizer and RNG
  state as plain tensors/JSON, final weights in Hugging Face layout with their sha256), one process per
  run folder;
- :mod:`.checkpoints`: checkpoints and resume states with their sha256 beside them, verified on load
  (:class:`CheckpointError`), and the log rewritten atomically;
- :mod:`.measure`: isotropy of every checkpoint and layer.
"""

from .checkpoints import CheckpointError, verify_checkpoint
from .config import config_for, log_spaced_steps
from .data import ESM_RECIPE, mask_tokens, protein_batch, protein_split, text_batch, text_split, train_bpe_tokenizer
from .loop import TrainingInterrupted, TrainRun, load_checkpoint_model, run_dir, train_lm, trained_model
from .measure import (
    embedding_frequency_stats,
    eval_inputs,
    frequency_projection,
    hidden_states,
    measure_layer,
    measure_run,
    summarize_run,
)

__all__ = [
    "CheckpointError",
    "verify_checkpoint",
    "config_for",
    "log_spaced_steps",
    "ESM_RECIPE",
    "mask_tokens",
    "protein_batch",
    "protein_split",
    "text_batch",
    "text_split",
    "train_bpe_tokenizer",
    "TrainingInterrupted",
    "TrainRun",
    "load_checkpoint_model",
    "run_dir",
    "train_lm",
    "trained_model",
    "embedding_frequency_stats",
    "eval_inputs",
    "frequency_projection",
    "hidden_states",
    "measure_layer",
    "measure_run",
    "summarize_run",
]
