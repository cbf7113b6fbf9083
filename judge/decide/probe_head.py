"""The probe head: a multinomial logistic regression from a model's hidden state to the four
labels' probabilities (strategy ``probe``).

A head is a versioned artifact: a JSON file holding the standardisation (``mean``,
``scale``), the weights in standardised units (``coef``, one row per label) and intercepts,
plus what it was fitted on (``about``). A config names it with its sha256
(:class:`judge.config.probe.ProbeHeadRef`), so the head is part of the judge version and a
changed file is refused. Heads shipped with the package live in ``judge/config/heads/`` and
are named ``builtin:<name>``; ``builtin:uniform`` reads no number and gives every label the
same probability (every claim goes to review): the head to collect a new model's vectors
with, before ``judge fit`` learns one from them.

A head may also hold a language offset (``shift``, :class:`LanguageShift`): for a claim the
probe reads as a language the head has an offset for (by the rule the head names,
:data:`judge.language.LANGUAGE_RULES`), the offset is subtracted from the vector before the
standardisation. The offset is part of the file, so of its sha256 and of the judge version.
A head without one is written and read exactly as before.

A head may also hand the claims read as a language to a head of their own (``languages``,
:class:`LanguageHeads`): a claim the probe reads as language ``L`` (by the rule the block
names) is decided, refused and scored by the head for ``L``, every other claim by this one.
Each head for a language reads the same vectors (its ``about`` names the same prompt, layer,
reader, evidence budget and served model, and the same model where both name one; refused
otherwise) and may not hold heads of its own. Such
a head is written in format :data:`FORMAT_LANGUAGES`, which an older version refuses instead
of deciding every claim with the outer head; all of it is in the file, so in its sha256 and
in the judge version.

A head also says how far the vectors it was fitted on reach (``range``, :class:`Reach`: the
largest standardised component and the largest root mean square of any of them; written by
``judge fit`` and research/fit_probe.py), and :meth:`ProbeHead.refusal` refuses a vector far
beyond that, or one that is all zeros or constant (:func:`judge.models.vectors.degenerate`).
A head that records no range is read with the bound its standardisation implies
(:meth:`ProbeHead.reach`). The check sits where the decision is made
(:func:`judge.decide.probe.decide_probe`), so a fresh vector and a replayed one are refused
alike.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from judge.language import LANGUAGE_RULES
from judge.models.vectors import degenerate
from judge.verdicts import LABELS

#: Where the heads shipped with the package are (``builtin:<name>`` → ``<name>.json``).
BUILTIN_DIR = Path(__file__).resolve().parent.parent / "config" / "heads"
BUILTIN_PREFIX = "builtin:"
#: The head file format this code reads.
FORMAT = "claim-judge/probe-head/v1"
#: The format of a head that holds heads per language (:class:`LanguageHeads`); a head
#: without them is written in :data:`FORMAT`, byte for byte as before.
FORMAT_LANGUAGES = "claim-judge/probe-head/v2"
#: What a head's ``about`` records of how its vectors were read: a head for a language must
#: agree with its outer head on each (:func:`languages_from`).
READ_KEYS = ("prompt", "excerpt_chars", "layers", "served", "reader")
#: What a head may record of the model whose vectors it read (a head ``judge fit`` writes
#: records neither): a head for a language must agree with its outer head where both do.
MODEL_KEYS = ("model", "gguf_sha256")


#: How many times farther than the fitted vectors reach (:class:`Reach`) a vector may read
#: before it is refused as not a hidden state of the kind the head reads (docs/probe.md).
REACH_MARGIN = 4.0
#: The reach assumed for a head that records none and whose standardisation is not its own
#: fit's (no ``about.n``, or shrunk toward another head's): what the standardisation of 10,001
#: vectors allows at most (:meth:`ProbeHead.reach`).
REACH_UNKNOWN = 100.0


class ProbeHeadError(ValueError):
    """A head file that is missing, altered (sha256) or malformed."""


@dataclass(frozen=True)
class Reach:
    """How far a head's fitted vectors reach in its standardised units: ``peak``, the largest
    absolute standardised component of any of them; ``spread``, the largest root mean square
    of one vector's standardised components. Any number of components: the statistics are
    per vector, so a head over concatenated readers records two numbers as any other."""

    peak: float
    spread: float

    @classmethod
    def of(cls, z: np.ndarray) -> Reach:
        """The reach of standardised vectors ``z`` (n x dim)."""
        z = np.atleast_2d(np.asarray(z, dtype=np.float64))
        if z.size == 0:
            raise ValueError("the reach of no vector")
        peak, spread = _peaks(z), _spreads(z)
        return cls(float(f"{peak.max():.6g}"), float(f"{spread.max():.6g}"))

    def widest(self, other: Reach | None) -> Reach:
        """The reach of both (a domain's head reads what its prior read, and more)."""
        if other is None:
            return self
        return Reach(max(self.peak, other.peak), max(self.spread, other.spread))

    def as_dict(self) -> dict[str, float]:
        return {"peak": self.peak, "spread": self.spread}


def _peaks(z: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.abs(z).max(1)
    return out


def _spreads(z: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.sqrt(np.mean(np.square(z), 1))
    return out


def reach_from(data: Any) -> Reach:
    """A head file's ``range`` block, checked: two finite positive numbers."""
    try:
        reach = Reach(float(data["peak"]), float(data["spread"]))
    except (TypeError, KeyError, ValueError) as exc:
        raise ProbeHeadError(f"a head's range needs a peak and a spread: {exc}") from None
    if not all(np.isfinite(v) and v > 0 for v in (reach.peak, reach.spread)):
        raise ProbeHeadError("a head's range must be two finite positive numbers")
    return reach


@dataclass(frozen=True)
class LanguageShift:
    """Per-language offsets of the hidden state: a vector of a text read as language ``L``
    (by ``rule``, an id of :data:`judge.language.LANGUAGE_RULES`) becomes
    ``vector - offsets[L]``; other vectors are left as they are. ``about`` says where the
    offsets come from (files and their sha256, the judge version that read them)."""

    rule: str
    offsets: dict[str, np.ndarray]
    about: dict[str, Any] = field(default_factory=dict, compare=False)

    def language(self, text: str) -> str | None:
        """The language ``text`` reads as, by the head's rule (None: no offset of its own)."""
        return LANGUAGE_RULES[self.rule](text)

    def apply(self, x: np.ndarray, texts: Sequence[str]) -> np.ndarray:
        """``x`` (n x dim) with each row's offset subtracted, ``texts[i]`` being what the
        probe read for row ``i``."""
        if len(texts) != x.shape[0]:
            raise ProbeHeadError(f"{x.shape[0]} vectors but {len(texts)} texts read")
        out = np.array(x, dtype=np.float64)
        for i, text in enumerate(texts):
            offset = self.offsets.get(self.language(text) or "")
            if offset is not None:
                out[i] -= offset
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "about": self.about,
                "offsets": {k: _floats(v) for k, v in sorted(self.offsets.items())}}


@dataclass(frozen=True)
class LanguageHeads:
    """The heads that decide the claims read as a language (``heads[L]`` for a claim the
    probe reads as ``L`` by ``rule``, an id of :data:`judge.language.LANGUAGE_RULES`)."""

    rule: str
    heads: dict[str, ProbeHead]

    def language(self, text: str) -> str | None:
        return LANGUAGE_RULES[self.rule](text)

    def head_for(self, text: str | None) -> ProbeHead | None:
        """The head for the language ``text`` reads as (None: the outer head decides)."""
        if text is None:
            raise self.needs_text()
        return self.heads.get(self.language(text) or "")

    def needs_text(self) -> ProbeHeadError:
        return ProbeHeadError(f"this head decides claims read as {', '.join(sorted(self.heads))}"
                              " with heads of their own: give the text the probe read for each "
                              "vector (judge.decide.probe.probe_text)")

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule,
                "heads": {k: h.as_dict() for k, h in sorted(self.heads.items())}}


@dataclass(frozen=True)
class ProbeHead:
    """``P(label | vector) = softmax(((vector' - mean) / scale) @ coef.T + intercept)``, where
    ``vector'`` is the vector minus the language offset of the text read (``shift``), if
    any."""

    labels: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray  # labels x dim, standardised units
    intercept: np.ndarray  # labels
    about: dict[str, Any] = field(default_factory=dict, compare=False)
    shift: LanguageShift | None = field(default=None, compare=False)
    #: how far the vectors it was fitted on reach (None: not recorded, see :meth:`reach`)
    fitted_range: Reach | None = field(default=None, compare=False)
    #: the heads that decide the claims read as a language (None: this head decides all)
    languages: LanguageHeads | None = field(default=None, compare=False)

    @property
    def dim(self) -> int:
        return int(self.mean.size)

    def standardised(self, vectors: np.ndarray, texts: Sequence[str] | None = None
                     ) -> np.ndarray:
        """Each vector as the head reads it: the language offset subtracted (``texts``: what
        the probe read for each, :func:`judge.decide.probe.probe_text`, required by a head
        with a language shift), then standardised. Not for the uniform head."""
        x = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
        if x.shape[1] != self.dim:
            raise ProbeHeadError(
                f"the head reads vectors of {self.dim} numbers, the model gave {x.shape[1]} "
                "(a head fits one model: fit one for this model with 'judge fit')")
        if self.shift is not None:
            if texts is None:
                raise ProbeHeadError(
                    "this head shifts vectors by the language read: give the text the probe "
                    "read for each vector (judge.decide.probe.probe_text)")
            x = self.shift.apply(x, texts)
        z: np.ndarray = (x - self.mean) / self.scale
        return z

    def logits(self, vectors: np.ndarray, texts: Sequence[str] | None = None) -> np.ndarray:
        """The labels' logits of each vector; ``texts`` as for :meth:`standardised` (and
        required by a head with heads per language: a row read as such a language gets that
        head's logits)."""
        if self.languages is not None:
            return self._by_language(vectors, texts)
        if self.dim == 0:  # the uniform head (builtin:uniform) reads no number
            rows = np.atleast_2d(np.asarray(vectors, dtype=np.float64)).shape[0]
            out: np.ndarray = np.tile(self.intercept, (rows, 1))
            return out
        logits: np.ndarray = self.standardised(vectors, texts) @ self.coef.T + self.intercept
        return logits

    def _by_language(self, vectors: np.ndarray, texts: Sequence[str] | None) -> np.ndarray:
        assert self.languages is not None
        x = np.atleast_2d(np.asarray(vectors, dtype=np.float64))
        if texts is None or len(texts) != x.shape[0]:
            raise self.languages.needs_text()
        picked = [self.decider(t) for t in texts]
        out = np.empty((x.shape[0], len(self.labels)))
        for head in {id(h): h for h in picked}.values():
            rows = [i for i, h in enumerate(picked) if h is head]
            out[rows] = head.logits(x[rows], [texts[i] for i in rows])
        return out

    def decider(self, text: str | None) -> ProbeHead:
        """The head that decides a claim the probe read as ``text``: the one for its
        language, else this one as it reads without heads per language."""
        if self.languages is None:
            return self
        return self.languages.head_for(text) or self._outer

    @cached_property
    def _outer(self) -> ProbeHead:
        """This head without its heads per language (built once)."""
        return replace(self, languages=None)

    def reach(self) -> Reach | None:
        """How far the vectors the head was fitted on reach: as recorded (``range``); for a
        head that records none, the most its standardisation allows. A head fitted without a
        prior standardises by its ``about.n`` vectors' own mean and standard deviation, so no
        component of any of them lies farther than sqrt(n - 1) deviations from the mean
        (Samuelson's inequality), nor can their root mean square; a head whose
        standardisation is another's is given :data:`REACH_UNKNOWN`. None: the uniform head,
        which reads no number."""
        if self.dim == 0:
            return None
        if self.fitted_range is not None:
            return self.fitted_range
        n = self.about.get("n")
        if isinstance(n, int) and n >= 2 and not self.about.get("shrunk_toward"):
            bound = float(np.sqrt(n - 1))
            return Reach(bound, bound)
        return Reach(REACH_UNKNOWN, REACH_UNKNOWN)

    def refusal(self, vector: np.ndarray, text: str | None = None) -> str | None:
        """Why this head must not decide from ``vector`` (None: it may): all zeros or
        constant (:func:`judge.models.vectors.degenerate`), or farther out than
        :data:`REACH_MARGIN` times what the vectors it was fitted on reach (:meth:`reach`).
        ``text``: what the probe read (a head with a language shift or heads per language
        needs it; a claim read as such a language is refused by its head's reach). Raises
        ``ProbeHeadError`` for a vector of another length."""
        if self.languages is not None:
            return self.decider(text).refusal(vector, text)
        problem = degenerate(vector)
        reach = self.reach()
        if problem or reach is None:
            return problem
        z = self.standardised(vector, None if text is None else [text])
        peak, spread = float(_peaks(z)[0]), float(_spreads(z)[0])
        for what, value, fitted in (("largest standardised component", peak, reach.peak),
                                    ("standardised components' root mean square", spread,
                                     reach.spread)):
            if not value <= REACH_MARGIN * fitted:
                recorded = ("the vectors it was fitted on reach" if self.fitted_range
                            else "its standardisation allows")
                return (f"the hidden-state vector is far outside the vectors the head was "
                        f"fitted on: its {what} is {value:.4g}, where {recorded} "
                        f"{fitted:.4g} (refused beyond {REACH_MARGIN:g} times that); check "
                        "that the provider serves the model and layer the head was fitted on "
                        "(docs/probe.md)")
        return None

    def probabilities(self, vectors: np.ndarray, texts: Sequence[str] | None = None
                      ) -> np.ndarray:
        s = self.logits(vectors, texts)
        s -= s.max(1, keepdims=True)
        p = np.exp(s)
        return p / p.sum(1, keepdims=True)  # type: ignore[no-any-return]

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": FORMAT if self.languages is None else FORMAT_LANGUAGES,
            "labels": list(self.labels),
            "dim": self.dim,
            "about": self.about,
            "mean": _floats(self.mean),
            "scale": _floats(self.scale),
            "intercept": _floats(self.intercept),
            "coef": [_floats(row) for row in self.coef],
        }
        if self.shift is not None:
            out["shift"] = self.shift.as_dict()
        if self.fitted_range is not None:
            out["range"] = self.fitted_range.as_dict()
        if self.languages is not None:
            out["languages"] = self.languages.as_dict()
        return out

    def dumps(self) -> str:
        """The head file's text (deterministic: the same head gives the same bytes)."""
        return json.dumps(self.as_dict(), ensure_ascii=False, separators=(",", ":")) + "\n"


