"""What the reporter's prose denies, wants or rules out around a match: "not using docker",
"MIG disabled", "which is what we want", "we suspected the network, but ...". The document reader
(:mod:`rankmap.explain.docread`) skips such matches: a setting denied or a state wanted is no
evidence, a failure ruled out is no failure of theirs.
"""

from __future__ import annotations

import re

MAX_NEGATED = 4  # negated matches skipped per signal and segment
# A negation just before a prose match ("not using docker", "no MIG", "without a container",
# "don't use Ray"): at most two words of a small list between (so "doesn't support MIG" stays a
# MIG signal), in the same clause. Only settings/context signals are negatable
# (:data:`rankmap.explain.catalogue.NEGATABLE`).
_NEGATED_BEFORE = re.compile(
    r"(?:n't|\bnot|\bno|\bnever|\bwithout|\bnor|\bneither|\bnon)[\s-]+(?:the case that\s+)?"
    r"(?:(?:using|use|used|"
    r"run|running|in|inside|on|with|have|has|had|a|an|the|any|my|our|enabled?|set|via|through|"
    r"involved?|need|needed|requires?|required)\s+){0,2}"
    # a quoted name of the symptom: 'so it's not the "everything on GPU 0" problem' (review 49)
    r"[\"'“‘`]?$",
    re.IGNORECASE,
)
# ... or just after it ("MIG disabled", "MIG mode: Disabled", "docker is not used").
_NEGATED_AFTER = re.compile(
    r"^['\"`]?[\s:=]*(?:mode\s*[:=]?\s*)?(?:is |are |was |were )?(?:disabled|off|not (?:enabled|used|"
    r"involved|set|the (?:cause|issue|problem)|a thing|relevant|applicable|supported)|"
    r"does(?:n't| not) apply|n/a)\b",
    re.IGNORECASE,
)


# Chinese: a negation just before ("显存不是全堆在0号卡上", "没有全都在0号卡") or a yes/no question
# just after ("hostname 都一样吗？": asked, not said; review 38)
_NEGATED_BEFORE_ZH = re.compile(r"(?:不是|并不|并没有|没有|没|并非|未|不)\s*(?:都|全)?\s*$")
_ASKED_ZH = re.compile(r"^\s*[吗么嘛]")


# A state the writer says they want ("pods see all GPUs, which is what we want", "every rank
# sees one GPU, as intended"): the rest of the sentence after a prose match. It applies to every
# prose signal, negatable or not: a wanted state is no complaint.
# The words between the match and the wanted phrase deny nothing ("not one GPU each as expected",
# ", not as intended", "instead of ... as intended" are complaints), and the phrase is not a plan
# or a prediction ("what we want to avoid", "which was expected to fail").
# (a dot inside a name, "tf.config.set_visible_devices", does not end the sentence)
_NO_DENIAL = (
    r"(?:(?!\b(?:not|never|instead|rather|but|though|although)\b|n't)(?:[^.;!?\n]|[.!?](?=\w)))"
)
_WANTED_AFTER = re.compile(
    rf"{_NO_DENIAL}{{0,140}}?\b(?:which|that|this)(?: part| mapping| setup| one)? (?:is|was|looks|"
    r"seems) (?:exactly )?(?:what (?:we|i) (?:want|"
    r"wanted|need|needed|expect|expected)(?! to (?:avoid|prevent|stop|fix|eliminate|get rid))|"
    r"(?:as )?(?:expected|intended|desired|correct|fine|ok|okay)(?! to\b))\b|"
    rf"{_NO_DENIAL}{{0,80}}?,? (?:just )?as (?:expected|intended|desired|it should)\b(?! not\b)|"
    # "One process per GPU via Slurm, works now": the setting is the one that works
    rf"{_NO_DENIAL}{{0,80}}?(?:,|;| and| -|—) (?:it |this |that |everything )?(?:now )?works?"
    r"(?: (?:now|fine|again|well|correctly|as expected))?\b(?! (?:on|with|for|only|if|when)\b)",
    re.IGNORECASE,
)  # used with match(text, pos): no "^", which would anchor at the text's start


