"""Named rule tables: each rule a pattern with the texts it must and must not match, and why it exists.

A rule that decides whether a card reaches an agent must be visible: `memoir explain` names the rules
that fired on each turn, and `tests/test_phrasebook.py` runs every rule of every table against its
own hits and misses, so a pattern that drifts fails a test that names it. Tables cover the languages
sessions are written in (English, Spanish, Portuguese, French, Dutch, Czech, German, Korean; Chinese
and Japanese in `cards.phrasebook_cjk`, whose script has no word boundaries):
whether a card is proven is decided from commands, exit codes and edits, and these tables only read
what a *person* says (a confirmation, a rejection, a problem report) or what a tool prints when it
has not finished.
"""

from __future__ import annotations

import re

from memoir.cards import phrasebook_cjk as cjk
from memoir.cards.phrasebook_choices import ACCEPTS, NO_CHANGE, PROPOSALS, REASONS, RULE_STATEMENTS, SETTLED  # noqa: F401 - read from here; tested with the rest
from memoir.cards.rule_table import Rule, first_rule, rx as _rx  # noqa: F401 - the stages read first_rule from here


# --- a tool result that says the check has not finished: no verdict, neither pass nor fail ----------

PENDING: tuple[Rule, ...] = (
    Rule("background_notice",
         _rx(r"\b(?:running|started|runs|moved) in (?:the )?background\b|\bbackground (?:task|job|process|shell)s? "
             r"(?:started|running|id)\b|\bwith (?:session |shell |task )?id[:\s]+\w+.{0,40}\b(?:running|started)\b"),
         ("Command running in background with ID: bash_3", "Started background job; runs in the background",
          "Process moved in background (id 42)"),
         ("42 passed in 3.1s", "background-color: red was removed"),
         "A background start tells that a command began, not how it ended: it never verifies a change."),
    Rule("still_running",
         _rx(r"^\s*(?:process |command |job )?(?:still running|running\.\.\.|in progress|waiting for (?:output|the process))"
             r"|\bProcess running with session ID\b"),
         ("Process running with session ID 12", "still running", "Waiting for output..."),
         ("Ran 3 tests in 0.2s\nOK",),
         "A poll of an unfinished process (Codex's session ids, a watcher) has no verdict yet."),
)


# --- the user saying it worked, in their own words ------------------------------------------------

CONFIRMS: tuple[Rule, ...] = (
    Rule("confirms_en",
         _rx(r"\b(?:(?:that|it|this|the fix|your fix|the change|everything)\s+(?:now\s+)?(?:works|worked|did it|did the trick|"
             r"fixed it|solved it|helped)|works now|working now|fixed now|(?:is|it'?s) (?:now )?(?:fixed|solved|working|green)|"
             r"confirmed|can confirm|problem solved|solved|that'?s it|that was it|exactly (?:it|right)|"
             r"(?:tests?|build|ci|pipeline|deploy) (?:is |are )?(?:now )?(?:green|passing|passes|pass))\b"),
         ("OK, this worked", "works now, thanks", "CI is green now"),
         ("does it work?", "make it work with two workers"),
         "The user's word that the answer worked is the check when no test could run."),
    Rule("confirms_es_pt",
         _rx(r"(?<!não )(?<!nao )(?<!no )\b(?:ya )?funciona(?:ba)?\b(?! mal)|\bfuncionou\b|\bresuelto\b|\bresolvido\b|\bresolveu\b|\bperfecto\b|\bperfeito\b|"
             r"\bdeu certo\b|\bya (?:está|esta)\b|\bahora s[ií]\b"),
         ("¡Ya funciona, gracias!", "Funcionou, valeu", "resuelto"),
         ("funciona mal", "¿por qué no carga?", "nao funciona", "no funciona"),
         "Spanish and Portuguese confirmations."),
    Rule("confirms_fr",
         _rx(r"(?<!comment )\b(?:ça|ca|cela) (?:marche|fonctionne)\b(?![^.!]*\?)|\bc'est (?:bon|réglé|corrigé|résolu)\b|\b(?:ça|ca) a marché\b|\brésolu\b"),
         ("ça marche maintenant", "c'est bon, merci"),
         ("comment ça marche ?",),
         "French confirmations."),
    Rule("confirms_nl_de",
         _rx(r"\b(?:het )?werkt (?:nu|weer)\b|\bhet werkt\b|\bopgelost\b|\bes (?:funktioniert|klappt)\b|\bfunktioniert (?:jetzt|wieder)\b|\bgelöst\b"),
         ("Het werkt nu!", "es funktioniert jetzt", "opgelost"),
         ("werkt het niet?",),
         "Dutch and German confirmations."),
    Rule("confirms_cs",
         _rx(r"\b(?:už |uz )?(?:to )?funguje\b|\bvyřešeno\b|\bvyreseno\b|\bsupr,? funguje\b"),
         ("Už to funguje, díky", "vyřešeno"),
         ("proč to nefunguje?",),
         "Czech confirmations (nefunguje is the negation, and the word boundary keeps it out)."),
    Rule("confirms_ko",
         _rx(r"(?:이제 |잘 )?(?:작동|동작)(?:합니다|해요|하네요|한다|됨|돼요|되네요)|해결(?:됐|되었|됨|했)|잘 ?되(?:네요|네|요|었어요)"),
         ("이제 잘 작동합니다", "해결됐어요 감사합니다"),
         ("작동하지 않아요",),
         "Korean confirmations."),
) + cjk.CONFIRMS

