"""The Learn page: the concepts in plain words (``text``), each linked to the page that shows it."""
