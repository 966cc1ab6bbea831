"""Running the chapters: papermill executions, lanes, parts, reuse of unchanged executions, the run report, Colab."""