def wanted(text: str, end: int) -> bool:
    """Whether the sentence after a prose match says the state is the one wanted."""
    return bool(_WANTED_AFTER.match(text, end, min(len(text), end + 200)))


# A failure outside the family the writer rules out ("we first suspected ssh connection issues,
# but ...", "not a network connection problem", "the port is blocked, but that is unrelated"):
# no failure of theirs. Read in the sentence of the match.
_DISMISSED_BEFORE = re.compile(
    r"\b(?:suspect\w*|thought|assumed|guess\w*|ruled out|not|no|isn't|wasn't|without)\b"
    r"[^.;!?\n]{0,40}$",
    re.IGNORECASE,
)
_DISMISSED_AFTER = re.compile(
    r"[^.;!?\n]{0,60}?(?:\bbut\b(?! (?:only|just|also|still|then|sometimes|randomly|"
    r"intermittently|when|after|on|in|with|every)\b)|\bunrelated\b|\b(?:is|are|was|were) fine\b|\bruled out\b|"
    r"\bnot the (?:cause|issue|problem)\b)",
    re.IGNORECASE,
)


def dismissed(text: str, start: int, end: int) -> bool:
    """Whether the sentence around ``text[start:end]`` rules the problem out."""
    before = text[max(0, start - 60) : start]
    if _DISMISSED_BEFORE.search(re.split(r"[.;!?\n]", before)[-1]):
        return True
    return bool(_DISMISSED_AFTER.match(text, end, min(len(text), end + 80)))


def negated(text: str, start: int, end: int) -> bool:
    """Whether the prose around ``text[start:end]`` negates it (same line, a few words)."""
    line_start = text.rfind("\n", 0, start) + 1
    before = text[max(line_start, start - 48) : start]
    clause = re.split(r"[.;,!?()。，；！？]", before)[-1]
    if _NEGATED_BEFORE.search(clause) or _NEGATED_BEFORE_ZH.search(clause):
        return True
    line_end = text.find("\n", end)
    after = text[end : min(end + 40, len(text) if line_end == -1 else line_end)]
    return bool(_NEGATED_AFTER.match(after) or _ASKED_ZH.match(after))


# The writer says the failure has not happened to them: they ask before it does ("I haven't hit
# it myself", "we've never actually seen it", "hypothetically", "I'm writing a troubleshooting
# page / unit tests", "we're planning a cluster"); the messages they name are quoted, not
# printed (review 41). "I've never seen this error before" reports one: a bare "never seen"
# does not count, only with "actually", "myself" or "yet".
_NOT_HAPPENED = re.compile(
    r"\b(?:i|we)(?: have|'ve)? (?:not|never|haven't|have not|didn't|did not)(?: actually| yet)? "
    r"(?:hit|seen|encountered|run into|ran into|gotten|got|had|experienced|observed)"
    r"(?: (?:it|this|that|one|them|the (?:error|message|problem|issue)))?"
    r"(?: (?:myself|ourselves|yet|so far))|"
    r"\b(?:i|we)(?: have|'ve)? never actually (?:hit|seen|encountered|run into|had)\b|"
    r"\bhypothetical(?:ly)?\b|"
    r"\b(?:i'm|i am|we're|we are) (?:currently )?(?:planning|designing|considering|"
    r"writing (?:a |an |the |our |some )?(?:\w+ )?(?:troubleshooting|wiki|docs?|documentation|"
    r"guide|tutorial|unit[- ]tests?|tests?|checks?|faq|runbook|page))\b|"
    r"\bwhat (?:exact )?(?:error|message) would (?:we|i|you|it|one) (?:see|get)\b|"
    # a how-to question that says so: "Nothing is crashing, I just don't want to ..." (review 71)
    r"\bnothing (?:is|was|has been) (?:crashing|failing|failed|broken|erroring)\b"
    r"(?![^.\n]{0,20}\bbut\b)",  # "Nothing is crashing, but the job just hangs" is a failure
    re.IGNORECASE,
)