# A reply that takes a confirmation back ("not", "still", "but"), in the same languages.
UNCONFIRMED: tuple[Rule, ...] = (
    Rule("unconfirmed_en",
         _rx(r"\b(?:not|never|still|but|however|although|except|no longer|nope|wrong|same (?:error|problem|issue))\b|n't\b|\?\s*$"),
         ("it still fails", "works, but the page is blank", "does it work?"),
         ("works now",),
         "A negation or a 'but' undoes the confirmation beside it."),
    Rule("unconfirmed_other",
         _rx(r"\b(?:no funciona|não funciona|nao funciona|todavía|todavia|ainda|sigue|pero|mas ainda|ne (?:marche|fonctionne) pas|"
             r"toujours|mais|werkt niet|nog steeds|maar|funktioniert nicht|immer noch|aber|nefunguje|pořád|porad|ale)\b|"
             r"안 ?(?:돼|됨|되)|작동하지 않|여전히"),
         ("sigue sin funcionar", "ça ne marche pas", "pořád to nefunguje", "여전히 오류가 나요"),
         ("¡Ya funciona!",),
         "The same negations outside English."),
) + cjk.UNCONFIRMED


# --- the user reporting that something is wrong: a problem, before any check ran ----------------

PROBLEM_REPORTS: tuple[Rule, ...] = (
    Rule("problem_en",
         _rx(r"\b(?:(?:does|did|is|was|are)(?:n't| not) (?:work|working|load|start|run|show|build|compile|pass)|"
             r"broken|crash(?:es|ed|ing)?|fails?|failing|failed|error|exception|traceback|bug|regress(?:ion|ed)|"
             r"wrong|blank|hangs?|stuck|nothing happens|only (?:happens|occurs|shows up|appears)|happens (?:only|again|every time|sometimes)|no longer|exits? (?:at once|immediately|right away)|(?:does|did)(?:n'?t| not) (?:open|appear|show up|reload|update|pick up)|not (?:found|showing|shown|loading|working|picked up)|missing|slow|too long|never (?:gets?|receives?|arrives?|shows?|fires?|runs?|sends?|loads?)|takes \d+(?:\.\d+)? ?(?:s|ms|sec|seconds|minutes)|overlap\w*|twice|duplicated?|flaky|intermittent(?:ly)?|full of|unexpected)\b"),
         ("the page is blank after login", "it crashes on start", "why does this fail?", "got this error:",
          "checkout takes 3 s", "page 2 and page 3 overlap", "uvicorn doesn't reload in docker",
          "patients never get the check-in text", "It only happens on CI when both jobs run"),
         ("add a settings dialog", "please write the README"),
         "The user telling of a failure is a problem even when no command showed it."),
    Rule("problem_other",
         _rx(r"\b(?:no funciona|falla|fallo|error|não funciona|nao funciona|erro|quebr\w+|ne (?:marche|fonctionne) pas|plante|"
             r"erreur|bogue|werkt niet|kapot|fout|crasht|funktioniert nicht|fehler|absturz|nefunguje|chyba|padá|pada)\b|"
             r"오류|에러|안 ?(?:돼|됨|되)|작동하지 않|실패"),
         ("la app falla al iniciar", "dá erro ao compilar", "ça plante au démarrage", "het werkt niet", "nefunguje to",
          "빌드 오류가 나요"),
         ("añade un botón", "ajoute un bouton"),
         "The same reports outside English."),
) + cjk.PROBLEM_REPORTS


# --- the user rejecting what was just done: after a card's range, it contradicts the card ------------

