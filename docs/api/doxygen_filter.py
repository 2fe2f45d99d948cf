#!/usr/bin/env python3
r"""Doxygen INPUT_FILTER for libshim's public headers.

The headers document every declaration with plain `//` comments directly above it (or
after it, on the same line), the way the rest of the code base comments. Doxygen reads
only `///`, so this filter rewrites, without changing the line count (warnings keep
their line numbers):
  - the comment block that opens the file    -> the documentation of the class it
                                               names first ("Logger: ..."), or else
                                               of the file: its `#pragma once` becomes
                                               `/// \\class shim::Logger` or `/// \\file`
  - a whole-line `//` comment                -> `///`
  - a `// ...` after code on the same line   -> `///< ...`
  - a comment above a run of declarations (up to the next blank line, comment or
    access specifier) documents each of them: the run becomes a Doxygen member group
    (`/**@{*/` ... `/**@}*/` on its first and last line; DISTRIBUTE_GROUP_DOC=YES),
    as in `// Holds exits ...` above hold_exits() and release_hold()
In comment text outside `code spans` and Markdown code blocks, `<`, `>` and `\\` are
escaped: the headers write paths like <bundle>/rootfs and Go escapes like \\u003c, which
Doxygen would otherwise take for HTML tags and commands. Comments inside function bodies
become `///` too; Doxygen ignores those. `///` and `//!` are left alone.
"""
import re
import sys



def split_trailing(line):
    """(code, space, text) when `line` is code followed by a `// text` comment (the `//`
    outside string and character literals), else None."""
    quote = None
    i = 0
    while i < len(line) - 1:
        c = line[i]
        if quote:
            if c == '\\':
                i += 1
            elif c == quote:
                quote = None
        elif c in '"\'':
            quote = c
        elif line.startswith('//', i) and not line.startswith('///', i):
            code = line[:i].rstrip()
            if not code.strip():
                return None
            return code, line[len(code):i], line[i + 2:]
        i += 1
    return None


def escape(text):
    """Escapes Doxygen's markup characters in comment text, except in `code spans`."""
    parts = text.split('`')
    for i in range(0, len(parts), 2):  # even parts are outside code spans
        parts[i] = (parts[i].replace('\\', '\\\\').replace('<', '\\<')
                    .replace('>', '\\>').replace('@', '\\@'))
    return '`'.join(parts)


SUBJECT = re.compile(r'^// ([A-Z]\w*)(?: / [A-Z]\w*)?: ')
NAMESPACE = re.compile(r'^namespace ([\w:]+) \{')


def header_subject(lines):
    """`shim::Logger` when the file opens with "// Logger: ..." and defines Logger."""
    m = SUBJECT.match(lines[0]) if lines else None
    if not m:
        return None
    name = m[1]
    definition = re.compile(r'^\s*(class|struct) ' + name + r'\b[^;]*$')
    kind = next((d[1] for d in map(definition.match, lines) if d), None)
    ns = next((n[1] for n in map(NAMESPACE.match, lines) if n), None)
    if kind is None or ns is None:
        return None
    return f'{kind} {ns}::{name}'


def indent_of(line):
    return len(line) - len(line.lstrip())


def group_runs(out, comment_end):
    """Marks each run of 2+ declarations right after a comment as a member group."""
    i = comment_end
    n = len(out)
    while i < n:
        if not out[i].lstrip().startswith('///') or out[i].lstrip().startswith('///<'):
            i += 1
            continue
        while i < n and out[i].lstrip().startswith('///') and not out[i].lstrip().startswith('///<'):
            i += 1
        if i >= n or not out[i].strip() or out[i].lstrip().startswith(('#', '}')):
            continue
        base = indent_of(out[i])
        j, starts, compound = i, 0, False
        while j < n and out[j].strip() and not out[j].lstrip().startswith('//'):
            if indent_of(out[j]) < base or out[j].strip().endswith(':') and indent_of(out[j]) < base + 2:
                break
            if indent_of(out[j]) == base:
                text = out[j].lstrip()
                compound = compound or re.match(r'(class|struct|union|enum)\b.*\{\s*$', text)
                if not text.startswith(('}', 'requires', 'template')):
                    starts += 1
            j += 1
        if starts >= 2 and not compound:
            out[i] = out[i][:base] + '/**@{*/ ' + out[i][base:]
            # Closed at the start of the line after the run (blank, a comment, "};"), so
            # a trailing ///< on the run's last line stays that member's own.
            if j < n:
                out[j] = '/**@}*/' + out[j]
            else:
                out.append('/**@}*/\n')
        i = j


def convert(lines):
    out = []
    in_header_block = True
    blank_before = False  # the previous comment line was empty
    in_code = False       # inside a Markdown code block (blank line, then 4+ spaces)
    subject = header_subject(lines)
    header_end = 0
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith('///') or stripped.startswith('//!'):
            out.append(line)
            in_header_block = False
            continue
        if stripped.startswith('//'):
            indent = line[: len(line) - len(stripped)]
            text = stripped[2:].rstrip('\n')
            body = text[1:] if text.startswith(' ') else text
            if not body.strip():
                blank_before = True
            else:
                in_code = body.startswith('    ') and (blank_before or in_code)
                blank_before = False
                if not in_code:
                    text = escape(text)
            out.append(indent + '///' + text + '\n')
            continue
        blank_before = in_code = False
        if in_header_block and stripped.startswith('#pragma once'):
            out.append(f'/// \\{subject}\n' if subject else '/// \\file\n')
            in_header_block = False
            header_end = len(out)
            continue
        in_header_block = False
        m = split_trailing(line.rstrip('\n'))
        if m:
            out.append(m[0] + m[1] + '///<' + escape(m[2]) + '\n')
            continue
        out.append(line)
    group_runs(out, header_end)
    return out


def main():
    with open(sys.argv[1], encoding='utf-8') as f:
        lines = f.readlines()
    sys.stdout.write(''.join(convert(lines)))


if __name__ == '__main__':
    main()
