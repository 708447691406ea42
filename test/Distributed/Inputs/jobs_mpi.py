"""Runs DeepSpeed jobs alone and under mpirun, and compares their outputs.

Usage: jobs_mpi.py AFFINE_RUN MPIRUN WORK FIXTURES_ROOT [--dp N]
                  [--retarget ARGS] [--node-local] NAME...

For each fixture NAME (a folder under FIXTURES_ROOT holding checkpoint/ and
maybe universal/), each job (ds-to-universal with --inject_missing_state,
ds-retarget to DP 3 (or N; with --retarget, only ds-retarget, to the
target ARGS, one string), export,
universal-to-ds where a Universal folder exists, and check) runs once in
one process and then with --mpi at -np 2, 3 and one of 1, 4, 8 (8
processes on 2 cores: oversubscribed). Every output file of the group must
be byte-identical to the single process's, and the same set of files; a
job refused alone must be refused under MPI with the same message; check's
report (process 0's) must be the single process's, and its exit code too.
Prints one line per fixture and job.

With --node-local, the jobs run in that storage model instead: the input
folder's files (in its subfolders too) are dealt to folders of each
process's own (file i of the sorted paths to process i % P, so that with
more processes than files some hold none), each process is given its own
folder, and the output must still be the single process's, byte for byte.
"""

import filecmp
import os
import re
import shutil
import shlex
import subprocess
import sys


def tree(folder):
    """Every file under `folder`, relative, sorted."""
    found = []
    for root, _, files in os.walk(folder):
        for name in files:
            found.append(os.path.relpath(os.path.join(root, name), folder))
    return sorted(found)


def same_trees(a, b):
    """Empty when every file of `a` and `b` is the same; else the first
    difference."""
    files_a, files_b = tree(a), tree(b)
    if files_a != files_b:
        return "files differ: %s" % sorted(set(files_a) ^ set(files_b))
    for name in files_a:
        if not filecmp.cmp(os.path.join(a, name), os.path.join(b, name),
                           shallow=False):
            return "%s differs" % name
    return ""


def input_of(arguments):
    """The input folder a job's `arguments` name."""
    if "--input_folder" in arguments:
        return arguments[arguments.index("--input_folder") + 1]
    return arguments[1]


def compare_reports(text, code, logs, mpi_code, folder, local):
    """Empty when process 0's report under MPI (in `logs`) is the one
    process's `text`, the folder named aside (under --node-local, process
    0's own folder in `local` for the input `folder`), and both exit
    alike; else the difference."""
    with open(os.path.join(logs, "1", "rank.0", "stdout")) as f:
        report = f.read()
    if local:
        report = report.replace(os.path.join(local, "p0"), folder)
    if report == text and (mpi_code == 0) == (code == 0):
        return ""
    return "exit %d, alone %d; report: %s; alone: %s" % (
        mpi_code, code, report.strip(), text.strip())


def find_tag(folder, pointer):
    with open(os.path.join(folder, pointer)) as f:
        return os.path.join(folder, f.read().strip())


