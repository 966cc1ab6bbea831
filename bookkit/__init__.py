"""Book tooling, kept apart from the science: the claim checker, the papermill runner, reports and the
validation dashboard, the book build and the browser check of the rendered book.

Everything here works on a *project root* (the folder holding ``_toc.yml``, ``_config.yml``,
``notebooks/`` and ``book/``) that is passed in (see :func:`bookkit.project.find_root`), never
derived from where the package is installed.
"""
