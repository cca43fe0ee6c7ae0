"""Root conftest: pytest puts this directory on sys.path, so `import core` works from a checkout."""
