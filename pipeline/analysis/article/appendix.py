"""The appendix's tables, with what they all repeat said once.

Every generated table opens with its caption ("Table: ..."). Sentences that several captions
share (the verdict rule, the multiplicity adjustment, "modes that could not run are listed with
n/a") are stated once, in "How to read the tables", and left out of each caption; where the
sentence's numbers differ between tables (a margin, a count of comparisons), the first table's
are shown and the others' listed beside it, so nothing is lost. A skip or failure reason that a
table's note repeats is replaced by its id in the Limitations' table, where it is quoted once.

Each block keeps its include marker, which then says what was taken out.
"""

from __future__ import annotations

import re

from pipeline.analysis.article.inputs import CAPTION_SENTENCE as SENTENCE
from pipeline.analysis.article.inputs import INCLUDE_END, is_table

INCLUDED = re.compile(r"<!-- include: ([^>]*?) -->\n(.*?)\n<!-- end include -->", re.S)
NUMBER = re.compile(r"[±+-]?\d[\d,]*(?:\.\d+)?%?")
CAPTION = "Table: "
FACTORED = " (shared caption sentences and recorded reasons stated once)"


def _caption(body: str) -> tuple[str, str]:
    """(the caption without "Table: ", the rest) of a generated table's text."""
    if not body.startswith(CAPTION):
        return "", body
    head, _, rest = body.partition("\n\n")
    return head[len(CAPTION) :], rest


def _stem(name: str) -> str:
    return name.rsplit("/", 1)[-1].removesuffix(".md")


def shared(blocks: list[str]) -> dict[str, list[tuple[str, str]]]:
    """Caption sentences (by their form with numbers blanked) that at least two tables share:
    form -> [(table stem, the sentence as that table words it)], in reading order."""
    forms: dict[str, list[tuple[str, str]]] = {}
    for block in blocks:
        for name, body in INCLUDED.findall(block):
            if not is_table(body):
                continue
            for sentence in SENTENCE.split(_caption(body)[0]):
                if sentence.strip():
                    forms.setdefault(NUMBER.sub("#", sentence), []).append((_stem(name), sentence))
    return {f: uses for f, uses in forms.items() if len({s for s, _ in uses}) > 1}


def how_to_read(common: dict[str, list[tuple[str, str]]]) -> str:
    """The "How to read the tables" paragraph: each shared sentence once, as its first table
    words it, and where another table's numbers differ, those numbers."""
    lines = []
    for uses in common.values():
        first_stem, first = uses[0]
        mine = NUMBER.findall(first)
        others = []
        for stem, sentence in uses[1:]:
            theirs = NUMBER.findall(sentence)
            differ = [t for m, t in zip(mine, theirs, strict=False) if m != t]
            if differ and len(mine) == len(theirs):
                others.append(f"`{stem}`: {', '.join(differ)}")
        tail = ""
        if others:
            tail = f" [numbers of `{first_stem}`; " + "; ".join(others) + "]"
        lines.append(f"- {first}{tail}")
    return "\n".join(lines)


def factor(block: str, common: dict[str, list[tuple[str, str]]], ids: dict[str, str]) -> str:
    """One include block with its shared caption sentences left out and each recorded reason
    in its notes replaced by its id."""

    def one(match: re.Match) -> str:
        name, body = match.group(1), match.group(2)
        if not is_table(body):
            return match.group(0)
        caption, rest = _caption(body)
        sentences = [x for x in SENTENCE.split(caption) if x.strip()]
        kept = [x for x in sentences if NUMBER.sub("#", x) not in common]
        changed = len(kept) != len(sentences)
        for text in sorted(ids, key=len, reverse=True):
            for status in ("skipped: ", "failed: "):
                if status + text in rest:
                    rest = rest.replace(status + text, status + ids[text])
                    changed = True
        if not changed:
            return match.group(0)
        head = f"{CAPTION}{' '.join(kept)}\n\n" if kept else ""
        return f"<!-- include: {name}{FACTORED} -->\n{head}{rest}\n{INCLUDE_END}"

    return INCLUDED.sub(one, block)
