"""detect-secrets' rules for the providers memoir has no row for, on the few lines that could hold one.

The providers: Artifactory, Azure storage, Cloudant, IBM and Softlayer. The rules run only on
lines that hold one of their hint words and a long token.

Their regexes are slow to run on every line, so each rule's patterns are pinned by a fingerprint
and the literals every match must hold (`PLUGIN_LITERALS`): a line without them skips the rule.
A detect-secrets upgrade that changes a rule's patterns leaves it unpinned, and it then runs on
every hinted line.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from functools import lru_cache

from memoir.cards.sanitize.patterns import TOKEN_RUN_NEEDLE, lines_with

DETECT_SECRETS_PLUGINS = ("ArtifactoryDetector", "AzureStorageKeyDetector", "CloudantDetector",
                          "IbmCloudIamDetector", "IbmCosHmacDetector", "SoftlayerDetector")
PROVIDER_KEY = re.compile(r"^[A-Za-z_][\w.-]*[\"']?\s*[:=]\s*[\"']?")
DETECT_SECRETS_HINTS = ("AKC", "AccountKey=", "loudant", "ibm", "IBM", "oftlayer", "SOFTLAYER")
# Artifactory's password opens with `AP` and a digit or a capital A-F (any space before it). A bare
# `AP` hinted every line with "API", "APP" or "MAP" and a long token: 746 lines of the samples, none
# an Artifactory password. The narrow hint holds only while the rule is the one pinned below.
ARTIFACTORY_HINTS = (re.compile(r"AP[\dA-F]"), re.compile("AP"))  # (pinned, not pinned)


# Per rule: (fingerprint of its patterns, case-blind?, literals every match holds one of). A hinted
# line with none of a rule's literals skips its regexes. Case-blind literals are sought in ASCII
# lines only (under IGNORECASE `ſ` is an `s`); a rule off its fingerprint runs on every line.
PLUGIN_LITERALS: dict[str, tuple[str, bool, tuple[str, ...]]] = {
    "ArtifactoryDetector": ("73b07f367f5237ad", False, ("AKC", "AP")),
    "AzureStorageKeyDetector": ("b4ac01445d8a6681", False, ("AccountKey=",)),
    "CloudantDetector": ("b6a1216beb142a1f", True, ("cl",)),  # cloudant|cl|clou, .cloudant.com
    "IbmCloudIamDetector": ("fc0bf3786c5eb2a1", True, ("key", "pwd", "pass", "token")),
    "IbmCosHmacDetector": ("59503c343fe889d3", True, ("secret",)),
    "SoftlayerDetector": ("d6802c56a266746b", True, ("sl", "softlayer")),
}


def plugin_fingerprint(plugin) -> str:
    """A short hash of a detect-secrets rule's patterns and flags."""
    text = "\n".join(f"{r.flags}:{r.pattern}" for r in plugin.denylist)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@lru_cache(maxsize=1)
def provider_plugins() -> tuple:
    """(rule, case-blind?, literals or None) for each detect-secrets rule memoir runs."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class  # deferred: start-up (requests)

    classes = {cls.__name__: cls for cls in get_mapping_from_secret_type_to_class().values()}
    plugins = [(name, classes[name]()) for name in DETECT_SECRETS_PLUGINS if name in classes]
    pins = {name: PLUGIN_LITERALS.get(name, ("", False, ())) for name, _ in plugins}
    return tuple((plugin, pins[name][1], pins[name][2] if plugin_fingerprint(plugin) == pins[name][0] else None)
                 for name, plugin in plugins)


@lru_cache(maxsize=1)
def _artifactory_hint() -> re.Pattern[str]:
    pinned = all(literals is not None for plugin, _, literals in provider_plugins()
                 if type(plugin).__name__ == "ArtifactoryDetector")
    return ARTIFACTORY_HINTS[0] if pinned else ARTIFACTORY_HINTS[1]


def _may_find(line: str, lower: str | None, blind: bool, literals: tuple[str, ...] | None) -> bool:
    if literals is None or blind and lower is None:
        return True  # patterns not pinned, or a non-ASCII line for a case-blind rule
    return any(lit in (lower if blind else line) for lit in literals)


def provider_rules(text: str, runs: bytes) -> Iterator[tuple[str, int, int]]:
    """detect-secrets' provider rules, on the lines holding one of their hint words and a long token."""
    if TOKEN_RUN_NEEDLE not in runs:
        return
    for start, end in lines_with(text, DETECT_SECRETS_HINTS, _artifactory_hint()):
        if TOKEN_RUN_NEEDLE not in runs[start:end]:
            continue
        line = text[start:end]
        lower = line.lower() if line.isascii() else None
        for plugin, blind, literals in provider_plugins():
            if not _may_find(line, lower, blind, literals):
                continue
            for found in plugin.analyze_string(line):
                secret = PROVIDER_KEY.sub("", found.strip(" \t\"'=:"))  # the value, not `AccountKey=`
                if len(secret) < 8:
                    continue
                at = line.find(secret)
                while at != -1:
                    yield "provider_token", start + at, start + at + len(secret)
                    at = line.find(secret, at + len(secret))
