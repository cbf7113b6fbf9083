"""The quantity scanner: numbers, percentages, dates, times, versions and identifiers with
digits, in English and Chinese (full-width digits, Chinese numerals, 萬/億 multipliers), and
whether a quantity occurs in a piece of evidence. Used by the ``numbers_match`` check.
Imports only :mod:`judge.text` and :mod:`judge.checks.numerals` (the Chinese numerals)."""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from judge.checks.numerals import (
    ZH_DIGIT,
    ZH_NUMERAL,
    ZH_POINT,
    int_or_chinese,
    parse_chinese_decimal,
    parse_chinese_numeral,
    rest_after_multiplier,
    roc_year,
    tenths,
)
from judge.text import CACHED_CHARS, cached_when_short, normalize

__all__ = ["EvidenceIndex", "Quantity", "extract_quantities", "parse_chinese_numeral",
           "quantity_in_evidence"]

QuantityKind = Literal["number", "percent", "date", "time", "version", "code"]
DateParts = tuple[int | None, int | None, int | None]


@dataclass(frozen=True)
class Quantity:
    """A quantity found in text. ``text`` is the surface as written; ``value``/``unit`` for
    numbers and percentages (canonical unit), ``dates`` the (year, month, day) readings of a
    date (two for an ambiguous ``1/2/2026``), ``version`` the dotted components, ``name`` the
    product of a version (``python``) or the compact form of an identifier (``code``)."""

    kind: QuantityKind
    text: str
    value: float | None = None
    unit: str | None = None
    dates: tuple[DateParts, ...] = ()
    version: tuple[str, ...] = ()
    name: str | None = None

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.kind, self.value, self.unit, self.dates, self.version, self.name)


@dataclass(frozen=True)
class _Unit:
    canonical: str
    dimension: str
    factor: float | None = None  # to the dimension's base unit, when converting is safe


_UNITS: dict[str, _Unit] = {}


def _units(names: str, canonical: str, dimension: str, factor: float | None = None) -> None:
    for name in names.split("|"):
        _UNITS[name] = _Unit(canonical, dimension, factor)


_units("ms|msec|msecs|millisecond|milliseconds|毫秒", "ms", "time", 0.001)
_units("s|sec|secs|second|seconds|秒|秒鐘|秒钟", "s", "time", 1)
_units("min|mins|minute|minutes|分鐘|分钟", "min", "time", 60)
_units("h|hr|hrs|hour|hours|小時|小时|個小時|个小时|鐘頭|钟头|個鐘頭|个钟头", "h", "time", 3600)
_units("day|days|天|日", "day", "time", 86400)
_units("week|weeks|週|周|星期|個星期|个星期|禮拜|礼拜|個禮拜|个礼拜", "week", "time", 604800)
_units("month|months|個月|个月", "month", "month")
_units("year|years|yr|yrs|年", "year", "year")
_units("byte|bytes|位元組|字節|字节", "B", "size")
_units("kb|kib", "KB", "size")
_units("mb|mib", "MB", "size")
_units("gb|gib", "GB", "size")
_units("tb|tib", "TB", "size")
_units("mm|毫米|公釐", "mm", "length", 0.001)
_units("cm|公分|釐米|厘米", "cm", "length", 0.01)
_units("m|公尺|米", "m", "length", 1)
_units("km|公里", "km", "length", 1000)
_units("mg|毫克", "mg", "mass", 0.001)
_units("g|克|公克", "g", "mass", 1)
_units("kg|公斤|千克", "kg", "mass", 1000)
_units("°c|℃|度c|攝氏度", "°C", "temperature")
_units("°f|℉", "°F", "temperature")
_units("%|percent|per cent|pct", "%", "percent")
_units("pp|percentage point|percentage points|個百分點|个百分点|百分點|百分点", "pp", "pp")
_units("元|塊|块|圓", "元", "money")
_units("usd|dollars", "USD", "money")
_units("bpm", "bpm", "rate")
_units("rps|qps", "rps", "rate")
_units("倍|x|fold", "倍", "ratio")
_units("歲|岁|years old", "歲", "age")
_units("版", "版", "version")
_units(
    "次|times|個|个|筆|笔|篇|題|题|份|項|项|頁|页|行|字|步|人|位|名|條|条|張|张|種|种|層|层|組|组|"
    "輪|轮|句|段|章|節|节|家|台|臺|部|隻|本|件|則|则|例|列|欄|栏|格|顆|颗|tokens|token|requests|"
    "request|calls|call|queries|items|rows|samples|cases|claims|tests|chunks|documents|docs|files|"
    "lines|steps|users|answers|questions|sources",
    "count", "count",
)

