"""Shared fixtures. ``smoke_book``: the HTML book built from the smoke profile, built once per session.

The browser test and any other test of the rendered book use it. The smoke run is keyed by a content
hash of its inputs (chapters, claims files, the ``replib`` code) and the book by the hash of those plus
the book pages and ``_toc``/``_config``: when a key differs from the one stored beside the last build,
the fixture runs ``python -m replib run --profile smoke`` and/or ``python -m replib book --profile smoke``.
Set ``REPLIB_REBUILD_BOOK=1`` to force the rebuild, ``REPLIB_SKIP_SMOKE=1`` to skip these tests.

``rng``: a fresh ``numpy.random.Generator`` per test, seeded from the test's name, so a test's random data
do not depend on which other tests ran before it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from replib.distributed import thread_environment_kept

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class BuiltBook:
    html: Path  # folder holding index.html
    executed: Path  # executed notebooks of the smoke run
    report: Path  # the runner's report.json
    rebuilt: bool  # True when this session built it


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return subprocess.run(
        [sys.executable, "-m", "replib", "--root", str(ROOT), *cmd], cwd=ROOT, env=env, capture_output=True, text=True
    )


def content_key(paths) -> str:
    """sha256 over the relative paths and contents of ``paths`` (order-independent)."""
    h = hashlib.sha256()
    for p in sorted({Path(p) for p in paths if Path(p).is_file()}):
        h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def input_keys() -> tuple[str, str]:
    """(key of the smoke run's inputs, key of the book's inputs)."""
    run_inputs = [
        *(ROOT / "notebooks").glob("*.md"),
        *(ROOT / "notebooks").glob("*.claims.yml"),
        *(ROOT / "replib").rglob("*.py"),
        *(ROOT / "data").rglob("*.csv"),
    ]
    book_inputs = [*run_inputs, *(ROOT / "book").rglob("*"), ROOT / "_toc.yml", ROOT / "_config.yml"]
    return content_key(run_inputs), content_key(book_inputs)


def _stored(path: Path) -> str | None:
    return path.read_text().strip() if path.exists() else None


#: tests over about a second on the shared 2-core build machine (``pytest --durations``): marked ``slow`` here, so
#: that the quick loop (``scripts/quick.sh``) leaves them out without touching their modules; a test module's
#: owner may move a name to a ``@pytest.mark.slow`` decorator. A name that no longer exists is reported.
SLOW = {
    "tests/test_card.py": [
        "card_equals_the_chapters_functions",
        "card_resumes_at_the_next_layer",
        "minilm_folder_card_equals_registry_card",
        "text_card_layer_l_is_hidden_states_l",
    ],
    "tests/test_classifiers.py": [
        "pairs_and_parameter_counts",
        "supersense_setup_reads_word2vec_files_with_pos_tagged_tokens",
        "run_seeds_caches_and_summarizes",
        "sbert_cache_is_keyed_by_the_weights_and_reports_cached_vectors",
        "supersense_setup_on_glove_and_wordnet",
        "training_is_deterministic_under_a_seed",
        "training_raises_silhouette_and_lowers_isoscore_multilabel",
        "training_resumes_after_a_kill",
        "wordnet_pos_setup_labels_are_the_parts_of_speech_wordnet_lists",
    ],
    "tests/test_cluster_isotropy.py": [
        "pair_token_features_cache_is_reused_and_equal",
        "fresh_classifier_per_condition",
        "global_equals_numpy_all_but_the_top_and_one_cluster",
    ],
    "tests/test_data.py": [
        "wordnet_lemma_counts_match_the_published_statistics",
    ],
    "tests/test_embeddings.py": [
        "protein_pooling_equals_single_sequence_reference",
        "proteinbert_recipe",
        "resume_after_kill_gives_identical_output",
        "sbert_mean_pooling_matches_sentence_transformers",
        "xlnet_left_padding_batch_independent",
    ],
    "tests/test_pairs_dask.py": [
        "dask_backend_gives_the_serial_results_and_resumes",
    ],
    "tests/test_protein_isotropy.py": [
        "pair_engine_matches_direct_calls_and_jobs",
        "gap_convention_by_hand",
    ],
    "tests/test_faults_data.py": [
        "vouched_pickle_may_hold_arrays_only",
    ],
    "tests/test_manifolds.py": [
        "levina_bickel_matches_scikit_dimension",
        "choose_clusters_finds_separated_blobs_and_is_deterministic",
        "layers_in_worker_processes_give_the_serial_results",
        "choose_clusters_survives_a_silhouette_sample_with_one_cluster",
        "choose_clusters_threshold_gives_one_cluster_on_a_gaussian",
    ],
    "tests/test_models.py": [
        "glove",
        "tiny_models_deterministic",
    ],
    "tests/test_models_proteinbert.py": [
        "port_matches_keras_every_block",
        "wrong_weight_order_is_caught_by_shapes_or_values",
    ],
    "tests/test_models_resolve.py": [
        "changed_weights_change_the_identity",
        "classifier_setups_and_cluster_loader_take_a_folder",
        "minilm_folder_equals_registry_key",
        "transformers_layout_without_pooling_is_text",
    ],
    "tests/test_nightly.py": [
        "publish_finds_every_report_in_the_workflows_artifact_layout",
        "the_paper_models_from_the_part_list_and_the_last_stored_paper_run_on_a_night_without_one",
        "a_failed_offline_chapter_fails_the_book_instead_of_publishing_the_smoke_run",
        "push_files_and_tag_to_a_remote",
    ],
    "tests/test_reliability_caches.py": [
        "corrupted_checkpoint_restarts_training_with_a_warning",
        "embedding_cache_recomputes_a_copied_shard",
        "no_single_flipped_byte_serves_wrong_data_or_crashes",
    ],
    "tests/test_training.py": [
        "final_folder_loads_through_model_layer",
        "kill_and_resume_gives_bit_identical_weights",
        "two_processes_starting_together_train_one_run_once",
        "a_run_killed_mid_write_resumes_to_the_uninterrupted_result",
        "a_run_killed_after_an_evaluation_only_step_resumes_to_the_same_result",
        "the_recorded_unigram_baseline_scores_the_validation_tokens",
        "a_corrupted_checkpoint_or_resume_state_is_refused",
        "a_resume_on_another_thread_count_is_warned_about",
        "a_run_trained_in_step_ranges_equals_the_uninterrupted_run",
        "the_chapters_range_parts_train_one_run_in_turn",
        "a_run_trains_on_its_configured_threads_and_gives_the_process_its_own_back",
    ],
    "tests/test_atlas.py": [
        "random_full_size_architectures",
    ],
    "tests/test_models_reliability.py": [
        "auto_map_never_runs_the_folders_code_even_when_the_prompt_is_answered_yes",
        "repointed_folder_recomputes_instead_of_serving_old_embeddings",
        "same_named_folders_get_distinct_slugs_and_cards",
    ],
    "tests/test_reliability_downloads.py": [
        "two_runs_starting_together_download_a_file_once",
        "two_runs_verifying_files_together_lose_no_record",
        "a_server_that_drips_bytes_is_stopped_at_the_overall_deadline",
        "a_lock_held_too_long_is_a_clear_error_and_dies_with_its_process",
    ],
    "tests/test_isoscore_chapter.py": [
        "orientation_fraction_and_deflation",
        "invariances_streaming_and_the_authors_package",
    ],
    "tests/test_fullsize.py": [
        "saved_sentence_encoder_loads_as_a_folder",
        "seeded_and_deterministic",
        "proteinbert_at_its_full_sequence_length",
    ],
    "tests/test_rehearsal_layer_isotropy.py": [
        "layers_equal_a_pass_per_layer",
        "layers_are_cached_and_resumed",
    ],
    "tests/test_embeddings_batching.py": [
        "embed_proteins_sorts_by_length_over_the_whole_input",
    ],
    "tests/test_bench.py": [
        "padding_rows_on_swissprot_lengths",
    ],
    "tests/test_reuse.py": [
        "a_model_folder_is_fingerprinted_by_its_content_not_its_path",
    ],
}
#: module fixtures that take seconds to build: every test of the module that uses one is ``slow`` too (marking
#: only some would move the fixture's cost to the next test that uses it)
SLOW_FIXTURES = {
    "tests/test_atlas.py": ["atlas", "short_model"],
    "tests/test_data.py": ["wordnet"],
    "tests/test_models_proteinbert.py": ["port_out"],
}


def pytest_collection_modifyitems(config, items):
    """``chapter``: a test of the smoke book runs every chapter (the first time); ``slow``: the tests of
    :data:`SLOW` and the users of :data:`SLOW_FIXTURES`. Both are left out of the quick loop
    (``scripts/quick.sh``)."""
    seen = set()
    for item in items:
        if "smoke_book" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.chapter)
        path, _, name = item.nodeid.partition("::test_")
        name = name.split("[")[0]
        if name in SLOW.get(path, ()):
            item.add_marker(pytest.mark.slow)
            seen.add((path, name))
        if set(SLOW_FIXTURES.get(path, ())) & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    collected = {item.nodeid.split("::")[0] for item in items}
    for path, names in SLOW.items():
        gone = [n for n in names if path in collected and (path, n) not in seen]
        if gone:
            warnings.warn(f"conftest.SLOW names tests that {path} no longer has: {gone}", stacklevel=1)


@pytest.fixture(autouse=True)
def _thread_environment_restored():
    """A library that sets OMP_NUM_THREADS & co. in ``os.environ`` (a Dask nanny does, for its workers) must not
    leave every later test's subprocesses on one thread: the variables are put back after each test."""
    with thread_environment_kept():
        yield