REJECTS: tuple[Rule, ...] = (
    Rule("rejects_en",
         _rx(r"^\W*(?:no|nope|nah)\b(?! (?:problem|worries|rush|need))[,.!\s]|^\W*(?:that'?s|this is|it'?s) (?:not|wrong)\b|\b(?:not what i (?:asked|wanted|meant)|"
             r"i (?:wanted|meant|asked for) (?:something|it|you)|(?:still|again) (?:fails?|failing|broken|the same|getting)|"
             r"(?:did|does)(?:n'?t| not) (?:work|fix|help|change anything)|same (?:error|problem|issue)|revert (?:it|that|this)|"
             r"you broke|broke (?:something|it|the)|(?:i )?(?:didn'?t|don'?t|can'?t|do not|did not) see (?:the|any|it)|"
             r"(?:is|are) (?:still )?(?:missing|not there|not showing))\b"),
         ("no, I wanted the scanner to keep both roots", "still failing with the same error", "that didn't fix it",
          "That's not what I asked", "I think you broke something", "I didn't see the new fields in the gui"),
         ("now add a test for it", "no problem, thanks", "nothing else, thanks"),
         "The user's next word rejecting the result means the card's answer did not hold."),
    Rule("rejects_other",
         _rx(r"^\W*(?:no|non|nee|nein|ne)\b[,.!\s]|\b(?:sigue (?:fallando|sin funcionar|igual)|no funcionó|no funciono|"
             r"ainda (?:não|nao) funciona|continua (?:falhando|com erro)|ça ne marche (?:toujours )?pas|toujours (?:la même|le même)|"
             r"werkt nog steeds niet|nog steeds (?:fout|kapot)|funktioniert (?:immer )?noch nicht|immer noch|"
             r"pořád (?:to )?nefunguje|stále nefunguje|to není|není to)\b|여전히|아직도 (?:안|오류)|그게 아니"),
         ("no, eso no es lo que pedí", "sigue fallando", "ainda não funciona", "ça ne marche toujours pas",
          "Nee, dat bedoelde ik niet", "pořád to nefunguje", "여전히 같은 오류가 나요"),
         ("¡funciona!", "noch eine Frage"),
         "The same rejections outside English."),
) + cjk.REJECTS

# The agent (later in the session) saying an earlier explanation or fix was not it.
RETRACTS: tuple[Rule, ...] = (
    Rule("retracts",
         _rx(r"\b(?:was(?:n'?t| not)|is(?:n'?t| not)) (?:the|really the|actually the) (?:real |actual |root )?(?:cause|issue|problem|fix)|"
             r"(?:did|does)(?:n'?t| not) (?:actually )?(?:fix|solve|resolve) (?:it|the|anything)|turned out (?:to be )?(?:wrong|unrelated)|"
             r"the (?:earlier|previous|first) (?:fix|change|explanation|diagnosis) was (?:wrong|incorrect|incomplete|a red herring)|"
             r"no era (?:la causa|el problema)|não era (?:a causa|o problema)|n'était pas (?:la cause|le problème)|"
             r"was niet de oorzaak|war nicht die ursache|nebyla příčina|원인이 아니"),
         ("Committing in seed_orders was not the real cause", "that change didn't actually fix it",
          "no era la causa real"),
         ("the cause was the missing index", "this fixes the issue"),
         "A later finding that the cause was something else takes the card's conclusion back."),
    Rule("called_unnecessary",
         _rx(r"\b(?:the|that|this|my|our|earlier|previous) (?:\w+ )?(?:change|fix|commit|edit|workaround|step) "
             r"(?:was|is|turned out to be) (?:unnecessary|not needed|not necessary|pointless|useless)\b"),
         ("The earlier change was unnecessary, so revert it", "that commit is not needed after all"),
         ("an unnecessary change to the README", "this step is needed because the cache is cold"),
         "A later finding that the change did nothing useful takes back the card that credits it."),
    Rule("retracts_es_pt",
         _rx(r"\bno (?:era|fue) (?:realmente )?(?:la causa|el problema|la solución)|"
             r"\bno (?:lo )?(?:arregló|resolvió|solucionó) (?:nada|el problema)|"
             r"\b(?:el|la) (?:arreglo|cambio|solución|corrección) (?:anterior )?(?:era|fue|es) (?:incorrect[oa]|erróne[oa]|"
             r"innecesari[oa])|"
             r"\bnão (?:era|foi) (?:realmente )?(?:a causa|o problema|a solução)|\bnão (?:resolveu|corrigiu) (?:nada|o problema)|"
             r"\b(?:a correção|a mudança|o ajuste) (?:anterior )?(?:era|foi|estava) (?:errad[oa]|incorret[oa]|desnecessári[oa])"),
         ("Hacer commit en seed_orders no era la causa real", "el cambio anterior era innecesario",
          "não era a causa do travamento", "a correção anterior estava errada"),
         ("la causa era el índice que faltaba", "a correção resolveu o problema"),
         "Spanish and Portuguese: a later finding that the cause or the fix was something else."),
    Rule("retracts_fr_nl_de",
         _rx(r"\bn'(?:était|est) pas (?:vraiment )?(?:la (?:vraie )?cause|le (?:vrai )?problème|la solution)|"
             r"\bn'a (?:rien|pas) (?:résolu|corrigé)|\b(?:le correctif|la correction|le changement) (?:précédent |d'avant )?"
             r"(?:était|est) (?:faux|fausse|incorrect|inutile)|"
             r"\bwas niet (?:de (?:echte )?oorzaak|het probleem)|\bloste (?:het|niets) niet op|"
             r"\bde (?:eerdere|vorige) (?:fix|oplossing|wijziging) was (?:fout|onjuist|onnodig|overbodig)|"
             r"\bwar nicht (?:die (?:eigentliche )?ursache|das problem)|\bhat (?:es|nichts) nicht (?:behoben|gelöst)|"
             r"\b(?:der|die) (?:frühere|vorherige) (?:fix|änderung|lösung) war (?:falsch|unnötig|überflüssig)"),
         ("Committer dans seed_orders n'était pas la vraie cause", "de eerdere fix was onnodig",
          "Das Committen in seed_orders war nicht die eigentliche Ursache"),
         ("la cause était l'index manquant", "de oorzaak was de ontbrekende index", "die Ursache war der Index"),
         "French, Dutch and German: a later finding that the cause or the fix was something else."),
    Rule("retracts_cs_ko",
         _rx(r"(?:nebyl[ao]?|není) (?:skutečn(?:á|ou) )?příčin|nic nevyřešil|(?:předchozí|dřívější) (?:oprava|změna) "
             r"(?:byla|je) (?:špatná|chybná|zbytečná)|원인이 아니|(?:이전|앞선) (?:수정|변경)(?:은|이)? (?:잘못|불필요)|"
             r"해결(?:되지|하지) (?:않았|못했)"),
         ("commit v seed_orders nebyl skutečnou příčinou", "předchozí oprava byla zbytečná",
          "seed_orders의 커밋은 원인이 아니었습니다", "이전 수정은 불필요했습니다"),
         ("příčinou byl chybějící index", "원인은 누락된 인덱스였습니다"),
         "Czech and Korean: a later finding that the cause or the fix was something else."),
) + cjk.RETRACTS