_ASCII_UNIT = re.compile(r"[a-z %°]+")


def _unit_alternation(names: list[str]) -> str:
    parts = []
    for name in sorted(names, key=len, reverse=True):
        body = re.escape(name).replace(r"\ ", r"\s+")
        parts.append(body + r"(?![a-z])" if _ASCII_UNIT.fullmatch(name) else body)
    return "|".join(parts)


_UNIT_AFTER = re.compile(rf"[ \t]*({_unit_alternation(list(_UNITS))})", re.IGNORECASE)
_ZH_UNIT_AFTER = re.compile(
    rf"[ \t]*({_unit_alternation([u for u in _UNITS if not u.isascii() and u != '版'])})"
)
_MULTIPLIER_AFTER = re.compile(
    r"[ \t]*(萬|万|億|亿|千|百(?!分)|thousand|million|billion|k(?![a-z]))", re.IGNORECASE
)
_MULTIPLIERS = {"萬": 1e4, "万": 1e4, "億": 1e8, "亿": 1e8, "千": 1e3, "百": 1e2,
                "thousand": 1e3, "million": 1e6, "billion": 1e9, "k": 1e3}
#: the units a bare 半 may halve (``半小時``, ``半年``; not ``半天``, also "a long while")
_HALF_OF = "小時|小时|個小時|个小时|鐘頭|钟头|個鐘頭|个钟头|分鐘|分钟|秒鐘|秒钟|個月|个月|年"
_TIME_UNITS = _HALF_OF + "|月|天"
#: ``個半小時`` after a number: a half and the unit (``個半月``: months)
_HALF_UNIT = re.compile(rf"[ \t]*[個个]?半[個个]?({_TIME_UNITS})")


def _half_unit(half: re.Match[str]) -> _Unit:
    return _UNITS.get(half.group(1)) or _UNITS["個月"]
#: ``半`` after a time unit (``兩年半``), not opening a word (``半導體``, ``半夜``)
_HALF_AFTER = re.compile(r"半(?![導导島岛徑径價价數数場场途夜路山])")
_RANGE_TO = re.compile(r"[ \t]*(?:-|–|—|~|〜|至|到|to)[ \t]*(?=[-−]?\d)", re.IGNORECASE)
_ORDINAL = {"st", "nd", "rd", "th"}
_NUMBER_AT = re.compile(r"[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")

_VERSION_NAMES = frozenset(
    {
        "python", "java", "node", "nodejs", "go", "golang", "rust", "ruby", "php", "perl", "kotlin",
        "swift", "scala", "dotnet", "http", "tls", "ssl", "ios", "android", "macos", "windows",
        "ubuntu", "debian", "centos", "fedora", "rhel", "postgres", "postgresql", "mysql", "sqlite",
        "redis", "mongodb", "kubernetes", "docker", "django", "flask", "fastapi", "react", "vue",
        "angular", "spring", "pydantic", "numpy", "pandas", "pytorch", "torch", "tensorflow", "gpt",
        "claude", "gemini", "llama", "qwen", "mistral", "chrome", "firefox", "safari", "oauth",
        "ipv", "openapi", "swagger", "unicode", "utf", "es", "ecmascript", "html", "css"
    }
)
_VERSION_WORDS = frozenset({"version", "ver", "release", "rev", "v"})

_MON = (
    r"(?-i:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_MONTHS = {
    m: i
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"),
        start=1,
    )
}
_NOT_BEFORE_NUMBER = r"(?<![A-Za-z0-9_.])"

