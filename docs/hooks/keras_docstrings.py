"""griffe extension: the Keras-style parts of the docstrings, rendered as such.

- Doctest examples. They run as tests (`--doctest-modules`), so they are plain
  `>>>` blocks, often after an `Example:` line; griffe turns doctest lines into
  code only inside an `Examples:` section, and elsewhere Markdown would read
  `>>>` as nested block quotes. Every doctest block outside a fenced code
  block is fenced as `pycon` (a block runs from a `>>>` line to the next blank
  line, as doctest reads it), without its `# doctest: +FLAG` comments.
- `Call arguments:` (Keras layers: the arguments of `__call__`). griffe reads
  an unknown section title as an admonition, one paragraph; it is rendered as
  a table of arguments like `Args:`.

mkdocs.yml lists this file under the python handler's `extensions`.
"""

from __future__ import annotations

import re
import textwrap

import griffe

CALL_ARGUMENTS = "Call arguments"
_DOCTEST_FLAGS = re.compile(r"\s*#\s*doctest:.*$")
_BLANKLINE = re.compile(r"^\s*<BLANKLINE>\s*$")


def fence_doctests(text: str) -> str:
    """`text` with each doctest block outside code fences wrapped in a `pycon` fence."""
    lines = text.split("\n")
    out: list[str] = []
    in_fence = False
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        if in_fence or not stripped.startswith(">>>"):
            out.append(line)
            index += 1
            continue
        indent = line[: len(line) - len(stripped)]
        out.append(f"{indent}```pycon")
        while index < len(lines) and lines[index].strip():
            block_line = lines[index]
            if block_line.lstrip().startswith((">>>", "...")):
                block_line = _DOCTEST_FLAGS.sub("", block_line)
            if _BLANKLINE.match(block_line):
                block_line = indent
            out.append(block_line)
            index += 1
        out.append(f"{indent}```")
    return "\n".join(out)


def call_signature(obj: griffe.Object) -> dict[str, griffe.Parameter]:
    """The parameters of `obj.call` (inherited ones too), or {} when griffe cannot see it."""
    try:
        call = obj.all_members.get("call") if obj.is_class else None
        return {parameter.name: parameter for parameter in call.parameters} if call else {}
    except (griffe.AliasResolutionError, griffe.CyclicAliasError, AttributeError):
        return {}


def call_arguments_section(
    section: griffe.DocstringSectionAdmonition, docstring: griffe.Docstring, obj: griffe.Object
) -> griffe.DocstringSection:
    """The `Call arguments:` admonition as a parameters section (its items read as `Args:`).

    Types and defaults come from the signature of the class's `call`.
    """
    # griffe reads a docstring's first line as its summary, never as a section title.
    text = f"{CALL_ARGUMENTS}.\n\nArgs:\n" + textwrap.indent(section.value.contents, "    ")
    parsed = griffe.parse_google(
        griffe.Docstring(text, lineno=docstring.lineno),
        warn_missing_types=False,
        warn_unknown_params=False,
    )
    kinds = [part.kind for part in parsed]
    if kinds != [griffe.DocstringSectionKind.text, griffe.DocstringSectionKind.parameters]:
        return section  # not a list of `name: description` items: left as written
    arguments = parsed[1].value
    signature = call_signature(obj)
    for argument in arguments:
        if argument.name in signature:
            argument.value = signature[argument.name].default
            argument.annotation = argument.annotation or signature[argument.name].annotation
    return griffe.DocstringSectionParameters(arguments, title=f"{CALL_ARGUMENTS}:")


class KerasDocstrings(griffe.Extension):
    """Fences doctest blocks and turns `Call arguments:` into a table, in every docstring."""

    def on_object(self, *, obj: griffe.Object, **kwargs) -> None:
        docstring = obj.docstring
        if docstring is None:
            return
        docstring.value = fence_doctests(docstring.value)
        if f"\n{CALL_ARGUMENTS}:" not in docstring.value:
            return
        sections = docstring.parsed  # parsed once and kept: the edit below is what renders
        for index, section in enumerate(sections):
            if (
                section.kind is griffe.DocstringSectionKind.admonition
                and section.title == CALL_ARGUMENTS
            ):
                sections[index] = call_arguments_section(section, docstring, obj)