def _floats(values: np.ndarray) -> list[float]:
    return [float(f"{v:.6g}") for v in np.asarray(values, dtype=np.float64).ravel()]


def from_dict(data: dict[str, Any]) -> ProbeHead:
    fmt = data.get("format")
    if fmt not in (FORMAT, FORMAT_LANGUAGES):
        raise ProbeHeadError(f"not a probe head file (format {fmt!r}, expected {FORMAT!r} "
                             f"or {FORMAT_LANGUAGES!r})")
    if (fmt == FORMAT_LANGUAGES) != ("languages" in data):
        raise ProbeHeadError(f"a head of format {fmt!r} "
                             + ("needs" if fmt == FORMAT_LANGUAGES else "cannot hold")
                             + " heads per language (a 'languages' block)")
    labels = tuple(data["labels"])
    if sorted(labels) != sorted(LABELS):
        raise ProbeHeadError(f"a head must score the four labels {LABELS}, not {labels}")
    mean = np.asarray(data["mean"], dtype=np.float64)
    scale = np.asarray(data["scale"], dtype=np.float64)
    coef = np.asarray(data["coef"], dtype=np.float64)
    intercept = np.asarray(data["intercept"], dtype=np.float64)
    dim = int(data["dim"])
    if (mean.shape != (dim,) or scale.shape != (dim,) or coef.shape != (len(labels), dim)
            or intercept.shape != (len(labels),)):
        raise ProbeHeadError("head arrays do not match its dimension and labels")
    if np.any(scale <= 0) or not all(np.all(np.isfinite(a)) for a in (mean, scale, coef,
                                                                        intercept)):
        raise ProbeHeadError("head holds non-finite numbers or a non-positive scale")
    shift = shift_from(data["shift"], dim) if "shift" in data else None
    reach = reach_from(data["range"]) if "range" in data else None
    head = ProbeHead(labels, mean, scale, coef, intercept, dict(data.get("about") or {}),
                     shift, reach)
    if "languages" in data:
        head = replace(head, languages=languages_from(data["languages"], head))
    return head


