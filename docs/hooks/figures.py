"""MkDocs hook: measured figures rendered from the results files under benchmarks/results/.

A page never types a measured number. It names the figure instead, and the build
writes the value read from the results file that a benchmark or evaluation wrote:

    {{ figure("default_run", "runs.native_bf16_8_epochs.bleu.beam", ".2f") }}      ->  47.41
    {{ figure("export_table", "rows[name=float32 / float32].variables_bytes", ".1f", scale=1e-6) }}
    {{ provenance() }}   ->  the page's "How these figures were made" table
    \\{{ figure(...) }}    ->  {{ figure(...) }}, as written (to show the syntax)

`figure(file, key, fmt="", scale=1, over=None, minus=None, missing=None)`:

- `file`: a results file, `benchmarks/results/<file>.json`;
- `key`: a path into it: names separated by dots, an integer for a list item, and
  `[field=value]` for the item of a list whose `field` is `value`;
- `over`: another key path in the same file: the figure is the ratio of the two;
- `minus`: another key path in the same file: the figure is the difference of the two;
- `missing`: the text for a key the file does not hold (e.g. `"-"` for a cell not measured);
- `fmt`: a Python format spec (`".2f"`, `",.0f"`, `".0%"`); `scale` multiplies first.

`provenance()` renders one table row per results record the page's figures came
from: the command, code version, date, CPU model and flags and precision, read
from the record's `machine` entry (what `benchmarks/harness.py`'s `write_json`
writes). The command is shown as a reader runs it from a clone: the directories of
the machine it ran on (`MACHINE_DIRECTORY`: `/work/`, `/tmp/`, `/home/USER/`,
`/root/`) are dropped from its paths (`portable_command`), so `--run-dir
/work/runs/fra-eng` shows as `--run-dir runs/fra-eng`; the results file keeps the
command as it ran. A figure's provenance is the `machine` entry nearest to it on its key path,
so a file may hold runs made on different machines. `provenance("a", "b.c")` names
the records itself (file, or file and key path).

The README, which GitHub shows unrendered, carries the same calls in HTML comments
around the rendered text; `docs/gen_readme_figures.py` rewrites and checks it with
this module's `render_markers`.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from collections.abc import Iterable
from pathlib import Path

from keras_attention.precision import onednn_cap_without_bf16

REPOSITORY = Path(__file__).resolve().parents[2]
RESULTS = REPOSITORY / "benchmarks" / "results"

CALL = re.compile(r"(?<!\\)\{\{\s*((?:figure|provenance)\s*\(.*?\))\s*\}\}", re.DOTALL)
"""`{{ figure(...) }}` or `{{ provenance(...) }}` in a page (`\\{{ ... }}` shows the call as
written: the backslash is dropped)."""

MARKER = re.compile(
    r"<!--\s*((?:figure|provenance)\s*\(.*?\))\s*-->(.*?)<!--\s*/(?:figure|provenance)\s*-->",
    re.DOTALL,
)
"""`<!-- figure(...) -->rendered<!-- /figure -->` in the README."""

_PART = re.compile(r"\[(?P<field>[^=\]]+)=(?P<value>[^\]]*)\]|(?P<name>[^.\[\]]+)")

PROVENANCE_HEADING = "How these figures were made"

MACHINE_DIRECTORY = re.compile(r"(?<![\w.~/-])/(?:work|tmp|root|home/[^/\s`'\"]+)/")
"""The start of an absolute path into a machine's own directories (a working tree, a
temporary directory, a home): `/work/`, `/tmp/`, `/root/`, `/home/USER/`."""


class FigureError(ValueError):
    """A figure call that names no file, no value, or has bad arguments."""


@functools.cache
def _load(path: Path, mtime: float) -> object:
    del mtime  # part of the cache key only: a rewritten file is read again
    return json.loads(path.read_text(encoding="utf-8"))


def load(file: str, results: Path = RESULTS) -> object:
    """The parsed results file `results/<file>.json`."""
    path = results / f"{file}.json"
    if not path.is_file():
        raise FigureError(f"no results file {path}. Received: file={file!r}")
    return _load(path, path.stat().st_mtime)


def split_key(key: str) -> list[str | int | tuple[str, str]]:
    """`"rows[name=a b].bleu.0"` -> `["rows", ("name", "a b"), "bleu", 0]`."""
    parts: list[str | int | tuple[str, str]] = []
    position = 0
    while position < len(key):
        if key[position] == ".":
            position += 1
            continue
        match = _PART.match(key, position)
        if not match:
            raise FigureError(f"cannot read the key path at {key[position:]!r}. Received: {key!r}")
        if match["name"] is not None:
            name = match["name"]
            parts.append(int(name) if name.lstrip("-").isdigit() else name)
        else:
            parts.append((match["field"], match["value"]))
        position = match.end()
    return parts


def _step(node: object, part: str | int | tuple[str, str], where: str) -> object:
    if isinstance(part, tuple):
        field, value = part
        if isinstance(node, list):
            found = [
                item for item in node if isinstance(item, dict) and str(item.get(field)) == value
            ]
            if len(found) == 1:
                return found[0]
        raise FigureError(f"{where}: no single list item with {field}={value!r}")
    if isinstance(part, int) and isinstance(node, list) and -len(node) <= part < len(node):
        return node[part]
    if isinstance(node, dict) and str(part) in node:
        return node[str(part)]
    raise FigureError(f"{where}: no {part!r}")


def lookup(file: str, key: str, results: Path = RESULTS) -> tuple[object, dict | None]:
    """The value at `key` in the results file, and the provenance nearest to it."""
    node = load(file, results)
    machine = node.get("machine") if isinstance(node, dict) else None
    for part in split_key(key):
        node = _step(node, part, f"{file}.json {key}")
        if isinstance(node, dict) and isinstance(node.get("machine"), dict):
            machine = node["machine"]
    return node, machine


def format_value(value: object, fmt: str = "", scale: float = 1) -> str:
    """`value * scale` formatted with the format spec `fmt`."""
    if isinstance(value, bool) or value is None or isinstance(value, (dict, list)):
        if scale != 1 or fmt:
            raise FigureError(f"cannot format {value!r} with {fmt!r}, scale={scale}")
        return json.dumps(value) if isinstance(value, (dict, list)) else str(value)
    if scale != 1:
        value = value * scale
    try:
        return format(value, fmt)
    except (TypeError, ValueError) as error:
        raise FigureError(f"cannot format {value!r} with {fmt!r}: {error}") from None


def figure(
    file: str,
    key: str,
    fmt: str = "",
    scale: float = 1,
    over: str | None = None,
    missing: str | None = None,
    results: Path = RESULTS,
    minus: str | None = None,
) -> str:
    """The figure at `key` in `results/<file>.json` (divided by the one at `over`, or less
    the one at `minus`), formatted;
    `missing` (if given) stands for a key the file does not hold (a cell not measured)."""
    try:
        value, _ = lookup(file, key, results)
    except FigureError:
        if missing is None or not (results / f"{file}.json").is_file():
            raise
        return missing
    if over is not None:
        divisor, _ = lookup(file, over, results)
        try:
            value = value / divisor
        except (TypeError, ZeroDivisionError) as error:
            raise FigureError(f"{file}.json: {key} / {over}: {error}") from None
    if minus is not None:
        subtrahend, _ = lookup(file, minus, results)
        try:
            value = value - subtrahend
        except TypeError as error:
            raise FigureError(f"{file}.json: {key} - {minus}: {error}") from None
    return format_value(value, fmt, scale)


def _record_prefix(file: str, key: str, results: Path) -> str:
    """The part of `key` down to the record holding its provenance (`""` for the file's)."""
    node = load(file, results)
    parts = split_key(key)
    prefix_length = 0
    for index, part in enumerate(parts):
        try:
            node = _step(node, part, f"{file}.json {key}")
        except FigureError:  # a cell not measured (`missing=`): its record is above it
            break
        if isinstance(node, dict) and isinstance(node.get("machine"), dict):
            prefix_length = index + 1
    # Rebuild the prefix text from the original key's parts.
    text = []
    for part in parts[:prefix_length]:
        text.append(f"[{part[0]}={part[1]}]" if isinstance(part, tuple) else f".{part}")
    return "".join(text).lstrip(".")


def portable_command(command: str) -> str:
    """`command` with its machine's directories dropped (`MACHINE_DIRECTORY`): each such
    path reads relative to the working directory (`/tmp/runs/a` -> `runs/a`)."""
    return MACHINE_DIRECTORY.sub("", command)


def _cpu(machine: dict) -> str:
    flags = machine.get("cpu_flags") or []
    bf16 = machine.get("native_bfloat16")
    if bf16 is None and flags:
        bf16 = "AVX512_BF16" in flags or "AMX_BF16" in flags
    cap = machine.get("onednn_max_cpu_isa")
    if onednn_cap_without_bf16(cap):
        bf16 = False
    cores = machine.get("cores")
    cpu = f"{machine.get('cpu', '?')}" + (f", {cores} cores" if isinstance(cores, int) else "")
    flag_text = ", ".join(flags) if flags else "flags not recorded"
    if cap:
        flag_text += f", oneDNN capped at {cap}"
    bf16_text = {True: "native bfloat16", False: "no native bfloat16"}.get(
        bf16, "bfloat16 support not recorded"
    )
    return f"{cpu} ({flag_text}; {bf16_text})"


def _date(machine: dict) -> str:
    """An ISO date-time as its date; anything else (several dates, "unknown") as written."""
    date = str(machine.get("date", "?"))
    return date[:10] if re.match(r"\d{4}-\d\d-\d\dT", date) else date


def provenance_table(records: Iterable[tuple[str, str]], results: Path = RESULTS) -> str:
    """A Markdown table of the provenance of `records` ((file, record key path) pairs):
    one row per command, code version, date, CPU and precision, naming its records."""
    rows: dict[tuple[str, ...], list[str]] = {}
    for file, prefix in dict.fromkeys(records):
        node, machine = lookup(file, prefix, results) if prefix else (load(file, results), None)
        if not prefix and isinstance(node, dict):
            machine = node.get("machine")
        if not isinstance(machine, dict):
            raise FigureError(f"{file}.json {prefix or '(top level)'}: no `machine` provenance")
        precision = machine.get("precision")
        if precision is None and isinstance(node, dict):
            precision = node.get("precision") or (node.get("train_config") or {}).get("precision")
        command = portable_command(machine.get("command", "?")).replace("|", "\\|")
        provenance = (
            f"`{command}`",
            f"`{machine.get('commit', '?')}`",
            _date(machine),
            _cpu(machine),
            precision or "not recorded",
        )
        rows.setdefault(provenance, []).append((file, prefix))
    lines = [
        "| figures | command | code | date | CPU | precision |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for provenance, named in rows.items():
        by_file: dict[str, list[str]] = {}
        for file, prefix in named:
            by_file.setdefault(file, []).append(prefix)
        names = "; ".join(
            f"`{file}.json`"
            + (": " + ", ".join(f"`{p}`" for p in prefixes if p) if any(prefixes) else "")
            for file, prefixes in by_file.items()
        )
        lines.append(f"| {names} | " + " | ".join(provenance) + " |")
    return "\n".join(lines)


def _arguments(call: str) -> tuple[str, list, dict]:
    try:
        expression = ast.parse(call, mode="eval").body
    except SyntaxError as error:
        raise FigureError(f"cannot parse {call!r}: {error}") from None
    if not isinstance(expression, ast.Call) or not isinstance(expression.func, ast.Name):
        raise FigureError(f"not a figure call: {call!r}")
    args = [ast.literal_eval(argument) for argument in expression.args]
    kwargs = {keyword.arg: ast.literal_eval(keyword.value) for keyword in expression.keywords}
    return expression.func.id, args, kwargs


def figure_records(calls: Iterable[str], results: Path = RESULTS) -> list[tuple[str, str]]:
    """The (file, record key path) of every `figure(...)` call among `calls`."""
    records = []
    for call in calls:
        name, args, _ = _arguments(call)
        if name == "figure":
            records.append((args[0], _record_prefix(args[0], args[1], results)))
    return records


def evaluate(call: str, page_calls: Iterable[str] = (), results: Path = RESULTS) -> str:
    """The text for one call; `provenance()` with no arguments covers `page_calls`' figures."""
    name, args, kwargs = _arguments(call)
    if name == "figure":
        return figure(*args, **kwargs, results=results)
    if args:
        records = [(argument.partition(".")[0], argument.partition(".")[2]) for argument in args]
    else:
        records = figure_records(page_calls, results)
    if not records:
        raise FigureError("provenance() on a page without figures")
    return provenance_table(records, results)


def render_page(markdown: str, results: Path = RESULTS) -> str:
    """`markdown` with every `{{ figure(...) }}` and `{{ provenance(...) }}` replaced."""
    calls = [match[1] for match in CALL.finditer(markdown)]
    rendered = CALL.sub(lambda match: evaluate(match[1], calls, results), markdown)
    return rendered.replace("\\{{", "{{")


def render_markers(text: str, results: Path = RESULTS) -> str:
    """`text` with the rendering between every `<!-- figure(...) -->` marker pair rewritten."""
    calls = [match[1] for match in MARKER.finditer(text)]

    def replace(match: re.Match) -> str:
        rendered = evaluate(match[1], calls, results)
        closing = "provenance" if match[1].lstrip().startswith("provenance") else "figure"
        if "\n" in rendered:
            rendered = f"\n{rendered}\n"
        return f"<!-- {match[1]} -->{rendered}<!-- /{closing} -->"

    return MARKER.sub(replace, text)


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 (MkDocs' signature)
    from mkdocs.exceptions import PluginError  # here: gen_readme_figures.py needs no MkDocs

    try:
        return render_page(markdown)
    except FigureError as error:
        # --strict or not, a figure that cannot be read fails the build, naming the page.
        raise PluginError(f"{page.file.src_path}: {error}") from None
