"""Chinese numerals, Traditional and Simplified: their values for the quantity scanner
(:mod:`judge.checks.quantities`). ``一千五`` 1500, ``兩萬三`` / ``两万三`` 23000, ``三點五`` /
``三点五`` 3.5, ``二〇二四`` 2024 (a year digit by digit), ``三成五`` 35 (per cent), and the
Republic of China (民國 / 民国) years. Imports nothing from the rest of the package."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

#: Chinese digits (``〇`` and ``零`` zero, ``兩`` / ``两`` two)
ZH_DIGIT = "〇零一二兩两三四五六七八九"
#: digits and the unit characters of a Chinese numeral
ZH_NUMERAL = ZH_DIGIT + "十百千萬万億亿"
#: the decimal point of a Chinese numeral (``三點五`` 3.5)
ZH_POINT = "點点"
#: 民國 1 is 1912
ROC_EPOCH = 1911

_MULTIPLIER_REST = re.compile(r"(\d{1,4})(萬|万|千|百(?!分))?(?![\d.,])")
_DIGITS = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"〇": 0, "兩": 2, "两": 2}


@lru_cache(maxsize=1)
def _cn2an() -> Any:
    import cn2an  # imported on first use: it takes a third of a second

    return cn2an


def parse_chinese_numeral(text: str) -> int | None:
    """Value of a Chinese numeral (``三`` 3, ``兩`` 2, ``十一`` 11, ``二十三`` 23, ``一百零五``
    105, ``三萬五千`` 35000, and the spoken forms that leave out the last unit: ``一千五``
    1500, ``兩萬三`` 23000, ``一百二`` 120, read by cn2an); None when it is not a well-formed
    numeral (``七八``: two digits in a row say "seven or eight")."""
    if not text or re.search(r"[一二兩两三四五六七八九][一二兩两三四五六七八九〇零]", text):
        return None
    try:
        value = _cn2an().cn2an(text.replace("兩", "两").replace("〇", "零"), "normal")
    except (ValueError, KeyError, IndexError, TypeError):
        return _parse_units(text)  # bare units (百, 千萬) that cn2an does not take
    return int(value) if float(value).is_integer() else None


def _parse_units(text: str) -> int | None:
    """The unit-by-unit reading, for what cn2an refuses."""
    small = {"十": 10, "百": 100, "千": 1000}
    big = {"萬": 10**4, "万": 10**4, "億": 10**8, "亿": 10**8}
    total = section = 0
    digit: int | None = None
    for ch in text:
        if ch in _DIGITS:
            if digit:  # two non-zero digits in a row
                return None
            digit = _DIGITS[ch]
        elif ch in small:
            section += (1 if digit is None else digit) * small[ch]
            digit = None
        elif ch in big:
            section += digit or 0
            if not section:
                return None
            total += section * big[ch]
            section, digit = 0, None
        else:
            return None
    return total + section + (digit or 0)


def parse_chinese_decimal(text: str) -> float | None:
    """A Chinese numeral with an optional decimal part: ``六十一點五`` 61.5, ``三点五`` 3.5,
    ``零點二五`` 0.25; the digits after the point are read one by one. None when it is not
    well formed."""
    whole, point, fraction = re.split(f"[{ZH_POINT}]", text, maxsplit=1)[0], "", ""
    if len(whole) < len(text):
        point, fraction = text[len(whole)], text[len(whole) + 1:]
    value = 0 if whole in ("零", "〇") else parse_chinese_numeral(whole)
    if value is None:
        return None
    if not point:
        return float(value)
    if not fraction or any(c not in _DIGITS for c in fraction):
        return None
    return float(f"{value}.{''.join(str(_DIGITS[c]) for c in fraction)}")


def int_or_chinese(text: str | None) -> int | None:
    """An integer written in digits or in Chinese (a part of a date): ``2024``, ``三``,
    ``十二``, and a year digit by digit, ``二〇二四`` 2024."""
    if text is None:
        return None
    if text.isdigit():
        return int(text)
    if len(text) == 4 and all(c in "〇零一二三四五六七八九" for c in text):
        return int("".join(str(_DIGITS[c]) for c in text))
    return parse_chinese_numeral(text)


def roc_year(text: str) -> int | None:
    """The Gregorian year of a Republic of China year (``113`` or ``一一三`` or
    ``一百一十三``: 2024)."""
    if len(text) > 1 and all(c in "〇零一二三四五六七八九" for c in text):
        value: int | None = int("".join(str(_DIGITS[c]) for c in text))
    else:
        value = int_or_chinese(text)
    return None if value is None or value <= 0 else value + ROC_EPOCH


def tenths(first: str, second: str | None) -> float | None:
    """The per cent of ``三成`` (30) or ``三成五`` (35), ``3成`` (30): tenths and a
    hundredths digit."""
    a = int(first) if first.isdigit() else _DIGITS.get(first, 10 if first == "十" else None)
    if a is None:
        return None
    b = 0 if second is None else (int(second) if second.isdigit() else _DIGITS.get(second))
    return None if b is None else float(a * 10 + b)


def rest_after_multiplier(text: str, end: int, multiplier: str) -> tuple[float, int] | None:
    """What follows a 萬 or 億 written with digits: ``1萬5千`` (5000 more), ``1萬5`` (the
    spoken 15000), ``1萬2345``, ``2億3000萬``: the amount to add and where it ends; None for
    other multipliers and for digits that could be read two ways (``1萬25``)."""
    if multiplier not in "萬万億亿" or not (rest := _MULTIPLIER_REST.match(text, end)):
        return None
    digits, unit = rest.group(1), rest.group(2)
    big = 1e4 if multiplier in "萬万" else 1e8
    if unit:
        scale = {"萬": 1e4, "万": 1e4, "千": 1e3, "百": 1e2}[unit]
        return (int(digits) * scale, rest.end()) if scale < big else None
    if len(digits) == 1:
        return int(digits) * big / 10, rest.end()
    if len(digits) == 4 and big == 1e4:
        return float(digits), rest.end()
    return None
