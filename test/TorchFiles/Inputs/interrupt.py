"""Interrupts affine-run's jobs while they write and checks what is left.

Usage: interrupt.py AFFINE_RUN CHECKPOINT_TAG SMALL_CHECKPOINT_TAG WORK_FOLDER

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


def read(errors):
    errors.seek(0)
    return errors.read()


def count_files(folder):
    return sum(len(files) for _, _, files in os.walk(folder))


def started_output(made, files):
    """The temporary output under `made`, once it holds `files` files."""
    try:
        names = os.listdir(made)
    except FileNotFoundError:
        return None
    for name in names:
        if ".tmp-" in name:
            path = os.path.join(made, name)
            if not os.path.isdir(path) or count_files(path) >= files:
                return path
    return None


def interrupt(case, command, made, sig, then=None, files=1):
    # As a terminal starts a job: the test runner may have started this
    # script with the signal ignored, which the job would keep (nohup).
    # Standard error to a file: a pipe nobody reads would fill up with
    # progress lines and block the job.
    errors = open(made + ".stderr", "w+")
    job = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                           stderr=errors,
                           preexec_fn=lambda: [signal.signal(s, signal.SIG_DFL)
                                               for s in (sig, then) if s])
    deadline = time.monotonic() + 600
    while started_output(made, files) is None:
        if job.poll() is not None:
            sys.exit("%s: the job ended (%d) before its output started: %s"
                     % (case, job.returncode, read(errors)))
        if time.monotonic() > deadline:
            job.kill()
            sys.exit("%s: no temporary output appeared" % case)
        time.sleep(0.001)
    job.send_signal(sig)
    if then is not None:
        # A second signal at once, as `timeout` sends its SIGTERM twice and a
        # pipe's reader dies too: the first handler still finishes.
        job.send_signal(then)
    job.wait(timeout=120)
    if job.returncode not in (-sig, -(then or sig)):
        sys.exit("%s: ended with %d, not by signal %d: %s"
                 % (case, job.returncode, sig, read(errors)))
    left = os.path.exists(made) and os.listdir(made)
    if os.path.exists(made):
        sys.exit("%s: left %s after signal %d: %s"
                 % (case, made, sig, left))
    print("%s: ended by signal %d, nothing left" % (case, -job.returncode))


def main(affine_run, tag, small, work):
    jobs = {
        "ds-to-universal": ["ds-to-universal", "--inject_missing_state",
                            "--input_folder", tag, "--output_folder",
                            "{made}/universal"],
        "ds-retarget": ["ds-retarget", "--dp", "3", "--input_folder", tag,
                        "--output_folder", "{made}/dp3"],
        "export": ["export", "--input_folder", tag, "--out",
                   "{made}/model.safetensors"],
        # Tens of thousands of small files: their removal takes long
        # enough for a second signal to arrive during it.
        "ds-retarget-many": ["ds-retarget", "--dp", "8000", "--input_folder",
                             small, "--output_folder", "{made}/dp8000"],
    }
    cases = [("ds-to-universal", signal.SIGINT),
             ("ds-to-universal", signal.SIGTERM),
             ("ds-retarget", signal.SIGHUP),
             ("export", signal.SIGINT),
             ("ds-retarget-many", signal.SIGTERM, signal.SIGPIPE)]
    for job, sig, *then in cases:
        case = "-".join([job, sig.name] + [s.name for s in then])
        made = os.path.join(work, case, "made")
        os.makedirs(os.path.dirname(made))
        command = [affine_run] + [arg.format(made=made) for arg in jobs[job]]
        interrupt(case, command, made, sig, *then,
                  files=2000 if job == "ds-retarget-many" else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