def languages_from(data: Any, outer: ProbeHead) -> LanguageHeads:
    """A head file's ``languages`` block, checked: a known rule, and per language a plain
    head (none of its own per language) with the outer head's labels, in the same order,
    reading the same vectors (:data:`READ_KEYS` of ``about`` equal, :data:`MODEL_KEYS` where
    both record them, the same dimension)."""
    if not isinstance(data, dict) or not isinstance(data.get("heads"), dict) \
            or not data["heads"]:
        raise ProbeHeadError("a head's languages block needs a rule and a head per language")
    rule = str(data.get("rule"))
    if rule not in LANGUAGE_RULES:
        raise ProbeHeadError(f"the head's languages block names the language rule {rule!r}, "
                             f"which this version does not know (known: "
                             f"{', '.join(LANGUAGE_RULES)})")
    heads = {}
    for language, body in data["heads"].items():
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            raise ProbeHeadError(f"the head for language {language!r} must be a plain head "
                                 f"(format {FORMAT!r}, no heads per language of its own)")
        head = from_dict(body)
        if head.labels != outer.labels or head.dim != outer.dim:
            raise ProbeHeadError(f"the head for language {language!r} must score the labels "
                                 "in its outer head's order, from vectors of as many numbers")
        differ = [k for k in READ_KEYS if head.about.get(k) != outer.about.get(k)]
        differ += [k for k in MODEL_KEYS if k in head.about and k in outer.about
                   and head.about[k] != outer.about[k]]
        if differ:
            raise ProbeHeadError(
                f"the head for language {language!r} was fitted on vectors read otherwise "
                f"than its outer head's ({', '.join(differ)} differ): both must read the "
                "same vectors")
        heads[str(language)] = head
    return LanguageHeads(rule, heads)


