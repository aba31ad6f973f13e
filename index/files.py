"""The names of the files the index floor keeps, in one place that imports nothing.

The recall hook's lexical path reads these without importing numpy, apsw or sqlite-vec.
"""

INDEX_FILE = "index.db"  # in Settings.index_dir: card rows, vectors and FTS5
TURNS_FILE = "turns.sqlite"  # in Settings.state_dir: the sanitized turn index search reads
RECALL_LOG_FILE = "recall.jsonl"  # in Settings.state_dir: one debug record per recall
RECALL_SESSIONS_DIR = "recall-sessions"  # in Settings.state_dir: card ids already injected per session