# --- an answer that undoes the change the evidence shows worked -----------------------------------

REVERSES: tuple[Rule, ...] = (
    Rule("undo_the_change",
         _rx(r"\b(?:revert|undo|roll back|back out|remove|drop|take out)\s+(?:the |that |this |your |my )?"
             r"(?:\w+ )?(?:change|commit|fix|edit|call|line)s?\b|\bso revert it\b|"
             r"\b(?:should|must|can) (?:stay|remain|be left) without\b|"
             r"\brevertir (?:el|ese|este) cambio|\breverter (?:a|essa|esta) (?:mudança|alteração)|"
             r"\bannuler (?:le|ce) changement|\bmaak (?:de|deze) wijziging ongedaan|\b(?:die|diese) änderung rückgängig"),
         ("the change was unnecessary, so revert it", "The fixture should stay without a commit",
          "Remove the commit from the fixture", "revertir el cambio en conftest.py"),
         ("Revert-safe: the migration has a down step", "the commit inside the fixture releases the lock"),
         "An answer that undoes the change the log shows working reverses the evidence."),
    Rule("change_did_not_help",
         _rx(r"\b(?:does|did|do)(?:n'?t| not) (?:actually |really )?(?:fix|help|solve|matter)\b|"
             r"\b(?:was|is|were|are) (?:unnecessary|not needed|not necessary|irrelevant)\b|"
             r"\bno (?:hacía|hace) falta\b|\bn'(?:était|est) pas nécessaire\b|\bwar (?:unnötig|nicht nötig)\b"),
         ("Committing inside the fixture does not fix it", "the change was unnecessary"),
         ("Committing inside the fixture fixes it", "a commit is necessary before the worker reads"),
         "An answer that says the verified change did nothing contradicts the check that passed after it."),
)


# --- lines of a closing report that are its wrapper, not its lesson ----------------------------------