def shift_from(data: Any, dim: int) -> LanguageShift:
    """A head file's ``shift`` block, checked: a known rule, one offset of ``dim`` finite
    numbers per language."""
    if not isinstance(data, dict) or not isinstance(data.get("offsets"), dict):
        raise ProbeHeadError("a head's shift block needs a rule and offsets by language")
    rule = str(data.get("rule"))
    if rule not in LANGUAGE_RULES:
        raise ProbeHeadError(f"the head's shift names the language rule {rule!r}, which this "
                             f"version does not know (known: {', '.join(LANGUAGE_RULES)})")
    offsets = {str(k): np.asarray(v, dtype=np.float64) for k, v in data["offsets"].items()}
    if any(v.shape != (dim,) or not np.all(np.isfinite(v)) for v in offsets.values()):
        raise ProbeHeadError(f"a head's language offsets must be {dim} finite numbers each")
    return LanguageShift(rule, offsets, dict(data.get("about") or {}))


def head_path(file: str, base: Path | None = None) -> Path:
    """The file a head reference names: ``builtin:<name>`` or a path (relative to ``base``,
    the folder of the config that names it, else the working directory)."""
    if file.startswith(BUILTIN_PREFIX):
        name = file[len(BUILTIN_PREFIX):]
        if not name or "/" in name or "\\" in name or name.startswith("."):
            raise ProbeHeadError(f"{file!r} is not a builtin head name")
        return BUILTIN_DIR / f"{name}.json"
    path = Path(file).expanduser()
    return path if path.is_absolute() or base is None else base / path


