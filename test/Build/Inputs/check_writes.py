"""Reads an `strace -f -e trace=%file` log and prints every path a traced
process created, wrote, renamed, removed or changed outside the allowed
folders (the repository's, and the scratch space /tmp and /dev that
compilers and shells use). Calls that failed changed nothing and are not
counted.

    check_writes.py TRACE ROOT
"""

import os
import re
import sys

CALL = re.compile(r"^(\d+) +(\w+)\((.*)\) += (-?\d+)")
WRITE_FLAGS = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC")
CHANGING = {"creat", "mkdir", "mkdirat", "rename", "renameat", "renameat2",
            "unlink", "unlinkat", "rmdir", "symlink", "symlinkat", "link",
            "linkat", "truncate", "chmod", "fchmodat", "chown", "fchownat",
            "lchown", "utimensat", "utime", "utimes", "mknod", "mknodat"}
SCRATCH = ("/tmp/", "/dev/")


def calls(lines):
    """Whole calls, an interrupted one joined with its resumption."""
    pending = {}
    for line in lines:
        line = line.rstrip("\n")
        unfinished = re.match(r"^(\d+) (.*) <unfinished \.\.\.>$", line)
        if unfinished:
            pending[unfinished.group(1)] = unfinished.group(2)
            continue
        resumed = re.match(r"^(\d+) <\.\.\. \w+ resumed>(.*)$", line)
        if resumed and resumed.group(1) in pending:
            line = (resumed.group(1) + " " + pending.pop(resumed.group(1))
                    + resumed.group(2))
        match = CALL.match(line)
        if match:
            yield match.group(2), match.group(3), int(match.group(4))


def changed_paths(trace):
    with open(trace, encoding="utf-8", errors="replace") as f:
        for name, args, result in calls(f):
            if result < 0:
                continue
            if name in ("open", "openat") and not WRITE_FLAGS.search(args):
                continue
            if name not in CHANGING and name not in ("open", "openat"):
                continue
            for path in re.findall(r'"((?:[^"\\]|\\.)*)"', args):
                yield name, path


def main(trace, root):
    root = os.path.realpath(root) + "/"
    outside = set()
    for name, path in changed_paths(trace):
        if not path.startswith("/"):
            if path.startswith("../"):
                outside.add(f"{name} {path}")
            continue
        if path.startswith(SCRATCH) or os.path.realpath(path).startswith(root) \
                or path + "/" == root:
            continue
        outside.add(f"{name} {path}")
    for entry in sorted(outside):
        print("outside the repository:", entry)
    print("writes outside the repository and scratch:", len(outside))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
