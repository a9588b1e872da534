"""The SQLite backend: one file, group commit, durable acknowledgements."""
