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
- :mod:`.parallel`: the runs not yet cached trained side by side, one worker process each;
- :mod:`.cache`: the content key of a run folder (configuration, data identity, code version);
- :mod:`.quality`: how far a run trained (the unigram baseline of the validation loss, the flattening
  criterion);
- :mod:`.measure`: isotropy of every checkpoint and layer.
"""

from .cache import code_version
from .checkpoints import CheckpointError
from .config import config_for, eval_steps, log_spaced_steps
from .data import mask_tokens
from .loop import TrainingInterrupted, TrainRun, load_checkpoint_model, run_dir, train_lm, trained_model
from .measure import (
    end_layers,
    eval_inputs,
    frequency_projection,
    hidden_states,
    measure_layer,
    measure_run,
    summarize_run,
    training_quality,
)
from .parallel import parallel_workers, run_cost, train_seeds, trained_models
from .quality import (
    FLATTENING,
    flattening,
    generalisation_gap,
    over_minimum,
    relative_drop,
    residue_counts,
    unigram_cross_entropy,
)
