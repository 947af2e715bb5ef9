"""The warm path: a long-lived server per root (serve.py), the tiny client the CLI tries first
(client.py), the tree watcher (watch.py) and what keeps indexes open and fresh (warm.py)."""
