#!/usr/bin/env python3
"""CHANGELOG.md in the form cmake/LibshimDeb.cmake turns into the Debian changelog.

    check_changelog.py CHANGELOG.md VERSION

- a release heading `## VERSION - YYYY-MM-DD` for the project's version, and every
  release heading in that form, newest first;
- inside a release only `- ` bullets, their continuation lines (two spaces) and blank
  lines; at most 76 characters a line (Debian's changelog lines stay within 80).
"""
import datetime
import re
import sys

HEADING = re.compile(r'^## (\d+\.\d+\.\d+) - (\d{4}-\d{2}-\d{2})$')


def main(path, version):
    problems, releases, in_release = [], [], False
    for number, line in enumerate(open(path, encoding='utf-8').read().split('\n'), 1):
        if line.startswith('## '):
            m = HEADING.match(line)
            if not m:
                problems.append(f'{path}:{number}: release heading not "## X.Y.Z - YYYY-MM-DD"')
                continue
            datetime.date.fromisoformat(m[2])
            releases.append((tuple(int(x) for x in m[1].split('.')), m[2], number))
            in_release = True
        elif in_release and line and not (line.startswith('- ') or line.startswith('  ')):
            problems.append(f'{path}:{number}: not a "- " bullet or its continuation')
        if in_release and len(line) > 76:
            problems.append(f'{path}:{number}: {len(line)} characters (at most 76)')
    want = tuple(int(x) for x in version.split('.'))
    if want not in [r[0] for r in releases]:
        problems.append(f'{path}: no "## {version} - <date>" entry')
    for newer, older in zip(releases, releases[1:]):
        if not (newer[0] > older[0] and newer[1] >= older[1]):
            problems.append(f'{path}:{older[2]}: releases not newest first')
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], sys.argv[2]))