def deal_files(source, folder, processes):
    """The files under `source` dealt to folder/p0 .. p<processes - 1>, at
    the same paths within them."""
    folders = [os.path.join(folder, "p%d" % p) for p in range(processes)]
    for path in folders:
        os.makedirs(path, exist_ok=True)
    for index, name in enumerate(tree(source)):
        target = os.path.join(folders[index % processes], name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy(os.path.join(source, name), target)
    return folders


def group_command(mpirun, logs, processes, command, source, local):
    """mpirun running `command` on `processes` processes; with `local` (a
    folder), each process given a folder of its own holding some of
    `source`'s files (MPMD: one application context per process)."""
    head = mpirun + ["--output-filename", logs]
    if not local:
        return head + ["-np", str(processes)] + command
    contexts = []
    for folder in deal_files(source, local, processes):
        given = [folder if part == source else part for part in command]
        contexts += (["-np", "1"] + given + [":"])
    return head + contexts[:-1]


def run(command):
    result = subprocess.run(command, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    return result.returncode, result.stdout


def refusal(text, process=None):
    """The message of the job alone, or of process `process` under MPI."""
    prefix = "affine-run: " + ("" if process is None
                               else "process %d: " % process)
    for line in text.splitlines():
        if line.startswith(prefix):
            return line[len(prefix):]
    return text


def main():
    affine_run, mpirun, work, root = sys.argv[1:5]
    names = sys.argv[5:]
    retarget = ["--dp", "3"]
    if names[:1] == ["--dp"]:
        retarget, names = ["--dp", names[1]], names[2:]
    only_retarget = names[:1] == ["--retarget"]
    if only_retarget:
        retarget, names = shlex.split(names[1]), names[2:]
    node_local = names[:1] == ["--node-local"]
    if node_local:
        names = names[1:]
    mpirun = shlex.split(mpirun)
    failures = 0
    for index, name in enumerate(names):
        fixture = os.path.join(root, name)
        source = find_tag(os.path.join(fixture, "checkpoint"), "latest")
        jobs = {
            "ds-to-universal": ["ds-to-universal", "--input_folder", source,
                                "--inject_missing_state"],
            "ds-retarget": ["ds-retarget", "--input_folder", source] +
            retarget,
            "export": ["export", "--input_folder", source],
        }
        if only_retarget:
            jobs = {"ds-retarget": jobs["ds-retarget"]}
        universal = os.path.join(fixture, "universal")
        if os.path.isdir(universal) and not only_retarget:
            jobs["universal-to-ds"] = [
                "universal-to-ds", "--input_folder",
                find_tag(universal, "latest_universal"), "--dp", "2"]
        if not only_retarget:
            jobs["check"] = ["check", source]
        extra = [1, 4, 8][index % 3]
        for job, arguments in jobs.items():
            # check writes nothing: its report is what is compared.
            checks = job == "check"
            out_flag = "--out" if job == "export" else "--output_folder"
            base = os.path.join(work, name, job)
            alone = os.path.join(base, "alone")
            code, text = run([affine_run] + arguments + (
                [] if checks else [out_flag, os.path.join(alone, "out")]) +
                ["--quiet"])
            results = []
            for processes in (2, 3, extra):
                group = os.path.join(base, "np%d" % processes)
                # Each process's messages in files of their own: mpirun
                # forwards the processes' streams in chunks that interleave.
                logs = os.path.join(base, "logs%d" % processes)
                local = (os.path.join(base, "local%d" % processes)
                         if node_local else None)
                mpi_code, mpi_text = run(group_command(
                    mpirun, logs, processes,
                    [affine_run] + arguments +
                    ([] if checks else [out_flag, os.path.join(group, "out")])
                    + ["--quiet", "--mpi"] +
                    (["--node-local"] if node_local else []),
                    input_of(arguments), local))
                first = os.path.join(logs, "1", "rank.0", "stderr")
                if os.path.exists(first):
                    with open(first) as f:
                        mpi_text = f.read()
                if checks:
                    difference = compare_reports(text, code, logs, mpi_code,
                                                 input_of(arguments), local)
                elif code == 0:
                    difference = (same_trees(alone, group) if mpi_code == 0
                                  else "failed: " + mpi_text.strip())
                else:
                    difference = (
                        "" if mpi_code != 0 and
                        refusal(mpi_text, 0) == refusal(text) and
                        not os.path.exists(os.path.join(group, "out"))
                        else "alone: %s; under MPI (exit %d): %s" %
                        (refusal(text), mpi_code, mpi_text.strip()))
                if difference:
                    failures += 1
                    print("MISMATCH %s %s -np %d: %s" %
                          (name, job, processes, difference))
                results.append(str(processes))
            outcome = ("identical" if code == 0 else
                       "unsound alike" if checks else "refused alike")
            print("%s %s -np %s: %s" %
                  (name, job, ",".join(results), outcome))
    print("%d mismatches" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
