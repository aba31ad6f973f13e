"""What each name a card's `gate:` can hold means, and what clears it: `memoir review` and `memoir explain` show it."""

from __future__ import annotations

# What each name a card's `gate:` can hold means, and what clears it; `memoir review` shows it
# under the gate. Beside the quality gates (cards.quality_gates.QUALITY_GATE_NAMES): the conclusion checks of cards.draft, the rule
# stage's conflict (cards.distill.rules.CONFLICT_GATE) and a person's reject (cards.review).
GATE_HELP: dict[str, str] = {
    "contradicted_later": "The rest of the session takes the card back: the same error or the same failing check "
                          "again, the user's next words rejecting the result, or a later \"that was not the cause\" "
                          "(the turn is cited as contradicted_by). Clears only when you confirm it in review.",
    "work_report": "A change list: the request was done and nothing failed before it (no failing check, no error, "
                   "no problem the user reported), so the card teaches the next session nothing. Confirm it in "
                   "review if it records a decision you want recalled.",
    "self_inflicted": "The failure was in files the agent itself had changed earlier in the same experience, and "
                      "the fix changed only those (a slip of its own, not the environment's). Confirm it if the "
                      "lesson transfers after all.",
    "self_evident": "The failing command's own output printed the fix that cleared it (\"Run 'x sync' to fix\", "
                    "\"add this line to your config\"), word for word: the error says it again next time, so the card "
                    "would only take one of recall's two places. Confirm it if the lesson holds more than the message.",
    "verifiable_judgment": "The conclusion must be a claim someone could check (X fails when Y; use A, "
                           "not B, because C), not a feeling or a diary of steps. Clears when the "
                           "Conclusion states that claim: edit it, then confirm.",
    "failure_conditions_stated": "A conclusion nothing checked must say when it stops holding, and "
                                 "Counterexamples, when filled, must name a real limit (a version, platform, "
                                 "setting or case where it does not apply), not a placeholder. Clears when "
                                 "you write one (edit), then confirm.",
    "no_unsupported_specifics": "A number, identifier, flag, path or URL in the Conclusion or "
                                "Counterexamples never appears in the session, so it may be invented. "
                                "Clears when you correct or remove it (edit), or confirm because you know it "
                                "is right.",
    "instruction_not_self_promoted": "An order (always…, never…, you must…) counts only when the user typed "
                                     "it; a file, tool or the agent cannot promote itself into later sessions. "
                                     "Clears when you confirm it as your own rule, or edit it into a judgment "
                                     "with its reason.",
    "not_duplicate": "An active card already says the same. Reject this one (the active card stays), or "
                     "edit it until it says what the other does not, then confirm.",
    "verified_conclusion": "Nothing checked the conclusion: no check failed before the change and passed "
                           "after it, and the user neither said it nor confirmed it in their own words (an "
                           "opinion, an unverified how-to, a plan). Clears when you confirm it: your "
                           "confirmation is the check.",
    "conclusion_too_short": "The conclusion is shorter than min_conclusion_chars, too little to recall. "
                            "Clears when you write the full conclusion (edit), then confirm.",
    "conclusion_open_code_fence": "The conclusion opens a code block it never closes: it was cut. Clears "
                                  "when you finish or close the block (edit), then confirm.",
    "conclusion_cut_off": "The conclusion stops mid-sentence: it was cut. Clears when you finish the "
                          "sentence (edit), then confirm.",
    "last_check_failed": "The experience ends with its check still failing: nothing was learned yet. The "
                         "Follow-up names the open question. Clears when you write the conclusion you know "
                         "(edit), then confirm; reject it if there is none.",
    "ended_mid_sentence": "The session's last message stops mid-sentence: how it ended is unknown. Clears "
                          "when you write the conclusion you know (edit), then confirm.",
    "ended_mid_work": "The session stopped mid-work (a step announced or started, never reported back). "
                      "Clears when you write the conclusion you know (edit), then confirm.",
    "no_settled_conclusion": "The session never settled on an answer (no fix confirmed, no conclusion "
                             "stated). Clears when you write the conclusion you know (edit), then confirm; "
                             "reject it if there is none.",
    "unresolved_conflict": "Another card on the same topic (conflicts_with) concludes differently and "
                           "neither is clearly newer. Confirm the one that is right and reject the other.",
    "rejected_by_user": "A person rejected this card: it stays out of review and recall. Confirm it "
                        "(`memoir review ID`) to make it active after all.",
}

GATE_TABLE_HEADER = "| gate | what it means, and what clears it |\n|---|---|"


def gate_table() -> str:
    """GATE_HELP as the Markdown table docs/cards.md holds (tests/test_docs.py keeps the two equal)."""
    rows = []
    for name, text in GATE_HELP.items():
        cell = " ".join(text.split()).replace("|", r"\|")  # one line per row; a bare | would split the cell
        rows.append(f"| `{name}` | {cell} |")
    return "\n".join([GATE_TABLE_HEADER, *rows]) + "\n"
