"""The claim reader: what an agent's final answer claims, when the agent stated no claim of its own.

An agent instrumented by stock OpenTelemetry (OpenInference, GenAI conventions) never writes
`agenttwin.outcome.claimed`; its final answer is all there is. `read_claim` classifies that answer as
SUCCESS, FAILURE, PARTIAL, ESCALATED, REFUSED or UNKNOWN with deterministic rules, and says which rule
decided and how sure that rule is. The rule sets are versioned (`CLAIM_RULE_SETS`); a reading names its
set in `inferred_by`. This is `rules-v2` (docs/guides/claims.md has the measured figures):

1. ``empty`` — no text → UNKNOWN.
2. ``json`` — an answer that is a JSON object or array is read through: the first text under `response`,
   `output`, `final_output`, `answer`, `final_answer`, `message`, `content`, `text`, `reply` or `result`
   (at most MAX_JSON_DEPTH levels, MAX_JSON_CHARS characters) is read instead; ``not-prose`` when none.
3. The answer is cut into sentences. A question ("Would you like me to proceed?"), a conditional ("If you
   confirm, …", "Once the balance is paid, …") claims nothing; a claim phrase after a negation or a modal
   ("not completed", "you should be all set", "I can transfer you", "I recommend transferring you", "will
   be processed") claims nothing either.
4. ``hedged`` — the agent says it does not know the outcome ("not sure whether") → UNKNOWN.
5. ``escalated`` — a hand-over that happens: "I will transfer you", "transferring you now … please hold
   on", "has been escalated", "a specialist will contact you", "opened a ticket" → ESCALATED. An *offer*
   of a transfer is no transfer.
6. ``partial`` — a success and a failure or refusal in one sentence joined by "but", "however", "except",
   "although" or "while", or a success with "partially", "could only", "remain unchanged" → PARTIAL.
7. ``succeeded`` — the action happened: "has been cancelled / initiated / submitted / made", "it's been
   added", "is confirmed", "I've set a reminder", "successfully", "went through", "glad that resolved the
   issue". A failure word in another sentence ("the payment was declined earlier") does not flip it, but
   lowers the confidence (``succeeded-despite-failure``).
8. ``failed`` — the action was tried and did not happen, or cannot for an operational reason ("could not
   be made", "was unable", "failed", "error", "not available any more", "not enough seats") → FAILURE;
   it wins over a refusal in the same answer.
9. ``refused`` — declines now, on policy or remit ("I'm unable to cancel", "I cannot", "cannot be
   modified", "not allowed", "not eligible", "non-refundable") → REFUSED.
10. ``no-claim`` — anything else (questions, offers, information, pleasantries) → UNKNOWN.

Each rule has a confidence (`CONFIDENCE`). A reading whose confidence is below CONFIDENCE_THRESHOLD is
UNKNOWN (its rule becomes ``abstained:<rule>``, its confidence is kept), and UNKNOWN is never counted as a
disproved success (evaluation/contradiction.py): the reader abstains rather than guesses. The opt-in model
classifier (evaluation/claim_model.py) answers the same question with a language model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from types import MappingProxyType

from evaluation.claim_rules_v1 import read_claim_v1
from evaluation.claim_status import (
    CLAIM_STATUSES,
    ESCALATED,
    FAILURE,
    MAX_ANSWER_CHARS,
    PARTIAL,
    REFUSED,
    SUCCESS,
    UNKNOWN,
    ClaimReading,
    bounded,
    normalize_answer,
)

RULES_ID = "rules-v2"  # the current rule set: its name on every claim it infers
CONFIDENCE_THRESHOLD = 0.6  # below it a reading is UNKNOWN ("abstained:<rule>") and raises no alert
MAX_JSON_CHARS = 100_000  # a JSON answer longer than this is not parsed (not-prose)
MAX_JSON_DEPTH = 4  # how deep a JSON answer is searched for its text
CONFIDENCE: Mapping[str, float] = MappingProxyType(
    {
        "empty": 1.0,
        "not-prose": 1.0,
        "hedged": 0.8,
        "escalated": 0.9,
        "partial": 0.75,
        "succeeded": 0.9,
        "succeeded-weak": 0.7,  # only a bare "done", "complete", "confirmed", "all set"
        "succeeded-despite-failure": 0.65,  # a strong success, and a failure or refusal in another sentence
        "mixed": 0.5,  # a weak success and a failure or refusal: abstain
        "failed": 0.85,
        "refused": 0.8,
        "no-claim": 0.9,
    }
)

_WORD = re.compile(r"[a-z']+")
_ANSWER_KEYS = (
    "response",
    "output",
    "final_output",
    "answer",
    "final_answer",
    "message",
    "content",
    "text",
    "reply",
    "result",
)


def _rx(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")")


_QUESTION_START = re.compile(
    r"^(?:would|could|shall|should|do|does|did|can|may|is|are|will|what|which|when|where|who|how|why|"
    r"anything else|is there)\b"
)
_QUESTION_TAIL = re.compile(
    r"[,;:]\s+(?=(?:would|could|shall|should|do|does|did|can|may|is|are|will|what|which|when|where|who|how|"
    r"why|anything)\b)"
)
_CONDITIONAL_START = re.compile(
    r"^(?:if|once|after|when|whenever|unless|until|before|as soon as|in case|should you|provided|to proceed)\b"
)
# Words that, among the few before a claim phrase, make it no claim. A success is undone by a negation
# or a modal ("not completed", "you should be all set", "will be processed", "since it was booked"); a
# hand-over by a negation or an offer ("I can transfer you", "I recommend transferring you"); a failure or a
# refusal only by a hypothetical ("if it fails", "it might not be available").
_NEGATIONS = frozenset(
    [
        "not",
        "n't",
        "never",
        "no",
        "cannot",
        "can't",
        "unable",
        "without",
        "nothing",
        "neither",
        "nor",
        "hasn't",
        "haven't",
        "hadn't",
        "isn't",
        "aren't",
        "wasn't",
        "weren't",
        "didn't",
        "don't",
        "doesn't",
        "won't",
        "couldn't",
        "shouldn't",
        "wouldn't",
    ]
)
_HYPOTHETICAL = frozenset(["if", "unless", "whether", "might", "would", "should", "once"])
_SUCCESS_GUARD = (
    _NEGATIONS
    | _HYPOTHETICAL
    | frozenset(
        [
            "could",
            "will",
            "'ll",
            "i'll",
            "we'll",
            "can",
            "after",
            "before",
            "until",
            "when",
            "need",
            "needs",
            "since",
            "because",
            "though",
        ]
    )
)
_FAILURE_GUARD = _HYPOTHETICAL | frozenset(["without"])  # "without fail"
_HANDOVER_GUARD = (
    _NEGATIONS | _HYPOTHETICAL | frozenset(["can", "could", "may", "recommend", "suggest", "offer", "like"])
)
_GUARD_WORDS = 4  # how many words before a claim phrase are checked
_QUOTED = re.compile(r'"[^"]{0,400}"')  # a quoted message the agent sent or shows claims nothing itself

_HEDGED = _rx(
    r"(?:not sure|unsure|unclear|don't know|do not know) (?:whether|if)\b",
    r"(?:can't|cannot|can not) (?:confirm|tell|verify) (?:whether|if)\b",
)
_ESCALATED = _rx(
    r"(?:i|we)(?:'ll| will| am going to|'m going to| shall)(?: now)?(?: need to| have to)? "
    r"(?:transfer|connect|escalate|hand|forward|pass) (?:you|your|this|it|the)\b",
    r"(?:i'm|i am|we're|we are) (?:now )?(?:transferring|connecting|escalating) (?:you|your|this|it)\b",
    r"(?:transferring|connecting) you now\b",
    r"(?:proceed|go ahead) with the transfer now\b",
    r"(?:has|have|'ve|had|was|were) (?:been )?(?:transferred|escalated|forwarded|handed over|passed on)\b",
    r"(?:i|we) (?:transferred|escalated|forwarded) (?:you|your|this|it|the)\b",
    r"(?:opened|created|raised|filed|logged) (?:a|an) (?:support )?(?:ticket|case)\b",
    r"(?:let|told|informed|notified|alerted) (?:my|the|a|our) (?:manager|supervisor|specialist|team)\b",
    r"(?:team|specialist|specialists|supervisor|manager|agent|representative|colleague|department|they|who)s?"
    r"(?:'ll| will| shall) (?:contact|reach|call|get back|follow up|be in touch|give you a call|review|take over)\b",
    r"let me (?:connect|transfer) you\b",
    r"(?:handed|passed|sent|forwarded|assigned|referred|routed) (?:it|this|them|your \w+|the \w+)(?: \w+)? "
    r"(?:over |on )?(?:to|for) (?:the |a |an |our |your )?(?:\w+ )?(?:team|department|specialist|manager|"
    r"supervisor|review|approval|agent|colleague)",
    r"pending (?:approval|review)\b",
    r"awaiting (?:approval|review)\b",
)
_HOLD = _rx(r"please hold\b", r"hold on\b", r"while i (?:connect|transfer|do that)\b")
_HANDOVER_WORDS = _rx(r"transfer", r"human", r"agent", r"specialist", r"supervisor", r"representative")
_DONE_VERBS = (
    r"booked|cancell?ed|set|set up|added|created|sent|scheduled|rescheduled|updated|changed|reset|deleted|"
    r"removed|marked|moved|logged|issued|processed|submitted|refunded|placed|confirmed|made|completed|"
    r"responded|shared|initiated|applied|upgraded|downgraded|reserved|ordered|filed|renamed|unlocked|"
    r"restored|activated|reactivated|credited|waived|rebooked|modified|exchanged|paid|copied|replied|"
    r"emailed|messaged|texted|saved|edited|enabled|disabled|rented|requested|renewed|reversed|returned|"
    r"transferred|approved|finished|resolved|fixed"
)
# Participles that say nothing was done, or describe rather than report ("is located", "was delayed").
_NOT_DONE_PARTICIPLES = (
    r"declined|rejected|denied|refused|delayed|blocked|suspended|flagged|disputed|unable|based|located|called|"
    r"named|needed|required|expected|supposed|allowed|permitted|limited|restricted|included|purchased|"
    r"interested|concerned|sorry|pleased|happy|located|listed|priced|rated|considered|designed|intended|"
    r"used|associated|linked|related|charged|fixed|scheduled to|cancell?ed by the airline"
)
_STRONG_SUCCESS = _rx(
    # "has been cancelled", "have now been added", "it's been added", "had been made"
    r"(?:has|have|had|'s|'ve) (?:now |also |already |just |all )?been (?:successfully |now |fully |also )?"
    r"(?!" + _NOT_DONE_PARTICIPLES + r")"
    r"(?:[a-z]{3,}ed|" + _DONE_VERBS + r"|done|sent|set|made|paid|put)\b",
    # "is confirmed", "was rerouted to your office", "is booked for May 4" — not "is booked in economy",
    # "was made on 2024-05-02", "is scheduled to depart" (descriptions)
    r"(?:is|are|was|were) (?:now |all |also )?(?!" + _NOT_DONE_PARTICIPLES + r")"
    r"(?:[a-z]{3,}ed|" + _DONE_VERBS + r"|done|sent|set|made|paid|saved)"
    r"(?!\s+(?:in|on|at|under|from|more|over|before|than|since|to (?:depart|arrive|leave|land|start|begin|end|"
    r"expire|run|take))\b)",
    r"(?:i|we) (?:was|were) able to\b",
    r"^(?:success|refunded|cancell?ed|booked|done)\b",
    r"(?:refund|payment|order|booking|reservation|request)(?: of [$\d.,]+(?: [a-z]{3})?)? "
    r"(?:issued|processed|completed|confirmed|submitted|placed|approved)\b",
    r"(?:is|are|was|were) successfully \w+",
    # "I've set a reminder", "we cancelled the order", "I have gone ahead and booked"
    r"(?:i|we)(?:'ve| have| had)? (?:now |just |also |already |successfully |gone ahead and |went ahead and )*"
    r"(?:" + _DONE_VERBS + r")\b",
    r"(?:i|we)(?:'ve| have) (?:your|the) \w+ (?:made|booked|done|set up|scheduled)\b",
    r"successful(?:ly)?\b",
    r"(?:went|gone|has gone|have gone) through\b",
    r"congratulations\b",
    r"you(?:'re| are) (?:now )?(?:logged|signed) (?:in|out)\b",
    r"logged you (?:in|out)\b",
    r"on (?:its|their|the) way\b",
    r"glad (?:that|it|this) (?:resolved|fixed|worked|solved|sorted|did the trick)",
)
_WEAK_SUCCESS = _rx(r"done\b", r"all set\b", r"complete[d]?\b", r"confirmed\b", r"(?:is|are) now\b")
_FAILED = _rx(
    r"(?:was|were) (?:unable|not able)\b",
    r"(?:wasn't|weren't) able\b",
    r"could(?:n't| not)\b",
    r"fail(?:ed|s|ure)?\b",
    r"error\b",
    r"went wrong\b",
    r"rejected\b",
    r"timed out\b",
    r"nothing (?:was|has been|had been) (?:changed|done|[a-z]{3,}ed)\b",
    r"(?:was|were|been|got) (?:declined|rejected|denied|refused)\b",
    r"did(?:n't| not) (?:go through|work|succeed|complete)\b",
    r"not (?:available|avaialble)\b",
    r"no longer available\b",
    r"unavailab",
    r"(?:aren't|are not|isn't|is not|not) enough\b",
    r"no (?:\w+ ){0,2}(?:available|found)\b",
    r"there (?:are|is|were|was) no (?:\w+ ){0,4}available\b",
    r"sold out\b",
    r"(?:cannot|can't|can not) (?:authenticate|verify you|find|locate)\b",
)
# "was not processed", "not completed": said to be undone; a refusal in the same answer explains why instead
_NOT_DONE = _rx(
    r"(?:was|were|has|have|had|is|are)(?:n't| not) (?:been )?(?:completed|processed|made|done|sent|booked|"
    r"cancell?ed|canceled|issued|applied|refunded|placed|submitted|changed|updated|successful)\b",
    r"^not (?:completed|done|processed)\b",
)
_REFUSED = _rx(
    r"(?:i|we)(?:'m| am| are|'re) (?:unable|not able) to\b",
    r"(?:i|we)(?:'m| am| are|'re) not (?:authorized|authorised|allowed|permitted) to\b",
    r"(?:i|we) (?:cannot|can't|can not|won't|will not)\b",
    r"(?:cannot|can't|can not) be (?:modified|changed|cancell?ed|canceled|added|refunded|exchanged|processed|"
    r"returned|made|upgraded|downgraded|altered|removed|applied|issued|booked|completed|done)\b",
    r"not (?:permitted|allowed|eligible|refundable)\b",
    r"can only be (?:cancell?ed|canceled|modified|changed|refunded|exchanged|returned)\b",
    r"non-?refundable\b",
    r"against (?:our |the |company )?polic",
    r"(?:does|do)(?:n't| not) allow\b",
    r"(?:i|we) (?:can|may) only (?:assist|help)\b",
    r"must decline\b",
    r"would violate\b",
    r"my options are limited\b",
    r"not something (?:i|we) can\b",
    r"outside (?:of )?(?:my|the|our) (?:scope|remit)\b",
)
_CONTRAST = _rx(r"but\b", r"however\b", r"although\b", r"except\b", r"while\b")
_PARTIAL = _rx(
    r"partial(?:ly)?\b",
    r"could only\b",
    r"only (?:some|part|one|two|\d+) of\b",
    r"(?:one|two|three|four|half|some|\d+) of (?:the|your) (?:\w+ )?\w+",
    r"part of (?:your|the) (?:request|order|refund|amount)\b",
    r"remains? unchanged\b",
    r"the rest\b",
    r"still (?:pending|blocked|on hold)\b",
)
_PARTIAL_ALONE = _rx(r"partially\b", r"could only\b", r"only (?:some|part|one|two|\d+) of\b")


def _json_text(value: object, depth: int) -> str | None:
    """The answer text inside a parsed JSON answer, searched breadth-first, at most `depth` levels down."""
    if isinstance(value, str):
        return value
    if depth <= 0:
        return None
    if isinstance(value, dict):
        for key in _ANSWER_KEYS:
            found = value.get(key)
            if isinstance(found, str) and found.strip():
                return found
        for key in _ANSWER_KEYS:
            if isinstance(value.get(key), (dict, list)):
                text = _json_text(value[key], depth - 1)
                if text:
                    return text
        return None
    if isinstance(value, list):
        for item in value[:20]:
            text = _json_text(item, depth - 1)
            if text:
                return text
    return None


def unwrap_json(answer: str) -> str | None:
    """The text of a JSON-wrapped answer ({"response": "…"}); None when it is no JSON or holds no text.

    Hostile input is bounded: nothing longer than MAX_JSON_CHARS is parsed, nesting too deep for the
    parser is no JSON, and only MAX_JSON_DEPTH levels are searched."""
    stripped = answer.strip()
    if len(stripped) > MAX_JSON_CHARS:
        return None
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    text = _json_text(value, MAX_JSON_DEPTH)
    return text if text and text.strip() else None


def sentences(answer: str) -> list[tuple[str, bool]]:
    """(sentence, claims) for each sentence: `claims` is False for a question or a conditional."""
    # Line breaks are spaces here (normalize_answer): a list item runs on into the next unless punctuated.
    cleaned = _QUOTED.sub('"…"', re.sub(r"[*#`_]+", " ", normalize_answer(answer)))
    found: list[tuple[str, bool]] = []
    for part in re.split(r"(?<=[.!?])\s+|\s-\s", cleaned):
        part = part.strip(" -")
        if not part:
            continue
        if part.endswith("?"):
            head = _QUESTION_TAIL.split(part)
            if len(head) > 1:  # "That time was not available, what else would you like?": the head claims
                found.append((", ".join(head[:-1]), not _CONDITIONAL_START.match(part)))
            found.append((part, False))
            continue
        found.append((part, not (_QUESTION_START.match(part) or _CONDITIONAL_START.match(part))))
    return found


def _guarded(sentence: str, start: int, guard: frozenset[str]) -> bool:
    """A guard word among the few words before `start` (or "to" right before it): no claim there."""
    before = _WORD.findall(sentence[:start])[-_GUARD_WORDS:]
    return bool(before and before[-1] == "to") or any(word in guard or word.endswith("n't") for word in before)


def _claims(pattern: re.Pattern[str], sentence: str, guard: frozenset[str] = frozenset()) -> bool:
    return any(not _guarded(sentence, m.start(), guard) for m in pattern.finditer(sentence))


def read_claim_v2(answer: str | None) -> ClaimReading:
    """The claim an agent's final answer makes, by the rules-v2 rules above (pure, deterministic)."""
    text = bounded(answer or "").strip()
    rule = _decide(text, depth=2)
    status, name = rule
    confidence = CONFIDENCE[name]
    if status != UNKNOWN and confidence < CONFIDENCE_THRESHOLD:
        return ClaimReading(UNKNOWN, RULES_ID, f"abstained:{name}", confidence)
    return ClaimReading(status, RULES_ID, name, confidence)