def file_sha256(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError as exc:
        raise ProbeHeadError(f"probe head file not found: {path}") from exc


#: heads fitted in this process (``judge fit``'s candidates), by the sha256 of their file text
_FITTED: dict[str, ProbeHead] = {}


def canonical(head: ProbeHead) -> tuple[ProbeHead, str]:
    """The head as its file holds it (numbers rounded as written) and that file's sha256; the
    head is remembered, so a config pinning that sha256 finds it before the file is
    written (a fit measures its candidate before writing it)."""
    text = head.dumps()
    sha256 = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if sha256 not in _FITTED:
        _FITTED[sha256] = from_dict(json.loads(text))
    return _FITTED[sha256], sha256


def remember(body: str) -> str:
    """Make a head file's text known to this process by its sha256 (a head kept in a store:
    a stored version replays wherever its head file has gone since); returns the sha256."""
    sha256 = hashlib.sha256(body.encode("utf-8")).hexdigest()
    if sha256 not in _FITTED:
        _FITTED[sha256] = from_dict(json.loads(body))
    return sha256


def heads_text(refs: list[tuple[str, str]]) -> dict[str, str]:
    """The file text of each head ``(file, sha256)`` by sha256, checked against it."""
    out = {}
    for file, sha256 in refs:
        head = load_head(file, sha256)
        text = head.dumps()
        if hashlib.sha256(text.encode("utf-8")).hexdigest() != sha256:
            text = head_path(file).read_text(encoding="utf-8")
        out[sha256] = text
    return out


def load_head(file: str, sha256: str, base: Path | None = None) -> ProbeHead:
    """The head a config names, refused when the file's sha256 is not the pinned one. A file
    that is not there is taken from the heads this process knows by that sha256 (fitted here,
    or kept in the store of the run being replayed)."""
    path = head_path(file, base)
    if not path.is_file() and sha256 in _FITTED:
        return _FITTED[sha256]
    actual = file_sha256(path)
    if actual != sha256:
        raise ProbeHeadError(
            f"probe head {file} has sha256 {actual[:12]}…, the config pins {sha256[:12]}…: the "
            "file changed, and a changed head is a new judge version (pin the new sha256)")
    return _parsed(str(path), actual)


@lru_cache(maxsize=16)
def _parsed(path: str, sha256: str) -> ProbeHead:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ProbeHeadError(f"probe head {path} is not readable JSON: {exc}") from exc
    return from_dict(data)