WRAPPER_LINES: tuple[Rule, ...] = (
    Rule("heading", _rx(r"^\s*#{1,6}\s+\S|^\s*\*\*[^*]{1,60}\*\*:?\s*$"),
         ("## Summary", "**Changes made:**"), ("**Cause:** the lock file was stale", "#42 is the issue number"),
         "A heading announces a section; the card keeps what the section says."),
    Rule("status_line",
         _rx(r"^(?=[^\n]{0,100}$)\s*(?:[-*•]\s*)?(?:[✅✔☑🎉🟢]|\(?(?:all )?(?:\d+ )?tests? (?:pass(?:ed|ing)?|green)\b|all (?:checks|tests) (?:pass|green)|"
             r"(?:build|ci|lint|typecheck)\s*(?:passes|passed|is green|:\s*(?:ok|pass(?:ed)?|green))\b|committed (?:as|in)\b|pushed to\b|"
             r"\d+ passed\b)"),
         ("✅ All tests pass", "- 18 tests passed", "Build: OK", "Committed as 2c6b7e0",
          "23 passed with -n 4, and the load test now takes 3 s instead of 10."),
         ("The test passes only with PYTHONPATH=. set",
          "Tests pass only when the fixture commits before the worker reads, because the worker opens its own connection"),
         "A status line says that it worked, which the Evidence already shows; the lesson is why."),
    Rule("status_opener",
         _rx(r"^(?:fixed|done|resolved|solved|green again|all green|back to green|it works|works now|all set)\b[^.!?\n]{0,40}[.!:]\s*$"),
         ("Fixed.", "Fixed for real this time.", "Green again: 58 passed."),
         ("Fixed the lock by closing the connection first, because the writer held it.",),
         "An opener that says it is fixed names neither cause nor fix."),
    Rule("commit_notice",
         _rx(r"^(?:committed|pushed|merged)\b[^.!?\n]{0,80}(?:as|in|to) `?[0-9a-f]{6,40}`?[^.!?\n]{0,40}[.!]?\s*$"),
         ("Committed the whole split as `0c7f3a2`.", "Pushed to main in 1a2b3c4d."),
         ("Committing inside the fixture released the lock.",),
         "Where the change landed is history, not the lesson."),
    Rule("commit_subject",
         re.compile(r"^(?:feat|fix|chore|docs|refactor|test|build|ci|perf|style)(?:\([\w./-]+\))?!?: [a-z`]"),
         ("feat: add project-level review page for ongoing annotations (spotter-gqc.5)", "fix(cli): drop duplicate parser"),
         ("Fix: added `_txlock=immediate` to the DSN", "**Fix:** the fixture commits"),
         "A commit subject glued to the report is where the work landed, not what was learned."),
    Rule("prediction",
         _rx(r"\b(?:should (?:now )?(?:turn green|pass|work|be (?:fixed|green|good|resolved))|will (?:now )?(?:pass|work)|"
             r"ought to (?:pass|work))\b"),
         ("CI should turn green now", "the tests should pass"),
         ("the import fails because QAction moved",),
         "A prediction is not a result; a card states what the log showed."),
)


# --- an error that is the environment's, not a slip in code the agent just wrote ---------------------

ENVIRONMENT: tuple[Rule, ...] = (
    Rule("environment_error",
         re.compile(r"\b(?:ModuleNotFoundError|ImportError|No module named|[Cc]ommand not found|not recognized as|"
                    r"[Pp]ermission denied|EACCES|EPERM|[Oo]peration not permitted|[Rr]ead-only file system|"
                    r"[Cc](?:annot|ould not) lock|[Cc]onnection refused|ECONNREFUSED|[Tt]imed out|[Nn]ame resolution|"
                    r"[Cc]ertificate verify|SSL(?:Error)?|[Ss]andbox|[Oo]ut of memory|[Nn]o space left|[Ii]ncompatible|"
                    r"[Uu]nsupported (?:version|platform)|[Nn]ot installed|[Cc]annot open shared object|DLL load failed|"
                    r"xcb|QT_QPA_PLATFORM|DISPLAY|PYTHONPATH|ERESOLVE|peer dep|[Rr]ate limit|HTTP 40[13]|[Qq]uota)"),
         ("ModuleNotFoundError: No module named 'app'", "fatal: cannot lock ref 'refs/heads/x'",
          "ImportError: libEGL.so.1: cannot open shared object file", "sh: pnpm: command not found"),
         ("NameError: name 'totl' is not defined", "AssertionError: assert 3 == 4", "SyntaxError: invalid syntax"),
         "A failure of a dependency, a tool, the platform or the environment transfers to the next session even when "
         "the fix touched only the agent's own files."),
)


# --- a failure seen on another route than the shell the agent checks in ------------------------------

OTHER_ROUTE: tuple[Rule, ...] = (
    Rule("ci_route",
         _rx(r"\b(?:CI|GitHub Actions|GH Actions|workflow|pipeline|Jenkins|GitLab|Travis|CircleCI|Buildkite|"
             r"Azure DevOps|runner|build server|on (?:the )?(?:server|staging|production|prod)|in production)\b"),
         ("CI fails with this:", "the GitHub Actions job fails", "It breaks on staging"),
         ("pytest fails locally", "the import fails when I start the GUI"),
         "A failure seen on CI, a server or another machine is verified only on that route, never by a local run."),
)


# --- a fix that reaches outside the agent's own lines: it imports what a dependency provides -------------

