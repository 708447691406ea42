"""Checks that `affine-run COMMAND --help` is complete: every option the
command takes (the options --help lists) appears in the command's synopsis
above them, and the synopsis is followed by an example.

    check_help.py AFFINE-RUN
"""

import re
import subprocess
import sys

GENERIC = {"help", "help-list", "version"}


def help_of(tool, *args):
    return subprocess.run([tool, *args, "--help"], capture_output=True,
                          text=True, check=True).stdout


def main(tool):
    overview = help_of(tool)
    commands = re.findall(r"^  (?:mpirun -np P )?affine-run ([a-z-]+) ",
                          overview, re.M)
    commands = list(dict.fromkeys(commands))
    failures = []
    for command in commands:
        text = help_of(tool, command)
        head, _, options = text.partition("\nUSAGE:")
        synopsis, example_mark, _ = head.partition("\nExample:")
        if not example_mark:
            failures.append(f"{command}: no example")
        taken = set(re.findall(r"^\s+--([a-z0-9_-]+)", options, re.M))
        for option in sorted(taken - GENERIC):
            if not re.search(r"--" + re.escape(option) + r"\b", synopsis):
                failures.append(f"{command}: --{option} is not in the "
                                "synopsis")
    for failure in failures:
        print(failure)
    print(f"{len(commands)} commands: "
          + ("every option is in its synopsis, each with an example"
             if not failures else f"{len(failures)} faults"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
