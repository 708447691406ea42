"""Makes, then lists, temporaries beside affine-run's outputs.

    stale_temporaries.py make DIR   # four temporaries of rank_0.safetensors
    stale_temporaries.py list DIR   # which are left, by what they were

The temporaries are named as ucp/Support/OutputFile.h says:
`<file>.tmp-<host>-<pid>-<6 characters>`, with the host name's characters
other than letters, digits and dots replaced by '_'.
"""
import os
import socket
import subprocess
import sys


def host_tag():
    tag = "".join(c if c.isalnum() or c == "." else "_"
                  for c in socket.gethostname())
    return tag or "host"


def dead_pid():
    """A process id that has just exited."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def names():
    base = "rank_0.safetensors.tmp-"
    return {
        "dead": f"{base}{host_tag()}-{dead_pid()}-abcdef",
        "foreign host": f"{base}another.host-{dead_pid()}-abcdef",
        # Process 1 lives as long as the machine.
        "live process": f"{base}{host_tag()}-1-abcdef",
        "other naming": "rank_0.safetensors.tmp-abcdef",
    }


def main(command, folder):
    listing = os.path.join(folder, ".temporaries")
    if command == "make":
        made = names()
        for name in made.values():
            with open(os.path.join(folder, name), "w") as f:
                f.write("partial")
        with open(listing, "w") as f:
            for what, name in made.items():
                f.write(f"{what}\t{name}\n")
        return 0
    with open(listing) as f:
        for line in f:
            what, name = line.rstrip("\n").split("\t")
            if os.path.exists(os.path.join(folder, name)):
                print(f"kept: {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