_SCAN = re.compile(
    "|".join([
        r"(?P<skip>\$(?:\.[^\s.\[\]]+|\[[^\]\s]*\])+|(?<=[A-Za-z0-9_\]])\[-?\d+\])",
        rf"{_NOT_BEFORE_NUMBER}(?P<iy>\d{{4}})(?P<isep>[-/.])(?P<im>\d{{1,2}})(?P=isep)"
        r"(?P<id>\d{1,2})(?![0-9]|\.\d)(?:[T ](?P<ith>\d{1,2}):(?P<itm>\d{2})(?::\d{2}"
        r"(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?(?![0-9]))?",
        rf"{_NOT_BEFORE_NUMBER}(?P<ymy>(?:19|20)\d{{2}})[-/](?P<ymm>0?[1-9]|1[0-2])(?![\d.\-/])",
        r"(?<![A-Za-z0-9_./])(?P<da>\d{1,2})/(?P<db>\d{1,2})/(?P<dy>\d{4})(?![\d/])",
        rf"(?P<e3m>{_MON})\.?\s+(?P<e3y>\d{{4}})(?!\d)",
        rf"(?P<e1m>{_MON})\.?\s+(?P<e1d>\d{{1,2}})(?:st|nd|rd|th)?(?![\d:])"
        r"(?:,?\s+(?P<e1y>\d{4})(?!\d))?",
        rf"(?<![\d.])(?P<e2d>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<e2m>{_MON})\.?"
        r"(?:,?\s+(?P<e2y>\d{4})(?!\d))?",
        r"(?<![\d.])(?:(?:(?P<zy>\d{4}|[〇零一二三四五六七八九]{4})|"
        rf"(?:民國|民国)\s*(?P<zry>\d{{1,3}}|[{ZH_NUMERAL}]{{1,5}}))\s*年\s*)?"
        r"(?P<zm>\d{1,2}|[一二三四五六七八九十]{1,3})\s*月"
        r"(?:\s*(?P<zd>\d{1,2}|[一二三四五六七八九十]{1,3})\s*[日號号])?",
        rf"(?:民國|民国)\s*(?P<roc>\d{{1,3}}|[{ZH_NUMERAL}]{{1,5}})\s*年",
        r"(?<![\d:.])(?P<th>[01]?\d|2[0-3]):(?P<tm>[0-5]\d)(?::[0-5]\d)?(?![\d:])",
        rf"百分之\s*(?P<zp>\d+(?:\.\d+)?|[{ZH_DIGIT}十百]+(?:[{ZH_POINT}][{ZH_DIGIT}]+)?)",
        rf"(?<![{ZH_NUMERAL}\d.])(?!八成[是會会就在要])(?P<zc>\d|[{ZH_DIGIT}十])成"
        rf"(?P<zc2>\d|[{ZH_DIGIT}])?(?![不為为功立長长本員员績绩果就熟效分型形交品])",
        r"(?:版本|版號|版号)\s*[:為为是]?\s*v?(?P<zv>\d+(?:\.\d+)*)",
        r"(?P<word>[A-Za-z_][A-Za-z0-9_]*(?:[.\-:/+@][A-Za-z0-9_]+)*)",
        rf"{_NOT_BEFORE_NUMBER}(?P<dver>\d+(?:\.\d+){{2,}})(?![A-Za-z0-9_]|\.\d)",
        rf"{_NOT_BEFORE_NUMBER}(?P<num>[-−]?(?:\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d+)?)",
        rf"(?<![{ZH_NUMERAL}\d])(?P<half>半)(?=[個个]?(?:{_HALF_OF}))",
        rf"(?P<zh>(?:第\s*)?[{ZH_NUMERAL}]+(?:[{ZH_POINT}][{ZH_DIGIT}]+)?)",
    ]),
    re.IGNORECASE,
)

_LIST_MARKER = re.compile(
    r"^[ \t]*(?:[-*•·][ \t]+|\d{1,3}[.)](?=[ \t])|\d{1,3}、|[(（]\d{1,3}[)）]|"
    r"[一二三四五六七八九十]{1,3}、)",
    re.MULTILINE,
)


def _fold_width(text: str) -> str:
    """Full-width ASCII → ASCII (except the CJK comma ``，``), one char for one char, so
    offsets stay those of the original text."""
    out = []
    for ch in text:
        cp = ord(ch)
        if 0xFF01 <= cp <= 0xFF5E and ch != "，":
            ch = chr(cp - 0xFEE0)
        elif ch in "\u3000\u00a0":
            ch = " "
        elif ch == "−":
            ch = "-"
        out.append(ch)
    return "".join(out)