def _decide(text: str, depth: int) -> tuple[str, str]:
    if not text:
        return UNKNOWN, "empty"
    if text[0] in "{[":
        inner = unwrap_json(text) if depth > 0 else None
        return _decide(inner.strip(), depth - 1) if inner else (UNKNOWN, "not-prose")
    parts = sentences(text)
    claiming = [s for s, claims in parts if claims]
    whole = " ".join(s for s, _ in parts)
    if _HEDGED.search(whole):
        return UNKNOWN, "hedged"
    if any(_claims(_ESCALATED, s, _HANDOVER_GUARD) for s in claiming) or (
        any(_claims(_HOLD, s) for s in claiming) and _HANDOVER_WORDS.search(whole)
    ):
        return ESCALATED, "escalated"
    strong = [i for i, s in enumerate(claiming) if _claims(_STRONG_SUCCESS, s, _SUCCESS_GUARD)]
    weak = [i for i, s in enumerate(claiming) if _claims(_WEAK_SUCCESS, s, _SUCCESS_GUARD)]
    failed = [i for i, s in enumerate(claiming) if _claims(_FAILED, s, _FAILURE_GUARD)]
    refused = [i for i, s in enumerate(claiming) if _claims(_REFUSED, s, _HYPOTHETICAL)]
    if not refused:
        failed += [i for i, s in enumerate(claiming) if _claims(_NOT_DONE, s, _FAILURE_GUARD)]
    succeeded = strong or weak
    against = failed or refused
    if succeeded and (
        any(_PARTIAL.search(claiming[i]) for i in succeeded)
        or any(i in against and (_CONTRAST.search(claiming[i]) or ";" in claiming[i]) for i in succeeded)
    ):
        return PARTIAL, "partial"
    if not succeeded and any(_PARTIAL_ALONE.search(s) for s in claiming):
        return PARTIAL, "partial"
    if succeeded and against:
        return (SUCCESS, "succeeded-despite-failure") if strong else (SUCCESS, "mixed")
    if strong:
        return SUCCESS, "succeeded"
    if weak:
        return SUCCESS, "succeeded-weak"
    if failed:
        return FAILURE, "failed"
    if refused:
        return REFUSED, "refused"
    return UNKNOWN, "no-claim"


