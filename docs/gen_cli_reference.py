"""Writes docs/cli.md, the command-line reference, from the commands' argparse parsers.

    python docs/gen_cli_reference.py           # rewrite docs/cli.md
    python docs/gen_cli_reference.py --check   # exit 1 if docs/cli.md is out of date

The page is read from `keras_attention.cli.build_parser()` (`keras-attention`)
and `keras_attention_client.cli.build_parser()` (`keras-attention-client`):
for each command its usage, description, positional arguments and one table
row per option (option, default, help). Nothing is copied by hand, so a flag
changes the page only through this script; tests/docs/test_cli_reference.py
fails while the committed page differs from what the script writes.

argparse has no public API to walk a parser, so this reads its attributes
(`_actions`, `_action_groups`, ...), as Sphinx's argparse extensions do.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

PAGE = Path(__file__).resolve().parent / "cli.md"
COMMAND = "python docs/gen_cli_reference.py"
# Usage lines are wrapped at this width whatever the terminal's.
USAGE_WIDTH = 88

INTRODUCTION = """\
Two commands come with the packages: `keras-attention` (distribution
`keras-attention-seq2seq`) trains, evaluates, translates, plots, exports and
serves; `keras-attention-client` (distribution `keras-attention-client`, no
TensorFlow) translates with a model served by TensorFlow Serving or by
`keras-attention serve`. Each prints the same help with `--help`; this page is
that help in tables, one row per option.
"""

_MARKDOWN_SPECIAL = str.maketrans(
    {c: "\\" + c for c in "\\`*_[]|"} | {"<": "&lt;", ">": "&gt;", "\n": " "}
)


def escape(text: str) -> str:
    """Plain text for a Markdown table cell."""
    return text.translate(_MARKDOWN_SPECIAL)


def code(text: str) -> str:
    """`text` as inline code (for a table cell: `|` escaped)."""
    text = text.replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    return f"{fence}{text}{fence}"


def expand_help(action: argparse.Action, prog: str) -> str:
    """The help text with `%(default)s`-style fields filled in, as argparse prints it."""
    if not action.help:
        return ""
    params = dict(vars(action), prog=prog)
    for name, value in list(params.items()):
        if value is argparse.SUPPRESS:
            del params[name]
        elif hasattr(value, "__name__"):
            params[name] = value.__name__
    if params.get("choices") is not None:
        params["choices"] = ", ".join(str(choice) for choice in params["choices"])
    return action.help % params


def is_switch(action: argparse.Action) -> bool:
    """An option that takes no value (`--json`, `--no-check`)."""
    return action.nargs == 0 and not isinstance(action, argparse.BooleanOptionalAction)


def stated_default(action: argparse.Action) -> str:
    """The X of a help text that ends "(default: X)", or "" (`--help` states it there).

    X may hold parentheses of its own: "(default: on for cosine, g from sqrt(d))".
    """
    text = (action.help or "").rstrip()
    text = text.removesuffix(".")
    if not text.endswith(")"):
        return ""
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[index], 0)
        if depth == 0:
            inner = text[index + 1 : -1]
            return inner[len("default: ") :] if inner.startswith("default: ") else ""
    return ""


def format_default(action: argparse.Action) -> str:
    """The Default cell: what the option is when it is not given ("required" if it must be):
    its argparse default, or for an option whose default is `None` (not given: a library
    default applies) the default its help text states."""
    if action.required:
        return "required"
    default = action.default
    if isinstance(action, argparse.BooleanOptionalAction):
        if default is None:
            return stated_default(action) or "none"
        return {True: "on", False: "off"}.get(default, str(default))
    if is_switch(action):
        return "off" if isinstance(action, argparse._StoreConstAction) else ""
    if default is argparse.SUPPRESS:
        return ""
    if default is None:
        return stated_default(action) or "none"
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, str) and not default:
        return '""'
    return str(default)


def without_default(help_text: str, default: str) -> str:
    """`help_text` less a closing "(default: X)" that only repeats the Default cell."""
    for end in ("", "."):
        suffix = f" (default: {default}){end}"
        if default and help_text.endswith(suffix):
            return help_text[: -len(suffix)] + end
    return help_text


def sentence(text: str) -> str:
    """`text` ended so that another sentence can follow it."""
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def value_syntax(action: argparse.Action, metavar: str) -> str:
    """What follows the option (or stands for the argument): `N`, `[RUN_DIR]`, `TEXT ...`."""
    if action.nargs is None or action.nargs == 1:
        return metavar
    if action.nargs == "?":
        return f"[{metavar}]"
    if action.nargs == "*":
        return f"[{metavar} ...]"
    if action.nargs == "+":
        return f"{metavar} [{metavar} ...]"
    if isinstance(action.nargs, int):
        return " ".join([metavar] * action.nargs)
    return "..."


def option_names(action: argparse.Action) -> str:
    """`--beam-width, --beam N`: the spellings, then the value's metavar (as Python 3.13+).

    Choices are listed in the description rather than as argparse's `{a,b,c}`.
    """
    names = ", ".join(action.option_strings)
    if action.nargs == 0:
        return code(names)
    metavar = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
    return code(f"{names} {value_syntax(action, metavar)}")


def positional_name(action: argparse.Action) -> str:
    metavar = action.metavar if isinstance(action.metavar, str) else action.dest
    return code(value_syntax(action, metavar))


def exclusions(parser: argparse.ArgumentParser) -> dict[argparse.Action, list[argparse.Action]]:
    """Each option of a mutually exclusive group -> the options it cannot go with."""
    others: dict[argparse.Action, list[argparse.Action]] = {}
    for group in parser._mutually_exclusive_groups:
        for action in group._group_actions:
            others[action] = [a for a in group._group_actions if a is not action]
    return others


def subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    """`(name, help, parser)` of each subcommand, in the order they were added."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, subparser in action.choices.items():
                found.append((name, helps.get(name, ""), subparser))
    return found


