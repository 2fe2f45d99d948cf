#!/usr/bin/env python3
"""Keeps a doc's code blocks equal to the files they show, so the doc cannot rot.

    check_code_blocks.py DOC LANG SOURCE... [--whole]

Every fenced block ```LANG of DOC must be a run of consecutive lines of one SOURCE,
byte for byte. With --whole (one SOURCE), the blocks must also show all of it, in order:
every line of SOURCE is in a block, except blank lines between two blocks. A DOC without
any LANG block fails (the check must not pass on nothing). Exit 0 when all holds, else
1 with one line per problem.
"""
import sys


def blocks(doc_lines, lang):
    found, current, start = [], None, 0
    for number, line in enumerate(doc_lines, 1):
        if current is None and line.strip() == '```' + lang:
            current, start = [], number
        elif current is not None and line.strip() == '```':
            found.append((start, current))
            current = None
        elif current is not None:
            current.append(line)
    if current is not None:
        found.append((start, current))
    return found


def find_run(block, source):
    """First index where `block` occurs as consecutive lines of `source`, or -1."""
    for i in range(len(source) - len(block) + 1):
        if source[i:i + len(block)] == block:
            return i
    return -1


def main(argv):
    whole = '--whole' in argv
    args = [a for a in argv if a != '--whole']
    if len(args) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    doc, lang, sources = args[0], args[1], args[2:]
    if whole and len(sources) != 1:
        print('--whole takes exactly one SOURCE', file=sys.stderr)
        return 2
    doc_lines = open(doc, encoding='utf-8').read().split('\n')
    texts = {s: open(s, encoding='utf-8').read().split('\n') for s in sources}
    if texts[sources[0]] and texts[sources[0]][-1] == '':
        for s in sources:
            if texts[s] and texts[s][-1] == '':
                texts[s].pop()
    problems = []
    found = blocks(doc_lines, lang)
    if not found:
        problems.append(f'{doc}: no ```{lang} block')
    covered = []  # (first, last) source line indexes per block, for --whole
    for start, block in found:
        where = [(s, find_run(block, texts[s])) for s in sources]
        where = [(s, i) for s, i in where if i >= 0]
        if not where:
            problems.append(f'{doc}:{start}: this ```{lang} block is not a run of lines of '
                            + ' or '.join(sources))
        elif whole:
            covered.append((where[0][1], where[0][1] + len(block) - 1, start))
    if whole and not problems:
        source = texts[sources[0]]
        next_line = 0
        for first, last, start in covered:
            gap = source[next_line:first]
            if first < next_line:
                problems.append(f'{doc}:{start}: block out of order (repeats line {first + 1})')
            elif any(line.strip() for line in gap):
                problems.append(f'{doc}:{start}: {sources[0]} lines {next_line + 1}-{first} '
                                'are in no block')
            next_line = max(next_line, last + 1)
        if any(line.strip() for line in source[next_line:]):
            problems.append(f'{doc}: {sources[0]} lines {next_line + 1}-{len(source)} are in no block')
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
