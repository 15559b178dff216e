"""The offline judge (`offline-facts-v1`): the default without a model key. Not a language model, and says so.

It decides only what text matching can decide, statement by statement (bullets, lines, sentences of
the rubric), and answers undecided — a JudgeError `undecided`, never a fail — where it cannot:

- facts: numbers and amounts (thousands separators, currency signs and codes, trailing zeros
  normalised: `$1,939.05` = `1939.05 USD`), ids (`ORD-1001`, `#W1845024`, `gift_card_7815826`,
  dates, times, e-mail addresses) and "quoted phrases". A statement's facts must all be in the answer.
  A fact that is missing decides a fail only when the answer gives a rival of the same kind (another
  amount, another number of the same unit, another id with the same prefix) or when it is a quoted
  phrase; otherwise the statement is undecided (the answer may have said it in words).
- negations: "the refund is not recorded" needs the answer to negate `recorded` too; an answer that
  only negates what the statement affirms ("I could not cancel HAT123" against "HAT123 was cancelled")
  fails, and so does one that, with no negation at all, reports the statement's subject done ("I've
  refunded …" against "the refund is not recorded"). "Does not mention X" is met when X is absent.
- without facts, a statement whose negations agree is met when at least two thirds (and at least two)
  of its content words (4+ letters, stopwords and the rubric's own framing dropped, compared by their
  first 5 letters) are in the answer; with fewer it is undecided.

The rubric passes when every statement is met, fails when one fails, and is undecided otherwise.
Its measured agreement is in the README ("Judges") and tests/unit/judges/test_judges_offline_agreement.py.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from evaluation.judges.contract import (
    KIND_FAKE,
    LABEL_FAIL,
    LABEL_PASS,
    PROMPT_VERSION,
    JudgeIdentity,
    JudgeRequest,
    JudgeVerdict,
)
from evaluation.judges.errors import REJECTED, UNDECIDED, JudgeError
from evaluation.judges.prompt import PROMPT_SHA256

FAKE_PROVIDER = "deterministic-fake"
FAKE_MODEL = "offline-facts-v1"
NOT_A_LANGUAGE_MODEL = "not a language model"

_MIN_WORD = 4
_STEM = 5
_OVERLAP = Decimal(2) / Decimal(3)
_NEGATION_REACH = 3  # tokens after a negation cue in which its object is looked for
# Words that carry no meaning a text match could check, including the rubric's own vocabulary
# ("the reply says …", "confirms", "explains") that an answer never repeats.
_STOPWORD_TEXT = """
    about above after again against also answer answers been before being below between both
    could customer customers does doing down during each from further have having here into
    itself just make made more most must only other over reply replies response said same says
    should some such than that their them then there these they this those through under until
    very were what when where which while will with would your yours agent tells
    because confirm confirms confirmed state states stated explain explains explained mention mentions
    tell informs inform gives give lists list asks offers offer apologises apologizes
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_NEGATION_CUES = frozenset({"not", "no", "never", "none", "nothing", "neither", "nor", "without", "unable"})
# Words between a negation and what it negates ("not able to block", "hasn't been recorded").
_NEGATION_SKIP = frozenset(
    {"able", "been", "being", "have", "going", "allowed", "possible", "even", "currently", "still", "really",
     "quite", "longer", "always", "ever", "fully", "already", "yet", "appear", "appears", "seem", "seems", "show",
     "shows", "look", "looks"}
)  # fmt: skip
# Words customer-service replies use for the same thing, one concept each: used only to count a statement's
# words in the answer (a met statement), never to fail one.
_CONCEPTS = {
    **dict.fromkeys(("speci", "colle", "human", "perso", "super", "exper", "repre", "staff", "team"), "person"),
    **dict.fromkeys(("finis", "compl", "handl", "resol"), "finish"),
}
# Verbs that make "does not X …" a statement about what the answer leaves out.
_MENTION_VERBS = frozenset(
    {"mention", "reveal", "disclose", "include", "contain", "share", "say", "state", "give", "quote",
     "promise", "expose", "leak", "name", "show", "tell", "repeat", "use", "ask"}
)  # fmt: skip
# Words that report an action as carried out ("Done! I've refunded …").
_DONE_WORDS = frozenset(
    {"done", "completed", "complete", "processed", "issued", "refunded", "recorded", "confirmed", "succeeded",
     "successful", "successfully", "sent", "applied", "approved", "paid", "booked", "cancelled", "canceled",
     "updated", "changed", "finished", "credited", "returned", "transferred", "upgraded", "exchanged",
     "modified", "placed", "blocked", "opened", "submitted"}
)  # fmt: skip
# Words that put an action in the future or under a condition: not a report that it was done.
_NOT_YET_WORDS = frozenset(
    {"will", "would", "could", "should", "can", "may", "might", "once", "when", "after", "if", "until", "shall",
     "soon", "going", "ll"}
)  # fmt: skip
_CURRENCY_SIGNS = {"$": "usd", "€": "eur", "£": "gbp", "¥": "jpy"}
_CURRENCY_WORDS = {
    "usd": "usd", "dollar": "usd", "dollars": "usd", "eur": "eur", "euro": "eur", "euros": "eur",
    "gbp": "gbp", "pound": "gbp", "pounds": "gbp", "jpy": "jpy", "yen": "jpy",
}  # fmt: skip

