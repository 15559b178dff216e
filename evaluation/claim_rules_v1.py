"""Claim rules v1 (`rules-v1`), kept unchanged so a reading it made can be reproduced and explained.

The current rules are evaluation/claim_reader.py (`rules-v2`). v1 classifies a final answer with
keyword rules tried in order (the first that matches decides): empty → UNKNOWN; a JSON object or array →
UNKNOWN; hedged → UNKNOWN; partial; refused; escalated; failed; succeeded; anything else UNKNOWN. Measured
on real replies it read questions, offers and conditionals as SUCCESS and offers of a transfer as
ESCALATED (docs/guides/claims.md); v1 readings already emitted keep their `rules-v1` mark.
"""

from __future__ import annotations

import re

from evaluation.claim_status import (
    ESCALATED,
    FAILURE,
    PARTIAL,
    REFUSED,
    SUCCESS,
    UNKNOWN,
    ClaimReading,
    normalize_answer,
)

RULES_ID = "rules-v1"


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


def read_claim_v1(answer: str | None) -> ClaimReading:
    """The claim an agent's final answer makes, by the v1 rules (pure, deterministic)."""
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
