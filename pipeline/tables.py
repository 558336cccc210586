"""Article tables as files: Markdown (pipe table + caption), CSV and a LaTeX tabular fragment.

The article is assembled from these files; no number is retyped. Cells are written as they
are in the frame (format numbers before calling ``write``), missing values as ``na_rep``.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
}


def latex_escape(text: str) -> str:
    """Escape the characters LaTeX treats specially (in one pass, so escapes are not re-escaped)."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def _cells(df: pd.DataFrame, na_rep: str) -> list[list[str]]:
    return [[na_rep if _isna(v) else str(v) for v in row] for row in df.itertuples(index=False)]


def _isna(value) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _numeric(df: pd.DataFrame) -> list[bool]:
    return [
        pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])
        for c in df.columns
    ]


def to_markdown(df: pd.DataFrame, caption: str, na_rep: str = "n/a") -> str:
    """Pipe table preceded by a ``Table: caption`` line (pandoc's caption syntax)."""

    def md(text: str) -> str:
        return text.replace("|", r"\|").replace("\n", " ")

    header = [md(str(c)) for c in df.columns]
    align = ["---:" if num else ":---" for num in _numeric(df)]
    lines = [f"Table: {md(caption.strip())}", ""]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("| " + " | ".join(align) + " |")
    lines += ["| " + " | ".join(md(c) for c in row) + " |" for row in _cells(df, na_rep)]
    return "\n".join(lines) + "\n"


def to_latex(df: pd.DataFrame, caption: str, na_rep: str = "n/a") -> str:
    """A ``tabular`` fragment (no float, no packages beyond LaTeX itself), caption as a comment.

    The including document puts it in its own ``table`` environment with its own caption.
    """
    spec = "".join("r" if num else "l" for num in _numeric(df))
    caption_comment = " ".join(caption.split())
    lines = [f"% {caption_comment}", rf"\begin{{tabular}}{{{spec}}}", r"\hline"]
    lines.append(" & ".join(latex_escape(str(c)) for c in df.columns) + r" \\")
    lines.append(r"\hline")
    lines += [" & ".join(latex_escape(c) for c in row) + r" \\" for row in _cells(df, na_rep)]
    lines += [r"\hline", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def write(
    df: pd.DataFrame, out_dir: Path | str, stem: str, caption: str, na_rep: str = "n/a"
) -> list[Path]:
    """Write ``<stem>.md``, ``<stem>.csv`` and ``<stem>.tex`` into ``out_dir``; return the paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    md, csv, tex = out / f"{stem}.md", out / f"{stem}.csv", out / f"{stem}.tex"
    md.write_text(to_markdown(df, caption, na_rep), encoding="utf-8")
    df.to_csv(csv, index=False, na_rep=na_rep, lineterminator="\n")
    tex.write_text(to_latex(df, caption, na_rep), encoding="utf-8")
    return [md, csv, tex]