# The writer tells a failure that is over: a title tagged solved, "closing this", "for the
# record", "the run now completes" (reviews 62, 64). Such a text reports a cause, not a failure
# to fix: its findings stay, at info.
_FIX_DONE = (
    r"(?:added|adding|changed|changing|set|setting|switched|removed|upgraded|downgraded|fixed|"
    r"replaced|exported|passed|passing|using|moved|called|calling)"
)
_RESOLVED = re.compile(
    # a tag: "[solved]", "(fixed)", "Solved:" — not "Fixed-size buffers" (review 17)
    r"^\W{0,3}[\[(]?(?:solved|resolved|fixed)[\])]|^\W{0,3}(?:solved|resolved|fixed)\s*:|"
    r"\b(?:solved|resolved|fixed)\s*[\])]|"
    r"\bclosing (?:this|the issue|it)\b|\bfor the record\b|\bleaving this (?:here )?for\b|"
    r"\bproblem solved\b|"
    r"(?<!\bnot )(?<!n't )\b(?:is|was|has been|got) (?:now )?(?:solved|resolved|fixed)\b(?! (?:in|by) "
    r"(?:v(?:ersion)?\s*)?\d)(?!-| (?:to|at|on|size|length|width|value|seed|number)\b)|"
    # "added set_device and the run now completes", "works fine now that I set X": a fix told
    rf"\b{_FIX_DONE}\b[^.\n]{{0,80}}\b(?:now|since then)\b[^.\n]{{0,30}}\b(?:works|runs|completes|"
    r"trains|finishes|(?:has|have) been running)\b(?! (?:out|into|slow\w*|at|on only)\b)|"
    r"\b(?:works|runs|completes|trains)\b(?: \w+){0,2} now (?:that|after|since) (?:i|we)\b|"
    rf"\b(?:has|have) been running without (?:any )?(?:problems|issues|errors)\b|"
    # a tag at the end of a title ("... on the second node -- SOLVED"), "marking as solved",
    # "it has been running for 3 days now" (review 71)
    r"[-–—:|]\s*(?:solved|resolved|fixed)\W{0,3}$|\bmark(?:ing|ed)? (?:this |it )?as "
    r"(?:solved|resolved|fixed)\b|"
    r"\b(?:has|have) been running (?:fine |smoothly |stably )?for (?:\d+|a few|several|two|three) "
    # (not a hang that lasts: "running for 10 hours stuck at the first all_reduce")
    r"(?:days|weeks)\b(?![^.\n]{0,50}\b(?:stuck|hang\w*|hung|frozen|no progress|waiting|idle)\b)",
    re.IGNORECASE | re.MULTILINE,
)
# ... unless the text goes on to an open failure: a question, "still", "but with 2 GPUs I get"
# before the other failure it goes on to ("solved, new problem now: KeyError ... any idea?":
# the question is about the new failure)
_OTHER_FAILURE = re.compile(
    r"\b(?:new|another|different|next|other) (?:error|problem|issue|failure|crash)\b", re.IGNORECASE
)
_STILL_OPEN = re.compile(
    r"\?|\bstill\b|\bbut (?:now|with|on|when|for|if|i|we|it)\b|\b(?:i|we) (?:get|see|keep)\b|"
    r"\b(?:i'm|we're|i am|we are) "
    r"getting\b|\b(?:now|again) (?:it )?(?:fails|crashes|hangs|errors|throws|gets|shows|dies)\b|"
    r"\bdo(?:es)?(?:n't| not) (?:work|help|fix)\b|\bdid(?:n't| not) (?:work|help|fix)\b",
    re.IGNORECASE,
)


def other_failure_line(text: str, after: str) -> int | None:
    """The 1-based line of ``text`` where, past the line holding ``after``, the writer turns to
    another failure ("New problem now:"); None when it does not."""
    start = text.find(after)
    m = _OTHER_FAILURE.search(text, start + len(after) if start >= 0 else 0)
    return text.count("\n", 0, m.start()) + 1 if m else None