DEPENDENCY_FIX: tuple[Rule, ...] = (
    Rule("adds_import",
         # A package path (dotted, or a capitalised framework module), not a bare stdlib name (`import json`).
         re.compile(r"(?m)^\s*(?:import (?:[a-z_]\w*\.\w|[A-Z])|from (?:\w*[A-Z0-9]\w*|\w+\.[\w.]+) import \w|"
                    r"use [A-Z][\w:]*|require ['\"][@\w-]+/|alias [A-Z][\w.]*|using [A-Z][\w.]*;|#include <)"),
         ("    import Phoenix.ChannelTest", "from PySide6.QtGui import QAction", "use Tokio::Mutex",
          "from django.conf import settings"),
         ("x = 1", "# imported later", "import json", "from typing import Any"),
         "A fix that imports what a library provides teaches that library's layout, even in the agent's own new file."),
)


# --- the user asking the agent to remember something: their words are the card -------------------

REMEMBERS: tuple[Rule, ...] = (
    Rule("remember_cue",
         _rx(r"^\s*(?:please[,\s]+)?(?:remember|keep in mind|don'?t forget|never forget|from now on|going forward|"
             r"recuerda|ten en cuenta|no olvides|a partir de ahora|lembre(?:-se)?|lembra|não esqueça|a partir de agora|"
             r"souviens-toi|rappelle-toi|n'oublie pas|retiens|désormais|onthoud|vergeet niet|vanaf nu|merk dir|"
             r"denk daran|vergiss nicht|ab jetzt|von nun an|pamatuj(?: si)?|zapamatuj si|nezapomeň|od teď|"
             r"기억해(?:\s*줘|\s*주세요)?|기억하세요|앞으로는)\b[\s:,.!-]*(?:that\s+|que\s+|dass\s+|dat\s+|že\s+)?"),
         ("Remember: always pnpm, never npm", "please remember that staging uses port 8443",
          "recuerda: siempre pnpm, nunca npm", "Onthoud: nooit npm", "기억해: 항상 pnpm"),
         ("I remember this worked last week", "do you remember why the test failed?", "Note: I pushed the branch, please review"),
         "A user who asks the agent to remember something states a rule in their own words; the card keeps them."),
) + cjk.REMEMBERS
MAX_REMEMBERED = 400  # longer than this, a message that opens with "remember" is a task, not a rule to keep


# --- the user stating a choice: one option over another, or a rule with its reason -------------------

DECISIONS: tuple[Rule, ...] = (
    Rule("choice_en",
         _rx(r"\b(?:instead of|rather than|because|so that|never|always|prefer|don'?t use|do not use|we(?:'ll| will) "
             r"(?:use|go with|keep)|let'?s (?:use|go with|keep|stick)|decided|decision|not \w+(?: \w+)?,? but)\b"),
         ("Remember: always pnpm, never npm", "use httpx instead of requests because we need async",
          "let's go with Postgres"),
         ("Add /schema endpoint and frontend button", "add a dark mode toggle"),
         "A decision is a choice: one option over another, or a rule with its reason; a request is not one."),
    Rule("choice_other",
         _rx(r"\b(?:en lugar de|en vez de|porque|siempre|nunca|prefiero|au lieu de|parce que|toujours|jamais|plutôt|"
             r"in plaats van|omdat|altijd|nooit|statt|anstatt|weil|immer|niemals|místo|protože|vždy|nikdy|em vez de|"
             r"sempre)\b|대신|때문에|항상|절대"),
         ("usa siempre pnpm, nunca npm", "toujours pnpm, jamais npm", "vždy pnpm, nikdy npm", "항상 pnpm을 쓰세요"),
         ("añade un botón",),
         "The same choices outside English."),
) + cjk.DECISIONS


# --- a diagnosis said as a guess: never the conclusion of a step nothing but its own change proved ---------

HEDGES: tuple[Rule, ...] = (
    Rule("hedged",
         _rx(r"\b(?:might|maybe|perhaps|probably|possibly|likely|i think|i suspect|could be|may be|not sure|seems?|"
             r"suggests?|appears? to|my guess|quizás|quizá|probablemente|peut-être|probablement|misschien|waarschijnlijk|"
             r"vielleicht|wahrscheinlich|možná|asi|talvez|provavelmente)\b|아마|것 같"),
         ("The error suggests libssl-dev is missing", "This is probably a caching issue", "quizás falta la variable"),
         ("The test config is missing secret_key_base.",),
         "A guess before a change is not what the change proved: the evidence is said instead."),
) + cjk.HEDGES


# --- the user saying where a failure shows: here too, or something else entirely --------------------------

LOCAL_ROUTE: tuple[Rule, ...] = (
    Rule("seen_locally",
         _rx(r"\b(?:locally|on my (?:machine|laptop)|here too|reproduces? here|en local|localmente|lokaal|lokal|"
             r"lokálně|lokalne)\b|로컬"),
         ("fails locally AND on ci", "it breaks on CI and on my machine", "falla en local y en CI"),
         ("only on CI", "CI is red, passes for me"),
         "A failure the user also sees locally is proven gone by a local check."),
)