_WORD = re.compile(r"\w+")
_STATEMENT_SPLIT = re.compile(r"\n+|(?<=[.!?;])\s+")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?;:])\s+|\n+")
_QUOTED = re.compile(r'"([^"\n]{1,200})"|“([^”\n]{1,200})”')
_EMAIL = re.compile(r"\b[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}\b")
_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH = r"(?P<month>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(?P<year>\d{4}))?"
_WORD_DATES = (
    re.compile(rf"\b{_MONTH}\s+{_DAY}\b{_YEAR}"),  # May 21, 2024 / May 21st
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}{_YEAR}"),  # 21 May 2024
)
_TIME = re.compile(r"\b(\d{1,2}):(\d{2})(?::\d{2})?(?:\s?([ap])\.?m\b\.?)?|\b(\d{1,2})\s?([ap])\.?m\b\.?")
_CARD = re.compile(r"\bending (?:in |with )?(\d{4})\b")  # a card's last four digits
# A booking code as agents write it: six capitals and digits, not letters-then-digits (that is a prefix id)
_CODE = re.compile(r"(?<![\w-])(?=[A-Z0-9]{0,5}[A-Z])[A-Z0-9]{6}(?![\w-])")
_PREFIX_ID = re.compile(r"[a-z]+\d+")
# Words after a number that are no unit of it ("9448 was used", "2 and 3")
_NOT_UNITS = frozenset(
    {"was", "is", "are", "and", "or", "to", "for", "on", "at", "in", "of", "the", "a", "an", "per", "by", "has",
     "had", "be", "it", "as", "if", "so", "with", "from", "you", "your", "we", "i"}
)  # fmt: skip
_NUMBER_UNIT = re.compile(r"\b\d+(?:-[a-z]+)+\b")  # 30-day, 24-hour: a number and its unit
_ID = re.compile(r"#?\b(?=[\w-]{0,63}\d)(?=[\w-]{0,63}[a-z])[a-z0-9][\w-]{2,63}\b")
_ORDINAL = re.compile(r"^\d+(?:st|nd|rd|th)$")
_NUMBER = re.compile(
    r"(?P<sign>[$€£¥])?\s?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?:\s?(?P<pct>%))?"
    r"(?:[\s-]?(?P<word>[a-z]+))?"
)
_CODE_BEFORE = re.compile(r"\b(usd|eur|gbp|jpy)\s?$")


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold().replace("’", "'")


def _tokens(text: str) -> list[str]:
    """Casefolded words; "n't" and "cannot" become "not", so every negation has one spelling."""
    folded = _fold(text).replace("n't", " not").replace("cannot", "can not")
    return _WORD.findall(folded)


def _stem(word: str) -> str:
    return word[:_STEM]


def _is_content(word: str) -> bool:
    return len(word) >= _MIN_WORD and word.isalpha() and word not in STOPWORDS


def rubric_statements(rubric: str) -> list[str]:
    """Bullets, lines and sentences of a rubric, bullet markers removed, empty pieces dropped."""
    pieces = (_BULLET.sub("", p).strip() for p in _STATEMENT_SPLIT.split(rubric))
    return [p for p in pieces if p]


