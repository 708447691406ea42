"""Interrupts affine-run's jobs while they write and checks what is left.

Usage: interrupt.py AFFINE_RUN CHECKPOINT_TAG WORK_FOLDER

For each job and signal, the job writes under WORK/<case>/made/ (a parent
folder it has to make); once its temporary output holds a file, the job
gets the signal. It must end by that signal (a shell reports 128 + the
signal's number) and leave nothing: no temporary folder or file, no
parent folder it made.
"""

import os
import signal
import subprocess
import sys
import time


def holds_a_file(folder):
    for _, _, files in os.walk(folder):
        if files:
            return True
    return False


def started_output(made):
    """The temporary output under `made`, once it holds a file."""
    try:
        names = os.listdir(made)
    except FileNotFoundError:
        return None
    for name in names:
        if ".tmp-" in name:
            path = os.path.join(made, name)
            if not os.path.isdir(path) or holds_a_file(path):
                return path
    return None


def interrupt(case, command, made, sig):
    # As a terminal starts a job: the test runner may have started this
    # script with the signal ignored, which the job would keep (nohup).
    job = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE,
                           preexec_fn=lambda: signal.signal(sig, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while started_output(made) is None:
        if job.poll() is not None:
            sys.exit("%s: the job ended (%d) before its output started: %s"
                     % (case, job.returncode, job.stderr.read().decode()))
        if time.monotonic() > deadline:
            job.kill()
            sys.exit("%s: no temporary output appeared" % case)
        time.sleep(0.001)
    job.send_signal(sig)
    job.wait(timeout=120)
    if job.returncode != -sig:
        sys.exit("%s: ended with %d, not by signal %d: %s"
                 % (case, job.returncode, sig, job.stderr.read().decode()))
    left = os.path.exists(made) and os.listdir(made)
    if os.path.exists(made):
        sys.exit("%s: left %s after signal %d: %s"
                 % (case, made, sig, left))
    print("%s: ended by signal %d, nothing left" % (case, sig))


def main(affine_run, tag, work):
    jobs = {
        "ds-to-universal": ["ds-to-universal", "--inject_missing_state",
                            "--input_folder", tag, "--output_folder",
                            "{made}/universal"],
        "ds-retarget": ["ds-retarget", "--dp", "3", "--input_folder", tag,
                        "--output_folder", "{made}/dp3"],
        "export": ["export", "--input_folder", tag, "--out",
                   "{made}/model.safetensors"],
    }
    cases = [("ds-to-universal", signal.SIGINT),
             ("ds-to-universal", signal.SIGTERM),
             ("ds-retarget", signal.SIGHUP),
             ("export", signal.SIGINT)]
    for job, sig in cases:
        case = "%s-%s" % (job, sig.name)
        made = os.path.join(work, case, "made")
        os.makedirs(os.path.dirname(made))
        command = [affine_run] + [arg.format(made=made) for arg in jobs[job]]
        interrupt(case, command, made, sig)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
