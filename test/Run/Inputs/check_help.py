"""Checks that `affine-run COMMAND --help` is complete: every option the
command takes (the options --help lists) appears in the command's synopsis
above them, and the synopsis is followed by an example. Given documents,
also that every option their synopses (```text blocks) give a command is
one the command takes, so a document cannot name an option that is gone.

    check_help.py AFFINE-RUN [DOC.md...]
"""

import re
import subprocess
import sys

GENERIC = {"help", "help-list", "version"}


def help_of(tool, *args):
    return subprocess.run([tool, *args, "--help"], capture_output=True,
                          text=True, check=True).stdout


def options_of(help_text):
    """The options --help lists, after its USAGE line."""
    _, _, options = help_text.partition("\nUSAGE:")
    return set(re.findall(r"^\s+--([a-z0-9_-]+)", options, re.M))


def documented_synopses(doc):
    """(command, options) for each `affine-run COMMAND` line of a ```text
    block, its continuation lines included."""
    with open(doc, encoding="utf-8") as f:
        blocks = re.findall(r"^```text\n(.*?)^```", f.read(), re.M | re.S)
    for block in blocks:
        for synopsis in re.split(r"\n(?=affine-run )", block):
            command = re.match(r"affine-run ([a-z-]+)", synopsis)
            if command:
                yield command.group(1), set(
                    re.findall(r"--([a-z0-9_-]+)", synopsis))


def check_documents(tool, commands, docs):
    failures = []
    checked = 0
    for doc in docs:
        for command, named in documented_synopses(doc):
            checked += 1
            if command not in commands:
                failures.append(f"{doc}: affine-run {command} is no command")
                continue
            taken = options_of(help_of(tool, command))
            for option in sorted(named - taken):
                failures.append(f"{doc}: affine-run {command} takes no "
                                f"--{option}")
    return checked, failures


def main(tool, *docs):
    overview = help_of(tool)
    commands = re.findall(r"^  (?:mpirun -np P )?affine-run ([a-z-]+) ",
                          overview, re.M)
    commands = list(dict.fromkeys(commands))
    failures = []
    for command in commands:
        text = help_of(tool, command)
        head, _, _ = text.partition("\nUSAGE:")
        synopsis, example_mark, _ = head.partition("\nExample:")
        if not example_mark:
            failures.append(f"{command}: no example")
        taken = options_of(text)
        for option in sorted(taken - GENERIC):
            if not re.search(r"--" + re.escape(option) + r"\b", synopsis):
                failures.append(f"{command}: --{option} is not in the "
                                "synopsis")
    checked, document_failures = check_documents(tool, commands, docs)
    failures += document_failures
    for failure in failures:
        print(failure)
    print(f"{len(commands)} commands, {checked} documented synopses: "
          + ("every option is in its synopsis, each with an example, and "
             "every documented option is taken"
             if not failures else f"{len(failures)} faults"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
