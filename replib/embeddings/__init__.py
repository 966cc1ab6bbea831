"""Texts or sequences in, per-token and pooled vectors out; resumable on-disk cache."""

from .._io import cache_key, hash_inputs, run_sharded
from .batching import model_identity
from .extract import (
    ProteinEmbeddings,
    SentenceEmbeddings,
    TokenStream,
    embed_proteins,
    embed_sentence_layers,
    embed_sentences,
    embed_token_stream,
    protein_text,
    residue_slice,
    token_stream_ids,
    token_windows,
    window_hidden_states,
)
