"""The user's stated rules: a sentence that says how things should be done, and one that says why.

A choice the user states with its reason ("we should avoid DRA in identifiers, because it is an
abbreviation") is a decision in their own words, whatever the session around it settled. Both halves
are needed: a rule alone is a request ("always add tests"), a reason alone is an explanation ("it fails
because the port is taken"). The rows are imported into `cards.phrasebook`, whose generic test runs
their hits and misses.
"""

from __future__ import annotations

from memoir.cards.rule_table import Rule, rx

RULE_STATEMENTS: tuple[Rule, ...] = (
    # A rule names who follows it or what to do: "it should work" and "it always fails" report, they do not rule.
    Rule("rule_en",
         rx(r"\b(?:we|you) (?:should(?:n'?t| not)?|must(?:n'?t| not)?)\b|\blet'?s (?:use|go with|keep|stick|skip|avoid|not)\b|"
            r"\bwe(?:'ll| will) (?:use|go with|keep|skip|avoid)\b|\b(?:i|we) prefer\b|^\W*(?:please\s+)?avoid\b|"
            r"\b(?:always|never) (?:use|run|keep|put|add|call|commit|push|install|import|name|write|set|pin|skip|store|"
            r"merge|rebase|deploy)\b|\buse\b[^.?!\n]{1,60}\binstead of\b|\b(?:don'?t use|do not use|stop using|"
            r"stick (?:to|with)|keep using|switch to)\b|\bskip\b[^.?!\n]{0,80}\b(?:for now|until)\b"),
         ("we should count quota per claim", "avoid the DRA abbreviation in identifiers",
          "let's skip the quota check for now", "use httpx instead of requests", "always use pnpm"),
         ("add a dark mode toggle", "fix the login page, it crashes", "should be done by Friday, thanks",
          "The dev server always fails to start", "it should work now", "it returns null instead of the user"),
         "A sentence that says how things are to be done from now on, not what to do once or what went wrong."),
    Rule("rule_other",
         rx(r"\b(?:deber[íi]amos|debemos|hay que|evitemos|en lugar de usar|no uses|devrions|il faut|évitons|"
            r"plutôt que d'utiliser|au lieu d'utiliser|(?:wir )?sollten wir|wir sollten|(?:wir )?müssen wir|wir müssen|vermeiden wir|moeten we|laten we|"
            r"měli bychom|musíme|vyhněme se|devemos|deveríamos|em vez de usar)\b|대신|하지 마|피해야"),
         ("deberíamos contar por claim", "il faut éviter l'abréviation", "wir sollten pro Claim zählen",
          "měli bychom se vyhnout zkratce", "pnpm을 npm 대신 쓰세요"),
         ("añade un botón", "ajoute un bouton", "füge einen Knopf hinzu", "falla siempre porque el puerto está ocupado",
          "es schlägt immer fehl, weil der Port belegt ist"),
         "The same rule sentences outside English."),
    Rule("rule_zh_ja",
         rx(r"我们(?:应该|应当|要)|不应该|应该(?:用|按|使用|改)|避免|不要用|别用|不要使用|统一(?:用|使用)|改用|而不是|"
            r"先(?:skip|跳过|不)|暂时不|一律|べき|避け|ではなく|代わりに|使わない"),
         ("我们应该按照claim计算", "先skip firstavailable的配额检查吧", "代码里避免使用DRA", "npmではなくpnpmを使うべき"),
         ("加一个按钮", "ボタンを追加して", "帮我看下这个文档", "这个测试总是失败，因为端口被占用", "应该是缓存的问题，因为重启后就好了"),
         "Chinese and Japanese rule sentences."),
)

REASONS: tuple[Rule, ...] = (
    Rule("reason_en",
         rx(r"\b(?:because|so that|otherwise|to keep|to avoid|the reason|as (?:it|they|this|that) (?:is|are|was))\b"),
         ("because it is a dynamic request", "so that names stay clear", "otherwise the worker drifts"),
         ("add a button", "since yesterday the build fails"),
         "Why the rule holds: the half that makes a request a decision."),
    Rule("reason_other",
         rx(r"\b(?:porque|para que|ya que|parce que|pour que|puisque|weil|damit|omdat|zodat|protože|jelikož|"
            r"já que)\b|때문에|위해서?|니까"),
         ("porque es dinámico", "parce que c'est une abréviation", "weil es dynamisch ist", "protože je dynamický"),
         ("añade un botón",),
         "The same reasons outside English."),
    Rule("reason_zh_ja",
         rx(r"因为|由于|为了|因此|所以|以便|保持|ので|ため|なぜなら"),
         ("因为这是一个动态的请求", "保持语义清晰", "動的なリクエストなので"),
         ("加一个按钮", "ボタンを追加して"),
         "Chinese and Japanese reasons."),
)