ClaimRules = Callable[[str | None], ClaimReading]
# Every rule set, by the name its readings carry. A reading keeps the name of the set that made it; a
# replay reads again with DEFAULT_CLAIM_RULES, so a new set re-reads and old readings stay as they were.
CLAIM_RULE_SETS: Mapping[str, ClaimRules] = MappingProxyType({"rules-v1": read_claim_v1, RULES_ID: read_claim_v2})
DEFAULT_CLAIM_RULES = RULES_ID
RULE_SET_CHANGES: Mapping[str, str] = MappingProxyType(
    {
        "rules-v1": "Keyword rules tried in order; no confidence.",
        RULES_ID: (
            "Sentence rules: questions, conditionals, offers, negations and modals claim nothing; JSON-wrapped "
            "answers are read through; an offer of a transfer is no transfer; every reading has a confidence "
            "and abstains (UNKNOWN) below the threshold."
        ),
    }
)


def read_claim(answer: str | None, rules: str = DEFAULT_CLAIM_RULES) -> ClaimReading:
    """The claim `answer` makes, by the rule set `rules` (default: the current one). Pure, deterministic."""
    try:
        reader = CLAIM_RULE_SETS[rules]
    except KeyError:
        raise ValueError(f"unknown claim rule set {rules!r}; known: {', '.join(CLAIM_RULE_SETS)}") from None
    return reader(answer)


__all__ = [
    "CLAIM_RULE_SETS",
    "CLAIM_STATUSES",
    "CONFIDENCE",
    "CONFIDENCE_THRESHOLD",
    "DEFAULT_CLAIM_RULES",
    "ESCALATED",
    "FAILURE",
    "MAX_ANSWER_CHARS",
    "PARTIAL",
    "REFUSED",
    "RULES_ID",
    "SUCCESS",
    "UNKNOWN",
    "ClaimReading",
    "normalize_answer",
    "read_claim",
]