def _valid_date(y: int | None, m: int | None, d: int | None) -> bool:
    if y is not None and m is not None and d is not None:
        try:
            datetime.date(y, m, d)
        except ValueError:
            return False
        return 1000 <= y <= 2999
    return (m is None or 1 <= m <= 12) and (d is None or 1 <= d <= 31) and (
        y is None or 1000 <= y <= 2999)


def _version_parts(text: str) -> tuple[str, ...]:
    parts = [str(int(p)) if p.isdigit() else p for p in text.split(".")]
    while len(parts) > 1 and parts[-1] == "0":
        parts.pop()
    return tuple(parts)


def _compact(text: str) -> str:
    return re.sub(r"[\s\-_./:+@]", "", normalize(text))


@dataclass
class _Scan:
    """State of one extraction pass: the folded text and the original for surfaces."""

    text: str
    original: str
    found: list[Quantity]

    def add(self, start: int, end: int, kind: QuantityKind, **fields: Any) -> None:
        self.found.append(Quantity(kind, self.original[start:end].strip(), **fields))


def _date(scan: _Scan, m: re.Match[str], parts: list[DateParts], time: str | None = None) -> int:
    """Record a date (its valid readings); an impossible date (``2026-13-45``) counts as the
    plain numbers it is written with, so nothing is silently dropped."""
    valid = tuple(p for p in parts if _valid_date(*p))
    if valid:
        scan.add(m.start(), m.end(), "date", dates=valid)
    else:
        for n in re.finditer(r"\d+", scan.text[m.start() : m.end()]):
            at = m.start() + n.start()
            scan.add(at, at + len(n.group()), "number", value=float(n.group()))
    if time:
        scan.add(m.start(), m.end(), "time", name=time)
    return m.end()


def _on_dates(scan: _Scan, m: re.Match[str]) -> int | None:
    g = m.group
    if g("iy"):
        time = f"{int(g('ith')):02d}:{g('itm')}" if g("ith") else None
        return _date(scan, m, [(int(g("iy")), int(g("im")), int(g("id")))], time)
    if g("ymy"):
        return _date(scan, m, [(int(g("ymy")), int(g("ymm")), None)])
    if g("dy"):
        a, b, y = int(g("da")), int(g("db")), int(g("dy"))
        return _date(scan, m, [(y, a, b), (y, b, a)] if a != b else [(y, a, b)])
    for prefix in ("e3", "e1", "e2"):
        if g(f"{prefix}m"):
            month = _MONTHS[g(f"{prefix}m")[:3].lower()]
            day = g(f"{prefix}d") if prefix != "e3" else None
            year = g(f"{prefix}y")
            return _date(scan, m, [(int(year) if year else None, month,
                                    int(day) if day else None)])
    if g("zm"):
        year = roc_year(g("zry")) if g("zry") else int_or_chinese(g("zy"))
        return _date(scan, m, [(year, int_or_chinese(g("zm")), int_or_chinese(g("zd")))])
    if g("roc"):
        if (year := roc_year(g("roc"))) is not None:
            scan.add(m.start(), m.end(), "number", value=float(year), unit="year")
        return m.end()
    if g("th"):
        scan.add(m.start(), m.end(), "time", name=f"{int(g('th')):02d}:{g('tm')}")
        return m.end()
    return None


def _on_word(scan: _Scan, m: re.Match[str]) -> int:
    """Latin words: versions (``v1.2``, ``HTTP/2``, ``Python 3.11``) and identifiers with
    digits (``qwen3.5:9b``, ``p01``); other words carry no quantity."""
    word = m.group("word")
    lower = word.lower()
    if not any(c.isdigit() for c in word):
        if lower in _VERSION_NAMES or lower in _VERSION_WORDS:
            dotted = r"(\d+(?:\.\d+)+)" if lower in _VERSION_NAMES else r"(\d+(?:\.\d+)*)"
            after = re.compile(rf"[ \t]*[:=]?[ \t]*v?{dotted}(?![A-Za-z0-9_]|\.\d)", re.I)
            if v := after.match(scan.text, m.end()):
                name = lower if lower in _VERSION_NAMES else None
                scan.add(m.start(), v.end(), "version", version=_version_parts(v.group(1)),
                         name=name)
                return v.end()
        return m.end()
    if v := re.fullmatch(r"v(\d+(?:\.\d+)*)", lower):
        scan.add(m.start(), m.end(), "version", version=_version_parts(v.group(1)))
    elif (v := re.fullmatch(r"([a-z]+)[-/_]?v?(\d+(?:\.\d+)*)", lower)) and (
        v.group(1) in _VERSION_NAMES
    ):
        scan.add(m.start(), m.end(), "version", version=_version_parts(v.group(2)),
                 name=v.group(1))
    else:
        scan.add(m.start(), m.end(), "code", name=_compact(word))
    return m.end()


