#!/usr/bin/env python3
r"""Doxygen INPUT_FILTER for libshim's public headers.

The headers document every declaration with plain `//` comments directly above it (or
after it, on the same line), the way the rest of the code base comments. Doxygen reads
only `///`, so this filter rewrites, without changing the line count (warnings keep
their line numbers):
  - the comment block that opens the file    -> the file's documentation (its
                                               `#pragma once` becomes `/// \\file`)
  - a whole-line `//` comment                -> `///`
  - a `// ...` after code on the same line   -> `///< ...`
In comment text outside `code spans` and Markdown code blocks, `<`, `>` and `\\` are
escaped: the headers write paths like <bundle>/rootfs and Go escapes like \\u003c, which
Doxygen would otherwise take for HTML tags and commands. Comments inside function bodies
become `///` too; Doxygen ignores those. `///` and `//!` are left alone.
"""
import re
import sys

TRAILING = re.compile(r'^(?P<code>[^"\']*?\S)(?P<space>\s+)//(?!/)(?P<text>.*)$')


def escape(text):
    """Escapes Doxygen's markup characters in comment text, except in `code spans`."""
    parts = text.split('`')
    for i in range(0, len(parts), 2):  # even parts are outside code spans
        parts[i] = (parts[i].replace('\\', '\\\\').replace('<', '\\<')
                    .replace('>', '\\>').replace('@', '\\@'))
    return '`'.join(parts)


def convert(lines):
    out = []
    in_header_block = True
    blank_before = False  # the previous comment line was empty
    in_code = False       # inside a Markdown code block (blank line, then 4+ spaces)
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
            out.append('/// \\file\n')
            in_header_block = False
            continue
        in_header_block = False
        m = TRAILING.match(line.rstrip('\n'))
        if m:
            out.append(m['code'] + m['space'] + '///<' + escape(m['text']) + '\n')
            continue
        out.append(line)
    return out


def main():
    with open(sys.argv[1], encoding='utf-8') as f:
        lines = f.readlines()
    sys.stdout.write(''.join(convert(lines)))


if __name__ == '__main__':
    main()