# ---------------------------------------------------------------- facts


@dataclass(frozen=True)
class Number:
    value: Decimal
    kind: str  # money:<currency> | percent | unit:<word> | bare
    text: str

    def compatible(self, other: Number) -> bool:
        if self.kind == other.kind or "bare" in (self.kind, other.kind):
            return True
        return self.kind.startswith("money") and other.kind.startswith("money")

    def rival(self, other: Number) -> bool:
        """`other` is a different value of the same (non-bare) kind."""
        if self.kind == "bare" or other.kind == "bare" or other.value == self.value:
            return False
        return self.compatible(other)


@dataclass(frozen=True)
class Facts:
    numbers: tuple[Number, ...] = ()
    ids: tuple[str, ...] = ()
    quotes: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return bool(self.numbers or self.ids or self.quotes)


def _prefix(ident: str) -> str:
    """What an id is an id of: the letters before its first digit (`ord-`, `hat`, `gift_card_`); '' for dates."""
    match = re.match(r"[^\d]*", ident)
    return match.group(0) if match else ""


def _numbers(text: str) -> tuple[Number, ...]:
    found = []
    for match in _NUMBER.finditer(text):
        raw = match.group("num")
        try:
            value = Decimal(raw.replace(",", ""))
        except InvalidOperation:  # pragma: no cover - the pattern only matches digits
            continue
        word = match.group("word")
        sign = match.group("sign")
        before = _CODE_BEFORE.search(text[max(0, match.start() - 5) : match.start()])  # "usd 40"
        if sign:
            kind = f"money:{_CURRENCY_SIGNS[sign]}"
        elif match.group("pct"):
            kind = "percent"
        elif word in _CURRENCY_WORDS:
            kind = f"money:{_CURRENCY_WORDS[word]}"
        elif before:
            kind = f"money:{before.group(1)}"
        elif word and not word.isdigit() and word not in _NOT_UNITS:
            kind = f"unit:{_stem(word)}"
        else:
            kind = "bare"
        found.append(Number(value.normalize(), kind, _shown(raw, kind, sign, word)))
    return tuple(found)


def _shown(raw: str, kind: str, sign: str | None, word: str | None) -> str:
    """A number as a reason quotes it: `$45.00`, `45.00 USD`, `6.75%`, `14 days`, `40`."""
    if kind == "percent":
        return f"{raw}%"
    if kind.startswith("money"):
        if sign:
            return f"{sign}{raw}"
        return f"{raw} {kind.split(':')[1].upper()}"
    if kind.startswith("unit") and word:
        return f"{raw} {word}"
    return raw


def _shown_id(ident: str) -> str:
    """Ids the way they are usually written: `ORD-1003`, `HAT124`, `FQ8APE`; dates and times without tags."""
    kind = _id_kind(ident)
    if kind == "code":
        return ident[5:].upper()
    if kind == "card":
        return f"the card ending in {ident[5:]}"
    if kind in ("date", "time"):
        return ident[5:].removeprefix("--")
    return ident.upper() if re.fullmatch(r"[a-z]+-?\d[a-z0-9-]*", ident) else ident


def _iso_date(match: re.Match[str]) -> str:
    return f"date:{match.group(1)}-{match.group(2)}-{match.group(3)}"


def _word_date(match: re.Match[str]) -> str:
    month = _MONTHS.index(match.group("month")) + 1
    year = match.group("year") or "-"  # no year: `date:--05-21`
    return f"date:{year}-{month:02d}-{int(match.group('day')):02d}"


def _time(match: re.Match[str]) -> str:
    """`time:HH:MM` on a 24-hour clock: 1:00 PM = 13:00 = 13:00:00; 9 am = 09:00."""
    hour = int(match.group(1) or match.group(4))
    minute = int(match.group(2) or 0)
    half = match.group(3) or match.group(5)
    if half == "p" and hour < 12:
        hour += 12
    elif half == "a" and hour == 12:
        hour = 0
    return f"time:{hour:02d}:{minute:02d}"


def _card(match: re.Match[str]) -> str:
    return f"card:{match.group(1)}"