def _number_at(scan: _Scan, start: int, end: int, raw: str) -> tuple[int, Quantity]:
    """A number starting at ``start`` (digits up to ``end``) with its multiplier, unit or
    percent sign; a number glued to letters that are no unit is an identifier (``2FA``)."""
    value = float(raw.replace(",", "").replace("−", "-"))
    text = scan.text
    glued = re.compile(r"[A-Za-z]+").match(text, end)
    if glued:
        suffix = glued.group().lower()
        if suffix not in _ORDINAL and suffix != "k" and suffix not in _UNITS:
            word_end = re.compile(r"[A-Za-z0-9_]*(?:[.\-:/+@][A-Za-z0-9_]+)*").match(text, end)
            assert word_end is not None
            surface = scan.original[start:word_end.end()]
            return word_end.end(), Quantity("code", surface, name=_compact(surface))
        if suffix in _ORDINAL:
            end = glued.end()
    if mult := _MULTIPLIER_AFTER.match(text, end):
        value *= _MULTIPLIERS[mult.group(1).lower()]
        end = mult.end()
        if rest := rest_after_multiplier(text, end, mult.group(1)):
            value, end = value + rest[0], rest[1]
    unit = None
    if half := _HALF_UNIT.match(text, end):  # 1個半小時: one and a half hours
        unit, value, end = _half_unit(half), value + 0.5, half.end()
    elif u := _UNIT_AFTER.match(text, end):
        unit = _UNITS[re.sub(r"\s+", " ", u.group(1).lower())]
        end = u.end()
    if unit is not None and (half := _HALF_AFTER.match(text, end)) and (
            unit.dimension in ("time", "month", "year")):  # 兩年半: two and a half years
        value, end = value + 0.5, half.end()
    surface = scan.original[start:end].strip()
    if unit and unit.dimension == "percent":
        return end, Quantity("percent", surface, value=value, unit="%")
    if unit and unit.dimension == "version":
        return end, Quantity("version", surface, version=_version_parts(raw.lstrip("-−")))
    return end, Quantity("number", surface, value=value, unit=unit.canonical if unit else None)


def _on_number(scan: _Scan, m: re.Match[str]) -> int:
    """A number, or a range ``3–5 天`` (two numbers sharing the unit written once)."""
    end, first = _number_at(scan, m.start(), m.end(), m.group("num"))
    found = [first]
    to = _RANGE_TO.match(scan.text, end) if first.kind in ("number", "percent") else None
    if to and (second := _NUMBER_AT.match(scan.text, to.end())):
        end2, last = _number_at(scan, second.start(), second.end(), second.group())
        if last.kind in ("number", "percent"):
            if first.kind == "number" and first.unit is None and last.kind == "percent":
                first = Quantity("percent", first.text, value=first.value, unit="%")
            elif first.unit is None and last.unit is not None:
                first = Quantity("number", first.text, value=first.value, unit=last.unit)
            found, end = [first, last], end2
    scan.found.extend(found)
    return end


def _on_chinese_numeral(scan: _Scan, m: re.Match[str]) -> int:
    """Chinese numerals count only as ordinals (``第三``), before a counter or unit
    (``三次``, ``兩個``, ``十分鐘``) or as compounds (``二十三``, ``一百``); a lone ``一``
    (一個, 一次, 第一: mostly "a"/"first") and words like ``十分``, ``千萬``, ``萬一`` are not
    quantities."""
    raw = m.group("zh")
    ordinal = raw.startswith("第")
    digits = raw.removeprefix("第").strip()
    value = parse_chinese_decimal(digits)
    unit_m = _ZH_UNIT_AFTER.match(scan.text, m.end())
    half = _HALF_UNIT.match(scan.text, m.end())  # 一個半小時
    unit = _UNITS[unit_m.group(1)] if unit_m else None
    end = unit_m.end() if unit_m else m.end()
    after = _HALF_AFTER.match(scan.text, end) if unit is not None and unit.dimension in (
        "time", "month", "year") else None  # 兩年半
    compound = len(digits) > 1 and any(c in "十百千萬万億亿" for c in digits) and (
        digits[0] not in "百千萬万億亿")
    if value is None or (digits == "一" and not (half or after)) or not (
            ordinal or unit_m or compound):
        return m.end()
    if half:
        unit, value, end = _half_unit(half), value + 0.5, half.end()
    elif after:
        value, end = value + 0.5, after.end()
    assert value is not None
    scan.add(m.start(), end, "number", value=value, unit=unit.canonical if unit else None)
    return end


