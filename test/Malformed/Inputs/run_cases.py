"""Runs the malformed-input corpus: every case must be refused properly.

    run_cases.py TOOLS_DIR EXAMPLES_DIR WORKDIR CASES...

Each CASES file holds cases of one reader, in this form:

    # command: affine-translate --import-json {input} -o {out}/out.mlir
    # input: text
    #=== name of the case
    #expect: $.params["^w$"].ranks["0"]
    {"version": 1, ...}
    #=== next case
    ...

`{input}` is the case's body written to a file (named after the case, with
the extension of `# suffix:`, .json by default), `{out}` an empty folder
given to the command for its outputs, `{examples}` the examples folder,
`{inputs}` this script's folder and `{work}` the case's folder. With
`# input: safetensors`, the body's first line is the JSON header, and
`#data: N` (N bytes of zeros after it), `#length: N` (the header length the
file claims) and `#truncate: N` (the file cut to N bytes) adjust the file.

A case passes when the command exits with status 1 (not 0, not a crash),
its standard error names the input file and holds every `#expect:` text,
and nothing is left in `{out}` or beside the input. The script prints each
failure and a count, and exits 1 if any case failed.
"""
import os
import re
import shutil
import struct
import subprocess
import sys


def parse_cases(path):
    header = {"input": "text", "suffix": ".json"}
    cases = []
    current = None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#=== "):
                current = {"name": line[5:].strip(), "expect": [], "body": [],
                           "data": 0, "length": None, "truncate": None}
                cases.append(current)
            elif current is None:
                m = re.match(r"# (\w+): (.*)$", line)
                if m:
                    header[m.group(1)] = m.group(2)
            elif line.startswith("#expect: "):
                current["expect"].append(line[len("#expect: "):])
            elif line.startswith("#data: "):
                current["data"] = int(line[len("#data: "):])
            elif line.startswith("#length: "):
                current["length"] = int(line[len("#length: "):])
            elif line.startswith("#truncate: "):
                current["truncate"] = int(line[len("#truncate: "):])
            else:
                current["body"].append(line)
    return header, cases


def write_input(header, case, path):
    body = "\n".join(case["body"])
    if header["input"] == "safetensors":
        text = case["body"][0].encode() if case["body"] else b""
        length = case["length"] if case["length"] is not None else len(text)
        content = struct.pack("<Q", length) + text + b"\0" * case["data"]
        if case["truncate"] is not None:
            content = content[:case["truncate"]]
        with open(path, "wb") as f:
            f.write(content)
    else:
        with open(path, "w") as f:
            f.write(body + "\n")


def slug(name):
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower()


def run_case(tools, examples, work, header, case, group):
    folder = os.path.join(work, group, slug(case["name"]))
    shutil.rmtree(folder, ignore_errors=True)
    out = os.path.join(folder, "out")
    os.makedirs(out)
    input_path = os.path.join(folder, slug(case["name"]) + header["suffix"])
    write_input(header, case, input_path)
    command = header["command"].format(
        input=input_path, out=out, examples=examples, work=folder,
        inputs=os.path.dirname(os.path.abspath(__file__)))
    argv = command.split()
    argv[0] = os.path.join(tools, argv[0])
    run = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    problems = []
    if run.returncode != 1:
        problems.append(f"exit status {run.returncode}, expected 1")
    if os.path.basename(input_path) not in run.stderr:
        problems.append("the diagnostic does not name the input file")
    for text in case["expect"]:
        if text not in run.stderr:
            problems.append(f"the diagnostic lacks {text!r}")
    left = os.listdir(out)
    if left:
        problems.append(f"left behind in the output folder: {left}")
    beside = [n for n in os.listdir(folder) if ".tmp-" in n]
    if beside:
        problems.append(f"left beside the input: {beside}")
    return problems, run.stderr


def main(argv):
    tools, examples, work = argv[1:4]
    total = failed = 0
    for cases_file in argv[4:]:
        group = os.path.splitext(os.path.basename(cases_file))[0]
        header, cases = parse_cases(cases_file)
        for case in cases:
            total += 1
            problems, stderr = run_case(tools, examples, work, header, case,
                                        group)
            if problems:
                failed += 1
                print(f"FAILED {group}: {case['name']}: " + "; ".join(problems))
                print("  stderr: " + stderr.strip().replace("\n", "\n  "))
    print(f"{total} cases, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
