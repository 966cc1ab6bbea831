"""The book: the pages staged from the run report, figures, history, the atlas, the build and the browser check."""