# The assistant recording what the user just settled ("好，敲定：> **…**", "Agreed: …"): read only at the start
# of its reply to the user's answer, where it restates the choice crisply.
SETTLED: tuple[Rule, ...] = (
    Rule("settled_en",
         rx(r"^(?:(?!\b(?:not?|nothing|open|still|pending|un)\b|n't)[^\n.!?]){0,20}?\b(?:settled|agreed|decided|decision|"
            r"locked in|final decision)(?: on [^:：\n]{1,30})?\s*[:：]"),
         ("Agreed: quota skips firstAvailable requests", "Ok, settled: keep UUID keys", "Decision: use pnpm",
          "Settled on naming: no DRA prefix"),
         ("I agreed with the plan and started", "Let me decide which one", "Open decision: should we cache?",
          "Not agreed: the cache", "Nothing is settled: we need numbers", "I have not decided: A or B"),
         "The assistant's reply to the user's answer, opening by naming what was settled."),
    Rule("settled_other",
         rx(r"^[^\n.!?]{0,20}?(?:decidido|acordado|décidé|convenu|entschieden|vereinbart|festgelegt|combinado|"
            r"besloten|afgesproken|rozhodnuto|domluveno)\s*[:：]|"
            r"^(?:(?!待|未|不|需要|还没|尚未|要)[^\n。！？]){0,20}?(?:敲定|确定|定了|决定|決定|確定|결정|확정)[^\n：:。，,]{0,8}[:：]"),
         ("好，问题 1 敲定：FirstAvailable 跳过", "敲定：**切换到方案 B**", "Decidido: usar pnpm", "Rozhodnuto: pnpm",
          "好，敲定命名规范：**避免用 DRA 作为前缀**"),
         ("我们需要确定一下方案", "Ich habe entschieden, dass", "待确定：缓存方案", "需要确定：缓存", "未决定：A 还是 B"),
         "The same, outside English."),
)

# A record that says nothing changes ("reuse it as it is; no extra work needed") settles no question: the
# status quo is no decision worth recalling.
NO_CHANGE: tuple[Rule, ...] = (
    Rule("no_change",
         rx(r"无需(?:额外|任何)?(?:工作|改动|修改|处理)|不需要(?:任何|额外的?)(?:改动|修改|工作)|"
            r"\bno (?:extra|additional|further) (?:work|changes?)\b|\bno changes? (?:is |are )?(?:needed|required)\b|"
            r"\bnothing (?:to do|needs to change)\b|\bkeine Änderung(?:en)? nötig\b|\bsin cambios\b|\baucun changement\b|"
            r"\bgeen wijzigingen? nodig\b|\bbez(?:e)? změn\b|変更不要|変更は不要"),
         ("QueueStatus.Allocated 直接复用。无需额外工作。", "Webhook 不需要额外改动", "Reuse it as is; no extra work needed.",
          "no changes needed"),
         ("不需要 cache ResourceClaimTemplate", "no changes to the public API, but the cache moves"),
         "A decision to change nothing settles no question worth recalling."),
)

# The user proposing a design ("I'd suggest we …", "我建议是…"), and the assistant's reply opening by accepting it
# ("Good idea: …", "好思路，…"): the user's proposal, accepted, is their decision.
PROPOSALS: tuple[Rule, ...] = (
    Rule("proposal",
         rx(r"\bi(?: would|'d)? (?:suggest|propose|recommend)\b|\bmy (?:suggestion|proposal) is\b|\bsugiero\b|\bpropongo\b|"
            r"\bje (?:suggère|propose)\b|\bich schlage vor\b|\bik stel voor\b|\bnavrhuji\b|\bsugiro\b|\bproponho\b|"
            r"我建议|我的建议|建议是|제안합니다|제안해요|を提案します"),
         ("I'd suggest we watch the real ResourceSlices", "我建议是可以watch集群中的真实的resourceSlice", "ich schlage vor, pro Claim zu zählen"),
         ("add a button", "can you suggest a name?"),
         "The user proposing how a thing should work."),
)
ACCEPTS: tuple[Rule, ...] = (
    Rule("accepts",
         rx(r"^(?:(?!\bnot?\b|n't|不)[^\n.!?。]){0,12}?(?:good idea|great idea|good call|makes sense|that works|agreed|好思路|好主意|好想法|思路很好|"
            r"有道理|いい考え|buena idea|bonne idée|gute idee|goed idee|dobrý nápad|boa ideia|좋은 생각)"
            # … and no "but" after it in the same sentence: "Good idea, but it won't work here" turns it down.
            r"(?![^\n.!?。]*(?:\bbut\b|\bhowever\b|\bonly if\b|\bunless\b|n't|\bcannot\b|但|不过|不能|只有|除非|pero|mais|aber|maar|ale))"),
         ("好思路，和现有 totalResource 的逻辑保持一致", "Good idea: totals come from the ResourceSlices", "Makes sense, so"),
         ("I think that is not a good idea", "Not a good idea: the cache drifts", "不是好思路", "Let me check whether this makes sense",
          "Good idea, but it won't work here", "That works only if Redis is deployed", "有道理，但是不能这样做"),
         "The assistant's reply opening by accepting what the user proposed."),
)