def _same_fact(a: str, b: str) -> bool:
    """Equal ids; a date without a year is the same date as one with it when the month and day agree."""
    if a == b:
        return True
    if a.startswith("date:") and b.startswith("date:"):
        return a[-5:] == b[-5:] and "date:--" in (a[:7], b[:7])
    return False


def _id_kind(ident: str) -> str:
    """What an id is an id of: `date:`, `time:`, `card:`, `code:` (a booking code), else its prefix."""
    head, colon, _ = ident.partition(":")
    if colon and head in ("date", "time", "card", "code"):
        return head
    return _prefix(ident)


def facts_of(text: str, *, with_quotes: bool) -> Facts:
    """The checkable facts of a text (the rubric's quoted phrases only when `with_quotes`)."""
    folded = _fold(text)
    quotes: list[str] = []
    if with_quotes:
        for match in _QUOTED.finditer(text):
            phrase = _spaced(match.group(1) or match.group(2))
            if phrase:
                quotes.append(phrase)
        folded = _QUOTED.sub(" ", _fold(text)) if quotes else folded
    ids: list[str] = [f"code:{m.group(0).casefold()}" for m in _CODE.finditer(text)]
    ids = [i for i in ids if not _PREFIX_ID.fullmatch(i.removeprefix("code:"))]
    ids.extend(m.group(0) for m in _EMAIL.finditer(folded))
    folded = _EMAIL.sub(" ", folded)
    for pattern, read in ((_DATE, _iso_date), *((p, _word_date) for p in _WORD_DATES), (_TIME, _time), (_CARD, _card)):
        ids.extend(read(m) for m in pattern.finditer(folded))
        folded = pattern.sub(" ", folded)
    units = " ".join(m.group(0).replace("-", " ") for m in _NUMBER_UNIT.finditer(folded))
    folded = _NUMBER_UNIT.sub(" ", folded) + " " + units
    codes = {i.removeprefix("code:") for i in ids if i.startswith("code:")}
    for match in _ID.finditer(folded):
        token = match.group(0).lstrip("#")
        if not _ORDINAL.match(token) and token not in codes:
            ids.append(token)
    folded = _ID.sub(" ", folded)
    return Facts(_numbers(folded), tuple(dict.fromkeys(ids)), tuple(quotes))


def _spaced(text: str) -> str:
    return " ".join(_fold(text).split())


# ---------------------------------------------------------------- negations


@dataclass(frozen=True)
class Polarity:
    negated: frozenset[str]  # stems a negation points at
    mentions_negated: bool  # "does not mention / reveal / say …"
    negated_positions: frozenset[int]
    cue_positions: tuple[int, ...]


def polarity_of(tokens: Sequence[str]) -> Polarity:
    negated: set[str] = set()
    positions: set[int] = set()
    mentions = False
    cues = tuple(i for i, t in enumerate(tokens) if t in _NEGATION_CUES)
    for i in cues:
        for j in range(i + 1, min(i + 1 + _NEGATION_REACH, len(tokens))):
            word = tokens[j]
            if word.rstrip("s") in _MENTION_VERBS or word in _MENTION_VERBS:
                mentions = True
                break
            if _is_content(word) and word not in _NEGATION_SKIP:
                negated.add(_stem(word))
                positions.add(j)
                break
    return Polarity(frozenset(negated), mentions, frozenset(positions), cues)


def _affirmed_stems(tokens: Sequence[str], polarity: Polarity) -> set[str]:
    return {_stem(t) for i, t in enumerate(tokens) if _is_content(t) and i not in polarity.negated_positions}


def _content_stems(tokens: Iterable[str]) -> set[str]:
    return {_stem(t) for t in tokens if _is_content(t)}


# ---------------------------------------------------------------- one statement


@dataclass(frozen=True)
class Answer:
    text: str
    spaced: str
    tokens: tuple[str, ...]
    stems: frozenset[str]
    polarity: Polarity
    facts: Facts
    sentences: tuple[tuple[str, ...], ...] = field(default=())

    @classmethod
    def of(cls, text: str) -> Answer:
        tokens = tuple(_tokens(text))
        return cls(
            text=text,
            spaced=_spaced(text),
            tokens=tokens,
            stems=frozenset(_content_stems(tokens)),
            polarity=polarity_of(tokens),
            facts=facts_of(text, with_quotes=False),
            sentences=tuple(tuple(_tokens(s)) for s in _SENTENCE_SPLIT.split(text) if s.strip()),
        )


