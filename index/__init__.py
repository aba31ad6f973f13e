"""The derived index (DESIGN.md stage 9–11): rebuildable at any time from card files alone.

embed.py    the embedding model (lazy, offline)          plan.py     pure decisions: change plans, retrieval text, FTS quoting
db.py       the SQLite file: schema, upserts, KNN, FTS   sync.py     index what changed on disk; index-or-queue after a write
pending.py  ids whose index update failed                check.py    healthy / stale / corrupt
rebuild.py  full rebuild + atomic swap; ensure_index     errors.py   typed failures, turned into messages by the CLI
recall.py   the synchronous path: ≤ 2 cards or nothing   recall_gates.py  the eleven recall gates, each rejecting on its own
rewrite.py  query → retrieval statement                  containers.py  immediate / brief / review / export / backlog
search.py   deep search (no gates but status)
"""