UNRELATED: tuple[Rule, ...] = (
    Rule("moves_on",
         _rx(r"^\W*(?:ok(?:ay)?|thanks|great|cool|nice)?[,.!\s]*(?:unrelated|another (?:one|thing|issue|problem|question)|"
             r"(?:a )?new (?:issue|problem|task|question)|different (?:issue|problem|question)|separate(?:ly)?|next,|"
             r"otra cosa|otro problema|autre chose|un autre problème|iets anders|ander probleem|etwas anderes|"
             r"anderes problem|jiná věc|jiný problém|další věc|outra coisa|outro problema)\b|^\W*다른"),
         ("ok unrelated, i moved the venv to 3.12", "another one, GET /routes/{id} blows up", "otra cosa: el login falla"),
         ("no, that's not it", "still failing"),
         "The user's next words open a new problem: what they paste is about that, not a rejection of the card."),
) + cjk.UNRELATED


# --- an error the compiler or type checker reports: any build of that code exercises it ------------------

COMPILE_ERRORS: tuple[Rule, ...] = (
    Rule("compile_error",
         re.compile(r"\berror\[E\d{4}\]|\berror TS\d+|\bTS\d{4}:|\bCompileError\b|\bSyntaxError\b|\bcannot find (?:derive )?"
                    r"(?:macro|type|value|function|module|symbol)\b|\bundefined (?:reference|function|method)\b|"
                    r"\bcannot borrow\b|\bmismatched types\b|\bis not assignable to\b|\bundeclared\b|\bcannot compile\b"),
         ("error[E0502]: cannot borrow `self.records` as mutable", "error: cannot find derive macro `Parser` in this scope",
          "src/api.ts(12,5): error TS2339: Property 'json' does not exist"),
         ("AssertionError: 3 != 4", "ConnectionRefusedError: [Errno 111]"),
         "A compile-time error is exercised by any build or test run of that code: it either compiles now or not."),
)


# --- the user asking to know something: a question a checked answer settles ------------------------------

QUESTIONS: tuple[Rule, ...] = (
    Rule("asks_en",
         _rx(r"^\W*(?:\w+\W+){0,3}?(?:how (?:do|does|can|should|would)|how to|why (?:does|do|is|are|did)|what(?:'s| is| are| does)|"
             r"what \w+(?: \w+)? (?:do|does|should|is|are)|where (?:is|are|do|does)|which \w+ (?:do|does|should))\b[^\n]{0,300}"),
         ("unrelated - how do i add a migration again?", "what driver name do I pass to sql.Open?",
          "how does fetchr handle 429 Too Many Requests?"),
         ("add a settings dialog", "can you fix the build?", "yes do that"),
         "A question asks to know something; a request asks for a change."),
    Rule("asks_other",
         _rx(r"^\W*¿?(?:cómo|por qué|qué|dónde|cuál|comment|pourquoi|quel(?:le)?|où|hoe|waarom|wat|waar|welke|wie|warum|"
             r"was|wo|welche|jak|proč|kde|který|como|onde|qual)\b|어떻게|왜"),
         ("¿cómo agrego una migración?", "comment ajouter une migration ?", "jak přidám migraci?", "마이그레이션은 어떻게 추가하나요?"),
         ("añade un botón",),
         "The same questions outside English."),
) + cjk.QUESTIONS


# --- the user agreeing to what the assistant proposed ----------------------------------------------------

GO_AHEAD: tuple[Rule, ...] = (
    Rule("agrees",
         _rx(r"^\W*(?:yes|yep|yeah|sure|ok(?:ay)?|agreed|approved|go ahead|go for it|do it|please do|sounds good|"
             r"let'?s do (?:it|that)|sí|si|vale|dale|d'accord|oui|ja|jawel|prima|ano|jo|sim|pode|네|좋아요?|그렇게 해)\b"),
         ("agreed, do it. fwiw the stuck upgrade was the reason", "yes do that", "sí, hazlo", "d'accord, vas-y",
          "ano, udělej to", "네 그렇게 해주세요"),
         ("why does it hang?", "add a button"),
         "A go-ahead confirms the choice the assistant proposed; with a problem behind it and a reason, it is a decision."),
) + cjk.GO_AHEAD


# --- the assistant handing the turn back: the user's next message answers it --------------------------