@pytest.fixture(scope="session")
def smoke_book() -> BuiltBook:
    if os.environ.get("REPLIB_SKIP_SMOKE"):
        pytest.skip("REPLIB_SKIP_SMOKE is set")
    html, runs = ROOT / "build" / "book" / "_build" / "html", ROOT / "build" / "runs" / "smoke"
    run_key, book_key = input_keys()
    run_stamp, book_stamp = runs / ".inputs-sha256", ROOT / "build" / "book-inputs-sha256"
    run_needed = _stored(run_stamp) != run_key or not (runs / "report.json").exists()
    book_needed = run_needed or _stored(book_stamp) != book_key or not (html / "index.html").exists()
    if os.environ.get("REPLIB_REBUILD_BOOK"):
        run_needed = book_needed = True
    if run_needed:
        proc = _run(["run", "--profile", "smoke"])
        # a failing claim still leaves executed notebooks: the book is built and shows the failure
        if not (runs / "report.json").exists():
            pytest.fail("smoke run wrote no report:\n" + proc.stdout[-4000:] + proc.stderr[-4000:])
        # a chapter that stopped (missing data, say: no REPLIB_DATA_MIRROR) is run again next time
        if not json.loads((runs / "report.json").read_text())["summary"].get("chapter_failures"):
            run_stamp.write_text(run_key)
    if book_needed:
        proc = _run(["book", "--profile", "smoke"])
        if proc.returncode != 0:
            pytest.fail("book build failed:\n" + proc.stdout[-4000:] + proc.stderr[-4000:])
        book_stamp.write_text(book_key)
    return BuiltBook(html=html, executed=runs / "notebooks", report=runs / "report.json", rebuilt=book_needed)


@pytest.fixture
def rng(request) -> np.random.Generator:
    """A generator seeded from the test's node id: reproducible, and independent of test order/selection."""
    seed = int.from_bytes(hashlib.sha256(request.node.nodeid.encode()).digest()[:8], "little")
    return np.random.default_rng(seed)
