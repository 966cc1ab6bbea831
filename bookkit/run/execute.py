"""Execute one notebook with papermill in a subprocess, and say why an execution did not complete.

The chapter's kernel gets the profile (``REPLIB_PROFILE`` and the ``profile`` parameter), this project's
``replib`` first on ``PYTHONPATH``, no progress bars, the inline figure backend and glibc malloc settings
(:data:`KERNEL_MALLOC_ENV`); a per-cell and a per-notebook wall-clock limit bound it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from replib.provenance import MODELS_LOG_ENV

__all__ = [
    "IOPUB_TIMEOUT",
    "KERNEL_MALLOC_ENV",
    "completed",
    "execute_notebook",
    "execution_failure",
    "papermill_command",
]

#: glibc malloc settings for the chapter kernels: freed memory stays in the process heap and is reused, instead of
#: every array above 32 MiB being a fresh ``mmap``, page-faulted and zeroed again (the cluster chapter's warm
#: computation: 208 s to 172 s, identical records, about 10 % more peak memory; book/benchmarks.md). Only glibc
#: reads them; elsewhere they are inert.
KERNEL_MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(2**31 - 1), "MALLOC_TRIM_THRESHOLD_": str(2**36)}
#: the longest error message kept from a notebook's error output
MAX_ERROR = 500


def execution_failure(nb) -> str | None:
    """Why an executed notebook did not complete: the exception that ended it (``"<Name>: <message>"``, from
    its error output: the chapter's own exception, also when it was raised in a worker process and re-raised
    by joblib), or papermill's exception flag; None when it completed."""
    pm = nb.metadata.get("papermill") or {}
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            if out.get("output_type") == "error":
                return f"{out.get('ename', 'Error')}: {out.get('evalue', '')}"[:MAX_ERROR]
    if pm.get("exception"):
        return "papermill recorded an exception"
    return None


def completed(notebook: Path) -> bool:
    """True when ``notebook`` exists, can be read and ran to the end."""
    try:
        return execution_failure(nbformat.read(str(notebook), as_version=4)) is None
    except Exception:  # unreadable in any way (missing, torn, not a notebook): not completed
        return False


#: seconds a cell's outputs may trail its reply before papermill fails the cell ("Timeout waiting for IOPub
#: output"); papermill's own 4 s fails cells on a heavily loaded machine
IOPUB_TIMEOUT = 120
#: the papermill run of :func:`papermill_command`: its Python API (the command line cannot set the IOPub
#: grace), with the command line's logging of cell outputs
_LAUNCH = (
    "import json, logging, sys\n"
    "logging.basicConfig(level=logging.INFO, format='%(message)s')\n"
    "import papermill\n"
    "papermill.execute_notebook(**json.loads(sys.argv[1]))"
)


def papermill_command(src: Path, dst: Path, cwd: Path, cell_timeout: int, params: dict) -> list[str]:
    """The command that executes ``src`` into ``dst`` with papermill (kernel ``python3``, cell outputs logged,
    ``params`` injected as they are: JSON keeps their types)."""
    args = dict(
        input_path=str(src),
        output_path=str(dst),
        parameters={k: list(v) if isinstance(v, tuple) else v for k, v in params.items()},
        cwd=str(cwd),
        kernel_name="python3",
        log_output=True,
        progress_bar=False,
        execution_timeout=cell_timeout,
        iopub_timeout=IOPUB_TIMEOUT,
    )
    return [sys.executable, "-c", _LAUNCH, json.dumps(args)]


#: the variables that set the threads of numpy's BLAS, torch and OpenMP in a kernel
THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def kernel_environment(
    profile: str, root: Path | None, models_log: Path | None, threads: int | None = None
) -> dict[str, str]:
    """The environment of a chapter's kernel (see the module docstring); ``threads``: the kernel's BLAS and
    OpenMP threads (:data:`THREAD_ENV`, a value the user set wins)."""
    env = dict(os.environ)
    if threads is not None:
        for k in THREAD_ENV:
            env.setdefault(k, str(threads))
    if root is not None:  # the chapter imports this project's replib
        env["PYTHONPATH"] = os.pathsep.join([str(root), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    # the inline backend: with Agg (or an inherited MPLBACKEND=Agg) figures never reach the notebook/book
    env["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    env["REPLIB_PROFILE"] = profile
    # no progress bars in the executed notebooks (the book shows their outputs): tqdm reads TQDM_DISABLE,
    # the Hub and transformers' bars ("Loading weights") HF_HUB_DISABLE_PROGRESS_BARS
    env.setdefault("TQDM_DISABLE", "1")
    env.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    for k, v in KERNEL_MALLOC_ENV.items():  # a value the user set wins
        env.setdefault(k, v)
    if models_log is not None:  # replib.models notes every model the chapter loads here
        Path(models_log).unlink(missing_ok=True)
        env[MODELS_LOG_ENV] = str(models_log)
    return env


def _failure(dst: Path, returncode: int, log_path: Path) -> str:
    """Why papermill failed: the exception that ended the notebook when the executed notebook has it (never
    the traceback's last source lines, which for an exception re-raised by joblib are joblib's own), else
    the end of papermill's log."""
    try:
        failure = execution_failure(nbformat.read(str(dst), as_version=4))
    except Exception:  # no notebook, or a torn one: fall back to the log
        failure = None
    if failure and failure != "papermill recorded an exception":
        return f"{failure} (log: {log_path})"
    tail = log_path.read_text(errors="replace").strip().splitlines()[-15:]
    return f"papermill exited {returncode}: " + " | ".join(tail)[-1500:]


def execute_notebook(
    src: Path,
    dst: Path,
    profile: str,
    timeout: int,
    cell_timeout: int | None = None,
    extra_parameters: dict | None = None,
    models_log: Path | None = None,
    root: Path | None = None,
    cwd: Path | None = None,
    threads: int | None = None,
    nice: int = 0,
) -> tuple[str, str | None, float]:
    """Run one notebook (``.ipynb``) with papermill in a subprocess, with ``root`` on ``PYTHONPATH`` and
    ``cwd`` (default: the notebook's folder) as working directory; with ``nice``, papermill and its kernel run
    that much lower in the scheduler's priority (POSIX ``nice``; where there is none, at the same priority).

    Returns
    -------
    (status, error, seconds)
        status is ``"ok"``, ``"error"`` or ``"timeout"``; error names the exception that ended the notebook.
    """
    dst.parent.mkdir(parents=True, exist_ok=True)
    cwd = Path(cwd or src.parent)
    cmd = ["nice", "-n", str(int(nice))] if nice and shutil.which("nice") else []
    params = {"profile": profile, **(extra_parameters or {})}
    cmd += papermill_command(src, dst, cwd, cell_timeout or timeout, params)
    env = kernel_environment(profile, root, models_log, threads)
    t0 = time.monotonic()
    log_path = dst.with_suffix(".log")
    with open(log_path, "w") as logf:
        try:
            proc = subprocess.run(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env, timeout=timeout, cwd=str(cwd))
        except subprocess.TimeoutExpired:
            return "timeout", f"exceeded the chapter limit of {timeout} s (log: {log_path})", time.monotonic() - t0
    seconds = time.monotonic() - t0
    if proc.returncode != 0:
        return "error", _failure(dst, proc.returncode, log_path), seconds
    return "ok", None, seconds
