"""Texts or protein sequences in, per-token and pooled vectors out, with each model's exact recipe.

Three entry points:

- :func:`embed_proteins` (Hakim et al. 2025 via ProtTrans / ESM-2 / ProteinBERT recipes),
- :func:`embed_sentences` (Rajaee & Pilehvar 2021; SBERT mean pooling),
- :func:`embed_token_stream` (Cai et al. 2021, ``gen_embeds.py``).

All of them encode each item alone (so the result never depends on the batch), then batch by length
(sorted, padded by hand on the side the recipe needs, attention mask from the true lengths), run
under ``torch.inference_mode`` in float32 (autocast to bf16/fp16 only when asked: ``precision=``), and
return float32 numpy arrays (metrics downstream cast to float64). Work is cut into shards cached on disk when
``cache_dir`` is given (see :func:`replib._io.run_sharded`).

Layer indices for proteins and sentences index ``hidden_states`` (``0`` = embedding output,
``-1`` = last block). For the token stream they follow Cai's code: layer ``0`` = the output of the
first block (``hidden_states[1:]``).
"""

from .batching import model_identity
from .proteins import ProteinEmbeddings, embed_proteins, protein_text, residue_slice
from .text import (
    SentenceEmbeddings,
    TokenStream,
    embed_sentence_layers,
    embed_sentences,
    embed_token_stream,
    token_stream_ids,
    token_windows,
    window_hidden_states,
)