WAITS_FOR_USER: tuple[Rule, ...] = (
    Rule("waits_en",
         _rx(r"\b(?:let me know|tell me (?:which|what|whether|if|when)|please (?:rename|remove|delete|run|confirm|choose|"
             r"pick|provide|share|install|restart|paste|send|check)|do you want me to|would you like me to|"
             r"once (?:that'?s|it'?s|you'?ve|you have) (?:done|fixed|resolved|installed)|when you'?re ready|"
             r"(?:then |and )?run (?:it|this|these|the following) (?:yourself|in your terminal|and (?:tell|let|paste)))"),
         ("Please rename or remove one of them. Let me know which one to keep.",
          "Do you want me to recreate the spec from your original description?",
          "Run this in your terminal and paste the output."), ("I renamed the file.", "Let me check the logs first."),
         "An assistant that asks the user to act or choose ends its turn waiting: the reply carries on the same task."),
    Rule("waits_other",
         _rx(r"\b(?:av[íi]same|d[íi]me|me (?:diga|avise|informe)|por favor,? (?:execute|rode|instale|compartilhe|"
             r"confirme|ejecuta|instala|comparte|confirma)|dites-moi|faites-moi savoir|laat (?:me|het) weten|"
             r"lass(?:en sie)? (?:mich|es mich) wissen|sag(?:en sie)? mir|dej(?:te)? mi vědět|napište mi)\b|알려\s?주세요"),
         ("Por favor, compartilhe a mensagem de erro exata.", "Avísame cuál prefieres.", "Dites-moi lequel garder.",
          "Laat me weten welke je wilt houden.", "어느 것을 유지할지 알려주세요."), ("Instalé la dependencia.", "J'ai corrigé l'import."),
         "The same hand-back outside English."),
) + cjk.WAITS_FOR_USER


# --- a sentence that points back instead of saying what was learned ------------------------------------

POINTERS: tuple[Rule, ...] = (
    Rule("confirms_lead",
         _rx(r"^(?:so\s+)?(?:that|this|which|it)\s+(?:confirms|proves|explains|shows|verifies)\b|"
             r"^(?:that|this)(?:'s| is| was) (?:it|the (?:one|culprit))\b|"
             r"^(?:eso|esto) (?:confirma|demuestra)|^isso (?:confirma|prova)|^(?:cela|ça|ceci) (?:confirme|prouve)|"
             r"^dat bevestigt|^das (?:bestätigt|beweist)|^to potvrzuje|^(?:이것|그것)(?:이|은)? 확인"),
         ("That confirms it was a Qt platform plugin issue.", "This proves the cache was stale.",
          "Eso confirma que era el plugin.", "Das bestätigt den Verdacht."),
         ("The cache was stale because the key ignored the locale.", "That flag must be set before import."),
         "A sentence that confirms an earlier one names nothing on its own: a title is never made of it."),
)

# A lead that refers to another card or commit before the cause itself: cut, the cause after it stays.
POINTER_LEADS: tuple[Rule, ...] = (
    Rule("same_as_lead",
         _rx(r"^(?:(?:the )?same (?:root )?(?:cause|issue|problem|bug|fix)(?: as [^:.]{1,80})?|as (?:before|suspected|expected)|"
             r"(?:la )?misma causa(?: que [^:.]{1,80})?|(?:a )?mesma causa(?: que [^:.]{1,80})?|"
             r"(?:la )?même cause(?: que [^:.]{1,80})?|dezelfde oorzaak(?: als [^:.]{1,80})?|"
             r"(?:die )?gleiche ursache(?: wie [^:.]{1,80})?|stejná příčina(?: jako [^:.]{1,80})?)\s*[:,—–-]\s+"),
         ("Same root cause as packages/ui (`3f9c2ab`): the config had no environment",
          "As suspected: the lock was held", "Misma causa que antes: faltaba la variable"),
         ("Same as the docs say, set it first", "The root cause: a stale lock"),
         "\"Same root cause as X:\" points at another place; the cause it then states is the lesson."),
)

# A sentence about a suspect cleared on the way: true, but not what the card teaches.
RULED_OUT: tuple[Rule, ...] = (
    Rule("cleared_suspect",
         _rx(r"\b(?:can(?:'|no)?t|cannot|could(?:n'?t| not)|does(?:n'?t| not)|did(?:n'?t| not)|won'?t) (?:help|matter)\b|"
             r"\bwas (?:applied|set|configured|in place) correctly\b|\b(?:was|is) (?:not|n't) (?:enough|sufficient)\b|"
             r"\bruled out\b|\bno ayuda\b|\bnão ajuda\b|\bn'aide pas\b|\bhelpt niet\b|\bhilft nicht\b|\bnepomáhá\b|"
             r"도움이 되지 않"),
         ("the earlier fix was applied correctly on every pooled connection, but it can't help here",
          "raising the timeout doesn't help", "subir el timeout no ayuda"),
         ("busy_timeout now makes BEGIN wait", "this helps the cache hit rate"),
         "A suspect the session checked and cleared is context, never the title of what was learned."),
)
