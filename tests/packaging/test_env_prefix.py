"""One environment-variable prefix: the product reads only ``CLAIM_JUDGE_*`` variables of its own.

Scans the product packages (judge/, calibration/) with ``ast`` for every environment read or
write: ``os.environ.get/setdefault/pop(NAME)``, ``os.environ[NAME]``, ``NAME in os.environ``,
``os.getenv(NAME)``, a local bound to ``os.environ`` used the same ways, and typer's
``envvar=``. A name given as a module constant is resolved; one given as a function parameter
makes that function a helper whose call sites are resolved in turn. A name the scan cannot
resolve fails the test (fail closed). Provider variables are litellm's business, read by litellm
itself; the one litellm variable the product sets is allow-listed.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("judge", "calibration")
PREFIX = "CLAIM_JUDGE_"
#: litellm's own switch: use the bundled model price map instead of fetching it at import
ALLOWED = {"LITELLM_LOCAL_MODEL_COST_MAP"}
MAPPING_METHODS = {"get", "setdefault", "pop", "__getitem__", "__contains__"}
OS_FUNCTIONS = {"getenv", "putenv", "unsetenv"}


@dataclass
class Scan:
    names: dict[str, list[str]] = field(default_factory=dict)  # name -> where
    unresolved: list[str] = field(default_factory=list)

    def add(self, name: str, where: str) -> None:
        self.names.setdefault(name, []).append(where)


def _is_os_environ(node: ast.AST, environ_aliases: set[str]) -> bool:
    if isinstance(node, ast.Attribute) and node.attr == "environ":
        return isinstance(node.value, ast.Name) and node.value.id == "os"
    return isinstance(node, ast.Name) and node.id in environ_aliases


def _mentions_os_environ(node: ast.AST) -> bool:
    return any(_is_os_environ(n, set()) for n in ast.walk(node))


class _Module:
    """One module: its string constants, env accesses and env helper functions."""

    def __init__(self, path: Path, root: Path, scan: Scan) -> None:
        self.path = path
        self.rel = path.relative_to(root).as_posix()
        self.tree = ast.parse(path.read_text(encoding="utf-8"))
        self.scan = scan
        self.constants: dict[str, str] = {}
        self.environ_aliases: set[str] = set()
        for node in self.tree.body:
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, ast.AnnAssign) else [])
            value = getattr(node, "value", None)
            for target in targets:
                if isinstance(target, ast.Name) and isinstance(value, ast.Constant) \
                        and isinstance(value.value, str):
                    self.constants[target.id] = value.value
            if isinstance(node, ast.ImportFrom) and node.module == "os":
                self.environ_aliases |= {a.asname or a.name for a in node.names
                                         if a.name == "environ"}
        #: function name -> positional index / keyword of a parameter used as a variable name
        self.helpers: dict[str, tuple[int, str]] = {}

    def where(self, node: ast.AST) -> str:
        return f"{self.rel}:{getattr(node, 'lineno', '?')}"

    def run(self, global_constants: dict[str, set[str]]) -> None:
        self.global_constants = global_constants
        self._visit(self.tree, function=None)
        # resolve call sites of helper functions (one level is all the product uses)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id in self.helpers:
                index, keyword = self.helpers[node.func.id]
                arg = node.args[index] if len(node.args) > index else next(
                    (k.value for k in node.keywords if k.arg == keyword), None)
                if arg is None:
                    self.scan.unresolved.append(f"{self.where(node)}: {node.func.id}() call")
                else:
                    self._record(arg, None)

    def _visit(self, node: ast.AST, function: ast.FunctionDef | ast.AsyncFunctionDef | None,
               aliases: frozenset[str] = frozenset()) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node
            local = {t.id for n in ast.walk(node) if isinstance(n, ast.Assign)
                     and _mentions_os_environ(n.value)
                     for t in n.targets if isinstance(t, ast.Name)}
            aliases = frozenset(local)
        envs = self.environ_aliases | aliases
        for child in ast.iter_child_nodes(node):
            self._visit(child, function, aliases)
        key: ast.AST | None = None
        if isinstance(node, ast.Call):
            func = node.func
            environ_method = (isinstance(func, ast.Attribute) and func.attr in MAPPING_METHODS
                              and _is_os_environ(func.value, envs))
            os_function = (isinstance(func, ast.Attribute) and func.attr in OS_FUNCTIONS
                           and isinstance(func.value, ast.Name) and func.value.id == "os")
            if (environ_method or os_function) and node.args:
                key = node.args[0]
            for kw in node.keywords:
                if kw.arg == "envvar":
                    values = kw.value.elts if isinstance(kw.value, ast.List | ast.Tuple) \
                        else [kw.value]
                    for value in values:
                        self._record(value, function)
        elif isinstance(node, ast.Subscript) and _is_os_environ(node.value, envs):
            key = node.slice
        elif isinstance(node, ast.Compare) and any(
                isinstance(op, ast.In | ast.NotIn) for op in node.ops) \
                and any(_is_os_environ(c, envs) for c in node.comparators):
            key = node.left
        if key is not None:
            self._record(key, function)

    def _record(self, key: ast.AST, function: ast.FunctionDef | ast.AsyncFunctionDef | None) -> None:
        where = self.where(key)
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            self.scan.add(key.value, where)
            return
        if isinstance(key, ast.Name):
            params = [a.arg for a in function.args.args] if function is not None else []
            if key.id in params:
                assert function is not None
                self.helpers[function.name] = (params.index(key.id), key.id)
                return
            if key.id in self.constants:
                self.scan.add(self.constants[key.id], where)
                return
            values = self.global_constants.get(key.id, set())
            if values:
                for value in values:
                    self.scan.add(value, where)
                return
        self.scan.unresolved.append(f"{where}: {ast.unparse(key)}")


def scan_packages(root: Path = REPO, packages: tuple[str, ...] = PACKAGES) -> Scan:
    scan = Scan()
    modules = [_Module(path, root, scan) for package in packages
               for path in sorted((root / package).rglob("*.py"))]
    global_constants: dict[str, set[str]] = {}
    for module in modules:
        for name, value in module.constants.items():
            global_constants.setdefault(name, set()).add(value)
    for module in modules:
        module.run(global_constants)
    return scan


def test_every_environment_variable_has_the_project_prefix() -> None:
    scan = scan_packages()
    assert scan.unresolved == [], "environment variable names the scan cannot resolve"
    wrong = {name: where for name, where in scan.names.items()
             if not name.startswith(PREFIX) and name not in ALLOWED}
    assert wrong == {}, f"project environment variables must start with {PREFIX}"


def test_the_scan_sees_the_known_variables() -> None:
    """Guards the scanner itself: each access form in the product is found."""
    names = set(scan_packages().names)
    assert {
        "CLAIM_JUDGE_CONFIG",       # os.environ.get("...")
        "CLAIM_JUDGE_PROMPTS",      # os.environ.get("...")
        "CLAIM_JUDGE_GGUF",         # os.environ.get(CONSTANT)
        "CLAIM_JUDGE_N_CTX",        # through a helper's parameter
        "CLAIM_JUDGE_TOKENS",       # a local bound to os.environ
        "CLAIM_JUDGE_DB",           # typer envvar=
        "LITELLM_LOCAL_MODEL_COST_MAP",  # os.environ.setdefault
    } <= names


def test_the_scan_flags_other_names(tmp_path: Path) -> None:
    """A wrong name in any access form is found; a computed name is unresolved."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text(
        "import os\nfrom os import environ as ENV\nimport typer\n"
        "HOME_VAR = 'JUDGE_HOME'\n"
        "def helper(var):\n    return os.environ.get(var)\n"
        "def f(env=None):\n"
        "    env = os.environ if env is None else env\n"
        "    helper('APP_TOKEN')\n"
        "    a = os.getenv('JUDGE_DEBUG') or os.environ['MY_PORT'] or ENV.get(HOME_VAR)\n"
        "    b = 'OTHER_FLAG' in os.environ and env.get('LOCAL_ONE')\n"
        "    c = typer.Option(None, envvar=['CLAIM_JUDGE_OK', 'NOT_OURS'])\n"
        "    return os.environ.get('X_' + a)\n", encoding="utf-8")
    scan = scan_packages(tmp_path, ("pkg",))
    assert set(scan.names) == {"JUDGE_HOME", "APP_TOKEN", "JUDGE_DEBUG", "MY_PORT",
                               "OTHER_FLAG", "LOCAL_ONE", "CLAIM_JUDGE_OK", "NOT_OURS"}
    assert len(scan.unresolved) == 1 and "'X_' + a" in scan.unresolved[0]


def test_documented_variables_have_the_project_prefix() -> None:
    """``$NAME`` in docstrings and help texts names only project (or allowed) variables."""
    mentioned = {m.group(1): path.relative_to(REPO).as_posix()
                 for package in PACKAGES for path in (REPO / package).rglob("*.py")
                 for m in re.finditer(r"\$([A-Z][A-Z0-9_]{2,})", path.read_text("utf-8"))}
    assert mentioned, "no documented variables found: the pattern is broken"
    assert {n: p for n, p in mentioned.items()
            if not n.startswith(PREFIX) and n not in ALLOWED} == {}