def _on_match(scan: _Scan, m: re.Match[str]) -> int:
    if m.group("skip"):
        return m.end()
    handled = _on_dates(scan, m)
    if handled is not None:
        return handled
    g = m.group
    if g("zp"):
        zp = g("zp")
        value = float(zp) if zp[0].isdigit() else parse_chinese_decimal(zp)
        if value is not None:
            scan.add(m.start(), m.end(), "percent", value=float(value), unit="%")
        return m.end()
    if g("zc"):
        if (tenth := tenths(g("zc"), g("zc2"))) is not None:
            scan.add(m.start(), m.end(), "percent", value=tenth, unit="%")
        return m.end()
    if g("zv"):
        scan.add(m.start(), m.end(), "version", version=_version_parts(g("zv")))
        return m.end()
    if g("word"):
        return _on_word(scan, m)
    if g("dver"):
        scan.add(m.start(), m.end(), "version", version=_version_parts(g("dver")))
        return m.end()
    if g("num"):
        return _on_number(scan, m)
    if g("half"):  # 半小時: half an hour
        unit_m = _HALF_UNIT.match(scan.text, m.start())
        assert unit_m is not None
        scan.add(m.start(), unit_m.end(), "number", value=0.5,
                 unit=_half_unit(unit_m).canonical)
        return unit_m.end()
    return _on_chinese_numeral(scan, m)


@cached_when_short(8192)
def extract_quantities(text: str) -> list[Quantity]:
    """Every quantity in ``text``, in order, each once (see :class:`Quantity`); cached for
    texts up to 4,000 characters (claims and evidence are checked more than once).

    Recognised: integers, decimals, thousands separators (``1,000``), multipliers (``10k``,
    ``1.5萬``, ``1萬5千``), negative numbers, ranges (``3–5 天`` → 3 天 and 5 天), halves
    (``1個半小時``, ``兩年半``, ``半小時``), percentages (``61%``, ``百分之六十一點五``, ``三成``),
    units (ms, s, min, h, MB, GB, km, kg, °C, 次, 天, 個, 筆, 分鐘, 小時, 歲, 年, 元, tokens …),
    dates (``2026-01-01``, ``2026/1/1``, ``1/2/2026`` (both readings), ``Jan 1 2026``,
    ``1 January 2026``, ``2026年1月1日``, ``三月五日``, ``民國115年1月1日``; the year inside a
    date is not counted again), times (``10:30``), versions (``v1.2``, ``1.2.3``, ``Python 3.11``,
    ``HTTP/2``, ``版本 6.3``, ``6.3 版``), identifiers with digits (``qwen3.5:9b``), and Chinese
    numerals as described in :func:`_on_chinese_numeral`. List markers at line start
    (``1.``, ``-``, ``一、``) and JSON paths (``$.metrics[2]``) are ignored; citation markers
    must be stripped by the caller (:func:`judge.citations.strip_markers`).
    """
    folded = _LIST_MARKER.sub(lambda m: " " * len(m.group()), _fold_width(text))
    scan = _Scan(folded, text, [])
    pos = 0
    while (m := _SCAN.search(folded, pos)) is not None:
        pos = max(_on_match(scan, m), m.end() if m.end() > m.start() else m.start() + 1)
    unique: dict[tuple[Any, ...], Quantity] = {}
    for q in scan.found:
        unique.setdefault(q.key, q)
    return list(unique.values())


# -- matching claim quantities against evidence ----------------------------------------------------