def resolved_story(prose: str) -> str | None:
    """The words by which the writer tells a failure that is over (None when the text does not,
    or goes on to one still open)."""
    m = _RESOLVED.search(prose)
    if m is None:
        return None
    # what follows "new problem" is the other failure the writer asks about
    other = _OTHER_FAILURE.search(prose, m.end())
    if _STILL_OPEN.search(prose, 0, other.start() if other else len(prose)):
        return None
    line_start = prose.rfind("\n", 0, m.start()) + 1
    line_end = prose.find("\n", m.end())
    return prose[line_start : line_end if line_end != -1 else len(prose)].strip()[:200]


# A writer whose run works and who asks to be sure ("Throughput is as expected. Just want to
# confirm I didn't misconfigure anything"): with no failure word anywhere, nothing failed
# (review 40)
_CONFIRMING = re.compile(
    r"\b(?:just|only) (?:want(?:ed)?|wanting|trying|asking|need(?:ed)?) to (?:confirm|double[- ]?"
    r"check|verify|make sure|understand|check)\b|"
    r"\b(?:throughput|performance|speed|training|the run|results?|loss|it|everything)(?: \w+){0,2} "
    r"(?:is|are|looks?|seems?|was|were) (?:as expected|normal|fine|ok|okay|good)\b",
    re.IGNORECASE,
)


def not_happened(text: str, *, failed: bool) -> bool:
    """Whether the writer says the failure they name has not happened to them, or (``failed``:
    the text has failure words) that their run works and they only ask to be sure."""
    return bool(_NOT_HAPPENED.search(text) or (not failed and _CONFIRMING.search(text)))


# A question about what would happen ("Would that be wrong?", "Should LOCAL_RANK be used instead
# of RANK?", "What happens if I run 16 ranks on 8 GPUs?", "Is it possible that two pods share a
# GPU?"): its failure words are asked, not reported (review 41). A plea for help ("Can anyone
# explain this error?", "Could you help?") and a "why" question report the failure they ask
# about: not these.
_ASKED_WHAT_IF = re.compile(
    r"(?:^|(?<=[.!?:]\s)|(?<=\n))[ \t>*-]*"
    r"(?:would|will|should|shall|might|(?:can|could|may|do|does|did) (?!(?:someone|anyone|"
    r"somebody|anybody|you|u|any ?one|some ?one)\b)(?:i|we|it|this|that|they|the|my|our|two|a|an)\b|"
    r"is it (?:possible|safe|ok|okay|fine|correct|expected)|is there (?:a|any) (?:way|risk|chance)|"
    r"do (?:i|we) (?:need|have) to|what (?:happens|would happen|will happen) (?:if|when)|"
    r"if (?:i|we)\b(?:[^.?!\n]|[.!?](?=[\w(]))*?\b(?:would|will)\b)"
    # (a dot inside a name or a call, "socket.gethostname()", does not end the question)
    r"(?:[^.?!\n]|[.!?](?=[\w(]))*?\?",
    re.IGNORECASE,
)


def without_what_if_questions(text: str) -> str:
    """``text`` with its what-if questions blanked (same length: positions stay)."""
    return _ASKED_WHAT_IF.sub(lambda m: " " * len(m.group(0)), text)


def asked_what_if(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` lies inside a what-if question."""
    lo = max(0, start - 400)
    return any(
        lo + q.start() <= start and end <= lo + q.end()
        for q in _ASKED_WHAT_IF.finditer(text, lo, min(len(text), end + 400))
    )


# A symptom the writer rules out by name just before it: "so it's not the "everything on GPU 0"
# problem", "this isn't a duplicate-GPU issue" (review 49). Narrower than a setting's negation:
# "we do not set CUDA_VISIBLE_DEVICES, yet it is ignored" denies the setting, not the symptom.
_RULED_OUT_BEFORE = re.compile(
    r"(?:\bnot|n't|\bno longer)\s+(?:the|a|an|that|this|our|my|any)\s+[\"'“‘`]?$", re.IGNORECASE
)


def ruled_out(text: str, start: int) -> bool:
    """Whether the words just before ``text[start]`` rule the named symptom out."""
    line_start = text.rfind("\n", 0, start) + 1
    return bool(_RULED_OUT_BEFORE.search(text[max(line_start, start - 24) : start]))
