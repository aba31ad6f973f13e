"""The shapes of text that would command whoever reads it: an override of instructions, a download piped
into a shell, a credential file sent somewhere, role or tool-call markup, a chat turn marker.

One pattern set for every place that judges or shows text: the quality gate `instruction_not_self_promoted`
holds a card carrying one, search and MCP withhold a snippet, review names the shape, and
`cards.neutralise` defangs them in place.
"""

from __future__ import annotations

import re

from memoir.cards.plain_text import plain
from memoir.cards.quality_inputs import ORDER, sentences

# Overriding the reader's instructions is never a reusable judgment, whoever typed it.
OVERRIDE = re.compile(
    r"(?i)\b(?:ignore|disregard|forget|override)\s+(?:(?:all|any|the|your|of|these|those)\s+){0,3}(?:previous|"
    r"prior|above|earlier|preceding|system|other|original)\s+(?:instructions?|prompts?|rules?|guidance|directions?|"
    r"directives?|messages?)|\b(?:ignore|disregard|forget)\s+(?:everything|all|anything)\s+(?:above|before|prior)\b|"
    r"\bdisregard\s+(?:all\s+|the\s+)?above\b|\byou are now\b|\bsystem prompt\b|\bnew instructions?\s*:|"
    # The same in the other languages memoir reads.
    r"\bignor(?:a|e|ez|es)\s+(?:(?:todas|todos|toutes|tous|as|os|las|los|les|tus|vos)\s+){0,2}(?:las\s+|les\s+|as\s+)?"
    r"(?:instrucciones|instru[cç][õo]es|instructions|indicaciones|consignes)\s+(?:anteriores|pr[ée]c[ée]dentes|previas)|"
    r"\bignorier(?:e|en)?\s+(?:alle\s+)?(?:vorherigen|bisherigen|obigen|vorigen)\s+(?:anweisungen|instruktionen)|"
    r"\bnegeer\s+(?:alle\s+)?(?:vorige|eerdere|voorgaande)\s+(?:instructies|aanwijzingen)|"
    r"\bignoruj(?:te)?\s+(?:v[šs]echny\s+)?p[řr]edchoz[íi]\s+(?:instrukce|pokyny)|이전\s*(?:의\s*)?지시\S*\s*무시"
)
SHELL_PIPE = re.compile(r"(?i)\|\s*(?:sudo\s+)?(?:ba|z|da|k|fi)?sh\b|\|\s*(?:python\d?|perl|ruby|node)\s*(?:-\s*)?(?:$|[`'\"\s])")
# A download piped into a shell, or run by command or process substitution (`bash -c "$(curl …)"`).
REMOTE_EXEC = re.compile(r"(?i)\b(?:curl|wget|iwr|invoke-webrequest)\b[^\n|]*\||\$\(\s*(?:curl|wget)\b|"
                          r"<\(\s*(?:curl|wget)\b|\b(?:iex|invoke-expression)\b[^\n]*\b(?:iwr|downloadstring)\b")
# A credential file sent somewhere: `curl -d @$HOME/.aws/credentials https://…`, `cat ~/.ssh/id_rsa | nc …`.
_CREDENTIAL_FILE = (r"(?:\.aws/(?:credentials|config)|\.ssh/(?:id_\w+|config)|\.netrc|\.git-credentials|\.npmrc|\.pypirc|"
                    r"\.kube/config|\.docker/config\.json|\.env\b|/etc/(?:passwd|shadow))")
EXFILTRATE = re.compile(
    r"(?i)\b(?:curl|wget|http|https|nc|ncat|scp|rsync|ftp)\b[^\n]*?(?:-d|--data[\w-]*|-T|--upload-file|-F|--form|"
    r"--post-file|--body-file)[\s=]*[\"']?[^\s\"']*" + _CREDENTIAL_FILE
    + r"|" + _CREDENTIAL_FILE + r"[^\n|]*\|\s*(?:curl|wget|nc|ncat|ssh)\b")
# A chat turn marker at the start of a line: text a model may read as the next speaker.
TURN_MARKER = re.compile(r"(?m)^[ \t>*_#-]*(?:Human|Assistant)\s*:(?=\s)")
# Markup a model reads as a turn or a tool call: role tags, tool-call tags, chat-template tokens
# (the placeholder of `ssh <user>@host` or `/home/<user>/` is not one).
MARKUP = re.compile(
    r"(?i)(?!(?<=[\w/@=:-])<user>|<user>[@/:=])</?\s*(?:[a-z]+:)?(?:system|user|assistant|human|developer|tool|"
    r"function_calls|function_results|invoke|parameter|tool_use|tool_result|tool_calls?|memoir(?:-[a-z]+)+)\b(?:[^<>\n]{0,200}>)?"
    r"|<\|\s*(?:im_start|im_end|im_sep|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id)\s*\|>"
)
# The shapes as patterns, for code that defangs them in place rather than names them (cards/neutralise.py).
COMMAND_SHAPES = (OVERRIDE, REMOTE_EXEC, SHELL_PIPE, EXFILTRATE, TURN_MARKER)



def instruction_shapes(text: str, *, orders: bool = True) -> tuple[str, ...]:
    """Why `text` reads as an instruction to whoever reads it, as short reasons that never quote it:
    what the gate below looks for, for text shown outside a card (search, MCP).

    Args:
        orders: also count order-shaped sentences ("always disable tests"); off for text whose
            orders a person is known to have typed.
    """
    found = []
    text = plain(text)  # what a model reads: no zero-width split, fullwidth bracket or entity hides a shape
    if OVERRIDE.search(text):
        found.append("tries to override instructions")
    if REMOTE_EXEC.search(text) or SHELL_PIPE.search(text):
        found.append("pipes text into a shell")
    if EXFILTRATE.search(text):
        found.append("sends a credential file somewhere")
    if MARKUP.search(text) or TURN_MARKER.search(text):
        found.append("carries role or tool-call markup")
    if orders and any(ORDER.search(s) for s in sentences(text)):
        found.append("gives an order")
    return tuple(found)
