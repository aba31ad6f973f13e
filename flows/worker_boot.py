"""What every worker process needs, loaded once in the server they fork from (`workers.PRELOAD`).

Each worker would otherwise import the readers and the sanitizer and load detect-secrets' rules
(about a tenth of a second) on its first unit, once per pool and worker.
"""

from memoir.cards.sanitize.providers import provider_plugins
from memoir.flows import ingest  # noqa: F401 - the readers, the segmenter, the drafting

provider_plugins()
