"""The shape the code keeps: small modules, no import cycles, a docstring on every package saying
what it holds and what it may import (and the imports keeping to it), and gold/ holding data
only."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("judge", "calibration")
MAX_LINES = 600


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def imported(node: ast.Import | ast.ImportFrom, package: str, known: set[str]) -> set[str]:
    """The modules an import statement of a module in ``package`` names (``from a import b``:
    ``a.b`` when that is a known module, else ``a``; relative imports resolved)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    base = node.module or ""
    if node.level:
        base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1]
                        + ([base] if base else []))
    return {full if (full := f"{base}.{alias.name}") in known else base for alias in node.names}


def import_time_imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Project modules a module imports when it is imported (not inside functions, not under
    ``if TYPE_CHECKING``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                continue
            if isinstance(node, ast.Import | ast.ImportFrom):
                out.update(imported(node, package, known))
    visit(tree.body)
    return {m for m in out if m in known and m != name}


def test_no_module_is_over_600_lines() -> None:
    long = {name: n for name, path in modules().items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def cycle_edges(path: Path, name: str, known: set[str]) -> set[str]:
    """The imports the cycle check follows: every import of the module, inside functions too
    (an import put in a function to dodge a cycle is still one), except under ``if
    TYPE_CHECKING`` and a package's imports of its own modules *inside functions* (the CLI
    registering its command modules, which import the app, when it runs: a package loading
    its parts on demand is not a cycle between two concepts)."""
    targets = all_imports(path, name, known)
    if path.name != "__init__.py":
        return targets
    parts = {t for t in targets if t.startswith(name + ".")}
    return (targets - parts) | (parts & import_time_imports(path, name, known))


def test_there_is_no_import_cycle() -> None:
    """No cycle among the modules' imports, those inside functions included
    (:func:`cycle_edges`)."""
    found = modules()
    known = set(found)
    graph = {name: cycle_edges(path, name, known) for name, path in found.items()}
    cycles = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                walk(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node)
    assert cycles == []


def test_every_package_says_what_it_holds() -> None:
    for name, path in modules().items():
        if path.name == "__init__.py":
            doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
            assert doc and len(doc) > 40, name


def test_gold_holds_data_only() -> None:
    assert sorted(p.name for p in (ROOT / "gold").rglob("*.py")) == []


# -- the import rules each package's docstring states -------------------------------------------


def all_imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Project modules a module imports anywhere (at the top or inside functions), except
    under ``if TYPE_CHECKING``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()

    class Visitor(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            if "TYPE_CHECKING" in ast.unparse(node.test):
                for child in node.orelse:
                    self.visit(child)
                return
            self.generic_visit(node)

        def visit_Import(self, node: ast.Import) -> None:
            out.update(imported(node, package, known))

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            out.update(imported(node, package, known))

    Visitor().visit(tree)
    return {m for m in out if m in known and m != name}


def _sentence(doc: str, opening: str) -> str | None:
    """The sentence of ``doc`` that starts with ``opening``, without its parenthetical
    remarks and its opening."""
    flat = re.sub(r"\([^()]*\)", "", " ".join(doc.split()))
    at = flat.find(opening)
    if at < 0:
        return None
    end = re.search(r"\.(\s|$)", flat[at:])
    return flat[at + len(opening): at + end.start() if end else None]


def _names(text: str, units: set[str]) -> set[str]:
    """The module names in a rule's words (``store``, ``split.citations``); a dotted name
    must exist (a rule naming a moved module is out of date)."""
    words = set(re.findall(r"[a-z_]+(?:\.[a-z_]+)+|[a-z_]+", text))
    stale = {w for w in words if "." in w and w not in units}
    assert not stale, f"the rule names modules that do not exist: {sorted(stale)}"
    return words & units


def import_rules() -> dict[str, tuple[set[str], set[str]]]:
    """package -> (names it may import, names it never imports), read from the docstring
    sentence "May import A, B and C; never D or E." (names relative to ``judge``)."""
    units = {n.removeprefix("judge.") for n in modules() if n.startswith("judge.")}
    units.add("calibration")
    rules = {}
    for name, path in modules().items():
        if path.name != "__init__.py" or name == "judge":
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        rule = _sentence(doc, "May import")
        if rule is None:
            continue
        may, _, rest = rule.partition(";")
        never = rest.split("never", 1)[1] if "never" in rest else ""
        rules[name] = (_names(may, units), _names(never, units))
    return rules


def leaves() -> set[str]:
    doc = ast.get_docstring(ast.parse((ROOT / "judge" / "__init__.py").read_text())) or ""
    sentence = _sentence(doc, "Leaves that every package may import:")
    assert sentence, "judge/__init__.py names the leaves every package may import"
    return set(re.findall(r"[a-z_]+", sentence))


def _under(module: str, names: set[str]) -> bool:
    rel = module.removeprefix("judge.")
    return any(rel == n or rel.startswith(n + ".") for n in names)


def test_packages_state_their_import_rules() -> None:
    rules = import_rules()
    stated = {"judge.assembly", "judge.checks", "judge.config", "judge.decide",
              "judge.evaluation", "judge.fitting", "judge.models", "judge.records",
              "judge.review", "judge.runs", "judge.split", "judge.store", "calibration"}
    assert stated <= set(rules)
    assert rules["judge.assembly"] == ({"records", "verdicts", "checks", "split.abstention",
                                        "decide", "config"},
                                       {"models.client", "store"})
    assert rules["judge.records"] == (set(), set())
    assert leaves() == {"errors", "formats", "hashing", "labels", "language", "masking",
                        "text"}


def test_imports_keep_to_the_rules_each_package_states() -> None:
    found = modules()
    known = set(found)
    shared = leaves()
    broken = []
    for package, (may, never) in import_rules().items():
        own = [n for n in found if n == package or n.startswith(package + ".")]
        for name in own:
            for target in sorted(all_imports(found[name], name, known)):
                if target == package or target.startswith(package + "."):
                    continue
                allowed = _under(target, may) or (
                    package.startswith("judge.") and _under(target, shared))
                if not allowed or _under(target, never):
                    broken.append(f"{name} imports {target}")
    assert broken == []


def test_the_two_seams_go_one_way() -> None:
    """The model client builds on the embedding calls, which never name the client; the config
    reads the strategy registry, which never names the config, not even for its types."""
    found = modules()
    known = set(found)

    def every_import(name: str) -> set[str]:  # under TYPE_CHECKING too
        tree = ast.parse(found[name].read_text(encoding="utf-8"))
        package = name.rpartition(".")[0]
        out: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                out.update(imported(node, package, known))
        return out

    assert "judge.models.embedding" in every_import("judge.models.client")
    assert not {m for m in every_import("judge.models.embedding")
                if m.startswith("judge.models.client")}
    assert "judge.decide.registry" in every_import("judge.config.versioned")
    assert not {m for m in every_import("judge.decide.registry") if m.startswith("judge.config")}