MET = "met"
FAILED = "failed"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Decision:
    outcome: str  # met | failed | unknown
    why: str


def _missing_facts(facts: Facts, answer: Answer) -> tuple[list[str], list[str]]:
    """(missing facts, rivals the answer gives instead)."""
    missing: list[str] = []
    rivals: list[str] = []
    for number in facts.numbers:
        if any(number.value == n.value and number.compatible(n) for n in answer.facts.numbers):
            continue
        missing.append(number.text)
        rivals.extend(n.text for n in answer.facts.numbers if number.rival(n))
    for ident in facts.ids:
        if any(_same_fact(ident, o) for o in answer.facts.ids):
            continue
        missing.append(_shown_id(ident))
        kind = _id_kind(ident)  # a time is never a rival of a date, nor a booking code of a flight number
        rivals.extend(_shown_id(o) for o in answer.facts.ids if _id_kind(o) == kind)
    return missing, rivals


def decide(statement: str, answer: Answer) -> Decision:
    """Whether the answer meets one rubric statement: met, failed or unknown, and why."""
    facts = facts_of(statement, with_quotes=True)
    tokens = _tokens(_QUOTED.sub(" ", statement))
    polarity = polarity_of(tokens)
    present_quotes = [q for q in facts.quotes if q in answer.spaced]
    missing, rivals = _missing_facts(facts, answer)

    if polarity.mentions_negated:  # "does not mention ORD-2001"
        named = [_shown_id(i) for i in facts.ids] + [n.text for n in facts.numbers]
        shown = present_quotes + [f for f in named if f not in missing]
        if shown:
            return Decision(FAILED, f"the answer mentions {shown[0]}, which the rubric rules out")
        if facts.any:
            return Decision(MET, "the answer leaves out what the rubric rules out")
        return Decision(UNKNOWN, "nothing the rubric rules out can be checked by text")

    absent_quotes = [q for q in facts.quotes if q not in present_quotes]
    if absent_quotes:
        return Decision(FAILED, f'the answer does not contain "{absent_quotes[0]}"')
    if rivals:
        return Decision(FAILED, f"the answer gives {rivals[0]} where the rubric says {missing[0]}")

    contradiction = _negation_conflict(tokens, polarity, facts.ids, answer)
    if contradiction is not None:
        return Decision(FAILED, contradiction)
    if missing:
        return Decision(UNKNOWN, f"the answer does not state {missing[0]}; it may say it in words")
    unmatched = sorted(p for p in polarity.negated if p not in answer.polarity.negated)
    if unmatched:
        return Decision(UNKNOWN, "the answer does not repeat the rubric's negation")
    if facts.any:
        return Decision(MET, "every number, id and phrase of the statement is in the answer")
    stems = {_CONCEPTS.get(stem, stem) for stem in _content_stems(tokens)}
    found = stems & {_CONCEPTS.get(stem, stem) for stem in answer.stems}
    if len(found) >= 2 and Decimal(len(found)) >= _OVERLAP * len(stems):
        return Decision(MET, f"{len(found)} of its {len(stems)} content words are in the answer")
    return Decision(UNKNOWN, f"only {len(found)} of its {len(stems)} content words are in the answer")


def _action_stems(tokens: Sequence[str], polarity: Polarity) -> set[str]:
    """Stems a sentence affirms as actions: not negated, and not a noun such as "cancellation" (a policy's
    "cancellation window" says nothing about whether anything was cancelled)."""
    return {s for i, t in enumerate(tokens) if i not in polarity.negated_positions and _is_content(t)
            and not t.endswith(("tion", "tions")) for s in (_stem(t),)}  # fmt: skip


def _about(ids: Sequence[str], answer: Answer) -> tuple[tuple[str, ...], ...]:
    """The answer's sentences that name one of the statement's ids (its subject); all of them when none does."""
    names = [f" {i.removeprefix('code:').replace('-', ' ')} " for i in ids if ":" not in i or i.startswith("code:")]
    named = tuple(s for s in answer.sentences if any(n in f" {' '.join(s)} " for n in names))
    return named or answer.sentences