def visible(actions: Iterable[argparse.Action]) -> list[argparse.Action]:
    return [
        action
        for action in actions
        if action.help is not argparse.SUPPRESS
        and not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))
    ]


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def group_title(parser: argparse.ArgumentParser, group: argparse._ArgumentGroup) -> str:
    if group is parser._positionals:
        return "Arguments"
    if group is parser._optionals:
        return "Options"
    title = group.title or "Options"
    return title[0].upper() + title[1:]


def render_groups(parser: argparse.ArgumentParser, level: int) -> list[str]:
    """A table per argument group: positional arguments, options, then the named groups."""
    excluded = exclusions(parser)
    lines: list[str] = []
    for group in parser._action_groups:
        actions = visible(group._group_actions)
        if not actions:
            continue
        lines += ["", f"{'#' * level} {escape(group_title(parser, group))}", ""]
        if group.description:
            lines += [escape(group.description), ""]
        if group is parser._positionals:
            rows = [(positional_name(a), escape(expand_help(a, parser.prog))) for a in actions]
            lines += table(("Argument", "Description"), rows)
            continue
        rows = []
        for action in actions:
            default = format_default(action)
            help_text = without_default(expand_help(action, parser.prog), default)
            description = escape(help_text)
            if action.choices is not None:
                choices = ", ".join(code(str(choice)) for choice in action.choices)
                description = f"{sentence(description)} One of {choices}.".lstrip()
            if action in excluded:
                names = ", ".join(code(a.option_strings[0]) for a in excluded[action])
                description = f"{sentence(description)} Not with {names}.".lstrip()
            rows.append((option_names(action), code(default) if default else "", description))
        lines += table(("Option", "Default", "Description"), rows)
    return lines


def render_parser(parser: argparse.ArgumentParser, level: int) -> list[str]:
    """Usage, description, the subcommands' list and the argument tables of one parser."""
    lines = ["", "```text", parser.format_usage().rstrip(), "```"]
    if parser.description:
        lines += ["", escape(parser.description)]
    commands = subcommands(parser)
    if commands:
        rows = [
            (f"[{code(name)}](#{anchor(parser.prog, name)})", escape(help_text))
            for name, help_text, _ in commands
        ]
        lines += ["", *table(("Command", "Description"), rows)]
    lines += render_groups(parser, level + 1)
    for name, _, subparser in commands:
        lines += ["", f"{'#' * (level + 1)} {parser.prog} {name}"]
        lines += render_parser(subparser, level + 1)
    return lines


def anchor(prog: str, name: str) -> str:
    """The heading id MkDocs gives `## <prog> <name>`."""
    return f"{prog} {name}".lower().replace(" ", "-")


def with_fixed_width(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Makes `parser` and its subparsers format usage at USAGE_WIDTH columns, uncoloured."""
    parser.formatter_class = functools.partial(argparse.HelpFormatter, width=USAGE_WIDTH)
    if hasattr(parser, "color"):  # Python 3.14: no terminal colours in the page
        parser.color = False
    for _, _, subparser in subcommands(parser):
        with_fixed_width(subparser)
    return parser


def parsers() -> list[argparse.ArgumentParser]:
    """The parsers of `keras-attention` and `keras-attention-client`, newly built."""
    from keras_attention import cli
    from keras_attention_client import cli as client_cli

    return [with_fixed_width(cli.build_parser()), with_fixed_width(client_cli.build_parser())]


def render() -> str:
    """The whole page, docs/cli.md."""
    lines = [
        "# Command line",
        "",
        f"<!-- Written by `{COMMAND}` from the commands' argparse parsers: "
        "edit the parsers, not this page, then run the script again. -->",
        "",
        INTRODUCTION.rstrip(),
    ]
    for parser in parsers():
        lines += ["", f"## {parser.prog}"]
        lines += render_parser(parser, level=2)
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if docs/cli.md differs from the parsers"
    )
    parser.add_argument("--output", type=Path, default=PAGE, help="default: docs/cli.md")
    args = parser.parse_args(argv)
    page = render()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != page:
            print(f"{args.output} is out of date: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(page, encoding="utf-8")
    print(f"Wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
