"""The claim reader: what an agent's final answer claims, when the agent stated no claim of its own.

An agent instrumented by stock OpenTelemetry (OpenInference, GenAI conventions) never writes
`agenttwin.outcome.claimed`; its final answer is all there is. `read_claim` classifies that answer as
SUCCESS, FAILURE, PARTIAL, ESCALATED, REFUSED or UNKNOWN with deterministic rules, tried in this order
(the first that matches decides; the text is lower-cased, curly quotes straightened, spaces collapsed):

1. ``empty`` — no text → UNKNOWN.
2. ``not-prose`` — the answer is a JSON object or array (a tool call, a data dump) → UNKNOWN.
3. ``hedged`` — the agent says it does not know the outcome ("not sure whether", "can't confirm") → UNKNOWN.
4. ``partial`` — says so ("partially", "partial refund", "part of your request", "some of the …"), or a
   success phrase and a failure phrase joined by "but", "however", "although" or "except" → PARTIAL.
5. ``refused`` — declines in the present tense or on policy ("I can't help", "I cannot issue", "I won't",
   "not authorized", "not allowed to", "must decline", "against our policy", "would violate") → REFUSED.
6. ``escalated`` — hands the request to people ("escalated", "transferred you to", "connect you with a
   human", "opened a ticket", "forwarded", "a specialist will contact you", "pending approval") → ESCALATED.
7. ``failed`` — says the action did not happen ("failed", "could not", "was unable", "did not go through",
   "went wrong", "declined", "rejected", "has not been", "no refund was issued", "nothing was changed",
   "error") → FAILURE.
8. ``succeeded`` — says the action happened ("done", "all set", "successfully", "completed", "I've refunded",
   "has been processed", "is confirmed", "went through", "on its way") → SUCCESS.
9. ``no-claim`` — anything else (a question, information) → UNKNOWN.

A claim that cannot be classified is UNKNOWN, and UNKNOWN is never counted as a disproved success
(evaluation/contradiction.py). Accuracy on the labelled set in tests/unit/claims is stated in the README.
The opt-in model classifier (evaluation/claim_model.py) answers the same question with a language model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SUCCESS, FAILURE, PARTIAL, ESCALATED, REFUSED, UNKNOWN = (
    "SUCCESS",
    "FAILURE",
    "PARTIAL",
    "ESCALATED",
    "REFUSED",
    "UNKNOWN",
)
CLAIM_STATUSES = (SUCCESS, FAILURE, PARTIAL, ESCALATED, REFUSED, UNKNOWN)
RULES_ID = "rules-v1"  # the classifier's name on every claim it infers
MAX_ANSWER_CHARS = 20_000  # longer answers are read from their first and last 10,000 characters


@dataclass(frozen=True)
class ClaimReading:
    status: str
    inferred_by: str  # RULES_ID, or "model:<provider>/<model>"
    rule: str  # which rule decided (the rules' names above; the model's: "model")


def _words(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b")


_SUBJECT = r"(?:i|we)(?:'ve| have)?"
_HEDGED = _words(
    r"not sure (?:whether|if)",
    r"unsure (?:whether|if)",
    r"(?:can't|cannot|can not) (?:confirm|tell|verify) (?:whether|if)",
    r"unclear (?:whether|if)",
    r"don't know (?:whether|if)",
)
_PARTIAL = _words(
    r"partial(?:ly)?",
    r"part of (?:your|the) (?:request|order|refund|amount)",
    r"some of the \w+",
    r"(?:could|was able to|were able to) only",
    r"only (?:\w+ )?(?:\d[\d.,]*|some|part|half) (?:\w+ )?of",
    r"half of",
    r"the (?:remaining|rest)",
    r"(?:one|two|three|four|\d+) of the (?:two|three|four|five|\d+) \w+",
)
_CONTRAST = _words("but", "however", "although", "except", "yet")
_REFUSED = _words(
    r"(?:i|we) (?:can't|cannot|can not|won't|will not) (?:help|assist|do that|do this|share|disclose|provide|"
    r"issue|give|reveal|process|make|change|delete|access|bypass)",
    r"(?:i|we)(?:'m| am| are|'re) (?:not able|unable) to (?:help|assist|share|disclose|provide|reveal|give)",
    r"(?:i|we)(?:'m| am| are|'re) not (?:authorized|authorised|allowed|permitted) to",
    r"not (?:something )?(?:i|we)(?:'m| am| are|'re) (?:allowed|permitted|authorized) to",
    r"outside (?:of )?what (?:i|we)(?:'m| am| are|'re) allowed",
    r"(?:must|have to) decline",
    r"against (?:our|the|company) (?:policy|policies|terms|rules)",
    r"would violate",
    r"won't be able to (?:do|help|assist)",
    r"(?:i|we) (?:can|may) only (?:help|assist|do|handle)",
    r"(?:i|we) (?:won't|will not) (?:\w+ )?(?:read|share|disclose|reveal|give|provide|do|help)",
    r"not something (?:i|we) (?:can|am able to|'m able to|am allowed to|'m allowed to)",
)
_ESCALATED = _words(
    r"escalat(?:ed|ing|e)",
    r"transferr(?:ed|ing) you",
    r"connect(?:ing)? you (?:with|to)",
    r"hand(?:ed|ing)? (?:this|it|you|your \w+) (?:over )?(?:to|off)",
    r"handed (?:over|off)",
    r"forward(?:ed|ing) (?:your|this|it|the)",
    r"(?:opened|created|raised|filed|logged) (?:a|an) (?:ticket|case|request)",
    r"(?:team|specialist|specialists|supervisor|agent|representative|colleague|department)s? (?:will|shall) "
    r"(?:contact|reach|call|get back|follow up|review|handle|be in touch)",
    r"pending (?:approval|review)",
    r"(?:sent|submitted|passed) (?:it|this|them) (?:on )?for (?:review|approval)",
    r"approval (?:from|by) (?:a|the|your|our) (?:manager|supervisor|specialist|team)",
    r"pass(?:ed|ing)? (?:your|this|it|the) (?:\w+ )?(?:on )?to",
    r"(?:human|live) (?:agent|representative|operator|colleague)",
    r"(?:will|shall) take over",
    r"who (?:will|shall) (?:contact|reach|call|get back|follow up|review|handle|be in touch)",
)
_FAILED = _words(
    r"fail(?:ed|s|ure)?",
    r"could ?n[o']t",
    r"could not",
    r"(?:was|were|am|is) (?:unable|not able)",
    r"(?:wasn't|weren't) able",
    r"unable to",
    r"(?:did not|didn't) (?:go through|work|succeed|complete)",
    r"went wrong",
    r"(?:was|were|been) (?:declined|rejected|refused|denied)",
    r"rejected",
    r"(?:has|have|had) not been",
    r"(?:hasn't|haven't|hadn't) been",
    r"no \w+ (?:was|were|has been) (?:issued|made|processed|changed|created|placed|sent|refunded)",
    r"nothing (?:was|has been) (?:changed|\w+ed)",
    r"(?:was|were|is|are|has|have|had)(?:n't| not)(?: been)? (?:successful|\w+ed|made|done|sent|paid|shipped)",
    r"not eligible",
    r"error",
)
_SUCCEEDED = _words(
    r"done",
    r"all set",
    r"success(?:ful(?:ly)?)?",
    r"complete[d]?",
    _SUBJECT + r" (?:just |now |already |successfully )?(?:refunded|cancell?ed|processed|issued|booked|applied|"
    r"credited|updated|sent|created|transferred|reset|rescheduled|reactivated|scheduled|changed|saved|placed|"
    r"submitted|approved|reversed|added|removed|deleted|paid|shipped|returned|upgraded|downgraded|renewed)",
    r"(?:went|gone) ahead and \w+",
    r"(?:was|were) able to",
    _SUBJECT + r" (?!not\b|been\b|checked|looked|found|noticed|reviewed|verified|received|tried|attempted|asked|"
    r"passed|forwarded|escalated|transferred you|requested|needed|wanted|started)\w+ed\b",
    r"issued",
    r"(?:has|have|was|were) (?:been )?(?:successfully )?(?:refunded|cancell?ed|processed|issued|booked|applied|"
    r"credited|updated|sent|created|transferred|reset|rescheduled|reactivated|scheduled|changed|saved|placed|"
    r"approved|reversed|added|removed|deleted|paid|marked|upgraded|shipped|renewed)",
    r"(?:is|are) (?:now )?(?:confirmed|cancell?ed|booked|reserved|scheduled|waived|rerouted|updated|active|"
    r"activated|reactivated|applied|refunded|paid|closed)",
    r"(?:was|were) (?:successfully )?(?:rerouted|waived|rebooked|moved|switched)",
    r"confirmed",
    r"went through",
    r"on (?:its|their) way",
    r"refund(?:ed)? (?:issued|complete|completed|processed)",
    r"^refunded",
    r"(?:is|are) (?:now|saved)",
)
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"', "\u2014": " ", "\u2013": " "})


def normalize_answer(answer: str) -> str:
    text = answer if len(answer) <= MAX_ANSWER_CHARS else answer[:10_000] + " " + answer[-10_000:]
    return " ".join(text.translate(_QUOTES).lower().split())


def read_claim(answer: str | None) -> ClaimReading:
    """The claim an agent's final answer makes, by the rules above (pure, deterministic)."""
    text = normalize_answer(answer or "")

    def reading(status: str, rule: str) -> ClaimReading:
        return ClaimReading(status, RULES_ID, rule)

    if not text:
        return reading(UNKNOWN, "empty")
    if text[0] in "{[":
        return reading(UNKNOWN, "not-prose")
    if _HEDGED.search(text):
        return reading(UNKNOWN, "hedged")
    succeeded, failed = _SUCCEEDED.search(text), _FAILED.search(text)
    if _PARTIAL.search(text) or (succeeded and failed and _CONTRAST.search(text)):
        return reading(PARTIAL, "partial")
    if _REFUSED.search(text):
        return reading(REFUSED, "refused")
    if _ESCALATED.search(text):
        return reading(ESCALATED, "escalated")
    if failed:
        return reading(FAILURE, "failed")
    if succeeded:
        return reading(SUCCESS, "succeeded")
    return reading(UNKNOWN, "no-claim")