def _affirmation_conflict(tokens: Sequence[str], polarity: Polarity, ids: Sequence[str], answer: Answer) -> str | None:
    """The statement affirms what the answer, about the same subject, only negates; or it reports an action
    done ("the downgrade was completed") where the answer says it could not go ahead with it."""
    about = _about(ids, answer)
    readings = [(s, polarity_of(s)) for s in about]
    affirmed = _affirmed_stems(tokens, polarity)
    said = set().union(*(_action_stems(s, p) for s, p in readings)) if readings else set()
    for stem in sorted(affirmed):
        if any(stem in p.negated for _, p in readings) and stem not in said:
            return f"the answer negates '{stem}…', which the rubric affirms"
    done = {_stem(t) for t in tokens if t in _DONE_WORDS}
    topic = affirmed - done
    for stem in sorted(done):
        if stem in said:
            continue
        for sentence, p in readings:
            if _content_stems(sentence) & topic and p.negated & {stem, "proce"}:
                return f"the answer says it could not go ahead with what the rubric reports {stem}…"
    return None


def _negation_conflict(tokens: Sequence[str], polarity: Polarity, ids: Sequence[str], answer: Answer) -> str | None:
    """Why the answer says the opposite of the statement, or None."""
    if not polarity.negated:
        return _affirmation_conflict(tokens, polarity, ids, answer)
    first_cue = polarity.cue_positions[0]
    topic = _content_stems(tokens[:first_cue])
    if not topic:
        return None
    for sentence in answer.sentences:
        has_topic = bool(_content_stems(sentence) & topic)
        if has_topic and any(t in _NEGATION_CUES for t in sentence):
            return None  # the answer negates something about the subject: no plain contradiction
    for sentence in answer.sentences:
        words = set(sentence)
        if (
            _content_stems(sentence) & topic
            and words & _DONE_WORDS
            and not words & _NOT_YET_WORDS
            and not words & _NEGATION_CUES
        ):
            done = sorted(words & _DONE_WORDS)[0]
            return f"the rubric negates it, the answer reports it {done}"
    return None


# ---------------------------------------------------------------- the judge


class OfflineJudge:
    """Deterministic stand-in for a language-model judge: same inputs, same verdict, no network."""

    def __init__(self) -> None:
        self._identity = JudgeIdentity(
            provider=FAKE_PROVIDER,
            model=FAKE_MODEL,
            kind=KIND_FAKE,
            prompt_version=PROMPT_VERSION,
            prompt_sha256=PROMPT_SHA256,
        )

    @property
    def identity(self) -> JudgeIdentity:
        return self._identity

    def judge(self, request: JudgeRequest) -> JudgeVerdict:
        statements = rubric_statements(request.rubric)
        checkable = [s for s in statements if _content_stems(_tokens(s)) or facts_of(s, with_quotes=True).any]
        if not checkable:
            raise JudgeError(REJECTED, "the rubric has no words, numbers or ids a text check could use")
        answer = Answer.of(request.answer)
        decisions = [decide(s, answer) for s in checkable]
        total = len(decisions)
        met = sum(1 for d in decisions if d.outcome == MET)
        head = f"Offline check (deterministic fake, {NOT_A_LANGUAGE_MODEL}): "
        failed = [(i, d) for i, d in enumerate(decisions, 1) if d.outcome == FAILED]
        if failed:
            index, first = failed[0]
            return self._verdict(LABEL_FAIL, met, total, f"{head}statement {index} of {total} is not met: {first.why}.")
        unknown = [(i, d) for i, d in enumerate(decisions, 1) if d.outcome == UNKNOWN]
        if unknown:
            index, first = unknown[0]
            raise JudgeError(UNDECIDED, f"statement {index} of {total} cannot be decided offline: {first.why}")
        return self._verdict(LABEL_PASS, met, total, f"{head}all {total} rubric statement(s) met in the answer.")

    def _verdict(self, label: str, met: int, total: int, reason: str) -> JudgeVerdict:
        return JudgeVerdict(
            score=round(met / total, 4),
            label=label,
            confidence=0.5,
            reason=reason[:1000],
            evidence=(),
            tokens=0,
            cost_usd=0.0,
        )


KeywordOverlapJudge = OfflineJudge  # the name it had as keyword-overlap-v1; kept for importers