_CANONICAL: dict[str, _Unit] = {u.canonical: u for u in _UNITS.values()}


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _same_amount(a: float, a_unit: str | None, b: float, b_unit: str | None) -> bool:
    """Equal amounts: a missing unit on either side is lenient; units of one dimension are
    converted when the conversion is exact (ms↔s↔min↔h↔day↔week, mm↔m↔km, mg↔g↔kg); counters
    (次, 個, 筆, tokens, …) are interchangeable; other units must be the same."""
    if a_unit is None or b_unit is None:
        return _close(a, b)
    ua, ub = _CANONICAL[a_unit], _CANONICAL[b_unit]
    if ua.dimension != ub.dimension:
        return False
    if ua.factor is not None and ub.factor is not None:
        return _close(a * ua.factor, b * ub.factor)
    return (ua.dimension == "count" or a_unit == b_unit) and _close(a, b)


@dataclass
class EvidenceIndex:
    """What a claim's quantities are compared with: quantities extracted from the evidence,
    plus its normalised and compact text (for versions and identifiers)."""

    quantities: list[Quantity]
    normalized: str
    compact: str
    numbers: list[tuple[float, str | None, QuantityKind]] = field(default_factory=list)

    def __post_init__(self) -> None:
        """Amounts to compare numbers with; a version of at most two parts (``v6.3``) also
        counts as the number ``6.3``."""
        for q in self.quantities:
            if q.value is not None:
                self.numbers.append((q.value, q.unit, q.kind))
            elif q.kind == "version" and len(q.version) <= 2 and q.version[0].isdigit():
                self.numbers.append((float(".".join(q.version)), None, "number"))

    @classmethod
    def of(cls, text: str) -> EvidenceIndex:
        """The index of ``text`` (cached: one source is evidence for many claims; enough
        short texts are kept for the sources of every answer in flight at concurrency 64)."""
        return _short_index(text) if len(text) <= CACHED_CHARS else _evidence_index(text)


@lru_cache(maxsize=32)
def _evidence_index(text: str) -> EvidenceIndex:
    return EvidenceIndex(extract_quantities(text), normalize(text), _compact(text))


@lru_cache(maxsize=1024)
def _short_index(text: str) -> EvidenceIndex:
    return EvidenceIndex(extract_quantities(text), normalize(text), _compact(text))


def _match_number(q: Quantity, ev: EvidenceIndex) -> bool:
    assert q.value is not None
    for value, unit, kind in ev.numbers:
        if q.kind == "percent":
            if kind == "percent" and _close(value, q.value):
                return True
            if kind == "number" and unit is None and (
                _close(value, q.value) or _close(value * 100, q.value)
            ):
                return True
        elif kind == "percent":
            if q.unit is None and _close(value, q.value):
                return True
        elif _same_amount(q.value, q.unit, value, unit):
            return True
    year = q.kind == "number" and q.unit in (None, "year") and q.value.is_integer()
    return year and any(
        any(d[0] == int(q.value) for d in e.dates) for e in ev.quantities if e.kind == "date"
    )


def _match_date(q: Quantity, ev: EvidenceIndex) -> bool:
    def agrees(want: DateParts, have: DateParts) -> bool:
        return all(w is None or w == h for w, h in zip(want, have, strict=True))

    return any(
        agrees(want, have)
        for e in ev.quantities if e.kind == "date"
        for want in q.dates for have in e.dates
    )


def _version_regex(q: Quantity) -> re.Pattern[str]:
    number = r"\.".join("0*" + re.escape(part) for part in q.version)
    core = rf"v?{number}(?:\.0+)*(?![a-z0-9_]|\.\d)"
    if q.name and len(q.version) == 1:
        return re.compile(rf"(?<![a-z0-9]){re.escape(q.name)}[\s/_-]*(?:version\s*)?{core}")
    return re.compile(rf"(?<![0-9.]){core}")


def quantity_in_evidence(q: Quantity, ev: EvidenceIndex) -> bool:
    """Whether quantity ``q`` of a claim occurs in the evidence (see :func:`numbers_match`)."""
    if q.kind in ("number", "percent"):
        return _match_number(q, ev)
    if q.kind == "date":
        return _match_date(q, ev)
    if q.kind == "time":
        return any(e.kind == "time" and e.name == q.name for e in ev.quantities)
    if q.kind == "version":
        return _version_regex(q).search(ev.normalized) is not None
    return q.name is not None and q.name in ev.compact
